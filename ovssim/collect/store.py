"""Tidy, crash-safe storage of a campaign's results.

Layout of a campaign directory (documented in data/README.md)::

    runs.jsonl        the journal: one JSON object per finished run, appended atomically
    results.csv.gz    the tidy table: one row per run and metric (rebuilt from the journal)
    results.parquet   the same, when pyarrow is installed
    samples/RUN.csv.gz raw per-packet / per-interval samples of each run
    metadata.json     machine, tool versions, qdisc availability, campaign hash, times
    campaign.toml     a copy of the campaign file

The journal is the commit point.  A run's samples are written first (to a
temporary name, then renamed); then its record is appended to ``runs.jsonl``
with a single ``write`` on an ``O_APPEND`` descriptor followed by ``fsync``
(:mod:`ovssim.journal`, shared with the sweep store).  A kill at any moment
therefore leaves at most a torn last line, which :func:`read_journal` skips and
:meth:`CampaignStore.create` cuts off before anything is appended, so the run in
progress is lost and nothing else.

A run may have several records: a failed attempt is retried on ``--resume``
and the new record appended; the last record of a run is the one that counts.
"""
from __future__ import annotations

import csv
import gzip
import fcntl
import io
import os
from pathlib import Path

import pandas as pd

from .. import journal
from ..atomic import write_atomic
from ..errors import DataError, OvssimError

JOURNAL = "runs.jsonl"
RESULTS = "results.csv.gz"
# columns describing a run (one value per run), then metric, value, unit
RUN_COLUMNS = ["campaign", "run_id", "config_id", "rep", "order", "status", "bridge", "chain",
               "link", "datapath", "vm_tx_offload", "qdisc", "qdisc_kind", "qdisc_rate",
               "qdisc_via", "workload", "tool", "proto", "size", "rate", "streams",
               "congestion_control", "duration", "start", "end"]
COLUMNS = RUN_COLUMNS + ["metric", "value", "unit"]


class CampaignStore:
    """The output directory of one campaign."""

    def __init__(self, out: str | Path):
        self.dir = Path(out)
        self.samples_dir = self.dir / "samples"

    def create(self) -> int:
        """Make the directory (or say why it cannot be written), cut a torn journal tail and
        remove temporary files a killed writer left; returns the torn bytes removed."""
        try:
            self.samples_dir.mkdir(parents=True, exist_ok=True)
            probe = self.dir / f".write-test{os.getpid()}"
            probe.touch()
            probe.unlink()
        except OSError as exc:
            raise OvssimError(f"cannot write to {self.dir}: {exc.strerror} -- fix: choose a writable "
                              "--out") from None
        self._lock = open(self.dir / ".lock", "w")     # held until this process ends
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            raise OvssimError(f"another ovssim process is writing to {self.dir} -- fix: wait for it "
                              "to finish (or stop it), or choose another --out") from None
        for tmp in [*self.dir.glob(".*.tmp*"), *self.samples_dir.glob(".*.tmp*")]:
            tmp.unlink(missing_ok=True)
        return journal.cut_torn_tail(self.dir / JOURNAL)

    # -- journal ------------------------------------------------------------------------
    def records(self) -> list[dict]:
        """The last record of every run (a retried run's failed attempts are history)."""
        return read_journal(self.dir / JOURNAL)

    def done_run_ids(self) -> set[str]:
        """Runs that need no retry: succeeded, or skipped (with the reason in ``error``)."""
        return {r["run_id"] for r in self.records() if r.get("status") in ("ok", "skipped")}

    def attempts(self) -> dict[str, int]:
        """How many records each run has in the journal (its attempts so far)."""
        out: dict[str, int] = {}
        for r in journal.iter_records(self.dir / JOURNAL):
            out[r["run_id"]] = out.get(r["run_id"], 0) + 1
        return out

    def append(self, record: dict, samples: dict | None = None) -> None:
        """Store one finished run: samples first, then the journal line (the commit)."""
        if samples:
            self.write_samples(record["run_id"], samples)
            record = dict(record, samples_file=f"samples/{record['run_id']}.csv.gz")
        journal.append(self.dir / JOURNAL, record, sort_keys=True, default=float)

    def write_samples(self, run_id: str, samples: dict) -> None:
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(["run_id", "series", "index", "value", "unit"])
        for series, (values, unit) in samples.items():
            for i, v in enumerate(values):
                w.writerow([run_id, series, i, repr(float(v)), unit])
        write_atomic(self.samples_dir / f"{run_id}.csv.gz",
                            gzip.compress(buf.getvalue().encode(), mtime=0))

    # -- tidy table ---------------------------------------------------------------------
    def rebuild_table(self) -> pd.DataFrame:
        """Write results.csv.gz (and results.parquet when pyarrow is present) from the journal."""
        df = records_to_frame(self.records())
        write_atomic(self.dir / RESULTS, gzip.compress(df.to_csv(index=False).encode(),
                                                               mtime=0))
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            pass
        else:
            tmp = self.dir / f".results.parquet.tmp{os.getpid()}"
            df.to_parquet(tmp, index=False)
            os.replace(tmp, self.dir / "results.parquet")
        return df


def read_journal(path: str | Path) -> list[dict]:
    """The last record of every run, in journal order; a torn last line (killed mid-write) is
    skipped, any other damaged line is a DataError."""
    last: dict[str, dict] = {}
    for rec in journal.iter_records(path):
        last.pop(rec.get("run_id"), None)      # a retry moves the run to where it last ran
        last[rec.get("run_id")] = rec
    return list(last.values())


def records_to_frame(records: list[dict]) -> pd.DataFrame:
    rows = []
    for rec in records:
        base = {c: rec.get(c) for c in RUN_COLUMNS}
        metrics = rec.get("metrics") or {}
        if not metrics:
            rows.append(dict(base, metric=None, value=None, unit=None))
        for name, (value, unit) in sorted(metrics.items()):
            rows.append(dict(base, metric=name, value=value, unit=unit))
    return pd.DataFrame(rows, columns=COLUMNS)


def load_results(campaign_dir: str | Path) -> pd.DataFrame:
    """The tidy table of a campaign directory (from the journal, so it is always complete)."""
    d = Path(campaign_dir)
    if not (d / JOURNAL).exists():
        if (d / RESULTS).exists():
            return pd.read_csv(d / RESULTS)
        raise DataError(f"{d} holds no campaign results ({JOURNAL} or {RESULTS})")
    return records_to_frame(read_journal(d / JOURNAL))


def load_samples(campaign_dir: str | Path, series: str | None = None) -> pd.DataFrame:
    """All raw samples of a campaign (run_id, series, index, value, unit), joined with run columns."""
    d = Path(campaign_dir)
    recs = {r["run_id"]: r for r in read_journal(d / JOURNAL)}
    frames = []
    for run_id, rec in recs.items():
        f = rec.get("samples_file")
        if not f or not (d / f).exists():
            continue
        df = pd.read_csv(d / f)
        if series:
            df = df[df["series"] == series]
        frames.append(df)
    if not frames:
        return pd.DataFrame(columns=["run_id", "series", "index", "value", "unit"])
    out = pd.concat(frames, ignore_index=True)
    runs = pd.DataFrame([{c: r.get(c) for c in RUN_COLUMNS} for r in recs.values()])
    return out.merge(runs, on="run_id", how="left")
