"""Sweep benchmarks: the thesis matrix at a stated precision, projection, scaling, bounded memory.  Prints figures.

    .venv/bin/python benchmarks/bench_sweep.py precision       # the thesis matrix to 1 % / 5 % CIs (target <= 5 min)
    .venv/bin/python benchmarks/bench_sweep.py                 # all parts (~15 min on 2 idle cores)
    .venv/bin/python benchmarks/bench_sweep.py matrix --sample-duration 2s
    .venv/bin/python benchmarks/bench_sweep.py matrix --full    # really run the 3600-run thesis matrix
    .venv/bin/python benchmarks/bench_sweep.py scaling --runs 48
    .venv/bin/python benchmarks/bench_sweep.py memory --runs 10000

precision  answers the thesis matrix (all 36 cells of examples/sweep_thesis.toml, 10 s simulated per run) with
         sequential replications: every cell until the 95 % CI half-width of throughput, transactions and
         latency is <= 1 % of the mean and of jitter <= 5 % (min 3, max 100 replications; jitter's mean
         estimated by jitter_mean, the run's steady-state mean |D| -- --final-jitter watches iperf's
         final J instead, ~60 replications a UDP cell); prints the
         replications each cell took, the CI widths reached, the wall time against the 5-minute target,
         and the fixed 100-replication matrix's time projected from the same runs' CPU seconds.
matrix   runs one replication of each point of examples/sweep_thesis.toml (6 schedulers x OVS/Linux
         bridge x TCP_STREAM/TCP_RR/UDP) at a shorter simulated duration, scales each run's cost
         linearly to the thesis's 10 s, and projects the full 100-replication matrix on N workers.
scaling  the same fixed set of runs in-process (the 1-worker baseline), on a 2-process local pool and
         on a 2-worker Dask LocalCluster; efficiency = T1 / (N * TN).  The figure includes each
         executor's start-up, so it is a lower bound for long sweeps.
memory   a sweep of many tiny runs on the local pool; the coordinator's resident memory (and the
         workers') at every tenth of the sweep, to show it does not grow with finished runs.

The machine is shared: the load average is printed beside every timing.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ovssim import units  # noqa: E402
from ovssim.sweep import iter_records, load_sweep, run_sweep, run_task, sweep_from_dict  # noqa: E402

THESIS = ROOT / "examples" / "sweep_thesis.toml"


def load() -> str:
    return "load %.2f %.2f %.2f" % os.getloadavg()


def rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def children(pid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as fh:
                    if int(fh.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(d))
            except (OSError, IndexError, ValueError):
                pass
    return out


def tree_rss(pid: int) -> int:
    todo, total = [pid], 0
    while todo:
        p = todo.pop()
        total += rss_kib(p)
        todo += children(p)
    return total


# --------------------------------------------------------------------------- precision

PRECISION = {"throughput": 0.01, "transactions": 0.01, "rtt_mean": 0.01, "jitter_mean": 0.05}
SHOWN = ("throughput", "transactions", "rtt_mean", "jitter_mean", "jitter")


def bench_precision(workers: int, out: Path | None, min_reps: int, max_reps: int, final_jitter: bool) -> None:
    """Jitter's mean is estimated by ``jitter_mean`` (the steady-state mean |D| of the run, whose expectation
    is that of iperf's final J); ``final_jitter`` watches iperf's final J itself, as the thesis averaged it."""
    import pandas as pd

    from ovssim.sequential import Precision
    sw = load_sweep(THESIS)
    fixed_reps = sw.reps
    watched = dict(PRECISION)
    if final_jitter:
        watched["jitter"] = watched.pop("jitter_mean")
    sw.precision = Precision(watched, {}, min_reps, max_reps)
    target = out or Path(tempfile.mkdtemp(prefix="bench-precision-"))
    print(f"thesis matrix at a stated precision: {len(sw.points)} cells, 95% CI half-width <= "
          + ", ".join(f"{v:.0%} ({k})" for k, v in watched.items())
          + f"; {min_reps}..{max_reps} replications of {sw.fixed.get('scenario.duration')} on {workers} workers"
          f" ({load()})")
    t0 = time.perf_counter()
    rep = run_sweep(sw, target, workers=workers, progress=sys.stderr.isatty())
    dt = time.perf_counter() - t0
    assert not rep.failed, rep.failed[:1]
    summ = pd.read_csv(target / "summary.csv")
    summ = summ[summ["metric"].isin(SHOWN)]
    summ = summ.assign(rel_half=(summ["ci95_high"] - summ["ci95_low"]) / 2 / summ["mean"].abs())
    print(f"  {'cell':58} {'reps':>4}  {'reason':17} CI half-width / mean reached")
    for p in sw.points:
        st = rep.stopping[p.id]
        rows = summ[summ["point"] == p.id]
        widths = "  ".join(f"{r.metric} {r.rel_half:.3%}" for r in rows.itertuples())
        label = p.label.replace("qdisc=", "").replace("workload=", "")
        print(f"  {label[:58]:58} {st.reps:4d}  {st.reason:17} {widths}")
    reps = [rep.stopping[p.id].reps for p in sw.points]
    within = sum(rep.stopping[p.id].reason == "precision reached" for p in sw.points)
    cpu = sum(r.get("cpu", 0.0) for r in iter_records(target))
    print(f"{len(sw.points)} cells, {sum(reps)} runs ({min(reps)}..{max(reps)} per cell, mean {sum(reps) / len(reps):.1f}); "
          f"{within}/{len(sw.points)} cells within precision; worst reached per metric (watched: "
          f"{', '.join(watched)}): "
          + ", ".join(f"{m} {g.max():.3%}" for m, g in summ.groupby("metric")["rel_half"]))
    print(f"wall {dt / 60:.2f} min on {workers} workers (target <= 5 min; {load()}); run CPU {cpu:.0f} s "
          f"({cpu / max(1, sum(reps)):.2f} s/run; wall/CPU x workers = {dt * workers / max(cpu, 1e-9):.2f})")
    per_run = cpu / max(1, sum(reps))
    print(f"the fixed {fixed_reps}-replication matrix: {len(sw.points) * fixed_reps} runs, projected "
          f"{per_run * len(sw.points) * fixed_reps / workers / 60:.1f} min on {workers} dedicated workers at the same "
          f"CPU s/run -- {len(sw.points) * fixed_reps / max(1, sum(reps)):.1f}x the runs; results in {target}")
    if out is None:
        shutil.rmtree(target, ignore_errors=True)


# --------------------------------------------------------------------------- matrix

def bench_matrix(sample_duration: str, workers: int, full: bool, out: Path | None) -> None:
    sw = load_sweep(THESIS)
    full_dur = units.time(sw.fixed.get("scenario.duration", "10s"))
    print(f"thesis matrix: {len(sw.points)} points x {sw.reps} reps = {sw.total} runs of "
          f"{full_dur:g} s simulated ({THESIS.name})")
    if full:
        target = out or Path(tempfile.mkdtemp(prefix="bench-thesis-"))
        t0 = time.perf_counter()
        rep = run_sweep(sw, target, workers=workers, resume=True, progress=sys.stderr.isatty())
        dt = time.perf_counter() - t0
        print(f"full matrix: {rep.ran} runs in {dt / 60:.1f} min on {workers} workers "
              f"({rep.ran / dt:.3f} runs/s; {load()}); results in {target}")
        return
    d = units.time(sample_duration)
    scale = full_dur / d
    sample = sweep_from_dict({"sweep": {"reps": 1, "seed": sw.seed, "crn": sw.crn},
                              "set": {**sw.fixed, "scenario.duration": sample_duration},
                              "grid": {k: v for k, v in _grid_of(sw).items()}},
                             file=str(THESIS), base_dir=THESIS.parent, base_scenario=sw.base)
    per = {}
    print(f"sampling 1 replication of each point at {sample_duration} in-process ({load()}) ...")
    wall = 0.0
    for task in sample.tasks():
        t0, c0 = time.perf_counter(), time.process_time()
        rec = run_task(task)
        dt = time.process_time() - c0          # CPU time: what a dedicated core would take
        wall += time.perf_counter() - t0
        if rec["status"] != "ok":
            print(f"  {task.label}: not runnable ({rec['error']})")
            continue
        per[task.label] = dt
    ran = len(per)
    cpu = sum(per.values())
    print(f"{ran}/{len(sample.points)} points runnable; CPU {cpu:.1f} s, wall {wall:.1f} s (the machine is shared: "
          f"wall/CPU = {wall / cpu:.2f}); CPU seconds per run, scaled to {full_dur:g} s simulated:")
    groups = {}
    for label, dt in per.items():
        parts = dict(p.split("=", 1) for p in label.split(" ") if "=" in p)
        key = (parts.get("bridge", "?"), parts.get("workload", "?"))
        groups.setdefault(key, []).append(dt * scale)
    print(f"  {'bridge':8} {'test':8} {'mean s/run':>10} {'min':>7} {'max':>7}")
    for (br, wl), xs in sorted(groups.items()):
        print(f"  {br:8} {wl:8} {sum(xs) / len(xs):10.2f} {min(xs):7.2f} {max(xs):7.2f}")
    one_rep = sum(per.values()) * scale
    serial = one_rep * sw.reps
    print(f"one replication of the matrix: {one_rep:.0f} CPU s; throughput per dedicated worker "
          f"{ran / one_rep:.3f} runs/s ({ran / one_rep * full_dur:.2f} simulated s per s)")
    budget = 15 * 60 * 2 * 0.9 / (ran * sw.reps)
    print(f"the 15-minute target on 2 workers (efficiency 0.9) allows {budget:.2f} CPU s per {full_dur:g}-s run; "
          f"measured {one_rep / ran:.2f} on average ({one_rep / ran / budget:.1f}x the budget)")
    for w in sorted({1, 2, workers}):
        eff = 1.0 if w == 1 else 0.9
        print(f"projected full matrix ({ran * sw.reps} runs) on {w} worker(s) at efficiency {eff:.1f}: "
              f"{serial / (w * eff) / 60:.1f} min  (target <= 15 min on 2 workers)")


def _grid_of(sw) -> dict:
    """Rebuild a [grid] from a loaded sweep's points (keys in order, values deduplicated)."""
    grid: dict = {}
    for p in sw.points:
        for k, v in p.changes.items():
            vals = grid.setdefault(k, [])
            if v not in vals:
                vals.append(v)
    return grid


# --------------------------------------------------------------------------- scaling

def bench_scaling(runs: int, duration: str, dask: bool) -> None:
    sw0 = load_sweep(THESIS)
    udp = [v for v in _grid_of(sw0)["workload"] if v[0]["name"] == "udp"]
    qd = _grid_of(sw0)["vm.vm1.qdisc,vm.vm2.qdisc"]
    reps = -(-runs // len(qd))
    sw = sweep_from_dict({"sweep": {"reps": reps, "seed": 3},
                          "set": {"scenario.duration": duration, "workload": udp[0]},
                          "grid": {"vm.vm1.qdisc,vm.vm2.qdisc": qd}},
                         file=str(THESIS), base_dir=THESIS.parent, base_scenario=sw0.base)
    n = sw.total
    print(f"scaling: {n} runs of {duration} simulated (thesis UDP test) -- {load()}")
    tmp = Path(tempfile.mkdtemp(prefix="bench-scaling-"))
    times, overheads = {}, []
    try:
        configs = [("in-process, 1 worker", dict(workers=1), 1), ("local pool, 2 workers", dict(workers=2), 2)]
        if dask:
            configs.append(("Dask LocalCluster, 2 workers", dict(workers=2, dask="local:2"), 2))
        print(f"  {'executor':30} {'wall':>8} {'runs/s':>7} {'wall eff':>8} {'steady eff':>10} {'CPU-share eff':>13}  load")
        for name, kw, w in configs:
            out = tmp / name.split(",")[0].replace(" ", "_")
            stamps = []
            t0, c0 = time.perf_counter(), time.process_time()
            rep = run_sweep(sw, out, summary=False, on_run=lambda *_: stamps.append(time.perf_counter()), **kw)
            dt, coord = time.perf_counter() - t0, time.process_time() - c0
            assert rep.ran == n and not rep.failed, rep.failed[:1]
            cpu = sum(r.get("cpu", 0.0) for r in iter_records(out))
            if w == 1 and "dask" not in kw:
                coord -= cpu                      # in-process: the runs are the coordinator's own CPU
            overheads.append(f"  {name:30} run CPU {cpu:6.1f} s, coordinator CPU {max(coord, 0):5.2f} s "
                             f"({1e3 * max(coord, 0) / n:5.1f} ms/run)")
            # steady state: from the first w results (start-up over) to the last
            steady = (n - w) / (stamps[-1] - stamps[w - 1]) if n > w else float("nan")
            times[name] = (dt, w, cpu, steady)
            t1, _, cpu1, steady1 = times["in-process, 1 worker"]
            eff = t1 / (w * dt)
            share = (cpu / (w * dt)) / (cpu1 / t1)
            print(f"  {name:30} {dt:7.2f}s {n / dt:7.2f} {eff:8.2f} {steady / (w * steady1):10.2f} {share:13.2f}"
                  f"  {load()}")
        print("\n".join(overheads))
        print("  wall eff = T1 / (N x TN), start-up included; steady eff = the same on the rate between the first N"
              " results\n  and the last (start-up excluded); CPU-share eff = (run CPU / (N x TN)) / (run CPU / T1):"
              " the parallel\n  machinery's efficiency with the other users of this shared machine's cores factored"
              " out (start-up included).")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --------------------------------------------------------------------------- memory

def bench_memory(runs: int, workers: int) -> None:
    tiny = {
        "scenario": {"name": "tiny", "duration": "0.02s", "reps": 1, "seed": 1},
        "host": [{"name": "h1", "cores": 2}],
        "bridge": [{"name": "br0", "host": "h1"}],
        "vm": [{"name": "a", "host": "h1", "bridge": "br0", "qdisc": "pfifo"},
               {"name": "b", "host": "h1", "bridge": "br0", "qdisc": "pfifo"}],
        "workload": [{"name": "ping", "tool": "ping", "from": "a", "to": "b", "i": "0.005s"}],
    }
    sw = sweep_from_dict({"sweep": {"reps": runs, "seed": 1}, "grid": {"vm.b.qdisc.limit": [100]}},
                         file="<bench>", base_dir=ROOT, base_scenario=tiny)
    tmp = Path(tempfile.mkdtemp(prefix="bench-memory-"))
    me = os.getpid()
    marks = []
    step = max(1, runs // 10)

    def on_run(rec, done, total):
        if done % step == 0 or done == total:
            marks.append((done, rss_kib(me), tree_rss(me) - rss_kib(me), time.perf_counter()))

    print(f"memory: a sweep of {runs} tiny runs on {workers} local workers ({load()})")
    t0 = time.perf_counter()
    try:
        run_sweep(sw, tmp, workers=workers, summary=False, on_run=on_run)
        size = (tmp / "runs.jsonl").stat().st_size
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    dt = time.perf_counter() - t0
    print(f"  {'runs done':>10} {'coordinator RSS':>16} {'workers RSS':>12}")
    for done, mine, kids, _ in marks:
        print(f"  {done:10d} {mine / 1024:13.1f} MiB {kids / 1024:9.1f} MiB")
    first, last = marks[0][1], marks[-1][1]
    print(f"  coordinator RSS grew {(last - first) / 1024:+.1f} MiB from {marks[0][0]} to {marks[-1][0]} runs "
          f"({(last - first) / max(1, marks[-1][0] - marks[0][0]):.3f} KiB/run); "
          f"{runs} runs in {dt:.0f} s ({runs / dt:.1f} runs/s), results file {size / 1e6:.1f} MB")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("part", nargs="?", default="all", choices=["all", "precision", "matrix", "scaling", "memory"])
    ap.add_argument("--min-reps", type=int, default=3)
    ap.add_argument("--max-reps", type=int, default=100)
    ap.add_argument("--final-jitter", action="store_true",
                    help="precision: watch iperf's final jitter J (as the thesis averaged it) instead of jitter_mean")
    ap.add_argument("--sample-duration", default="1s", help="simulated time per sampled matrix run")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--full", action="store_true", help="run the whole thesis matrix instead of projecting")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--runs", type=int, default=None)
    ap.add_argument("--duration", default="3s", help="simulated time per scaling run")
    ap.add_argument("--no-dask", action="store_true")
    a = ap.parse_args(argv)
    if a.part in ("all", "precision"):
        bench_precision(a.workers, a.out, a.min_reps, a.max_reps, a.final_jitter)
    if a.part in ("all", "matrix"):
        bench_matrix(a.sample_duration, a.workers, a.full, a.out)
    if a.part in ("all", "scaling"):
        bench_scaling(a.runs or 48, a.duration, not a.no_dask)
    if a.part in ("all", "memory"):
        bench_memory(a.runs or 10000, a.workers)


if __name__ == "__main__":
    main()
