"""Write calibration profiles (TOML) with their provenance.

Layout (read by ``ovssim/profile.py``)::

    [profile]      name, description, ovssim_version
    [provenance]   created (UTC ISO-8601), command, data = [{file, sha256}], method
    [fit]          goodness-of-fit figures (numbers / strings / small tables)
    [params]       dotted parameter name -> constant ("6us") or distribution spec
    [uncertainty]  optional: parameter -> {std = ..., ci95 = [lo, hi]}
    [state]        the machine state of the data (speed index, load), when the collector measured it

Every distribution is checked with :class:`ovssim.distributions.Distribution`
before anything is written, so a profile on disk always loads.  The standard
library reads TOML but does not write it and no TOML writer is installed, so
:func:`dumps_toml` emits the small subset profiles use (strings, numbers,
booleans, arrays, inline tables, and sub-tables for long arrays).
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import math
import os
import re
import shlex
import sys
import tomllib
from pathlib import Path

import numpy as np

from .. import __version__
from ..distributions import Distribution
from ..errors import ConfigError

REQUIRED = {"profile": ("name", "ovssim_version"),
            "provenance": ("created", "command", "data", "method"),
            "params": ()}
_BARE = re.compile(r"^[A-Za-z0-9_-]+$")
_INLINE_ARRAY_MAX = 12


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def sha256_dir(path: str | Path) -> str:
    """One hash over a directory's files (relative names and contents, in sorted order)."""
    root = Path(path)
    h = hashlib.sha256()
    for f in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(str(f.relative_to(root)).encode() + b"\0")
        h.update(bytes.fromhex(sha256_file(f)))
    return h.hexdigest()


def data_entry(path: str | Path) -> dict:
    """``{file, sha256}`` for a data file or directory (path relative to the working directory
    when inside it; a directory's hash covers all its files)."""
    p = Path(path)
    try:
        shown = str(p.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        shown = str(p)
    if p.is_dir():
        return {"file": shown, "sha256": sha256_dir(p), "kind": "directory"}
    return {"file": shown, "sha256": sha256_file(p)}


def source_revision() -> str | None:
    """The git commit of the ovssim source tree (``+dirty`` with uncommitted changes), if known."""
    import subprocess
    root = Path(__file__).resolve().parents[2]
    try:
        rev = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                             text=True, timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no",
                                "--", "ovssim"], capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return rev + ("+dirty" if dirty else "") if rev else None


def now_utc() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def command_line(argv: list[str] | None = None) -> str:
    argv = list(sys.argv if argv is None else argv)
    if argv and argv[0].endswith(("ovssim", "__main__.py")):
        argv[0] = "ovssim"
    return " ".join(shlex.quote(a) for a in argv)


# -- TOML ------------------------------------------------------------------------
def _key(k: str) -> str:
    k = str(k)
    return k if _BARE.match(k) else _str(k)


def _str(s: str) -> str:
    out = []
    for ch in s:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _val(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if math.isnan(f):
            return "nan"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        r = repr(f)
        return r if ("." in r or "e" in r or "n" in r) else r + ".0"
    if isinstance(v, str):
        return _str(v)
    if isinstance(v, np.ndarray):
        v = v.tolist()
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_val(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_val(x)}" for k, x in v.items() if x is not None) + " }"
    if v is None:
        raise ConfigError("TOML has no null value", fix="drop the key or give a value")
    raise ConfigError(f"cannot write a {type(v).__name__} to TOML")


def _is_long(v) -> bool:
    return isinstance(v, dict) and any(isinstance(x, (list, tuple, np.ndarray)) and len(x) > _INLINE_ARRAY_MAX
                                      for x in v.values())


def _array_lines(v) -> str:
    items = [_val(x) for x in (v.tolist() if isinstance(v, np.ndarray) else v)]
    rows = [", ".join(items[i:i + 8]) for i in range(0, len(items), 8)]
    return "[\n  " + ",\n  ".join(rows) + ",\n]"


def _section(lines: list[str], header: str, table: dict) -> None:
    simple = {k: v for k, v in table.items() if v is not None and not _is_long(v)
              and not (isinstance(v, dict) and any(isinstance(x, dict) for x in v.values()))}
    nested = {k: v for k, v in table.items() if v is not None and k not in simple}
    lines.append(f"[{header}]")
    for k, v in simple.items():
        lines.append(f"{_key(k)} = {_val(v)}")
    lines.append("")
    for k, v in nested.items():
        sub = f"{header}.{_key(k)}"
        lines.append(f"[{sub}]")
        inner_tables = {}
        for kk, vv in v.items():
            if vv is None:
                continue
            if isinstance(vv, dict) and any(isinstance(x, dict) for x in vv.values()):
                inner_tables[kk] = vv
            elif isinstance(vv, (list, tuple, np.ndarray)) and len(vv) > _INLINE_ARRAY_MAX:
                lines.append(f"{_key(kk)} = {_array_lines(vv)}")
            else:
                lines.append(f"{_key(kk)} = {_val(vv)}")
        lines.append("")
        for kk, vv in inner_tables.items():
            lines.append(f"[{sub}.{_key(kk)}]")
            for k3, v3 in vv.items():
                if v3 is not None:
                    lines.append(f"{_key(k3)} = {_val(v3)}")
            lines.append("")


def dumps_toml(doc: dict) -> str:
    """Profile dict -> TOML text; round-trips through :mod:`tomllib`."""
    lines: list[str] = []
    for header, table in doc.items():
        if not isinstance(table, dict):
            raise ConfigError(f"profile section {header!r} must be a table")
        _section(lines, header, table)
    text = "\n".join(lines).rstrip() + "\n"
    tomllib.loads(text)   # never write what cannot be read back
    return text


# -- profiles --------------------------------------------------------------------
def validate_profile(doc: dict, *, file: str | None = None) -> dict:
    """Check sections, required fields and every parameter's distribution spec."""
    for section, keys in REQUIRED.items():
        if section not in doc or not isinstance(doc[section], dict):
            raise ConfigError(f"missing [{section}] table", file=file, key=section,
                              fix=f"add a [{section}] section")
        for k in keys:
            if k not in doc[section]:
                raise ConfigError(f"missing field '{k}'", file=file, key=f"{section}.{k}",
                                  fix=f"add {k} = ... under [{section}]")
    data = doc["provenance"]["data"]
    if not isinstance(data, list) or not all(isinstance(d, dict) and "file" in d and "sha256" in d
                                             for d in data):
        raise ConfigError("provenance.data must be a list of {file, sha256} tables", file=file,
                          key="provenance.data", fix='write data = [{ file = "...", sha256 = "..." }]')
    if not doc["params"]:
        raise ConfigError("[params] is empty", file=file, key="params",
                          fix="a profile must set at least one parameter")
    for name, spec in doc["params"].items():
        if isinstance(spec, (bool, list)):
            raise ConfigError(f"parameter value {spec!r} is not a number, unit string or "
                              "distribution table", file=file, key=f"params.{name}")
        if isinstance(spec, (dict, str)) or isinstance(spec, (int, float)):
            if isinstance(spec, str) and not any(ch.isdigit() for ch in spec):
                continue   # a symbolic setting (e.g. a qdisc name), not a delay
            if isinstance(spec, (int, float)) and not isinstance(spec, bool):
                continue   # a plain number (count, factor) is a valid parameter value
            try:
                d = Distribution(spec, where=f"params.{name}")
                if d.frozen is not None and not np.isfinite(d.frozen.ppf(0.5)):
                    raise ValueError(f"parameters outside the {spec.get('dist')} family's domain "
                                     "(scipy returns NaN)")
            except Exception as exc:
                if isinstance(spec, dict):
                    raise ConfigError(f"invalid distribution: {exc}", file=file, key=f"params.{name}",
                                      fix='see ovssim/distributions.py for the spec format') from None
                # unit strings that are not times (rates, sizes) are left to the simulator
    unc = doc.get("uncertainty", {})
    for name, u in unc.items():
        if not isinstance(u, dict):
            raise ConfigError("uncertainty entries must be tables like { std = ..., ci95 = [lo, hi] }",
                              file=file, key=f"uncertainty.{name}")
    return doc


def build_profile(*, name: str, params: dict, data_files=(), command: str | None = None,
                  method: str, description: str = "", fit: dict | None = None,
                  uncertainty: dict | None = None, extra_data: list[dict] | None = None) -> dict:
    """Assemble a profile dict with provenance (hashes of ``data_files``, time, command, version)."""
    data = [data_entry(f) for f in data_files] + list(extra_data or [])
    doc = {
        "profile": {"name": name, "description": description, "ovssim_version": __version__},
        "provenance": {"created": now_utc(), "command": command or command_line(),
                       "data": data, "method": method, "ovssim_revision": source_revision()},
        "fit": _plain(fit or {}),
        "params": _plain(params),
    }
    if uncertainty:
        doc["uncertainty"] = _plain(uncertainty)
    if not doc["fit"]:
        del doc["fit"]
    state = machine_state_of(data_files)
    if state:
        doc["state"] = state
    return validate_profile(doc)


def machine_state_of(data_files) -> dict:
    """The profile's ``[state]``: the collector's machine state of the campaigns ``data_files`` lie in
    (``metadata.json`` ``machine_state`` of the file's directory or a parent): the mean speed index,
    load and (where the spaced ping was measured) idle exit of every before/after measurement; ``{}``
    when none was measured (data collected before 25 Nov 2026, seeds' tables)."""
    import json
    found: dict[str, list] = {}
    for f in data_files:
        p = Path(f).resolve()
        for d in [p, *p.parents][:4]:
            meta = d / "metadata.json"
            if d.is_dir() and meta.is_file():
                try:
                    states = json.loads(meta.read_text()).get("machine_state") or {}
                except (OSError, ValueError):
                    states = {}
                good = [st for st in states.values() if isinstance(st, dict) and "speed_index" in st]
                if good:
                    found[str(d)] = good
                break
    if not found:
        return {}
    every = [st for sts in found.values() for st in sts]
    from ..collect.state import idle_exit_us
    exits = [x for x in (idle_exit_us(st.get("benchmark") or {}) for st in every) if x is not None]
    extra = {"idle_exit_us": round(float(np.mean(exits)), 1)} if exits else {}
    def medians(key: str) -> list[float]:
        """The benchmark ``key``'s median of every measurement that has one."""
        return [r["median"] for r in ((st.get("benchmark") or {}).get(key) for st in every)
                if isinstance(r, dict) and r.get("median")]
    rates, hot = medians("veth_pingpong_per_s"), medians("veth_pingpong_rtt_us")
    from ..collect.state import ladder_levels
    ladders = [lv for lv in (ladder_levels(st.get("benchmark") or {}) for st in every) if lv is not None]
    if ladders:             # the idle states of every measurement's idle ladder, averaged
        extra.update({"shallow_after_ms": round(float(np.mean([lv.shallow_after for lv in ladders])) * 1e3, 3),
                      "idle_exit_after_ms": round(float(np.mean([lv.deep_after for lv in ladders])) * 1e3, 3),
                      "shallow_exit_us": round(float(np.mean([lv.shallow_exit for lv in ladders])) * 1e6, 1)})
    if exits and rates:     # the hot ping-pong's time per exchange and (from 28 Nov) its RTT: ovssim/validate/cold.py
        extra["pingpong_us"] = round(float(np.mean([1e6 / r for r in rates])), 2)
        if hot:
            extra["pingpong_rtt_us"] = round(float(np.mean(hot)), 2)
    return {**extra, "speed_index": round(float(np.mean([st["speed_index"] for st in every])), 4),
            "loadavg": [round(float(x), 2) for x in np.mean([st["loadavg"] for st in every], axis=0)],
            "steal_share": round(float(np.mean([st["steal_share"] for st in every])), 4),
            "data": [os.path.relpath(d) for d in found],
            "note": "mean of the collector's before/after measurements (ovssim/collect/state.py); "
                    "speed indices " + ", ".join(f"{st['speed_index']:.3f}" for st in every)}


def _plain(obj):
    """numpy scalars/arrays -> Python; drop None values."""
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items() if v is not None}
    if isinstance(obj, (list, tuple, np.ndarray)):
        return [_plain(v) for v in (obj.tolist() if isinstance(obj, np.ndarray) else obj)]
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def write_profile(path: str | Path, doc: dict, *, overwrite: bool = True) -> Path:
    """Validate and write ``doc`` as TOML (atomically; an existing file only with ``overwrite``)."""
    from ..atomic import write_atomic
    path = Path(path)
    validate_profile(doc, file=str(path))
    text = dumps_toml(doc)
    return write_atomic(path, text, overwrite=overwrite, what="profile", make_parents=True)


def read_profile(path: str | Path) -> dict:
    """Read and validate a profile (the simulator uses ``ovssim.profile``; this is for fit tools)."""
    p = Path(path)
    try:
        doc = tomllib.loads(p.read_text())
    except FileNotFoundError:
        raise ConfigError("no such profile file", file=str(p), fix="check the path") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"not valid TOML: {exc}", file=str(p)) from None
    return validate_profile(doc, file=str(p))
