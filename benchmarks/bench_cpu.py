"""CPU package speed (issue 16): what the thread scheduler costs where threads <= cores.

The scheduler is meant to cost nothing where nothing contends.  This runs the thesis testbed (seed 000's KVM +
OVS path, 4-core hosts, built by ``ovssim.topology`` and run by ``ovssim.runner``) with (a) one iperf UDP
stream at 95 Mbit/s and (b) bench_tcp's TCP_STREAM, each twice in alternation: with its hosts' ``schedule_threads`` off
(the work-conserving pool: every CPU cost served on its key's core) and on (the tools' processes, vhost and
the vCPUs as threads scheduled on the cores -- fewer threads than cores here).  Both are today's code, measured
in the same run; prints the median wall times and the ratio on / off (target <= 1.3x) with the load average (a
shared machine: read the ratio, not the seconds).  The simulated results differ only where placement does.
Run: .venv/bin/python benchmarks/bench_cpu.py [--rounds N]
"""
from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench_tcp  # noqa: E402

UDP = {"name": "udp", "tool": "iperf", "proto": "udp", "from": "vm1", "to": "vm2", "b": "95mbit", "l": "1470b",
       "t": f"{bench_tcp.DURATION}s"}


def scenario(workload: str, threads: bool) -> dict:
    sc = bench_tcp.thesis_scenario()
    if workload == "udp":
        sc["workload"] = [UDP]
    for h in sc["host"]:
        h["schedule_threads"] = threads
    return sc


def timed(workload: str, threads: bool) -> tuple[float, float]:
    """(wall s, throughput Mbit/s) of one replication."""
    from ovssim.profile import Profile
    from ovssim.runner import run_replication
    from ovssim.scenario import load_scenario
    sc = load_scenario(scenario(workload, threads))
    prof = Profile.load(sc.profile, relative_to=sc.base_dir)
    t0 = time.perf_counter()
    rows, _, _ = run_replication(sc, prof, 0, 1)
    wall = time.perf_counter() - t0
    thr = next((r["value"] for r in rows if r["metric"] == "throughput"), float("nan"))
    return wall, thr


def main() -> None:
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 3
    print(f"load average before: {os.getloadavg()[0]:.2f} (1 min)")
    for workload, label in (("udp", "thesis path, iperf UDP (a)"), ("tcp", "thesis path, TCP_STREAM (b)")):
        runs: dict[bool, list] = {False: [], True: []}
        for _ in range(rounds):
            for threads in (False, True):
                runs[threads].append(timed(workload, threads))
        off = statistics.median(w for w, _ in runs[False])
        on = statistics.median(w for w, _ in runs[True])
        print(f"{label:30s}: scheduler on {on:6.3f} s, off {off:6.3f} s, ratio on/off {on / off:5.2f}x "
              f"(target <= 1.3x); {runs[True][0][1]:.2f} vs {runs[False][0][1]:.2f} Mbit/s")
    print(f"load average after: {os.getloadavg()[0]:.2f} (1 min)")


if __name__ == "__main__":
    main()
