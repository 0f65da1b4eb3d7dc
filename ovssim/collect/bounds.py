"""Strict, physical bounds for every value a campaign or testbed file gives the collector.

A value is checked before any work starts, and a wrong one is one ConfigError naming the key
and the accepted range.  Booleans are TOML booleans only (``"no"`` is not false), whole numbers
are integers only (``true`` and ``1e9`` are not counts), quantities go through
:mod:`ovssim.units` and must fall inside the range the real tools and the kernel accept.
"""
from __future__ import annotations

import re

from .. import units
from ..errors import ConfigError, OvssimError

# limits of the real components (cited where they come from)
MTU = (68, 65535)                 # drivers/net/veth.c: ETH_MIN_MTU .. ETH_MAX_MTU
UDP_PAYLOAD = 65507               # 65535 - 20 (IPv4 header) - 8 (UDP header): iperf3/sockperf/ping max
TCP_WRITE = 1 << 20               # iperf3 src/iperf.h MAX_BLOCKSIZE (1 MB) for -l on TCP
RATE = (1e3, 1e12)                # 1 kbit/s .. 1 Tbit/s: tc and iperf3 -b take whole bit/s
DURATION = (1.0, 86400.0)         # iperf3 -t is whole seconds (atoi); one run at most a day
PING_INTERVAL = (1e-3, 60.0)      # ping -i: below 1 ms the probe's own send loop is what is measured
MAX_REPETITIONS = 1000
MAX_RUNS = 100_000                # configurations x repetitions held in memory and in the journal
MAX_INPUT_FILE = 1 << 20          # a campaign or testbed file: text a person wrote


_LABEL = re.compile(r"[A-Za-z0-9_.+-]{1,64}")


def label(value, *, file=None, key=None, what="name") -> str:
    """A workload or qdisc name: it becomes a column value and part of run names."""
    if not isinstance(value, str) or not _LABEL.fullmatch(value):
        raise ConfigError(f"{what} {value!r} is not a name", file=file, key=key,
                          fix="use 1-64 letters, digits, '_', '.', '+', '-'")
    return value


def flag(value, *, file=None, key=None) -> bool:
    """A TOML boolean (``true``/``false``), nothing else."""
    if not isinstance(value, bool):
        raise ConfigError(f"must be true or false, not {value!r}", file=file, key=key,
                          fix="write true or false without quotes")
    return value


def whole(value, low: int, high: int, *, file=None, key=None) -> int:
    """An integer in [low, high] (not a boolean, not a float)."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"must be a whole number {low}..{high}, not {value!r}", file=file, key=key,
                          fix=f"write e.g. {key.rsplit('.', 1)[-1] if key else 'value'} = {max(low, min(high, 10))}")
    return value


def quantity(parse, value, low: float, high: float, *, file=None, key=None, fmt=str) -> float:
    """``parse(value)`` (a :mod:`ovssim.units` reader) inside [low, high]."""
    try:
        out = parse(value)
    except OvssimError as exc:
        raise ConfigError(str(exc), file=file, key=key) from None
    if not low <= out <= high:
        raise ConfigError(f"{value!r} is outside {fmt(low)}..{fmt(high)}", file=file, key=key,
                          fix=f"give a value between {fmt(low)} and {fmt(high)}")
    return out


def rate(value, *, file=None, key=None) -> float:
    return quantity(units.rate, value, *RATE, file=file, key=key, fmt=units.fmt_rate)


def duration(value, low: float = DURATION[0], high: float = DURATION[1], *, file=None, key=None) -> float:
    return quantity(units.time, value, low, high, file=file, key=key, fmt=units.fmt_time)


def size(value, high: int, *, file=None, key=None) -> int:
    out = quantity(units.size, value, 1, high, file=file, key=key, fmt=lambda b: f"{b:g} bytes")
    if out != int(out):
        raise ConfigError(f"a size is whole bytes, not {value!r}", file=file, key=key)
    return int(out)


def input_file(path, what: str) -> None:
    """``path`` is a regular file of at most 1 MB (``/dev/zero`` or a FIFO would be read forever)."""
    from pathlib import Path
    p = Path(path)
    if not p.exists():
        return                                   # the reader says "not found" in its own words
    if not p.is_file():
        raise ConfigError(f"cannot read {what} file: not a regular file", file=str(p),
                          fix=f"give a {what} .toml file")
    if p.stat().st_size > MAX_INPUT_FILE:
        raise ConfigError(f"larger than {MAX_INPUT_FILE >> 20} MB: not a {what} file", file=str(p),
                          fix=f"give a {what} .toml file")
