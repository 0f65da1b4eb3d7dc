"""Read the seeds' published numbers (``data/seeds/*.csv``) into pandas.

The five source documents (``/work/shared/seeds``) were transcribed by hand
into tidy CSV files; ``data/seeds/README.md`` describes every column, unit
and transcription caveat.  This module only *reads* them: it checks columns,
types, units and sources, and raises :class:`~ovssim.errors.DataError` with
one clear message when a file is missing, empty or corrupt.

Helpers return the shapes validation code wants:

* :func:`thesis_table` -- seed 000 (Pothuraju 2016), one row per scheduler,
  throughput / RTT / jitter columns, for one bridge x virtualization.
* :func:`xenserver_table` -- seed 002 Tables IV-VIII, min / max / mean.
* :func:`interim_bridge_rounds` -- seed 004's raw 10-round iperf table.
* :func:`expectations` -- seed 001/003 (and a few other) range and
  ordering statements.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..data import bundled
from ..errors import ConfigError, DataError

SEED_DIR = bundled("data/seeds")

#: Units a seed CSV may use ("1" = dimensionless ratio, "-" = text value).
ALLOWED_UNITS = frozenset({"Mbit/s", "MB/s", "ms", "us", "s", "%", "1", "bytes", "count",
                           "GB", "TB", "GHz", "cores", "-"})
KNOWN_DOCUMENTS = frozenset({"seed000", "seed001", "seed002", "seed003", "seed004"})
STATISTICS = frozenset({"mean", "min", "max", "sample"})
BOUNDS = frozenset({"le", "ge", "lt", "gt", "approx", "ratio_approx", "ratio_le", "ratio_ge",
                    "ratio_lt", "ordering", "trend"})
THESIS_SCHEDULERS = ("FIFO", "HFSC", "HTB", "SFQ", "CODEL", "FQ-CODEL")


@dataclass(frozen=True)
class Schema:
    """Columns of one seed CSV: kind per column, which must be non-empty, allowed values."""

    kinds: dict[str, str]                      # column -> "str" | "float" | "int" | "bool"
    required: tuple[str, ...]                  # columns that may not be empty
    choices: dict[str, frozenset] = field(default_factory=dict)


_MEASUREMENT = Schema(
    kinds={"document": "str", "table": "str", "section": "str", "testbed": "str",
           "virtualization": "str", "bridge": "str", "scheduler": "str", "qdisc": "str",
           "case": "str", "workload": "str", "metric": "str", "statistic": "str",
           "round": "int", "value": "float", "unit": "str", "resolution": "float",
           "n_iterations": "int", "ci95_low": "float", "ci95_high": "float",
           "derived": "bool", "flags": "str", "note": "str"},
    required=("document", "table", "section", "testbed", "virtualization", "bridge", "workload",
              "metric", "statistic", "value", "unit", "resolution", "derived"),
    choices={"unit": ALLOWED_UNITS, "document": KNOWN_DOCUMENTS, "statistic": STATISTICS},
)

SCHEMAS: dict[str, Schema] = {
    "seed000_thesis_tables": _MEASUREMENT,
    "seed002_xenserver_tables": _MEASUREMENT,
    "seed004_interim_bridge": _MEASUREMENT,
    "seed000_test_parameters": Schema(
        kinds={"key": "str", "value": "str", "unit": "str", "as_published": "str",
               "stated": "bool", "document": "str", "section": "str", "note": "str"},
        required=("key", "value", "unit", "as_published", "stated", "document", "section"),
        choices={"unit": ALLOWED_UNITS, "document": KNOWN_DOCUMENTS}),
    "seed002_vlan_isolation": Schema(
        kinds={"document": "str", "table": "str", "section": "str", "from_vm": "str",
               "to_vm": "str", "vlan_from": "int", "vlan_to": "int", "reachable": "bool",
               "note": "str"},
        required=("document", "table", "section", "from_vm", "to_vm", "reachable"),
        choices={"document": KNOWN_DOCUMENTS}),
    "seed_expectations": Schema(
        kinds={"expectation_id": "str", "document": "str", "section": "str", "testbed": "str",
               "statement": "str", "quantity": "str", "condition": "str", "bound": "str",
               "value": "float", "value_high": "float", "unit": "str", "tolerance": "float",
               "tolerance_source": "str", "ordering": "str", "note": "str"},
        required=("expectation_id", "document", "section", "testbed", "statement", "quantity",
                  "bound", "unit"),
        choices={"unit": ALLOWED_UNITS, "document": KNOWN_DOCUMENTS, "bound": BOUNDS}),
}
MEASUREMENT_TABLES = ("seed000_thesis_tables", "seed002_xenserver_tables", "seed004_interim_bridge")

_INT_MARK = "Int64"


def _fail(path: Path, problem: str, fix: str) -> DataError:
    return DataError(f"{path}: {problem} -- fix: {fix}")


def read_seed_csv(path: str | Path, schema: Schema) -> pd.DataFrame:
    """Read one seed CSV and check it against *schema*; raise DataError if it is unusable."""
    path = Path(path)
    fix = "restore the file from git (data/seeds/ is hand-transcribed; see data/seeds/README.md)"
    if not path.is_file():
        raise _fail(path, "seed data file not found", fix)
    try:
        raw = pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False)
    except pd.errors.EmptyDataError:
        raise _fail(path, "file is empty", fix) from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise _fail(path, f"not a readable CSV ({str(exc).strip().splitlines()[0]})", fix) from None
    if raw.empty:
        raise _fail(path, "file has a header but no rows", fix)
    missing = [c for c in schema.kinds if c not in raw.columns]
    extra = [c for c in raw.columns if c not in schema.kinds]
    if missing or extra:
        raise _fail(path, f"columns differ from the schema (missing {missing}, unexpected {extra})", fix)
    raw = raw[list(schema.kinds)].apply(lambda col: col.str.strip())

    out = {}
    for col, kind in schema.kinds.items():
        text = raw[col]
        empty = text == ""
        if col in schema.required and empty.any():
            line = int(empty.idxmax()) + 2          # +1 header, +1 one-based
            raise _fail(path, f"line {line}: column '{col}' is empty", fix)
        if kind == "str":
            out[col] = text.where(~empty, None).astype("string")
        elif kind in ("float", "int"):
            num = pd.to_numeric(text.where(~empty, None), errors="coerce")
            bad = num.isna() & ~empty
            if kind == "int":
                bad |= num.notna() & (num != num.round())
            if bad.any():
                line = int(bad.idxmax()) + 2
                raise _fail(path, f"line {line}: column '{col}' = {text[bad.idxmax()]!r} is not "
                                  f"{'an integer' if kind == 'int' else 'a number'}", fix)
            out[col] = num.astype(_INT_MARK) if kind == "int" else num.astype(float)
        elif kind == "bool":
            low = text.str.lower()
            bad = ~low.isin(["true", "false", ""])
            if bad.any():
                line = int(bad.idxmax()) + 2
                raise _fail(path, f"line {line}: column '{col}' = {text[bad.idxmax()]!r} is not "
                                  "true/false", fix)
            out[col] = low.map({"true": True, "false": False, "": pd.NA}).astype("boolean")
        else:  # pragma: no cover - schema typo
            raise ValueError(f"unknown column kind {kind!r}")
    df = pd.DataFrame(out)

    for col, allowed in schema.choices.items():
        bad = df[col].notna() & ~df[col].isin(allowed)
        if bad.any():
            line = int(bad.idxmax()) + 2
            raise _fail(path, f"line {line}: column '{col}' = {df[col][bad.idxmax()]!r} is not one of "
                              f"{sorted(allowed)}", fix)
    if "ci95_low" in df:
        lo, hi = df["ci95_low"], df["ci95_high"]
        bad = (lo.isna() != hi.isna()) | (lo > hi)
        if bad.any():
            raise _fail(path, f"line {int(bad.idxmax()) + 2}: ci95_low/ci95_high must both be set "
                              "with low <= high, or both be empty (CI not published)", fix)
    if "bound" in df:
        textual = df["bound"].isin(["ordering", "trend"])
        bad = (textual & df["ordering"].isna()) | (~textual & df["value"].isna())
        if bad.any():
            raise _fail(path, f"line {int(bad.idxmax()) + 2}: a numeric bound needs 'value', an "
                              "ordering/trend bound needs 'ordering'", fix)
    return df


def load_seed_table(name: str, directory: str | Path | None = None) -> pd.DataFrame:
    """One seed CSV by name (a key of :data:`SCHEMAS`), checked."""
    if name not in SCHEMAS:
        raise ConfigError(f"unknown seed table {name!r}", key="name",
                          fix=f"use one of {sorted(SCHEMAS)}")
    return read_seed_csv(Path(directory or SEED_DIR) / f"{name}.csv", SCHEMAS[name])


def load_measurements(directory: str | Path | None = None) -> pd.DataFrame:
    """All quantitative seed tables (seeds 000, 002, 004) in one long DataFrame."""
    return pd.concat([load_seed_table(n, directory) for n in MEASUREMENT_TABLES], ignore_index=True)


_BRIDGES = {"ovs": "ovs", "openvswitch": "ovs", "linux-bridge": "linux-bridge",
            "linux_bridge": "linux-bridge", "linux": "linux-bridge", "lb": "linux-bridge"}
_VIRTS = {"kvm": "kvm-tap", "vm": "kvm-tap", "kvm-tap": "kvm-tap",
          "docker": "container-veth", "container": "container-veth",
          "container-veth": "container-veth"}
_COLUMN = {"throughput": "throughput_mbit_s", "rtt": "rtt_ms", "jitter": "jitter_ms"}


def thesis_table(bridge: str, virt: str, source: str = "comparison",
                 directory: str | Path | None = None) -> pd.DataFrame:
    """Seed 000's means for one bridge x virtualization: index = scheduler, thesis order.

    Columns ``throughput_mbit_s`` (netperf TCP_STREAM), ``rtt_ms`` (netperf TCP_RR) and
    ``jitter_ms`` (iperf UDP), each the mean of 100 runs.  ``source="comparison"`` reads
    Tables 3/4/5 (all four combinations); ``source="summary"`` reads Table 6 (KVM, OVS) or
    Table 7 (KVM, Linux bridge), which disagree with Table 5 in three jitter cells
    (see data/seeds/README.md).  The 95% CIs were not published: none are returned.
    """
    b, v = _BRIDGES.get(bridge.lower()), _VIRTS.get(virt.lower())
    if b is None:
        raise ConfigError(f"unknown bridge {bridge!r}", key="bridge", fix="use 'ovs' or 'linux-bridge'")
    if v is None:
        raise ConfigError(f"unknown virtualization {virt!r}", key="virt", fix="use 'kvm' or 'docker'")
    if source == "comparison":
        tables = ("Table 3", "Table 4", "Table 5")
    elif source == "summary":
        if v != "kvm-tap":
            raise ConfigError("Tables 6/7 cover KVM only", key="source",
                              fix="use source='comparison' for Docker")
        tables = ("Table 6",) if b == "ovs" else ("Table 7",)
    else:
        raise ConfigError(f"unknown source {source!r}", key="source", fix="use 'comparison' or 'summary'")
    df = load_seed_table("seed000_thesis_tables", directory)
    sel = df[df["table"].isin(tables) & (df["bridge"] == b) & (df["virtualization"] == v)]
    wide = sel.pivot(index="scheduler", columns="metric", values="value")
    wide = wide.reindex(index=list(THESIS_SCHEDULERS), columns=list(_COLUMN)).rename(columns=_COLUMN)
    if wide.isna().any().any():
        raise DataError(f"{SEED_DIR / 'seed000_thesis_tables.csv'}: cells missing for {b}/{v} in "
                        f"{tables} -- fix: restore the file from git")
    wide.index.name = "scheduler"
    wide.columns.name = None
    wide.attrs.update(document="seed000", tables=tables, bridge=b, virtualization=v, n_iterations=100)
    return wide


def thesis_parameters(directory: str | Path | None = None) -> dict[str, float | str]:
    """Seed 000's test parameters (§4.1.1, §5.1, §6): key -> value (float when numeric)."""
    df = load_seed_table("seed000_test_parameters", directory)
    out: dict[str, float | str] = {}
    for key, value in zip(df["key"], df["value"]):
        try:
            out[key] = float(value)
        except ValueError:
            out[key] = value
        if isinstance(out[key], float) and not math.isfinite(out[key]):
            out[key] = value
    return out


def xenserver_table(table: str, derived: bool = False,
                    directory: str | Path | None = None) -> pd.DataFrame:
    """Seed 002 Table IV..VIII as published (``derived=True``: the Mbit/s conversion of Table IV).

    Index = case, columns = min / max / mean; the unit is in ``.attrs['unit']``.
    """
    df = load_seed_table("seed002_xenserver_tables", directory)
    sel = df[(df["table"] == table) & (df["derived"] == derived)]
    if sel.empty:
        raise ConfigError(f"no rows for seed002 {table!r} (derived={derived})", key="table",
                          fix="use 'Table IV'..'Table VIII'; derived=True exists for Table IV only")
    wide = sel.pivot(index="case", columns="statistic", values="value")[["min", "max", "mean"]]
    wide = wide.reindex(pd.unique(sel["case"]))
    wide.columns.name = None
    wide.attrs.update(document="seed002", table=table, unit=sel["unit"].iloc[0])
    return wide


def interim_bridge_rounds(directory: str | Path | None = None) -> pd.DataFrame:
    """Seed 004's raw table: index = round 0..9, columns singlebr-tap, patchport-tap, singlebr-vif,
    patchport-vif (Mbit/s, iperf -P 10 [SUM])."""
    df = load_seed_table("seed004_interim_bridge", directory)
    raw = df[df["statistic"] == "sample"].copy()
    raw["column"] = raw["case"] + "-" + raw["virtualization"].map({"xen-hvm-tap": "tap", "xen-vif": "vif"})
    wide = raw.pivot(index="round", columns="column", values="value")
    wide = wide[["singlebr-tap", "patchport-tap", "singlebr-vif", "patchport-vif"]]
    wide.columns.name = None
    wide.attrs.update(document="seed004", unit="Mbit/s")
    return wide


def interim_bridge_published(directory: str | Path | None = None) -> pd.DataFrame:
    """Seed 004's published AVG (Mbit/s) and Comparison (%) rows, same columns as the rounds."""
    df = load_seed_table("seed004_interim_bridge", directory)
    pub = df[df["statistic"] != "sample"].copy()
    pub["column"] = pub["case"] + "-" + pub["virtualization"].map({"xen-hvm-tap": "tap", "xen-vif": "vif"})
    pub["row"] = pub["metric"].map({"throughput": "AVG", "throughput_ratio_to_singlebr": "Comparison"})
    wide = pub.pivot(index="row", columns="column", values="value")
    wide = wide.loc[["AVG", "Comparison"], ["singlebr-tap", "patchport-tap", "singlebr-vif", "patchport-vif"]]
    wide.columns.name = None
    return wide


def expectations(document: str | None = None, directory: str | Path | None = None) -> pd.DataFrame:
    """Range / ratio / ordering statements from the seeds (mostly 001 and 003), one per row."""
    df = load_seed_table("seed_expectations", directory)
    return df if document is None else df[df["document"] == document].reset_index(drop=True)
