"""``ovssim collect CAMPAIGN --kernel uml``: the ordinary collector, run inside a UML instance.

The campaign file, journal, resume and clean-up rules are the host collector's own
(ovssim/collect/campaign.py): this module boots one instance per campaign whose
command is ``python -m ovssim collect CAMPAIGN --out OUT`` with this project's
interpreter, shares only OUT with the host, forwards the collector's log lines while
it runs, and afterwards records in ``metadata.json`` that the runs were made on a
user-mode-Linux kernel (the collector inside already records ``uname`` = the UML
kernel as the machine's kernel), with the canary check of the private mounts.
Interrupting the host process kills the instance: finished runs are in the journal
(fsynced through hostfs), the run in progress is lost, ``--resume`` completes it.
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from ...errors import ConfigError
from ..campaign import load_campaign
from ...signals import signals_interrupt
from ..shell import CommandError
from ...atomic import write_atomic
from .instance import IO, UmlInstance

PROJECT_ROOT = Path(__file__).resolve().parents[3]
RUN_OVERHEAD_S = 20.0       # per run: testbed checks, QoS, tool start-up inside UML


def uml_package_version() -> str:
    try:
        return subprocess.run(["dpkg-query", "-W", "-f=${Version}", "user-mode-linux"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def run_probe(out: Path, script: str, *, name: str, purpose: str, timeout: float, log=print):
    """Boot an instance that shares ``out``, run ``script`` (POSIX sh, as ``IO/<name>.sh``) in it from
    this checkout, and stop it.  Returns (the result, the host paths it leaked, the testbed kernel's
    metadata)."""
    inst = UmlInstance(keep=[str(out)], purpose=purpose)
    inst.start(["sh", f"{IO}/{name}.sh"], files={f"{name}.sh": script}, cwd=str(PROJECT_ROOT))
    log(f"UML instance {inst.name} booted; {purpose}")
    try:
        res = inst.wait(timeout=timeout)
        leaks = inst.leaks()
    finally:
        inst.stop(grace=0)
    kernel = {"kind": "user-mode-linux", "version": inst.kernel.version,
              "package": f"user-mode-linux {uml_package_version()}", "cpus": 1}
    return res, leaks, kernel


RAW_STDERR = "\n== stderr\n"        # separates a probe's stdout from its stderr in its raw file


def write_raw(path: Path, res) -> None:
    """A probe's raw output file: its stdout, then its stderr (if any) after :data:`RAW_STDERR`."""
    write_atomic(path, res.stdout + (RAW_STDERR + res.stderr if res.stderr else ""))


def store_probe(out: Path, tag: str, res, *, marker: str, parse, script: str, kernel: str, leaks,
                **meta) -> dict:
    """A probe run's files in ``out``: ``raw-TAG.txt`` (:func:`write_raw`), then -- if its output holds
    ``marker`` (else one CommandError) -- ``results-TAG.json`` (``parse`` of the output) and
    ``metadata-TAG.json`` (when, the script, both kernels, leaked host paths, ``meta``); returns the results."""
    write_raw(out / f"raw-{tag}.txt", res)
    if marker not in res.stdout:
        raise CommandError(["uml", script], res.returncode, res.stderr)
    results = parse(res.stdout)
    write_atomic(out / f"results-{tag}.json", json.dumps(results, indent=1))
    meta = {"created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "script": f"ovssim/collect/uml/{script} SCRIPT", "qdisc": tag, "testbed_kernel": kernel,
            "host_kernel": platform.release(), **meta, "host_paths_leaked": leaks}
    write_atomic(out / f"metadata-{tag}.json", json.dumps(meta, indent=1))
    return results


def read_raw(path: Path) -> str:
    """The stdout part of a raw file :func:`write_raw` wrote (to parse it again)."""
    return Path(path).read_text().split(RAW_STDERR)[0]


def run_campaign_uml(path, out=None, *, resume=False, overrides=None, log=print,
                     mem: str = "1024M") -> dict:
    """Run a campaign inside a fresh UML instance; returns the counts the collector printed."""
    camp = load_campaign(path, overrides)        # validates on the host: errors before booting
    out = Path(out) if out else Path("data/uml") / camp.name
    out = out.resolve()
    if out.exists() and (out / "runs.jsonl").exists() and not resume:
        raise ConfigError(f"{out} already holds results of a campaign",
                          fix="pass --resume to complete it, or choose another --out")
    # the campaign file goes in through the work folder (a host /tmp path is private inside);
    # its name is kept: the collector names the campaign after it when [campaign] has no name
    argv = [sys.executable, "-m", "ovssim", "collect", f"{IO}/{Path(path).name}", "--out", str(out),
            "--no-progress"]
    if resume:
        argv.append("--resume")
    for k, v in (overrides or {}).items():
        argv += [f"--{k}", str(v)]
    budget = len(camp.runs()) * (camp.duration + RUN_OVERHEAD_S) + 300.0
    inst = UmlInstance(keep=[str(out)], mem=mem, purpose=f"campaign {camp.name}")
    env = {"PYTHONDONTWRITEBYTECODE": "1", "HOME": "/tmp", "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": str(PROJECT_ROOT)}
    t0, load0 = time.monotonic(), os.getloadavg()[0]
    # SIGTERM / SIGHUP end the instance like Ctrl-C does (the host collector's own rule)
    with signals_interrupt():
        try:
            inst.start(argv, env=env, cwd=str(PROJECT_ROOT), files={Path(path).name: camp.text})
            log(f"UML instance {inst.name} ({inst.kernel.describe()}) booted; collecting into {out}")
            res = _follow(inst, budget, log)
            leaks = inst.leaks()
        finally:
            inst.stop(grace=0)
    _annotate(out, inst, time.monotonic() - t0, leaks, (load0, os.getloadavg()[0]))
    if leaks:
        log(f"warning: the instance wrote into host paths it should not have: {', '.join(leaks)}")
    summary = _summary(res.stdout)
    if res.returncode != 0 and summary is None:
        raise CommandError(argv, res.returncode, res.stderr)
    return summary or {}


def _follow(inst: UmlInstance, budget: float, log):
    """Wait for the instance, forwarding the collector's stderr lines as they appear."""
    err = inst.workdir / "cmd.err"
    pos, deadline = 0, time.monotonic() + budget
    while inst.running:
        pos = _forward(err, pos, log)
        if time.monotonic() > deadline:
            raise CommandError(["uml", inst.name], "timeout",
                               f"campaign still running after {budget:.0f} s")
        time.sleep(0.5)
    _forward(err, pos, log)
    return inst.command_result()


def _forward(path: Path, pos: int, log) -> int:
    try:
        with open(path, "rb") as fh:
            fh.seek(pos)
            data = fh.read()
    except OSError:
        return pos
    text = data.decode(errors="replace")
    keep = text.rfind("\n") + 1                  # only whole lines
    for line in text[:keep].splitlines():
        if line.strip():
            log(f"[uml] {line}")
    return pos + len(text[:keep].encode())


def _summary(stdout: str) -> dict | None:
    """The counts of the collector's last line ``runs: N in the campaign, ...``."""
    import re
    m = re.search(r"runs: (\d+) in the campaign, (\d+) done before, now ok (\d+), failed (\d+), "
                  r"skipped (\d+)", stdout)
    if not m:
        return None
    keys = ("total", "previously_done", "ok", "failed", "skipped")
    return dict(zip(keys, map(int, m.groups())))


def _annotate(out: Path, inst: UmlInstance, wall: float, leaks: list[str], host_load: tuple) -> None:
    meta_path = out / "metadata.json"
    if not meta_path.exists():
        return
    meta = json.loads(meta_path.read_text())
    sessions = meta.setdefault("uml_sessions", [])
    # the runs' own loadavg_1min is the instance's; the host's (shared machine) is recorded here
    sessions.append({"instance": inst.name, "wall_s": round(wall, 1), "host_paths_leaked": leaks,
                     "host_loadavg_1min_start_end": [round(x, 2) for x in host_load]})
    meta["testbed_kernel"] = {
        "kind": "user-mode-linux", "version": inst.kernel.version, "binary": inst.kernel.binary,
        "package": f"user-mode-linux {uml_package_version()}", "memory": inst.mem, "cpus": 1,
        "host_kernel": platform.release(), "host_cpus": os.cpu_count(),
        "note": "measured on a UML kernel: one virtual CPU, system calls trapped by ptrace; "
                "CPU costs are not the host's"}
    write_atomic(meta_path, json.dumps(meta, indent=1, sort_keys=True, default=str))
