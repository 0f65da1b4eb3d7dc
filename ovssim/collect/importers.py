"""Import existing measurements into the tidy campaign format.

* Flent ``.flent.gz`` (gzip'd JSON, file format version 1-3: ``metadata``,
  ``x_values``, ``results`` {series: values}, ``raw_values`` {series: [{t, val,
  seq}]}).  Every file becomes one run (workload = the Flent test NAME); each
  series gives mean / median / p99 metrics and its raw values as samples.
  Units: series named with "(ms)" or "Ping"/"latency" are milliseconds, the
  throughput series (upload, download, totals, "Mbits") Mbit/s, as Flent
  records them; ``SERIES_META[...]["UNITS"]`` wins when present.
* Plain CSV of samples: one run per file, the samples taken from ``column``
  (default: the last numeric column), in ``unit`` (s, ms, us, ns, bit/s, ...).
"""
from __future__ import annotations

import gzip
import hashlib
import json
import re
import statistics
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from .. import units
from ..errors import DataError
from .store import CampaignStore

_TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def _to_si(unit: str) -> tuple[float, str]:
    u = unit.strip()
    if u.lower() in _TIME_UNITS:
        return _TIME_UNITS[u.lower()], "s"
    try:
        return units.rate("1" + u.replace("its/s", "it").replace("/s", "")), "bit/s"
    except Exception:  # noqa: BLE001 - an unknown unit stays as it is
        return 1.0, u


def _flent_unit(name: str, meta: dict) -> str:
    sm = (meta.get("SERIES_META") or {}).get(name) or {}
    if sm.get("UNITS"):
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
    try:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt") as fh:
            doc = json.load(fh)
    except (OSError, ValueError, EOFError) as exc:
        raise DataError(f"{path}: not a readable Flent data file ({exc})") from None
    if not isinstance(doc, dict) or "results" not in doc or "metadata" not in doc:
        raise DataError(f"{path}: not a Flent data file (no 'results'/'metadata')")
    meta = doc["metadata"]
    raw = doc.get("raw_values") or {}
    metrics, samples = {}, {}
    for name, series in doc["results"].items():
        unit = _flent_unit(name, meta)
        scale, si = _to_si(unit) if unit else (1.0, "")
        vals = [v["val"] for v in raw.get(name, []) if isinstance(v, dict) and v.get("val") is not None]
        if not vals:
            vals = [v for v in series if v is not None]
        vals = [float(v) * scale for v in vals]
        if not vals:
            continue
        slug = _slug(name)
        metrics.update(_summary(vals, si, slug))
        samples[slug] = (vals, si)
    if not metrics:
        raise DataError(f"{path}: the Flent file holds no data points")
    run_id = "flent-" + hashlib.sha256(path.name.encode()).hexdigest()[:10]
    rec = {"run_id": run_id, "config_id": run_id, "rep": 1, "order": 0, "status": "ok",
           "workload": meta.get("NAME"), "tool": "flent", "duration": meta.get("LENGTH"),
           "start": meta.get("TIME"), "end": meta.get("TIME"), "metrics": metrics,
           "source_file": path.name, "tool_version": meta.get("FLENT_VERSION", ""),
           "note": meta.get("TITLE") or meta.get("NOTE") or ""}
    return rec, samples


def read_samples_csv(path: str | Path, *, unit: str = "s", column: str | None = None) -> tuple[dict, dict]:
    """A plain CSV of samples -> (run record, samples)."""
    path = Path(path)
    try:
        df = pd.read_csv(path)
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise DataError(f"{path}: cannot read as CSV ({exc})") from None
    num = [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c])]
    if column is None:
        if not num:
            raise DataError(f"{path}: no numeric column of samples",)
        column = num[-1]
    if column not in df.columns:
        raise DataError(f"{path}: no column {column!r} (columns: {', '.join(map(str, df.columns))})")
    vals = pd.to_numeric(df[column], errors="coerce").dropna().astype(float).tolist()
    if not vals:
        raise DataError(f"{path}: column {column!r} holds no numbers")
    scale, si = _to_si(unit)
    vals = [v * scale for v in vals]
    if si == "s" and min(vals) < 0:
        raise DataError(f"{path}: negative delays in column {column!r}")
    slug = _slug(str(column))
    run_id = "csv-" + hashlib.sha256(path.name.encode()).hexdigest()[:10]
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    rec = {"run_id": run_id, "config_id": run_id, "rep": 1, "order": 0, "status": "ok",
           "workload": path.stem, "tool": "csv", "start": now, "end": now,
           "metrics": _summary(vals, si, slug), "source_file": path.name}
    return rec, {slug: (vals, si)}


def import_files(files, out, *, campaign: str = "imported", unit: str = "s",
                 column: str | None = None) -> int:
    store = CampaignStore(out)
    store.create()
    done = store.done_run_ids()
    n = 0
    for f in files:
        name = str(f)
        if name.endswith((".flent.gz", ".flent")):
            rec, samples = read_flent(f)
        elif name.endswith(".csv"):
            rec, samples = read_samples_csv(f, unit=unit, column=column)
        else:
            raise DataError(f"{f}: unknown kind of file (expected .flent.gz or .csv)")
        rec["campaign"] = campaign
        if rec["run_id"] in done:
            continue
        store.append(rec, samples)
        n += 1
    store.rebuild_table()
    return n
