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
from .store import SUMMARY, ResultStore, load_results, summarise_results


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

    @property
    def rate(self) -> float:
        return self.ran / self.seconds if self.seconds > 0 else float("nan")


def run_sweep(sweep, out, *, workers: int | None = None, dask: str | None = None, resume: bool = False,
              progress: bool = False, max_tasks_per_child: int = 200, summary: bool = True,
              on_run=None) -> SweepReport:
    """Run every (point, rep) of ``sweep`` not already in ``out``; write results as they finish.

    ``on_run(record, done, total)`` (optional) is called after each run is stored.
    """
    sweep = load_sweep(sweep)
    from ..runner import local_cores
    workers = workers or local_cores()      # the cores this process may use, as `ovssim run`
    if workers < 1:
        raise ConfigError(f"--workers must be >= 1, got {workers}", key="--workers", fix="write --workers 2")
    store = ResultStore(Path(out), sweep, resume=resume)
    skipped = sum(1 for p in sweep.points for r in range(sweep.reps) if run_id(p.id, r) in store.done)
    bar = Progress(sweep.total, skipped, progress, sweep.name)
    failed = []

    def emit(task, rec):
        store.write(rec)
        if rec.get("status") != "ok":
            failed.append((task.run, task.label, rec.get("error", "?")))
        bar.advance()
        if on_run is not None:
            on_run(rec, bar.done, bar.total)

    t0 = time.perf_counter()
    tasks = sweep.tasks(frozenset(store.done))
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
    report = SweepReport(Path(out), sweep.total, skipped, bar.new, failed, secs, workers, executor)
    if summary:
        df, _ = load_results(out)
        write_atomic(Path(out) / SUMMARY, summarise_results(df).to_csv(index=False), what="summary")
    return report
