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
with a single ``write`` on an ``O_APPEND`` descriptor followed by ``fsync``.
A kill at any moment therefore leaves at most a torn last line, which
:func:`read_journal` drops, so the run in progress is lost and nothing else.
"""
from __future__ import annotations

import csv
import gzip
import io
import json
import os
from pathlib import Path

import pandas as pd

from ..errors import DataError

JOURNAL = "runs.jsonl"
RESULTS = "results.csv.gz"
# columns describing a run (one value per run), then metric, value, unit
RUN_COLUMNS = ["campaign", "run_id", "config_id", "rep", "order", "status", "bridge", "chain",
               "link", "datapath", "vm_tx_offload", "qdisc", "qdisc_kind", "qdisc_rate",
               "qdisc_via", "workload", "tool", "proto", "size", "rate", "streams",
               "congestion_control", "duration", "start", "end"]
COLUMNS = RUN_COLUMNS + ["metric", "value", "unit"]


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def atomic_write_text(path: Path, text: str) -> None:
    _atomic_write_bytes(Path(path), text.encode())


class CampaignStore:
    """The output directory of one campaign."""

    def __init__(self, out: str | Path):
        self.dir = Path(out)
        self.samples_dir = self.dir / "samples"

    def create(self) -> None:
        self.samples_dir.mkdir(parents=True, exist_ok=True)

    # -- journal ------------------------------------------------------------------------
    def records(self) -> list[dict]:
        return read_journal(self.dir / JOURNAL)

    def done_run_ids(self) -> set[str]:
        return {r["run_id"] for r in self.records()}

    def append(self, record: dict, samples: dict | None = None) -> None:
        """Store one finished run: samples first, then the journal line (the commit)."""
        if samples:
            self.write_samples(record["run_id"], samples)
            record = dict(record, samples_file=f"samples/{record['run_id']}.csv.gz")
        line = (json.dumps(record, sort_keys=True, default=float) + "\n").encode()
        fd = os.open(self.dir / JOURNAL, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)

    def write_samples(self, run_id: str, samples: dict) -> None:
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(["run_id", "series", "index", "value", "unit"])
        for series, (values, unit) in samples.items():
            for i, v in enumerate(values):
                w.writerow([run_id, series, i, repr(float(v)), unit])
        _atomic_write_bytes(self.samples_dir / f"{run_id}.csv.gz",
                            gzip.compress(buf.getvalue().encode(), mtime=0))

    # -- tidy table ---------------------------------------------------------------------
    def rebuild_table(self) -> pd.DataFrame:
        """Write results.csv.gz (and results.parquet when pyarrow is present) from the journal."""
        df = records_to_frame(self.records())
        _atomic_write_bytes(self.dir / RESULTS, gzip.compress(df.to_csv(index=False).encode(),
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
    """Records of a journal; a torn last line (killed mid-write) is dropped, others must parse."""
    path = Path(path)
    if not path.exists():
        return []
    lines = path.read_bytes().split(b"\n")
    out = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except ValueError:
            if i == len(lines) - 1:   # the unterminated last line: the run in progress
                break
            raise DataError(f"{path}: line {i + 1} is corrupt (not JSON); the file was edited or "
                            "damaged -- remove that line to keep the other runs") from None
    return out


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
