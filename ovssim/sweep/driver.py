"""run_sweep: the store, the executor and the progress, put together."""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from ..atomic import write_atomic
from ..errors import ConfigError
from .executors import _run_dask, _run_inprocess, _run_local
from .progress import Progress
from .spec import load_sweep, run_id
from .store import SUMMARY, ResultStore, iter_records, load_results, summarise_results


@dataclass
class SweepReport:
    out: Path
    total: int
    skipped: int
    ran: int
    failed: list
    seconds: float
    workers: int
    executor: str
    stopping: dict | None = None        # with a precision: point id -> ovssim.sequential.Stopping

    @property
    def rate(self) -> float:
        return self.ran / self.seconds if self.seconds > 0 else float("nan")


def run_sweep(sweep, out, *, workers: int | None = None, dask: str | None = None, resume: bool = False,
              progress: bool = False, max_tasks_per_child: int = 200, summary: bool = True,
              on_run=None, groups: list | None = None, decide=None) -> SweepReport:
    """Run every (point, rep) of ``sweep`` not already in ``out``; write results as they finish.

    With ``sweep.precision`` the replications of each point come in batches until its CIs are narrow
    enough (:mod:`ovssim.sweep.schedule`); ``groups`` (lists of points decided together) and
    ``decide(values_by_point, n, looks) -> Stopping | None`` replace the per-point precision rule
    (``whatif`` stops a test's qdiscs together once their ranking is settled).  The stopping of every
    point is in the report and in ``OUT/stopping.csv``; the summary counts replications 0..reps-1.

    ``on_run(record, done, total)`` (optional) is called after each run is stored.
    """
    sweep = load_sweep(sweep)
    from ..runner import local_cores
    workers = workers or local_cores()      # the cores this process may use, as `ovssim run`
    if workers < 1:
        raise ConfigError(f"--workers must be >= 1, got {workers}", key="--workers", fix="write --workers 2")
    store = ResultStore(Path(out), sweep, resume=resume)
    schedule = None
    if sweep.precision is not None:
        from .schedule import SequentialTasks
        done = {}
        if store.done:
            done = {r["run"]: r for r in iter_records(out) if r.get("status") == "ok" and r["run"] in store.done}
        schedule = SequentialTasks(sweep, groups=groups, decide=decide, done=done)
        skipped = schedule.planned - len(schedule.ready)
        bar = Progress(schedule.planned, skipped, progress, sweep.name)
    else:
        skipped = sum(1 for p in sweep.points for r in range(sweep.reps) if run_id(p.id, r) in store.done)
        bar = Progress(sweep.total, skipped, progress, sweep.name)
    failed = []

    def emit(task, rec):
        store.write(rec)
        if rec.get("status") != "ok":
            failed.append((task.run, task.label, rec.get("error", "?")))
        if schedule is not None:
            schedule.record(rec)
            bar.grow(schedule.planned)
        bar.advance()
        if on_run is not None:
            on_run(rec, bar.done, bar.total)

    t0 = time.perf_counter()
    tasks = schedule if schedule is not None else sweep.tasks(frozenset(store.done))
    try:
        if dask:
            executor = f"dask {dask}"
            _run_dask(tasks, emit, dask, workers)
        elif workers == 1:
            executor = "in-process"
            _run_inprocess(tasks, emit)
        else:
            executor = f"{workers} local processes"
            _run_local(tasks, emit, workers, max_tasks_per_child)
    finally:
        bar.close()
        store.close()
    secs = time.perf_counter() - t0
    stopping = schedule.point_stopping() if schedule is not None else None
    total = schedule.planned if schedule is not None else sweep.total
    report = SweepReport(Path(out), total, skipped, bar.new, failed, secs, workers, executor, stopping)
    if stopping is not None:
        write_stopping(Path(out), sweep, stopping)
    if summary:
        df, _ = load_results(out)
        if stopping is not None:          # replications beyond a point's stop (an earlier, longer sweep) do not count
            df = df[df["rep"] < df["point"].map({k: v.reps for k, v in stopping.items()}).fillna(0)]
        write_atomic(Path(out) / SUMMARY, summarise_results(df).to_csv(index=False), what="summary")
    return report


STOPPING = "stopping.csv"


def write_stopping(out: Path, sweep, stopping: dict) -> None:
    """``OUT/stopping.csv``: replications each point took, why it stopped, the metrics short of precision."""
    import pandas as pd
    rows = [{"point": p.id, "label": p.label, "reps": stopping[p.id].reps, "reason": stopping[p.id].reason,
             "looks": stopping[p.id].looks, "widest": stopping[p.id].widest,
             "not_within_precision": " ".join(stopping[p.id].unmet)} for p in sweep.points]
    write_atomic(out / STOPPING, pd.DataFrame(rows).to_csv(index=False), what="stopping")
