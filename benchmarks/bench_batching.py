"""Batching benchmark (issue 15): one bulk TCP at 10 Gbit/s for 10 simulated s through veth + OVS + veth.

Two containers (``container-veth``) on one OVS bridge (kernel datapath), the receiver's port shaped to
10 Gbit/s by HTB, one iperf TCP flow, default profile.  Run twice in the same process:

* offloads on (the veths' Linux defaults: TSO, so 64 KB GSO skbs cross the path whole);
* ``tx off`` on the containers' interfaces (TSO off: each skb is cut into 1448-byte segments in
  software and every frame crosses the path on its own -- the per-segment path of before).

Prints, for each: goodput, wall and CPU time, events scheduled and Python function calls per MB
moved (counted in a second run under cProfile), the events split by the function that scheduled them,
and the ratios between the two.  Target: offloads on,
<= 5 s wall.  Asserts nothing; on a shared machine repeat it and report the spread.
Run: .venv/bin/python benchmarks/bench_batching.py [--seconds 10]
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def scenario(seconds: float, offloads: bool) -> dict:
    vm = {"host": "h", "vif": "container-veth", "bridge": "br"}
    if not offloads:
        vm["features"] = {"tx-checksumming": False}
    return {
        "scenario": {"name": "bench-batching", "duration": f"{seconds}s", "reps": 1, "seed": 1,
                     "profile": "default"},
        "host": [{"name": "h", "cores": 2}],
        "bridge": [{"name": "br", "host": "h", "kind": "ovs"}],
        "vm": [{"name": "a", **vm},
               {"name": "b", **vm, "qdisc": {"kind": "htb", "default": "1", "classes": [
                   {"classid": "1:1", "parent": "1:", "rate": "10gbit", "ceil": "10gbit"}]}}],
        "workload": [{"name": "tcp", "tool": "iperf", "proto": "tcp", "from": "a", "to": "b",
                      "t": f"{seconds}s"}],
    }


def run_once(seconds: float, offloads: bool) -> tuple[float, float, float]:
    """(wall s, CPU s, goodput Mbit/s)."""
    from ovssim.profile import Profile
    from ovssim.runner import run_replication
    from ovssim.scenario import load_scenario
    sc = load_scenario(scenario(seconds, offloads))
    prof = Profile.load(sc.profile, relative_to=sc.base_dir)
    c0, t0 = time.process_time(), time.perf_counter()
    rows, _, _ = run_replication(sc, prof, 0, 1)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    thr = next(r["value"] for r in rows if r["workload"] == "tcp" and r["metric"] == "throughput")
    return wall, cpu, thr


def counts(seconds: float, offloads: bool) -> tuple[int, int, dict]:
    """(events scheduled, Python function calls, events by the function that scheduled them) of one
    run, counted under cProfile."""
    from ovssim.profile import Profile
    from ovssim.runner import run_replication
    from ovssim.scenario import load_scenario
    sc = load_scenario(scenario(seconds, offloads))
    prof = Profile.load(sc.profile, relative_to=sc.base_dir)
    pr = cProfile.Profile()
    pr.enable()
    run_replication(sc, prof, 0, 1)
    pr.disable()
    st = pstats.Stats(pr)
    calls = sum(v[1] for v in st.stats.values())
    events = sum(v[1] for k, v in st.stats.items() if k[2] in ("<built-in method _heapq.heappush>",))
    by_origin: dict[str, int] = {}
    for (path, _line, func), v in st.stats.items():       # ovssim.sched's two ways onto the heap
        if path.endswith("sched.py") and func in ("call_at", "schedule"):
            for (cpath, _cl, cfunc), cv in v[4].items():
                name = f"{Path(cpath).stem}.{cfunc}"
                by_origin[name] = by_origin.get(name, 0) + cv[0]
    return events, calls, by_origin


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=10.0)
    a = ap.parse_args()
    res = {}
    for offloads in (True, False):
        wall, cpu, thr = run_once(a.seconds, offloads)
        mb = thr * a.seconds / 8                    # MB moved (goodput x time)
        ev, calls, by_origin = counts(a.seconds, offloads)
        res[offloads] = (wall, cpu, thr, ev / mb, calls / mb)
        label = "offloads on (64 KB GSO skbs)" if offloads else "tx off (1448-byte segments)"
        print(f"{label}: {thr:.0f} Mbit/s over {a.seconds:g} simulated s; wall {wall:.2f} s (CPU {cpu:.2f} s); "
              f"{ev / mb:.1f} events and {calls / mb:.0f} Python calls per MB moved")
        top = sorted(by_origin.items(), key=lambda kv: -kv[1])[:6]
        print("    events per MB by what scheduled them: " + ", ".join(f"{k} {n / mb:.1f}" for k, n in top))
    on, off = res[True], res[False]
    print(f"ratios tx-off / offloads-on: wall per MB {off[0] / off[2] / (on[0] / on[2]):.1f}x, "
          f"events per MB {off[3] / on[3]:.1f}x, calls per MB {off[4] / on[4]:.1f}x")
    from ovssim.collect.state import load_note
    print(load_note())
    # the target is for 10 simulated s: a shorter run is scaled to it (the run is steady after its start)
    per10 = on[0] * 10.0 / a.seconds
    scaled = "" if a.seconds == 10.0 else f", scaled from {a.seconds:g} simulated s"
    print(f"target (offloads on): wall <= 5 s per 10 simulated s -> {'met' if per10 <= 5.0 else 'not met'} "
          f"({per10:.2f} s{scaled})")


if __name__ == "__main__":
    main()
