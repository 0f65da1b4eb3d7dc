"""Sweeps: many simulated runs over a grid of scenario changes, in parallel, resumable.

A sweep file names a base scenario and the changes to try::

    [sweep]
    name = "thesis"
    base = "thesis_kvm_ovs.toml"     # relative to the sweep file
    reps = 100                       # replications of every point
    seed = 7
    crn = true                       # common random numbers across points
    mode = "grid"                    # "grid" | "list" | "random" (+ samples = N)
    keep_samples = ["*:rtt"]         # raw samples to keep (fnmatch on "workload:sample")
    max_samples = 500                # per run and sample name (evenly thinned)

    [set]                            # changes applied to every point
    "scenario.duration" = "10s"

    [grid]                           # the cartesian product of these lists
    "vm.vm1.qdisc,vm.vm2.qdisc" = [{kind = "pfifo_fast"}, {kind = "sfq"}]   # one value, several keys
    "bridge.br0.kind,bridge.br1.kind" = ["ovs", "linux"]
    workload = [[{...}], [{...}]]    # ``workload`` replaces the whole [[workload]] list

Keys are the dotted keys of :meth:`ovssim.scenario.Scenario.replace`
(``section.name.key``, ``scenario.key``, ``params.dotted.name``).  ``mode =
"list"`` takes explicit ``[[point]]`` tables; ``mode = "random"`` draws
``samples`` points from ``[grid]`` whose values are lists (uniform choice) or
ranges ``{low = 1, high = 9, int = true, log = false}``.

Identity and seeds: a point's id is a hash of its canonical changes, a run's
id is ``<point id>-<rep>``.  With ``crn = true`` every point's replication
``r`` uses the sweep seed and ``r``, so two schedulers see the same random
draws wherever their paths coincide (:func:`ovssim.runner.rng_factory` names
every stream); with ``crn = false`` the seed is a hash of (sweep seed, point
id).  Either way a run's result depends only on its identity, never on the
executor, the worker count or the order runs finish.

Results: ``OUT/runs.jsonl`` gets one JSON line per finished run, written by
the coordinating process alone with a single ``write`` + flush + fsync; a
line torn by a kill is dropped on ``resume``, which skips every run whose line
is complete.  ``OUT/sweep.json`` is the manifest; ``OUT/summary.csv`` the
mean and 95% CI per point, workload and metric.

Executors: in-process (1 worker), a local process pool
(:class:`concurrent.futures.ProcessPoolExecutor` with ``max_tasks_per_child``
so memory stays bounded; a dead worker's runs are retried on a fresh pool),
or Dask (``distributed.Client(address)``, or a ``LocalCluster`` for
``"local"`` / ``"local:N"``; the Dask scheduler reschedules runs of workers
that die).  At most a few runs per worker are in flight, so the coordinator's
memory does not grow with the number of runs.
"""
from __future__ import annotations

from .driver import SweepReport, run_sweep
from .executors import MAX_ATTEMPTS, dask_client
from .progress import Progress
from .spec import (MODES, SWEEP_KEYS, TOP_KEYS, Point, Sweep, Task, _short, apply_changes, expand_changes,
                   load_sweep, point_id, point_label, run_id, sweep_from_dict, validate_points)
from .store import MANIFEST, RESULTS, SUMMARY, ResultStore, iter_records, load_results, summarise_results
from .worker import run_task

__all__ = ["MANIFEST", "MAX_ATTEMPTS", "MODES", "RESULTS", "SUMMARY", "SWEEP_KEYS", "TOP_KEYS", "Point",
           "Progress", "ResultStore", "Sweep", "SweepReport", "Task", "apply_changes", "dask_client",
           "expand_changes", "iter_records", "load_results", "load_sweep", "point_id", "point_label", "run_id",
           "run_sweep", "run_task", "summarise_results", "sweep_from_dict", "validate_points"]
