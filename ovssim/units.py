"""Parse the units users know from ``tc`` and ``ovs-vsctl``.

Rates (tc(8) "RATES"): ``bit`` or a bare number = bit/s; ``kbit``, ``mbit``,
``gbit``, ``tbit`` are decimal (x1000); ``kibit``/``mibit``/``gibit`` binary;
``bps``, ``kbps``, ``mbps``, ``gbps`` are *bytes* per second (tc's spelling).
Sizes (tc(8) "SIZES"): ``b`` or a bare number = bytes; ``k``/``kb`` = 1024 B,
``m``/``mb`` = 1024**2 B, ``g``/``gb`` = 1024**3 B; ``kbit``/``mbit``/``gbit``
are bits (decimal).
Times: ``s``/``sec``/``secs``, ``ms``/``msec``/``msecs``, ``us``/``usec``/``usecs``,
``ns``.  A bare TOML number is taken in seconds (unlike tc, where a bare time
is microseconds: write the unit to be unambiguous).

All functions return floats in SI base units: bit/s, bytes, seconds.
"""
from __future__ import annotations

import re

from .errors import UnitError

_NUM = r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
_RE = re.compile(r"^\s*" + _NUM + r"\s*([A-Za-z/]*)\s*$")

_RATE = {
    "": 1.0, "bit": 1.0, "bps": 8.0, "bit/s": 1.0,
    "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12,
    "kibit": 1024.0, "mibit": 1024.0 ** 2, "gibit": 1024.0 ** 3, "tibit": 1024.0 ** 4,
    "kbps": 8e3, "mbps": 8e6, "gbps": 8e9, "tbps": 8e12,
    "kibps": 8 * 1024.0, "mibps": 8 * 1024.0 ** 2, "gibps": 8 * 1024.0 ** 3,
    "kbit/s": 1e3, "mbit/s": 1e6, "gbit/s": 1e9,
}
_SIZE = {
    "": 1.0, "b": 1.0, "byte": 1.0, "bytes": 1.0,
    "k": 1024.0, "kb": 1024.0, "kib": 1024.0,
    "m": 1024.0 ** 2, "mb": 1024.0 ** 2, "mib": 1024.0 ** 2,
    "g": 1024.0 ** 3, "gb": 1024.0 ** 3, "gib": 1024.0 ** 3,
    "kbit": 1e3 / 8, "mbit": 1e6 / 8, "gbit": 1e9 / 8, "bit": 1 / 8,
}
_TIME = {
    "": 1.0, "s": 1.0, "sec": 1.0, "secs": 1.0,
    "ms": 1e-3, "msec": 1e-3, "msecs": 1e-3,
    "us": 1e-6, "usec": 1e-6, "usecs": 1e-6, "µs": 1e-6,
    "ns": 1e-9, "nsec": 1e-9, "nsecs": 1e-9,
    "min": 60.0,
}


def _parse(value, table: dict, what: str, example: str) -> float:
    if isinstance(value, bool):
        raise UnitError(f"{what} {value!r} is a boolean; write e.g. {example!r}")
    if isinstance(value, (int, float)):
        out = float(value)
    elif isinstance(value, str):
        m = _RE.match(value)
        if not m or m.group(2).lower() not in table:
            units = ", ".join(sorted(k for k in table if k))
            raise UnitError(f"cannot read {what} {value!r}; write e.g. {example!r} "
                            f"(units: {units})")
        out = float(m.group(1)) * table[m.group(2).lower()]
    else:
        raise UnitError(f"{what} must be a number or a string like {example!r}, not {type(value).__name__}")
    if out != out or out in (float("inf"), float("-inf")):
        raise UnitError(f"{what} {value!r} is not a finite number")
    if out < 0:
        raise UnitError(f"{what} {value!r} is negative")
    return out


def rate(value) -> float:
    """A rate in bit/s from ``"100mbit"``, ``"1gbit"``, ``"12.5mbps"`` or a number of bit/s."""
    return _parse(value, _RATE, "rate", "100mbit")


def size(value) -> float:
    """A size in bytes from ``"1470b"``, ``"32k"``, ``"1514"`` or a number of bytes."""
    return _parse(value, _SIZE, "size", "1514b")


def time(value) -> float:
    """A duration in seconds from ``"5ms"``, ``"100us"``, ``"10s"`` or a number of seconds."""
    return _parse(value, _TIME, "time", "5ms")


def positive(value: float, what: str) -> float:
    if not value > 0:
        raise UnitError(f"{what} must be greater than zero, got {value!r}")
    return value


def fmt_rate(bps: float) -> str:
    for unit, f in (("Gbit", 1e9), ("Mbit", 1e6), ("Kbit", 1e3)):
        if bps >= f:
            return f"{bps / f:.4g}{unit}"
    return f"{bps:.4g}bit"


def fmt_time(sec: float) -> str:
    if sec >= 1:
        return f"{sec:.4g}s"
    if sec >= 1e-3:
        return f"{sec * 1e3:.4g}ms"
    return f"{sec * 1e6:.4g}us"
