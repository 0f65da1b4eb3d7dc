"""The results directory: append-only JSON lines, the manifest, the summary."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from .. import journal
from ..atomic import write_atomic
from ..errors import ConfigError, OvssimError
from .spec import Sweep


RESULTS = "runs.jsonl"
MANIFEST = "sweep.json"
SUMMARY = "summary.csv"


class ResultStore:
    """Append-only JSON lines, one per finished run, written atomically by one process."""

    def __init__(self, out: Path, sweep: Sweep, *, resume: bool = False):
        self.dir = Path(out)
        self.path = self.dir / RESULTS
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OvssimError(f"cannot create output directory {self.dir}: {exc.strerror}; choose a writable --out") from None
        self._lock = open(self.dir / ".lock", "w")
        try:
            import fcntl
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            raise ConfigError(f"another sweep is running in {self.dir}", key="--out",
                              fix="wait for it to finish (or stop it), or choose another --out") from None
        except ImportError:     # pragma: no cover - not POSIX: no protection against two coordinators
            pass
        try:
            self._open(sweep, resume)
        except BaseException:
            self._lock.close()
            raise

    def _open(self, sweep: "Sweep", resume: bool) -> None:
        manifest = self.dir / MANIFEST
        fp = sweep.fingerprint()
        if manifest.exists():
            try:
                old = json.loads(manifest.read_text())
            except (OSError, json.JSONDecodeError):
                old = {}
            if not resume:
                raise ConfigError(f"{self.dir} already holds a sweep", key="--out",
                                  fix="pass --resume to continue it, or choose another --out")
            if old.get("fingerprint") != fp:
                raise ConfigError(f"{self.dir} holds a different sweep (base scenario, [set], seed or crn changed)",
                                  key="--out", fix="choose another --out, or restore the sweep file it was run with")
        elif self.path.exists() and self.path.stat().st_size and not resume:
            raise ConfigError(f"{self.dir} already holds results", key="--out", fix="pass --resume or choose another --out")
        self.done = self._scan(repair=True)
        write_atomic(manifest, json.dumps({
            "name": sweep.name, "file": sweep.file, "base": sweep.base_file, "fingerprint": fp,
            "seed": sweep.seed, "crn": sweep.crn, "reps": sweep.reps, "total": sweep.total,
            "points": [{"id": p.id, "label": p.label, "changes": p.changes} for p in sweep.points],
            "fixed": sweep.fixed}, indent=1, default=str))
        self._fh = open(self.path, "ab")

    def _scan(self, repair: bool) -> set:
        """Run ids with a complete, successful line; a torn last line is cut off (:mod:`ovssim.journal`)."""
        if repair:
            journal.cut_torn_tail(self.path)
        return {rec["run"] for rec in journal.iter_records(self.path) if rec.get("status") == "ok"}

    def write(self, rec: dict) -> None:
        line = (json.dumps(rec, separators=(",", ":")) + "\n").encode()
        self._fh.write(line)
        self._fh.flush()
        os.fsync(self._fh.fileno())     # (self.done stays the set found at start: memory does not grow)

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()
        if not self._lock.closed:
            self._lock.close()          # releases the flock


def iter_records(out: Path):
    """Every complete record of ``OUT/runs.jsonl`` (later lines for the same run win in :func:`load_results`)."""
    path = Path(out) / RESULTS
    if not path.exists():
        raise ConfigError(f"no results in {out}", key="--out", fix="run the sweep first")
    yield from journal.iter_records(path)


def load_results(out: Path, *, samples: bool = False):
    """Tidy per-run results: (DataFrame[run, point, label, rep, workload, metric, unit, value], samples).

    ``samples`` (when asked) maps label -> sample name -> concatenated array.
    """
    import pandas as pd
    rows, seen, smp = [], set(), {}
    for rec in iter_records(out):
        if rec.get("status") != "ok" or rec["run"] in seen:
            continue
        seen.add(rec["run"])
        for wl, metric, unit, value in rec["rows"]:
            rows.append((rec["run"], rec["point"], rec["label"], rec["rep"], wl, metric, unit, value))
        if samples:
            for k, v in (rec.get("samples") or {}).items():
                smp.setdefault(rec["label"], {}).setdefault(k, []).append(np.asarray(v, float))
    df = pd.DataFrame(rows, columns=["run", "point", "label", "rep", "workload", "metric", "unit", "value"])
    smp = {lab: {k: np.concatenate(v) for k, v in d.items()} for lab, d in smp.items()}
    return df, smp


def summarise_results(df):
    """Mean and 95% CI (:func:`ovssim.intervals.interval`) per point, workload and metric."""
    import pandas as pd

    from ..intervals import interval
    out = []
    for (pid, label, wl, metric, unit), g in df.groupby(["point", "label", "workload", "metric", "unit"], sort=False):
        ci = interval(g.sort_values("rep")["value"], unit, metric)
        out.append({"point": pid, "label": label, "workload": wl, "metric": metric, "unit": unit, "mean": ci.mean,
                    "ci95_low": ci.low, "ci95_high": ci.high, "reps": ci.n, "ci_method": ci.method})
    return pd.DataFrame(out, columns=["point", "label", "workload", "metric", "unit", "mean", "ci95_low",
                                      "ci95_high", "reps", "ci_method"])
