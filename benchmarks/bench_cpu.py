"""CPU package speed (issue 16): bench_core's and bench_tcp's paths with today's pool vs the pool before issue 16.

The scheduler is meant to cost nothing where threads <= cores and nothing
contends.  This runs (a) bench_core's UDP path (KVM guest -> VIF -> OVS -> NIC)
and (b) bench_tcp's full thesis path, each with ``ovssim.cpu.CpuPool`` and with
the work-conserving pool as it was before the CPU package (read from git, the
parent of the commit that created ``ovssim/cpu/pool.py``, and loaded as a module:
the old pool measured in the same run).  Runs alternate, ``--rounds`` each (default
3); prints the median wall times and the ratio new / old (target <= 1.3x), with
the load average (a shared machine: read the ratio, not the seconds).
Run: .venv/bin/python benchmarks/bench_cpu.py [--rounds N]
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_core  # noqa: E402
import bench_tcp  # noqa: E402
import ovssim.topology as topology  # noqa: E402
from ovssim.cpu import CpuPool  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def old_pool_class():
    """``CpuPool`` as ovssim/path/cpu.py defined it before ovssim/cpu existed (from git)."""
    git = ["git", "-C", str(ROOT)]
    first = subprocess.run(git + ["log", "--format=%H", "--reverse", "--", "ovssim/cpu/pool.py"],
                           capture_output=True, text=True, check=True).stdout.split()[0]
    src = subprocess.run(git + ["show", f"{first}^:ovssim/path/cpu.py"],
                         capture_output=True, text=True, check=True).stdout
    mod = types.ModuleType("ovssim_old_cpu")
    exec(compile(src, "old ovssim/path/cpu.py", "exec"), mod.__dict__)
    # the API today's callers ask of a pool, answered as a pool without threads does
    mod.CpuPool.run_queue_delay = lambda self: {}
    mod.CpuPool.app_thread = lambda self, *a, **k: None
    mod.CpuPool.schedule_threads = False
    return mod.CpuPool


def timed(pool_cls) -> tuple[float, float]:
    bench_core.CpuPool = topology.CpuPool = pool_cls
    try:
        _, udp_wall = bench_core.bench_ovssim()
        _, tcp_wall, *_ = bench_tcp.bench_full_path()
    finally:
        bench_core.CpuPool = topology.CpuPool = CpuPool
    return udp_wall, tcp_wall


def main() -> None:
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 3
    old = old_pool_class()
    runs = {"new": [], "old": []}
    for _ in range(rounds):
        runs["new"].append(timed(CpuPool))
        runs["old"].append(timed(old))
    print(f"load average before/after: {os.getloadavg()[0]:.2f} (1 min)")
    for i, name in enumerate(["bench_core UDP path (a)", "bench_tcp full path (a)"]):
        new = statistics.median(r[i] for r in runs["new"])
        was = statistics.median(r[i] for r in runs["old"])
        spread = max(r[i] for r in runs["new"]) - min(r[i] for r in runs["new"])
        print(f"{name:26s}: new {new:6.3f} s  old {was:6.3f} s  ratio new/old {new / was:5.2f}x "
              f"(target <= 1.3x; new spread {spread:.3f} s over {rounds})")


if __name__ == "__main__":
    main()
