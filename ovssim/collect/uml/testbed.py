"""``ovssim testbed up/down/status/exec --kernel uml``: a namespace testbed inside a UML instance.

``up`` boots a detached instance (it outlives the command, like a host ``testbed up``)
whose init runs ``python -m ovssim testbed up [FILE]`` and then serves commands;
``exec NAME -- CMD`` runs CMD inside it (e.g. ``ip netns exec ovss-xxxx-vm1 ping ...``);
``down`` halts it, which removes every namespace, OVS daemon and qdisc with it.
"""
from __future__ import annotations

import sys
from pathlib import Path

from ...errors import ConfigError
from .collect import PROJECT_ROOT
from .instance import _ACTIVE, IO, UmlInstance, reap_stale, saved_instances

ENV = {"PYTHONDONTWRITEBYTECODE": "1", "HOME": "/tmp", "PYTHONPATH": str(PROJECT_ROOT)}


def up(testbed_file: str | None, *, timeout: float = 120.0) -> tuple[UmlInstance, str]:
    argv = [sys.executable, "-m", "ovssim", "testbed", "up"]
    files = {}
    if testbed_file:
        try:
            files["testbed.toml"] = Path(testbed_file).read_text()
        except OSError as exc:
            raise ConfigError(f"cannot read testbed file: {exc.strerror}", file=str(testbed_file)) from None
        argv.append(f"{IO}/testbed.toml")
    inst = UmlInstance(detached=True, purpose="testbed")
    inst.start(argv, env=ENV, cwd=str(PROJECT_ROOT), agent=True, files=files)
    try:
        inst.wait_for("cmd.rc", timeout, "testbed up")
    except BaseException:
        inst.stop(grace=0)
        raise
    res = inst.command_result()
    if res.returncode != 0:
        inst.stop(grace=0)
        raise ConfigError(f"testbed up inside UML failed: {res.stderr.strip() or res.stdout.strip()}")
    # detached: it outlives this process; `ovssim testbed down --kernel uml` stops it
    _ACTIVE.pop(inst.name, None)
    return inst, res.stdout


def _find(name: str | None) -> list[dict]:
    states = [s for s in saved_instances() if s.get("purpose") == "testbed" and s["alive"]]
    if name:
        states = [s for s in states if s["name"] == name]
    return states


def down(name: str | None, all_: bool) -> list[str]:
    reap_stale()
    states = _find(name)
    if len(states) > 1 and not all_ and not name:
        raise ConfigError("several UML testbeds are up: " + ", ".join(s["name"] for s in states),
                          fix="name one or pass --all")
    for st in states:
        UmlInstance.attach(st).stop_attached()
    return [s["name"] for s in states]


def status() -> list[str]:
    lines = []
    for st in saved_instances():
        owner = "detached" if st.get("detached") else f"owned by pid {st.get('owner_pid')}"
        lines.append(f"{st['name']}: UML {st.get('kernel')} {st.get('purpose', '')} "
                     f"({'running' if st['alive'] else 'dead'}, {owner}, work folder {st['workdir']})")
    return lines


def exec_(name: str | None, argv: list[str], timeout: float = 300.0):
    states = _find(name)
    if len(states) != 1:
        raise ConfigError("no such UML testbed" if not states else "several UML testbeds are up",
                          fix="name one: ovssim testbed status --kernel uml")
    return UmlInstance.attach(states[0]).exec(argv, timeout=timeout)
