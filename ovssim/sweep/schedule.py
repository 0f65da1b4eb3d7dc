"""Sequential sweeps: the runs of each point (or group of points) in batches, until its CIs are narrow enough.

:class:`SequentialTasks` is the task source the executors pull from.  Every group of points (one
point in a sweep; the qdiscs of one test in ``whatif``) starts with replications ``0..min_reps-1``;
when all runs of a group's batch are stored, its rule is looked at on those replications alone and
either stops the group or queues replications up to the next checkpoint of
:func:`ovssim.sequential.checkpoints`.  The decision depends only on the values of replications
``0..n-1`` -- never on which run finished first -- so the outcome is the same for every executor
and worker count.  Replication ``r`` of every point keeps its seed stream (common random numbers).

The source may be empty while batches are in flight and fill again when one completes: the
executors ask for the next task after each stored run (``next(tasks, None)``), and stop only when
nothing is in flight and nothing is queued.
"""
from __future__ import annotations

from collections import deque

from ..sequential import Stopping, check, next_checkpoint, stopping_of
from .spec import run_id


def precision_rule(precision):
    """The plain rule: stop a group when every point's watched metrics are within precision."""
    def decide(values_by_point: dict, n: int, looks: int) -> Stopping | None:
        checks = [c for vals in values_by_point.values() for c in check(_ordered(vals, n), precision)]
        return stopping_of(checks, n, looks, precision)
    return decide


def _ordered(vals: dict, n: int) -> dict:
    """(workload, metric, unit) -> values of replications 0..n-1 in order (NaN where a run gave none)."""
    return {k: [reps.get(r, float("nan")) for r in range(n)] for k, reps in vals.items()}


class SequentialTasks:
    """Tasks of a sweep with a precision, released batch by batch (an iterator the executors pull)."""

    def __init__(self, sweep, *, groups: list | None = None, decide=None, done: dict | None = None):
        self.sweep = sweep
        self.precision = sweep.precision
        self.decide = decide or precision_rule(self.precision)
        self.groups = groups or [[p] for p in sweep.points]
        self.group_of = {p.id: gi for gi, g in enumerate(self.groups) for p in g}
        self.values: dict = {p.id: {} for p in sweep.points}      # point -> (wl, metric, unit) -> rep -> value
        self.target = [0] * len(self.groups)
        self.pending: list = [set() for _ in self.groups]
        self.looks = [0] * len(self.groups)
        self.stopping: dict = {}                                   # group index -> Stopping
        self.ready: deque = deque()
        self.done = dict(done or {})                               # run id -> stored record (resume)
        self.planned = 0
        for gi in range(len(self.groups)):
            self._extend(gi, self.precision.min_reps)

    def __iter__(self):
        return self

    def __next__(self):
        if not self.ready:
            raise StopIteration
        return self.ready.popleft()

    def _extend(self, gi: int, n: int) -> None:
        """Queue replications target..n-1 of every point of group ``gi``; stored ones count at once."""
        start, self.target[gi] = self.target[gi], n
        already = []
        for rep in range(start, n):
            for p in self.groups[gi]:
                rid = run_id(p.id, rep)
                self.pending[gi].add(rid)
                self.planned += 1
                if rid in self.done:
                    already.append(self.done[rid])
                else:
                    self.ready.append(self.sweep.task(p, rep))
        for rec in already:
            self.record(rec)

    def record(self, rec: dict) -> None:
        """A run's record (from the executor, or from the store on resume)."""
        gi = self.group_of.get(rec.get("point"))
        if gi is None or rec["run"] not in self.pending[gi]:
            return
        self.pending[gi].discard(rec["run"])
        if rec.get("status") != "ok":
            if gi not in self.stopping:
                self.stopping[gi] = Stopping(rec["rep"], "failed", [], self.looks[gi])
            return
        vals = self.values[rec["point"]]
        for wl, metric, unit, value in rec["rows"]:
            vals.setdefault((wl, metric, unit), {})[rec["rep"]] = value
        if self.pending[gi] or gi in self.stopping:
            return
        self.looks[gi] += 1
        n = self.target[gi]
        st = self.decide({p.id: self.values[p.id] for p in self.groups[gi]}, n, self.looks[gi])
        if st is not None:
            self.stopping[gi] = st
        else:
            self._extend(gi, next_checkpoint(n, self.precision))

    def point_stopping(self) -> dict:
        """point id -> :class:`Stopping` (``reps`` = replications 0..reps-1 that count)."""
        return {p.id: self.stopping.get(gi, Stopping(self.target[gi], "interrupted", [], self.looks[gi]))
                for gi, g in enumerate(self.groups) for p in g}
