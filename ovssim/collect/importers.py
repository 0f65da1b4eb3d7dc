"""Import existing measurements into the tidy campaign format.

* Flent ``.flent.gz`` (gzip'd JSON, file format version 1-3: ``metadata``,
  ``x_values``, ``results`` {series: values}, ``raw_values`` {series: [{t, val,
  seq}]}).  Every file becomes one run (workload = the Flent test NAME); each
  series gives mean / median / p99 metrics and its raw values as samples.
  Units: series named with "(ms)" or "Ping"/"latency" are milliseconds, the
  throughput series (upload, download, totals, "Mbits") Mbit/s, as Flent
  records them; ``SERIES_META[...]["UNITS"]`` wins when present.
* Plain CSV of samples: one run per file, the samples taken from ``column``
  (default: the one numeric column that is not a counter such as ``seq`` or a
  timestamp; several candidates need ``column``), in ``unit`` (s, ms, us, ns,
  bit/s, mbit, ...).  Every cell of the column must be a finite number.
* ``iperf3 -J`` JSON (``.json``): one run, parsed by the collector's own
  iperf3 parser (:func:`ovssim.collect.tools.iperf3.parse`).

Files are read as regular files only (a FIFO or device would never end), and
the output directory must be new, or one that ``import-data`` wrote: a
campaign the collector wrote is never appended to.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import math
import re
import statistics
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from .. import units
from ..errors import ConfigError, DataError, OvssimError
from .shell import check_name
from .store import CampaignStore
from ..atomic import write_atomic
from .tools import iperf3
from .tools.base import ToolFailed

_TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def _to_si(unit: str, *, strict: bool = False) -> tuple[float, str]:
    """(scale, SI unit) of a time or rate unit; an unknown unit stays as it is unless ``strict``."""
    u = unit.strip()
    if strict and not u:
        raise ConfigError("the unit is empty", key="--unit", fix="give e.g. --unit ms")
    if u.lower() in _TIME_UNITS:
        return _TIME_UNITS[u.lower()], "s"
    try:
        return units.rate("1" + u.replace("its/s", "it").replace("/s", "")), "bit/s"
    except OvssimError:
        if strict:
            raise ConfigError(f"unknown unit {unit!r}", key="--unit",
                              fix="use a time unit (s, ms, us, ns) or a rate unit (bit/s, kbit, mbit, gbit, ...)") from None
        return 1.0, u


def _content_id(path: Path, *choices: str) -> str:
    """A run id from the file's bytes (and the choices that change what is read from it): the same
    data imported twice is one run, two files that share a name are two."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    for c in choices:
        h.update(b"\0" + c.encode())
    return h.hexdigest()[:12]


def _open_regular(path: Path):
    if not path.exists():
        raise DataError(f"{path}: no such file -- fix: check the path")
    if not path.is_file():
        raise DataError(f"{path}: not a regular file -- fix: give a data file (not a device, FIFO or folder)")
    return gzip.open(path, "rt") if path.suffix == ".gz" else open(path)


def _flent_unit(name: str, meta: dict) -> str:
    series_meta = meta.get("SERIES_META")
    sm = series_meta.get(name) if isinstance(series_meta, dict) else None
    if isinstance(sm, dict) and isinstance(sm.get("UNITS"), str) and sm["UNITS"]:
        return sm["UNITS"]
    low = name.lower()
    if "(ms)" in low or "ping" in low or "latency" in low or "rtt" in low:
        return "ms"
    if any(w in low for w in ("upload", "download", "totals", "mbit", "tcp", "udp")):
        return "Mbits/s"
    return ""


def _summary(values: list[float], unit: str, prefix: str) -> dict:
    s = sorted(values)
    n = len(s)
    out = {f"{prefix}_mean": [statistics.fmean(s), unit], f"{prefix}_median": [statistics.median(s), unit],
           f"{prefix}_min": [s[0], unit], f"{prefix}_max": [s[-1], unit], f"{prefix}_count": [n, "count"]}
    out[f"{prefix}_p99"] = [s[min(n - 1, int(0.99 * n))], unit]
    return out


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "series"


def read_flent(path: str | Path) -> tuple[dict, dict]:
    """One Flent file -> (run record, samples)."""
    path = Path(path)
    doc = _read_json(path, "Flent data file")
    if (not isinstance(doc, dict) or not isinstance(doc.get("results"), dict)
            or not isinstance(doc.get("metadata"), dict)):
        raise DataError(f"{path}: not a Flent data file (no 'results'/'metadata' tables)")
    meta = doc["metadata"]
    raw = doc.get("raw_values") if isinstance(doc.get("raw_values"), dict) else {}
    metrics, samples = {}, {}
    for name, series in doc["results"].items():
        unit = _flent_unit(name, meta)
        scale, si = _to_si(str(unit)) if unit else (1.0, "")
        points = raw.get(name) if isinstance(raw.get(name), list) else []
        vals = [v["val"] for v in points if isinstance(v, dict) and v.get("val") is not None]
        if not vals:
            vals = [v for v in series if v is not None] if isinstance(series, list) else []
        vals = _finite(vals, path, name)
        vals = [v * scale for v in vals]
        if not vals:
            continue
        slug = _slug(name)
        metrics.update(_summary(vals, si, slug))
        samples[slug] = (vals, si)
    if not metrics:
        raise DataError(f"{path}: the Flent file holds no data points")
    run_id = "flent-" + _content_id(path)
    text = {k: str(v) if isinstance(v, (str, int, float)) and not isinstance(v, bool) else None
            for k, v in meta.items()}       # metadata become columns: scalars only
    length = meta.get("LENGTH")
    rec = {"run_id": run_id, "config_id": run_id, "rep": 1, "order": 0, "status": "ok",
           "workload": text.get("NAME"), "tool": "flent",
           "duration": float(length) if isinstance(length, (int, float)) and not isinstance(length, bool) else None,
           "start": text.get("TIME"), "end": text.get("TIME"), "metrics": metrics,
           "source_file": path.name, "tool_version": text.get("FLENT_VERSION") or "",
           "note": text.get("TITLE") or text.get("NOTE") or ""}
    return rec, samples


def _read_json(path: Path, what: str):
    try:
        with _open_regular(path) as fh:
            return json.load(fh)
    except (OSError, ValueError, EOFError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: not a readable {what} ({exc})") from None
    except RecursionError:
        raise DataError(f"{path}: not a {what} (nested too deeply)") from None


def _finite(values, path: Path, column) -> list[float]:
    """The values as floats; a value that is not a finite number is a DataError naming its row."""
    out = []
    for i, v in enumerate(values):
        try:
            f = float(v)
        except (TypeError, ValueError):
            f = float("nan")
        if isinstance(v, bool) or not math.isfinite(f):
            raise DataError(f"{path}: {column!r} row {i + 1} holds {v!r}, not a finite number -- fix: "
                            "clean the data or choose another --column")
        out.append(f)
    return out


# columns that number or time the samples rather than hold them
_NOT_SAMPLES = re.compile(r"^(unnamed.*|seq|seqno|sequence|index|idx|id|i|n|no|count|run|rep|t|time|"
                          r"timestamp|epoch|ts|time_s|send_time|start|end)$", re.I)


def read_samples_csv(path: str | Path, *, unit: str = "s", column: str | None = None) -> tuple[dict, dict]:
    """A plain CSV of samples -> (run record, samples)."""
    path = Path(path)
    scale, si = _to_si(unit, strict=True)
    try:
        with _open_regular(path) as fh:
            df = pd.read_csv(fh)
    except (OSError, ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise DataError(f"{path}: cannot read as CSV ({exc})") from None
    if {"metric", "value", "unit"} <= set(df.columns):
        raise DataError(f"{path}: a tidy results table (metric, value, unit), not a file of samples -- "
                        "fix: give one column of samples (and --column), or copy the campaign folder itself")
    if column is None:
        num = [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c])
               and not pd.api.types.is_bool_dtype(df[c]) and not _NOT_SAMPLES.match(str(c))]
        if not num:
            raise DataError(f"{path}: no numeric column of samples (columns: {', '.join(map(str, df.columns))})")
        if len(num) > 1:
            raise DataError(f"{path}: several numeric columns ({', '.join(map(str, num))}) -- fix: name the "
                            "one holding the samples with --column")
        column = num[0]
    if column not in df.columns:
        raise DataError(f"{path}: no column {column!r} (columns: {', '.join(map(str, df.columns))})")
    vals = _finite(df[column].dropna().tolist(), path, column)
    if not vals:
        raise DataError(f"{path}: column {column!r} holds no numbers")
    vals = [v * scale for v in vals]
    if si == "s" and min(vals) < 0:
        raise DataError(f"{path}: negative delays in column {column!r}")
    slug = _slug(str(column))
    run_id = "csv-" + _content_id(path, str(column), unit)
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    rec = {"run_id": run_id, "config_id": run_id, "rep": 1, "order": 0, "status": "ok",
           "workload": path.stem, "tool": "csv", "start": now, "end": now,
           "metrics": _summary(vals, si, slug), "source_file": path.name}
    return rec, {slug: (vals, si)}


def read_iperf3_json(path: str | Path) -> tuple[dict, dict]:
    """An ``iperf3 -J`` output file -> (run record, samples), through the collector's parser."""
    path = Path(path)
    doc = _read_json(path, "iperf3 -J output file")
    if not isinstance(doc, dict) or not isinstance(doc.get("start"), dict) or not isinstance(doc.get("end"), dict):
        raise DataError(f"{path}: not iperf3 -J output (no 'start'/'end' objects)")
    try:
        res = iperf3.parse(json.dumps(doc))
    except (ToolFailed, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise DataError(f"{path}: iperf3 -J output without a usable result ({exc})") from None
    for name, (v, _unit) in res.metrics.items():
        _finite([v], path, name)
    for name, (values, _unit) in res.samples.items():
        _finite(values, path, name)
    start = doc["start"]
    secs = start["timestamp"].get("timesecs") if isinstance(start.get("timestamp"), dict) else None
    ts = (datetime.fromtimestamp(secs, timezone.utc).isoformat(timespec="seconds")
          if isinstance(secs, (int, float)) and not isinstance(secs, bool) and 0 <= secs < 1e11 else None)
    test = start.get("test_start") if isinstance(start.get("test_start"), dict) else {}
    run_id = "iperf3-" + _content_id(path)
    rec = {"run_id": run_id, "config_id": run_id, "rep": 1, "order": 0, "status": "ok",
           "workload": path.stem, "tool": "iperf3", "proto": res.info.get("protocol", "TCP").lower(),
           "streams": test.get("num_streams"), "duration": test.get("duration"), "start": ts, "end": ts,
           "congestion_control": res.info.get("congestion_control") or None,
           "metrics": {k: [v, u] for k, (v, u) in res.metrics.items()}, "source_file": path.name,
           "tool_version": res.info.get("version", "")}
    return rec, res.samples


READERS = {".flent.gz": read_flent, ".flent": read_flent, ".json": read_iperf3_json, ".csv": read_samples_csv}


def _check_out(store: CampaignStore) -> None:
    """Only a new folder or one import-data wrote: never append to a collected campaign."""
    meta = store.dir / "metadata.json"
    journal = store.dir / "runs.jsonl"
    kind = None
    if meta.exists():
        try:
            kind = json.loads(meta.read_text()).get("kind")
        except (OSError, ValueError, AttributeError):
            kind = "unreadable"
    if (meta.exists() or journal.exists()) and kind != "import":
        raise ConfigError(f"{store.dir} holds a campaign 'ovssim collect' wrote (or unknown data); "
                          "importing would append to its journal", key="--out",
                          fix="import into a new --out folder")


def import_files(files, out, *, campaign: str = "imported", unit: str = "s",
                 column: str | None = None) -> int:
    """Import ``files`` into the campaign folder ``out``; returns the runs added (a file already
    imported there is not added twice)."""
    check_name(campaign, "namespace", key="--name")
    _to_si(unit, strict=True)
    parsed = []
    for f in files:          # every file is read and checked before anything is written
        reader = next((r for suffix, r in READERS.items() if str(f).endswith(suffix)), None)
        if reader is None:
            raise DataError(f"{f}: unknown kind of file -- fix: give .flent.gz, .csv or iperf3 -J .json files")
        rec, samples = reader(f, unit=unit, column=column) if reader is read_samples_csv else reader(f)
        parsed.append((dict(rec, campaign=campaign), samples))
    store = CampaignStore(out)
    _check_out(store)
    store.create()
    done = store.done_run_ids()
    n = 0
    for rec, samples in parsed:
        if rec["run_id"] in done:
            continue
        store.append(rec, samples)
        done.add(rec["run_id"])
        n += 1
    write_atomic(store.dir / "metadata.json", json.dumps(
        {"kind": "import", "campaign": campaign, "runs": len(done),
         "updated": datetime.now(timezone.utc).isoformat(timespec="seconds")}, indent=1, sort_keys=True))
    store.rebuild_table()
    return n
