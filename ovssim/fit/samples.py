"""Reading and checking measured delay samples before anything is fitted.

Every fitter in :mod:`ovssim.fit` takes delays in **seconds** as a 1-D float
array that has passed :func:`check_delays`; files are read with
:func:`read_samples`.  Bad data (empty, NaN, negative, non-numeric, a single
repeated value, implausible magnitudes that betray the wrong unit) raises one
:class:`~ovssim.errors.DataError` naming the problem and the fix.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from .. import units
from ..errors import DataError

#: plausible per-packet delay range in seconds; outside it the unit is probably wrong
PLAUSIBLE_MEDIAN = (1e-9, 10.0)

_UNIT_SUFFIX = re.compile(r"_(s|ms|us|usec|ns|sec|msec|nsec)$", re.IGNORECASE)


def unit_factor(unit: str | None) -> float:
    """Seconds per unit for ``"us"``, ``"ms"``, ``"s"``, ``"ns"`` (default seconds)."""
    if unit is None or unit == "":
        return 1.0
    try:
        return units.time("1" + str(unit).strip())
    except Exception:
        raise DataError(f"unknown time unit {unit!r} -- fix: use one of s, ms, us, ns") from None


def guess_unit(column: str) -> str | None:
    """The unit a column name declares by suffix (``delay_us`` -> ``us``), or None."""
    m = _UNIT_SUFFIX.search(column)
    return m.group(1).lower() if m else None


def check_delays(values, *, unit: str | None = "s", what: str = "delay samples",
                 file: str | None = None, min_n: int = 2) -> np.ndarray:
    """Validate raw delays and return them in seconds as a float64 array.

    Raises :class:`DataError` for empty input, non-numeric entries, NaN/inf,
    negative values, a single repeated value, or a median outside
    :data:`PLAUSIBLE_MEDIAN` once converted (a sign of the wrong ``unit``).
    """
    where = f"{file}: " if file else ""
    series = pd.Series(values) if not isinstance(values, pd.Series) else values
    if series.size == 0:
        raise DataError(f"{where}no {what}: the input is empty -- fix: point at a file/column "
                        "that holds one delay per row")
    present = series.dropna()
    if pd.api.types.is_bool_dtype(series) or (present.size and present.map(lambda v: isinstance(v, bool)).all()):
        raise DataError(f"{where}{what} are true/false values, not delays -- fix: choose the numeric "
                        "column with --column")
    if not pd.api.types.is_numeric_dtype(series):
        num = pd.to_numeric(series, errors="coerce")
        bad = num.isna() & series.notna()
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise DataError(f"{where}{what} contain non-numeric values ({int(bad.sum())} of "
                            f"{series.size}; first at row {i}: {series.iloc[i]!r}) -- fix: "
                            "remove them or choose the numeric column with --column")
        series = num
    x = series.to_numpy(dtype=float)
    nan = ~np.isfinite(x)
    if nan.any():
        i = int(np.flatnonzero(nan)[0])
        raise DataError(f"{where}{what} contain {int(nan.sum())} NaN/inf values (first at row {i}) "
                        "-- fix: drop incomplete rows before fitting")
    neg = x < 0
    if neg.any():
        i = int(np.flatnonzero(neg)[0])
        raise DataError(f"{where}{what} contain {int(neg.sum())} negative values (first at row {i}: "
                        f"{x[i]!r}); a delay cannot be negative -- fix: check the timestamps' "
                        "clock/order")
    if x.size < min_n:
        raise DataError(f"{where}only {x.size} {what}; at least {min_n} are needed to fit")
    if np.all(x == x[0]):
        raise DataError(f"{where}all {x.size} {what} equal {x[0]!r}: a single repeated value is not "
                        "a distribution -- fix: write it in the profile as a constant, or check "
                        "the timer resolution of the collector")
    x = x * unit_factor(unit)
    med = float(np.median(x))
    lo, hi = PLAUSIBLE_MEDIAN
    if not (lo <= med <= hi):
        raise DataError(f"{where}the median delay is {med:.3g} s after reading the values as "
                        f"{unit or 's'}: outside the plausible {lo:g}..{hi:g} s -- fix: give the "
                        "right unit (--unit us/ms/ns/s) or a column named like delay_us")
    return x


def read_campaign_samples(d: Path) -> pd.DataFrame:
    """A collector campaign directory's raw samples (``samples/*.csv.gz``: run_id, series,
    index, value, unit -- data/README.md), joined with the run columns of ``results.csv``."""
    files = sorted((d / "samples").glob("*.csv*"))
    if not files:
        raise DataError(f"{d}: a directory without samples/*.csv.gz -- fix: point at a campaign "
                        "directory written by 'ovssim collect', or at a samples file")
    df = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
    runs = _run_columns(d)
    if runs is not None and "run_id" in df.columns:
        df = df.merge(runs, on="run_id", how="left", suffixes=("", "_run"))
    return df


def _run_columns(d: Path) -> pd.DataFrame | None:
    """One row of run columns per run: from the journal ``runs.jsonl`` (always complete, also
    while a campaign is running), else from ``results.csv``."""
    import json
    journal = d / "runs.jsonl"
    if journal.exists():
        recs = []
        for line in journal.read_text().splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue          # the torn last line of a run in progress
            recs.append({k: v for k, v in rec.items() if not isinstance(v, (dict, list))})
        if recs:
            return pd.DataFrame(recs).drop(columns=["samples_file", "error"], errors="ignore") \
                .drop_duplicates("run_id")
    res = d / "results.csv"
    if res.exists():
        runs = pd.read_csv(res).drop(columns=["metric", "value", "unit"], errors="ignore")
        return runs.drop_duplicates("run_id")
    return None


def apply_where(df: pd.DataFrame, where: dict | None, *, file: str | None = None) -> pd.DataFrame:
    """Rows whose columns equal the given values (compared as strings)."""
    for k, v in (where or {}).items():
        if k not in df.columns:
            raise DataError(f"{file + ': ' if file else ''}--where column {k!r} not in the data "
                            f"(columns: {', '.join(map(str, df.columns))})")
        df = df[df[k].astype(str) == str(v)]
    if where and df.empty:
        raise DataError(f"{file + ': ' if file else ''}no rows match {where} -- fix: check the "
                        "--where values against the data")
    return df


def read_table(path: str | Path) -> pd.DataFrame:
    """A CSV / TSV / Parquet / plain one-number-per-line file (or a campaign directory) as a DataFrame."""
    p = Path(path)
    if p.is_dir():
        return read_campaign_samples(p)
    if not p.exists():
        raise DataError(f"{p}: no such file -- fix: check the path")
    if not p.is_file():
        raise DataError(f"{p}: not a regular file (a device or a pipe) -- fix: give a data file")
    try:
        if p.suffix in (".parquet", ".pq"):
            return pd.read_parquet(p)
        if p.suffix == ".json":
            return _read_json(p)
        suffixes = [x for x in p.suffixes if x not in (".gz", ".bz2", ".xz", ".zip")]
        kind = suffixes[-1] if suffixes else ""
        if kind in (".tsv", ".tab"):
            df = pd.read_csv(p, sep="\t", comment="#")
        elif kind in (".txt", ".dat", ""):
            df = pd.read_csv(p, sep=r"[\s,]+", engine="python", comment="#")
        else:
            df = pd.read_csv(p, comment="#")
    except DataError:
        raise
    except pd.errors.EmptyDataError:
        raise DataError(f"{p}: the file is empty -- fix: point at a file with one delay per row") from None
    except Exception as exc:  # parser errors, binary junk
        raise DataError(f"{p}: cannot read as a table ({exc}) -- fix: give a CSV with a header "
                        "row, or a plain file with one number per line") from None
    # a plain file of numbers: the 'header' is the first number
    if df.shape[1] == 1:
        try:
            first = float(df.columns[0])
        except ValueError:
            return df
        col = pd.concat([pd.Series([first]), df.iloc[:, 0]], ignore_index=True)
        return pd.DataFrame({"value": col})
    return df


def _read_json(p: Path) -> pd.DataFrame:
    """A JSON table (records, or columns of equal length) as a DataFrame."""
    import json
    try:
        doc = json.loads(p.read_bytes())
    except (ValueError, RecursionError) as exc:
        raise DataError(f"{p}: not valid JSON ({str(exc)[:120]}) -- fix: repair the file, or give a CSV") from None
    try:
        return pd.DataFrame(doc)
    except (ValueError, TypeError) as exc:
        raise DataError(f"{p}: JSON that is not a table ({exc}) -- fix: give a list of records or "
                        "columns of equal length") from None


def pick_column(df: pd.DataFrame, column: str | None, *, file: str | None = None) -> str:
    """The delay column: the one named, else the only numeric one, else a ``*delay*``/``value`` one."""
    if column is not None:
        if column not in df.columns:
            raise DataError(f"{file + ': ' if file else ''}no column {column!r} (columns: "
                            f"{', '.join(map(str, df.columns))}) -- fix: pass --column with one of them")
        return column
    for cand in ("value", "delay", "delay_s", "delay_us", "delay_ns", "delay_ms", "sample"):
        if cand in df.columns:
            return cand
    delays = [c for c in df.columns if "delay" in str(c).lower() or "latency" in str(c).lower()]
    if len(delays) == 1:
        return delays[0]
    if df.shape[1] == 1:
        return df.columns[0]
    raise DataError(f"{file + ': ' if file else ''}cannot tell which column holds the delays "
                    f"(columns: {', '.join(map(str, df.columns))}) -- fix: pass --column NAME")


def read_samples(path: str | Path, *, column: str | None = None, unit: str | None = None,
                 by: list[str] | None = None, where: dict | None = None) -> dict[tuple, np.ndarray]:
    """Delay samples from a file, in seconds, grouped by the ``by`` columns.

    Returns ``{group_key_tuple: seconds}``; without ``by`` the single key is ``()``.
    The unit comes from ``unit``, else a ``unit`` column, else the column's
    suffix (``delay_us``), else seconds.
    """
    df = apply_where(read_table(path), where, file=str(path))
    if "series" in df.columns and df["series"].nunique() > 1 and "series" not in (by or []) \
            and "series" not in (where or {}):
        raise DataError(f"{path}: the samples mix series {sorted(df['series'].unique())[:8]} -- fix: "
                        "pick one with --where series=NAME, or fit each with --by series")
    col = pick_column(df, column, file=str(path))
    if unit is None and "unit" in df.columns:
        found = df["unit"].dropna().unique()
        if len(found) > 1:
            raise DataError(f"{path}: the 'unit' column mixes {list(found)} -- fix: split the file "
                            "or convert to one unit")
        unit = str(found[0]) if len(found) else None
    if unit is None:
        unit = guess_unit(str(col)) or "s"
    by = list(by or [])
    missing = [b for b in by if b not in df.columns]
    if missing:
        raise DataError(f"{path}: --by column(s) {missing} not in the file (columns: "
                        f"{', '.join(map(str, df.columns))})")
    if not by:
        return {(): check_delays(df[col], unit=unit, file=str(path))}
    out = {}
    for key, grp in df.groupby(by, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        out[key] = check_delays(grp[col], unit=unit, file=str(path),
                                what=f"delay samples for {dict(zip(by, key))}")
    return out
