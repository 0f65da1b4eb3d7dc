"""One run of a sweep, on whichever process or Dask worker gets it."""
from __future__ import annotations

import fnmatch
import os
import time
from pathlib import Path

import numpy as np

from ..errors import OvssimError
from .spec import Task, _canon, apply_changes


_PROFILES: dict = {}


def _profile_for(sc):
    from ..precedence import resolve
    params = sc.data.get("params") or {}
    key = (sc.profile, str(sc.base_dir), _canon(params), sc.speed_index)
    prof = _PROFILES.get(key)
    if prof is None:
        prof = resolve(sc).profile         # the documented order (ovssim.precedence); a point's params.* are in [params]
        if len(_PROFILES) > 64:
            _PROFILES.clear()
        _PROFILES[key] = prof
    return prof


def _thin(x: np.ndarray, cap: int) -> list:
    x = np.asarray(x, float)
    if x.size > cap:
        x = x[np.linspace(0, x.size - 1, cap).round().astype(int)]
    return [float(v) for v in x]


def _fault_hook(task: Task) -> None:
    """Test hook: with ``OVSSIM_SWEEP_KILL=<run id>:<marker file>`` in the coordinator's environment, the
    worker running that run dies (``os._exit``) the first time, leaving the marker file."""
    spec = task.fault
    if not spec:
        return
    rid, _, marker = spec.partition(":")
    if rid == task.run and marker and not os.path.exists(marker):
        with open(marker, "w") as fh:
            fh.write(str(os.getpid()))
        os._exit(17)


def run_task(task: Task) -> dict:
    """Run one replication of one point and return its JSON-ready record (never raises for bad input)."""
    from ..runner import run_replication
    from ..scenario import from_dict
    _fault_hook(task)
    t0, c0 = time.perf_counter(), time.thread_time()
    rec = {"run": task.run, "point": task.point, "label": task.label, "rep": task.rep, "seed": task.seed}
    try:
        data = apply_changes(task.base, task.changes)
        sc = from_dict(data, file=task.base_file, base_dir=Path(task.base_dir))
        rows, samples, _counters = run_replication(sc, _profile_for(sc), task.rep, task.seed)
    except OvssimError as exc:
        rec.update(status="error", error=str(exc))
        return rec
    except Exception as exc:  # noqa: BLE001 - a simulator bug in one run must not end a long sweep
        import traceback
        where = traceback.extract_tb(exc.__traceback__)[-1]
        rec.update(status="error", error=f"{type(exc).__name__}: {exc} (at {Path(where.filename).name}:"
                                        f"{where.lineno}; a bug -- please report it)")
        return rec
    rec["status"] = "ok"
    rec["rows"] = [[r["workload"], r["metric"], r["unit"], float(r["value"])] for r in rows]
    if task.keep:
        rec["samples"] = {k: _thin(v, task.max_samples) for k, v in samples.items()
                          if any(fnmatch.fnmatchcase(k, pat) for pat in task.keep)}
    rec["elapsed"] = time.perf_counter() - t0           # wall seconds (not part of the result)
    rec["cpu"] = time.thread_time() - c0                # CPU seconds of the thread that ran it
    rec["worker"] = f"{os.uname().nodename}:{os.getpid()}"
    return rec
