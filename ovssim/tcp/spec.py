"""Reading a TCP tool's scenario table: flag-named keys, converted and validated.

Each option has the tool's own flag (``l``, ``s``, ``P``, ``w``...) and a long
name (``length``, ``local_buffer``, ``parallel``, ``window``...); either may be
used, not both.  Unknown keys and unreadable values raise
:class:`~ovssim.errors.ConfigError` naming the key and the accepted form.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from .. import units
from ..errors import ConfigError, UnitError


@dataclass(frozen=True)
class Option:
    name: str                      # constructor argument
    flags: tuple[str, ...]         # keys accepted in the table
    convert: Callable[[Any], Any]
    help: str


def as_bool(v) -> bool:
    if isinstance(v, bool):
        return v
    raise ValueError(f"{v!r} is not true or false")


def as_count(v) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or int(v) != v or v < 1:
        raise ValueError(f"{v!r} is not a whole number >= 1")
    return int(v)


def as_size(v) -> int:
    b = units.size(v)
    if b < 1:
        raise ValueError(f"{v!r} is less than one byte")
    return int(b)


def as_time(v) -> float:
    return units.time(v)


def as_positive_time(v) -> float:
    t = units.time(v)
    if not t > 0:
        raise ValueError(f"{v!r} must be longer than zero")
    return t


def as_cc(v) -> str:
    from .congestion import ALGORITHMS  # noqa: PLC0415
    if not isinstance(v, str) or v.lower() not in ALGORITHMS:
        raise ValueError(f"{v!r} is not a congestion control ovssim has "
                         f"(one of {', '.join(sorted(ALGORITHMS))})")
    return v.lower()


def as_port(v) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 0 < v < 65536:
        raise ValueError(f"{v!r} is not a port number 1-65535")
    return v


def as_cpu_list(v) -> tuple[int, ...]:
    """``taskset -c``'s core list: ``"0"``, ``"0-1"``, ``"0,2-3"`` or a TOML list of core numbers."""
    if isinstance(v, (list, tuple)):
        cores = list(v)
        if not cores or any(isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in cores):
            raise ValueError(f"{v!r} is not a list of core numbers >= 0")
    elif isinstance(v, str) and re.fullmatch(r"\s*\d+(\s*-\s*\d+)?(\s*,\s*\d+(\s*-\s*\d+)?)*\s*", v):
        cores = []
        for part in v.split(","):
            lo, _, hi = part.partition("-")
            lo, hi = int(lo), int(hi or lo)
            if hi < lo:
                raise ValueError(f"{part.strip()!r} is a range that runs backwards")
            cores.extend(range(lo, hi + 1))
    else:
        raise ValueError(f"{v!r} is not a core list such as \"0\", \"0-1\" or [0, 2]")
    return tuple(sorted(set(cores)))


def parse_table(table: dict, options: list[Option], *, tool: str, fixed: dict[str, tuple]) -> dict:
    """Constructor keyword arguments from ``table``.

    ``fixed`` maps keys that select the tool (``tool``, ``test``, ``proto``) to
    their accepted values; they are checked and not passed on.
    """
    by_flag = {}
    for opt in options:
        for f in opt.flags:
            by_flag[f] = opt
    out: dict = {}
    seen: dict[str, str] = {}
    for key, value in table.items():
        if key in fixed:
            ok = fixed[key]
            if str(value).lower() not in {str(o).lower() for o in ok}:
                raise ConfigError(f"{tool}: {key} = {value!r} is not handled here", key=key,
                                  fix=f"use {key} = " + " or ".join(repr(o) for o in ok))
            continue
        opt = by_flag.get(key)
        if opt is None:
            known = ", ".join(f"{'/'.join(o.flags)} ({o.help})" for o in options)
            raise ConfigError(f"unknown {tool} option {key!r}", key=key, fix=f"{tool} takes: {known}")
        if opt.name in seen:
            raise ConfigError(f"{tool}: {key!r} and {seen[opt.name]!r} set the same option", key=key,
                              fix="keep one of them")
        seen[opt.name] = key
        try:
            out[opt.name] = opt.convert(value)
        except (ValueError, TypeError, UnitError) as exc:
            raise ConfigError(f"{tool}: bad value for {key}: {exc}", key=key,
                              fix=f"{key} is {opt.help}") from None
    return out
