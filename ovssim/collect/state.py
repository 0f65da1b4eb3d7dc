"""The state of the machine a campaign ran on: a short speed benchmark, load, steal, CPU frequency, versions.

A profile fitted on a busy machine predicts a quiet one too slow (issue 17).  So the collector records,
before and after every campaign, how fast the host was at the time:

* **veth ping-pong rate**: ``ping -f`` (flood: the next echo request leaves as soon as the reply is in)
  between two network namespaces joined by a veth pair that this module creates and deletes.  Over a
  veth pair the echo request is delivered and answered in the sender's softirq (``veth_xmit`` ->
  ``__netif_rx``; ``icmp_echo`` replies from ``net/ipv4/icmp.c`` without waking a process), so the rate
  measures the kernel's per-packet path cost on one core plus the ping process's own send/receive calls.
  Its mean RTT (``veth_pingpong_rtt_us``) is one echo's work on a warm core: what the spaced ping below runs
  cold (:mod:`ovssim.validate.cold`).
* **spaced veth ping RTT**: ``ping -c 30 -i 0.01`` over the same pair -- one echo every 10 ms, so each finds
  the cores as a real workload's packets do (an idle core halted, a busy one running another task): the
  wake-up latencies the hot ping-pong never pays, which moved by x3 between two quiet evenings of one speed
  index on this machine.  Reported (median of the repeats' mean RTT, microseconds), not part of the index.
  Less the hot ping-pong's time per exchange it is the **idle exit** (``idle_exit_us``): what a core idle
  for a tick or more adds before its next work (profile ``host.idle_exit``, :mod:`ovssim.cpu.pool`).
* **idle ladder**: the same pair pinged :data:`LADDER_PINGS` times at each spacing of :data:`LADDER` (0.5-20 ms),
  once per measurement: the median RTT over the spacing is a staircase, one step per idle state a halted core
  reaches (``veth_ping_ladder_us``: [spacing in ms, median RTT in us] per rung).  :mod:`ovssim.fit.idle_states`
  reads the shallow and deep states' residencies and the shallow exit from it (profile ``host.shallow_after``,
  ``host.idle_exit_after``, ``host.shallow_exit``; ``[state]`` ``shallow_after_ms``, ``idle_exit_after_ms``,
  ``shallow_exit_us``).
* **CPU loop rate**: SHA-256 over a fixed 1 MiB buffer (OpenSSL's C code through :mod:`hashlib`,
  independent of the Python version), timed by the wall clock so a shared core shows as a slower host.
* **memory copy rate**: MiB/s of copying a 64 MiB buffer (a C ``memmove``, far beyond any cache), timed by
  the wall clock.  What a bulk flow of 64 KB skbs spends most of its CPU on is copies (``copy_from_user`` into
  the socket, ``copy_to_user`` out of it): on this machine the same Linux-bridge TSO flow, the client at one
  core both times, carried 41.5 Gbit/s on 25 Nov and 23.0 on 27 Nov at speed indices 1.02 and 0.93, while its
  offloads-off runs (per-packet work) moved 5 %.  The CPU loop and the ping-pong run in cache and cannot see
  a change of memory bandwidth; this can.  Reported, not part of the index.
* **system call**: microseconds per ``getppid()`` (``os.getppid``, no cache in glibc: a trap into the kernel
  and back) over :data:`SYSCALLS` calls.  On a host a fraction of a microsecond; in a user-mode-Linux
  instance every call is a ptrace round trip through the host, 15-49 us as the host's state allows
  (data/uml/2026-11-28/uml-cpucost), and a request/response tool pays four per transaction (profile
  ``app.syscall``).  Reported, not part of the index.
* ``/proc/loadavg``, the steal share of ``/proc/stat`` during the benchmark, the CPU frequency
  (``cpufreq/scaling_cur_freq``, else ``/proc/cpuinfo``'s ``cpu MHz``), kernel and OVS versions.

Each benchmark is repeated (:data:`REPEATS`) and reported with its median and relative spread
((max - min) / median), so a reader sees how far one figure can be trusted.  The **speed index** is the
geometric mean of the two medians relative to :data:`REFERENCE` (this project's local testbed host,
quiet); 1.0 is that host, 2.0 a host twice as fast.  Profiles store the index of the data they were
fitted on (:mod:`ovssim.profile`, ``[state]``) and scale CPU costs by the ratio of indices.
"""
from __future__ import annotations

import hashlib
import math
import os
import platform
import re
import statistics
import time
from datetime import datetime, timezone
from pathlib import Path

from .shell import CommandError, run, tool_version, which

REPEATS = 3
PINGS = 20000                  # per repeat: ~0.15 s on the reference host
CPU_SECONDS = 0.25             # per repeat
CPU_BLOCK = bytes(1 << 20)
COPY_BYTES = 64 << 20          # the memory copy's buffer: far beyond the last-level cache
COPY_SECONDS = 0.25            # per repeat
SYSCALLS = 5000                # per repeat: ~1 ms on a host, ~0.1 s in a UML instance
# The reference host (speed index 1.0): the 2-core KVM guest (Intel, 2.6 GHz) the local campaigns ran on, the
# rounded medians of this module's first measurement there (2026-11-25, 00:10 UTC, load average 1.6); later
# measurements of the same host gave indices 0.56-0.83 under the other jobs' load and 0.97-1.11 at load 1.4-1.9.
REFERENCE = {"veth_pingpong_per_s": 140_000.0, "cpu_sha256_mib_per_s": 1800.0}
SPACED_PINGS = 30             # per repeat, one every SPACED_INTERVAL: 0.3 s
SPACED_INTERVAL = 0.01
# the idle ladder's spacings (s), around this machine's steps (3-4 and 8-10 ms, data/local/2026-11-28-chainping),
# and pings per rung: 20 x 69 ms, 1.4 s per measurement
LADDER = (0.0005, 0.002, 0.003, 0.004, 0.006, 0.008, 0.01, 0.015, 0.02)
LADDER_PINGS = 20
_TIME_MS = re.compile(r"\btime (\d+)ms")
_RTT_AVG = re.compile(r"= [\d.]+/([\d.]+)/")
_RECEIVED = re.compile(r"(\d+) received")
_TIME_EACH = re.compile(r"\btime=([\d.]+) ms")


def _steal_jiffies() -> tuple[float, float]:
    """(steal, total) jiffies over all cores from the ``cpu`` line of /proc/stat (steal: 8th field)."""
    with open("/proc/stat") as fh:
        v = [float(x) for x in fh.readline().split()[1:]]
    return (v[7] if len(v) > 7 else 0.0), sum(v[:8])


def cpu_frequency_mhz() -> float | None:
    """Mean current frequency of the cores in MHz, or None where the kernel does not expose it."""
    freqs = []
    for f in Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_cur_freq"):
        try:
            freqs.append(float(f.read_text()) / 1000.0)
        except (OSError, ValueError):
            pass
    if not freqs:
        try:
            freqs = [float(line.split(":", 1)[1]) for line in open("/proc/cpuinfo") if line.startswith("cpu MHz")]
        except (OSError, ValueError):
            freqs = []
    return round(statistics.fmean(freqs), 1) if freqs else None


def cpu_loop_rate(seconds: float = CPU_SECONDS) -> float:
    """MiB/s of SHA-256 over a fixed buffer for ``seconds`` of wall time."""
    n, t0 = 0, time.perf_counter()
    while True:
        hashlib.sha256(CPU_BLOCK).digest()
        n += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            return n / elapsed


def memory_copy_rate(seconds: float = COPY_SECONDS, size: int = COPY_BYTES) -> float:
    """MiB/s copied from one ``size``-byte buffer into another for ``seconds`` of wall time."""
    src, dst = bytearray(size), bytearray(size)
    view = memoryview(dst)
    n, t0 = 0, time.perf_counter()
    while True:
        view[:] = src
        n += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            return n * size / (1 << 20) / elapsed


def syscall_us(calls: int = SYSCALLS) -> float:
    """Microseconds per system call: ``getppid()`` ``calls`` times (the loop's own Python work included, some
    50 ns a call)."""
    getppid = os.getppid
    t0 = time.perf_counter()
    for _ in range(calls):
        getppid()
    return (time.perf_counter() - t0) / calls * 1e6


NS_PREFIX = "ovssim-state"
_NS = re.compile(rf"^({NS_PREFIX}(\d+)[ab])\b", re.M)


class VethPair:
    """Two namespaces joined by a veth pair (addresses exist only inside them); a context manager.
    They are named by this process's id, so :func:`reap_stale` can remove those of a killed collector."""

    def __init__(self):
        self.ns = (f"{NS_PREFIX}{os.getpid()}a", f"{NS_PREFIX}{os.getpid()}b")
        self.addr = ("10.254.0.1", "10.254.0.2")

    def __enter__(self):
        try:
            for ns in self.ns:
                run(["ip", "netns", "add", ns])
            a, b = self.ns
            run(["ip", "-n", a, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", b])
            for ns, ip in zip(self.ns, self.addr):
                run(["ip", "-n", ns, "addr", "add", f"{ip}/30", "dev", "eth0"])
                run(["ip", "-n", ns, "link", "set", "eth0", "up"])
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        for ns in self.ns:
            if Path(f"/run/netns/{ns}").exists():
                run(["ip", "netns", "del", ns], check=False)


def reap_stale() -> list[str]:
    """Delete benchmark namespaces whose process died (a collector killed during :func:`measure`)."""
    reaped = []
    for ns, pid in _NS.findall(run(["ip", "netns", "list"], check=False, timeout=10).stdout):
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            run(["ip", "netns", "del", ns], check=False)
            reaped.append(ns)
        except PermissionError:
            pass
    return reaped


def veth_pingpong(pair: VethPair, count: int = PINGS) -> tuple[float, float | None]:
    """Echo round trips per second of ``ping -f -c count`` across ``pair`` (ping's own elapsed time), and their
    mean RTT in microseconds (the warm work of one echo, ovssim/validate/cold.py; None if ping printed none)."""
    res = run(["ip", "netns", "exec", pair.ns[0], "ping", "-f", "-q", "-c", str(count), pair.addr[1]],
              timeout=60)
    got, ms = _RECEIVED.search(res.stdout), _TIME_MS.search(res.stdout)
    if not got or not ms or int(ms.group(1)) == 0:
        raise CommandError(res.argv, res.returncode, f"unexpected ping output: {res.stdout[-200:]}")
    avg = _RTT_AVG.search(res.stdout)
    return int(got.group(1)) / (int(ms.group(1)) / 1000.0), float(avg.group(1)) * 1000.0 if avg else None


def veth_ping_rtt(pair: VethPair, count: int = SPACED_PINGS, interval: float = SPACED_INTERVAL) -> float:
    """Mean echo RTT in microseconds of ``count`` pings ``interval`` s apart across ``pair``."""
    res = run(["ip", "netns", "exec", pair.ns[0], "ping", "-q", "-c", str(count), "-i", f"{interval:g}",
               pair.addr[1]], timeout=60)
    avg = _RTT_AVG.search(res.stdout)
    if not avg:
        raise CommandError(res.argv, res.returncode, f"unexpected ping output: {res.stdout[-200:]}")
    return float(avg.group(1)) * 1000.0


def veth_ping_rtts(pair: VethPair, count: int, interval: float) -> list[float]:
    """Each echo's RTT in microseconds of ``count`` pings ``interval`` s apart across ``pair``."""
    res = run(["ip", "netns", "exec", pair.ns[0], "ping", "-c", str(count), "-i", f"{interval:g}", pair.addr[1]],
              timeout=60)
    rtts = [float(m) * 1000.0 for m in _TIME_EACH.findall(res.stdout)]
    if not rtts:
        raise CommandError(res.argv, res.returncode, f"unexpected ping output: {res.stdout[-200:]}")
    return rtts


def idle_ladder(pair: VethPair, spacings=LADDER, count: int = LADDER_PINGS) -> list[list[float]]:
    """[spacing in ms, median echo RTT in us] of ``count`` pings at each of ``spacings`` (s) across ``pair``: the
    median, so that one late echo (the rung's first, or one the scheduler delayed) does not make a step."""
    return [[round(s * 1e3, 3), round(statistics.median(veth_ping_rtts(pair, count, s)), 1)] for s in spacings]


def ladder_levels(bench: dict):
    """The idle states (:class:`ovssim.fit.idle_states.IdleLevels`) of a measurement's idle ladder, or None
    where it has none (campaigns before 28 Nov) or its RTTs do not step up with the spacing."""
    from ..fit.idle_states import idle_levels
    rungs = bench.get("veth_ping_ladder_us")
    if not rungs:
        return None
    try:
        return idle_levels([(ms * 1e-3, us, LADDER_PINGS) for ms, us in rungs], "the idle ladder")
    except ValueError:
        return None


def spread(values: list[float]) -> dict:
    """Median, min, max and relative spread ((max - min) / median) of repeated figures."""
    med = statistics.median(values)
    return {"median": med, "min": min(values), "max": max(values),
            "rel_spread": (max(values) - min(values)) / med if med else float("nan"),
            "values": [round(v, 1) for v in values]}


def idle_exit_us(bench: dict) -> float | None:
    """The spaced ping's RTT less the hot ping-pong's time per exchange (microseconds, >= 0): the latency a
    core idle for 10 ms adds to the same work.  None where either was not measured (campaigns before 27 Nov)."""
    rtt, rate = bench.get("veth_ping_rtt_us"), bench.get("veth_pingpong_per_s")
    if not rtt or not rate or not rate.get("median"):
        return None
    return max(0.0, rtt["median"] - 1e6 / rate["median"])


def speed_index(bench: dict) -> float:
    """Geometric mean of the benchmark medians relative to :data:`REFERENCE` (1.0: the reference host)."""
    ratios = [bench[k]["median"] / ref for k, ref in REFERENCE.items() if k in bench]
    return math.exp(statistics.fmean(math.log(r) for r in ratios))


def measure(repeats: int = REPEATS, *, pings: int = PINGS, cpu_seconds: float = CPU_SECONDS,
            copy_seconds: float = COPY_SECONDS, ladder: bool = True) -> dict:
    """The machine's state now: speed benchmark (repeated), index, memory copy rate, the idle ladder (once,
    unless ``ladder`` is False), load, steal, frequency, versions."""
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    load = os.getloadavg()
    s0 = _steal_jiffies()
    t0 = time.perf_counter()
    ping_rates, hot_rtts, cpu_rates, rtts, copies, calls = [], [], [], [], [], []
    with VethPair() as pair:
        run(["ip", "netns", "exec", pair.ns[0], "ping", "-c", "1", "-W", "1", pair.addr[1]], check=False)
        for _ in range(repeats):
            rate, hot = veth_pingpong(pair, pings)
            ping_rates.append(rate)
            if hot is not None:
                hot_rtts.append(hot)
            cpu_rates.append(cpu_loop_rate(cpu_seconds))
            rtts.append(veth_ping_rtt(pair))
            copies.append(memory_copy_rate(copy_seconds))
            calls.append(syscall_us())
        ladder = idle_ladder(pair) if ladder else None
    s1 = _steal_jiffies()
    bench = {"veth_pingpong_per_s": spread(ping_rates), "cpu_sha256_mib_per_s": spread(cpu_rates),
             "veth_ping_rtt_us": spread(rtts), "memcpy_mib_per_s": spread(copies), "syscall_us": spread(calls)}
    if ladder:
        bench["veth_ping_ladder_us"] = ladder
    if hot_rtts:
        bench["veth_pingpong_rtt_us"] = spread(hot_rtts)
    return {
        "time": started,
        "benchmark_seconds": round(time.perf_counter() - t0, 2),
        "benchmark": bench,
        "speed_index": round(speed_index(bench), 4),
        "idle_exit_us": round(idle_exit_us(bench), 1),
        "loadavg": [round(x, 2) for x in load],
        "steal_share": round((s1[0] - s0[0]) / (s1[1] - s0[1]), 4) if s1[1] > s0[1] else 0.0,
        "cpu_mhz": cpu_frequency_mhz(),
        "cpu_count": os.cpu_count(),
        "kernel": platform.release(),
        "ovs": tool_version(["ovs-vswitchd", "--version"]) if which("ovs-vswitchd") else "",
    }


def describe(state: dict) -> str:
    """One line: index, the two rates with their spread, the spaced ping and the memory copy rate where
    measured (older campaigns lack them), load, steal, frequency."""
    b = state["benchmark"]
    p, c = b["veth_pingpong_per_s"], b["cpu_sha256_mib_per_s"]
    mhz = f", {state['cpu_mhz']:.0f} MHz" if state.get("cpu_mhz") else ""
    return (f"speed index {state['speed_index']:.3f} (veth ping-pong {p['median']:,.0f}/s "
            f"±{50 * p['rel_spread']:.0f}%, CPU loop {c['median']:,.0f} MiB/s ±{50 * c['rel_spread']:.0f}%)"
            + (f", spaced ping {b['veth_ping_rtt_us']['median']:.0f} us (idle exit {idle_exit_us(b):.0f} us)"
               if "veth_ping_rtt_us" in b else "")
            + (f", memory copy {b['memcpy_mib_per_s']['median']:,.0f} MiB/s ±{50 * b['memcpy_mib_per_s']['rel_spread']:.0f}%"
               if "memcpy_mib_per_s" in b else "")
            + (f", system call {b['syscall_us']['median']:.2f} us" if "syscall_us" in b else "")
            + _ladder_note(b) + ", "
            f"load {' '.join(f'{x:.2f}' for x in state['loadavg'])}, steal {100 * state['steal_share']:.1f}%{mhz}")


def _ladder_note(bench: dict) -> str:
    lv = ladder_levels(bench)
    if lv is None:
        return ", idle ladder without steps" if bench.get("veth_ping_ladder_us") else ""
    return (f", idle states from {lv.shallow_after * 1e3:.1f} and {lv.deep_after * 1e3:.1f} ms "
            f"(ping {' / '.join(f'{v:.0f}' for v in lv.levels_us)} us)")


def load_note() -> str:
    """One line for a benchmark's output: the load now, and what it means for its wall times."""
    one, five, fifteen = os.getloadavg()
    return (f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores "
            f"(above the core count wall time also measures the other processes: compare CPU times)")


def campaign_states(meta: dict) -> dict:
    """The ``machine_state`` of a campaign's metadata: ``{"before": ..., "after": ...}`` (either may lack)."""
    return meta.get("machine_state") or {}


if __name__ == "__main__":      # pragma: no cover - a quick look: python -m ovssim.collect.state
    print(describe(measure()))
