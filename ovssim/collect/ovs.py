"""A private Open vSwitch: its own database, run directory and daemons.

``PrivateOVS`` creates a database from the installed schema with
``ovsdb-tool create``, starts ``ovsdb-server`` and ``ovs-vswitchd`` (optionally
inside a network namespace, so the datapath's tap devices never appear on the
host) with every socket, pid and log file under one temporary directory, and
stops them again.  It never talks to a system OVS: every ``ovs-vsctl`` call
names the private ``--db`` and every ``ovs-appctl`` call the private ``-t``
control socket.

The counters it reads are documented in ovs-vswitchd(8): ``dpctl/show``
(lookups hit/missed/lost, flows), ``dpif-netdev/pmd-stats-show`` (EMC, SMC,
megaflow hits, upcalls), ``upcall/show`` and ``coverage/show``.  Between runs
``revalidator/purge`` removes every datapath flow (the clean way on the
userspace datapath; ``dpctl/del-flows`` races with the revalidators).
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from ..errors import ConfigError
from .shell import CommandError, run, tool_version

SCHEMA_PATHS = ("/usr/share/openvswitch/vswitch.ovsschema",
                "/usr/local/share/openvswitch/vswitch.ovsschema")


def find_schema() -> str:
    for p in SCHEMA_PATHS:
        if os.path.exists(p):
            return p
    raise ConfigError("the Open vSwitch database schema vswitch.ovsschema was not found",
                      fix="install openvswitch-switch (./setup.sh does)")


def kernel_datapath_available() -> bool:
    """True when the openvswitch kernel module is loaded (the system datapath can be used)."""
    return Path("/sys/module/openvswitch").exists()


class PrivateOVS:
    """ovsdb-server + ovs-vswitchd with a private run directory, optionally in a netns."""

    def __init__(self, netns: str | None = None, workdir: str | None = None):
        self.netns = netns
        self.dir = Path(workdir or tempfile.mkdtemp(prefix="ovssim-ovs-"))
        self.db_sock = self.dir / "db.sock"
        self.vswitchd_ctl = self.dir / "ovs-vswitchd.ctl"
        self.ovsdb_ctl = self.dir / "ovsdb-server.ctl"
        self._procs: list[subprocess.Popen] = []

    # -- lifecycle ---------------------------------------------------------------------------
    def _prefix(self):
        return ["ip", "netns", "exec", self.netns] if self.netns else []

    def _spawn(self, argv, ctl: Path, name: str):
        env = dict(os.environ, OVS_RUNDIR=str(self.dir), OVS_DBDIR=str(self.dir),
                   OVS_LOGDIR=str(self.dir))
        log = open(self.dir / f"{name}.stderr", "wb")
        proc = subprocess.Popen(self._prefix() + argv, stdout=log, stderr=log, env=env,
                                start_new_session=True)
        log.close()
        self._procs.append(proc)
        deadline = time.monotonic() + 15
        while not ctl.exists():
            if proc.poll() is not None:
                raise CommandError(argv, proc.returncode,
                                   (self.dir / f"{name}.stderr").read_text(errors="replace"))
            if time.monotonic() > deadline:
                raise CommandError(argv, "timeout", f"{name} did not create {ctl} within 15 s")
            time.sleep(0.02)

    def start(self) -> "PrivateOVS":
        db = self.dir / "conf.db"
        run(["ovsdb-tool", "create", db, find_schema()])
        self._spawn(["ovsdb-server", str(db), f"--remote=punix:{self.db_sock}",
                     f"--unixctl={self.ovsdb_ctl}", "--no-chdir",
                     f"--log-file={self.dir / 'ovsdb-server.log'}"], self.ovsdb_ctl, "ovsdb-server")
        self.vsctl("--no-wait", "init")
        self._spawn(["ovs-vswitchd", f"unix:{self.db_sock}", f"--unixctl={self.vswitchd_ctl}",
                     "--no-chdir", f"--log-file={self.dir / 'ovs-vswitchd.log'}"],
                    self.vswitchd_ctl, "ovs-vswitchd")
        return self

    def stop(self) -> None:
        """Stop ovs-vswitchd (``exit --cleanup`` removes its datapath ports), then ovsdb-server."""
        if len(self._procs) > 1 and self._procs[1].poll() is None and self.vswitchd_ctl.exists():
            try:
                run(["ovs-appctl", "-t", self.vswitchd_ctl, "exit", "--cleanup"], check=False,
                    timeout=10)
                self._procs[1].wait(timeout=5)
            except (CommandError, subprocess.TimeoutExpired):
                pass
        for proc in reversed(self._procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=5)
        self._procs.clear()

    @property
    def running(self) -> bool:
        return bool(self._procs) and all(p.poll() is None for p in self._procs)

    # -- commands ----------------------------------------------------------------------------
    def vsctl(self, *args, check=True) -> str:
        return run(["ovs-vsctl", f"--db=unix:{self.db_sock}", "--timeout=10", *args],
                   check=check, timeout=20).stdout

    def appctl(self, *args, check=True) -> str:
        return run(["ovs-appctl", "-t", self.vswitchd_ctl, *args], check=check, timeout=20).stdout

    def pmd_perf(self) -> dict[str, float]:
        """``dpif-netdev/pmd-perf-show`` summary (PMD threads only, e.g. with AF_XDP ports)."""
        return parse_pmd_perf(self.appctl("dpif-netdev/pmd-perf-show", check=False))

    def clear_pmd_stats(self) -> None:
        self.appctl("dpif-netdev/pmd-stats-clear", check=False)

    def socket_counters(self) -> dict[str, float]:
        """Drops on the AF_PACKET sockets the userspace datapath receives on (``ss -0 -m``).

        These drops (receive buffer full while ovs-vswitchd was not scheduled)
        appear in no OVS counter: not in ``dpctl/show``, not in the port stats.
        """
        res = run(self._prefix() + ["ss", "-0", "-m", "-a", "-n"], check=False, timeout=10)
        return parse_packet_sockets(res.stdout)

    def version(self) -> str:
        return tool_version(["ovs-vswitchd", "--version"])

    def purge_flows(self) -> None:
        """Remove every datapath flow (``revalidator/purge``) so the next packet misses."""
        self.appctl("revalidator/purge")

    # -- counters ----------------------------------------------------------------------------
    def counters(self) -> dict[str, float]:
        """All numeric counters this datapath exposes, flattened to ``name -> value``."""
        out: dict[str, float] = {}
        dpctl = self.appctl("dpctl/show", "-s", check=False)
        out.update(parse_dpctl_show(dpctl))
        out.update(parse_dpctl_ports(dpctl))
        out.update(parse_pmd_stats(self.appctl("dpif-netdev/pmd-stats-show", check=False)))
        out.update(parse_upcall_show(self.appctl("upcall/show", check=False)))
        out.update(parse_coverage(self.appctl("coverage/show", check=False)))
        out.update(self.socket_counters())
        return out


# -- parsers ----------------------------------------------------------------------------------
def parse_dpctl_show(text: str) -> dict[str, float]:
    """``lookups: hit:H missed:M lost:L`` and ``flows: F`` from ``dpctl/show`` (summed over datapaths)."""
    out = {"dp_hit": 0.0, "dp_missed": 0.0, "dp_lost": 0.0, "dp_flows": 0.0}
    for m in re.finditer(r"lookups:\s*hit:(\d+)\s+missed:(\d+)\s+lost:(\d+)", text):
        out["dp_hit"] += int(m.group(1))
        out["dp_missed"] += int(m.group(2))
        out["dp_lost"] += int(m.group(3))
    for m in re.finditer(r"^\s*flows:\s*(\d+)", text, re.M):
        out["dp_flows"] += int(m.group(1))
    return out


_PMD_KEYS = {
    "packets received": "pmd_packets", "packet recirculations": "pmd_recirculations",
    "emc hits": "pmd_emc_hits", "smc hits": "pmd_smc_hits", "megaflow hits": "pmd_megaflow_hits",
    "miss with success upcall": "pmd_upcall_ok", "miss with failed upcall": "pmd_upcall_failed",
    "idle cycles": "pmd_idle_cycles", "processing cycles": "pmd_processing_cycles",
    "avg cycles per packet": "pmd_cycles_per_packet",
    "avg processing cycles per packet": "pmd_processing_cycles_per_packet",
}


def parse_pmd_stats(text: str) -> dict[str, float]:
    """Sum the per-thread lines of ``dpif-netdev/pmd-stats-show`` (main thread and PMDs)."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        m = re.match(r"^\s*([a-z .]+?):\s*([0-9.]+)", line)
        if m and m.group(1) in _PMD_KEYS:
            key = _PMD_KEYS[m.group(1)]
            if key.startswith("pmd_cycles_per") or key.startswith("pmd_processing_cycles_per"):
                continue  # averages: derived later from deltas
            out[key] = out.get(key, 0.0) + float(m.group(2))
    return out


def parse_upcall_show(text: str) -> dict[str, float]:
    """Current / max datapath flows and the dump duration from ``upcall/show``."""
    out: dict[str, float] = {}
    m = re.search(r"flows\s*:\s*\(current (\d+)\)\s*\(avg (\d+)\)\s*\(max (\d+)\)\s*\(limit (\d+)\)", text)
    if m:
        out.update(upcall_flows_current=float(m.group(1)), upcall_flows_max=float(m.group(3)),
                   upcall_flow_limit=float(m.group(4)))
    m = re.search(r"dump duration\s*:\s*(\d+)ms", text)
    if m:
        out["upcall_dump_duration_ms"] = float(m.group(1))
    return out


def parse_coverage(text: str) -> dict[str, float]:
    """``name ... total: N`` lines of ``coverage/show`` as ``cov_<name>``."""
    return {f"cov_{m.group(1)}": float(m.group(2))
            for m in re.finditer(r"^(\w+)\s+.*total:\s*(\d+)", text, re.M)}



def parse_dpctl_ports(text: str) -> dict[str, float]:
    """Per-port counters of ``dpctl/show -s`` as ``port_<name>_<rx|tx>_<packets|errors|dropped>``.

    On the userspace datapath ``tx_dropped`` includes frames OVS could not hand
    to the device (its AF_PACKET send failed), which the qdisc never sees.
    """
    out: dict[str, float] = {}
    port = None
    for line in text.splitlines():
        m = re.match(r"^\s*port \d+: (\S+)", line)
        if m:
            port = m.group(1)
            continue
        m = re.match(r"^\s*(RX|TX) packets:(\d+) errors:(\d+) dropped:(\d+)", line)
        if m and port:
            d = m.group(1).lower()
            out[f"port_{port}_{d}_packets"] = float(m.group(2))
            out[f"port_{port}_{d}_errors"] = float(m.group(3))
            out[f"port_{port}_{d}_dropped"] = float(m.group(4))
    return out


def parse_pmd_perf(text: str) -> dict[str, float]:
    """Summary of ``dpif-netdev/pmd-perf-show`` summed over PMD threads (``pmdperf_*``).

    Per thread it reads: iterations and us/iteration, used TSC cycles, busy
    iterations, Rx packets and cycles/pkt, upcalls and us/upcall, Tx packets
    and packets per batch.  Averages are weighted by packets (or upcalls).
    """
    out: dict[str, float] = {}
    threads = re.split(r"^pmd thread ", text, flags=re.M)[1:]
    cyc_w = up_w = 0.0
    for t in threads:
        def grab(pattern):
            m = re.search(pattern, t, re.M)
            return float(m.group(1)) if m else None
        it = grab(r"Iterations:\s+(\d+)")
        rx = grab(r"Rx packets:\s+(\d+)")
        cpp = grab(r"Rx packets:\s+\d+\s+\(.*?(\d+) cycles/pkt\)")
        up = grab(r"- Upcalls:\s+(\d+)")
        us_up = grab(r"- Upcalls:\s+\d+\s+\(.*?([0-9.]+) us/upcall\)")
        lost = grab(r"Lost upcalls:\s+(\d+)")
        tx = grab(r"Tx packets:\s+(\d+)")
        busy = grab(r"busy iterations:\s+(\d+)")
        for k, v in (("iterations", it), ("rx_packets", rx), ("upcalls", up),
                     ("lost_upcalls", lost), ("tx_packets", tx), ("busy_iterations", busy)):
            if v is not None:
                out[f"pmdperf_{k}"] = out.get(f"pmdperf_{k}", 0.0) + v
        if cpp is not None and rx:
            out["pmdperf_cycles_per_packet"] = out.get("pmdperf_cycles_per_packet", 0.0) + cpp * rx
            cyc_w += rx
        if us_up is not None and up:
            out["pmdperf_us_per_upcall"] = out.get("pmdperf_us_per_upcall", 0.0) + us_up * up
            up_w += up
    if cyc_w:
        out["pmdperf_cycles_per_packet"] /= cyc_w
    if up_w:
        out["pmdperf_us_per_upcall"] /= up_w
    return out


def parse_packet_sockets(text: str) -> dict[str, float]:
    """``afpacket_<dev>_drops`` (skmem ``d``) and ``afpacket_<dev>_rx_queue`` per bound device."""
    out: dict[str, float] = {}
    for m in re.finditer(r"^p_raw\s+\S+\s+(\d+)\s+\d+\s+\S*?:(\S+)\s+.*?skmem:\(([^)]*)\)",
                         text, re.M):
        dev = m.group(2)
        if dev == "*":
            continue
        mem = dict(re.findall(r"([a-z]+)(\d+)", m.group(3)))
        out[f"afpacket_{dev}_drops"] = out.get(f"afpacket_{dev}_drops", 0.0) + float(mem.get("d", 0))
        out[f"afpacket_{dev}_rx_queue"] = out.get(f"afpacket_{dev}_rx_queue", 0.0) + float(m.group(1))
    return out
