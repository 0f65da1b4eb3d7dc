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

Physical bounds live here, one per kind, and every reader checks them before any work: a rate, a
time or a size beyond them is a typing mistake, and some (a 1e99 s duration, a 1e-30 bit/s link)
would stall the simulated clock.
"""
from __future__ import annotations

import re

from .errors import UnitError

RATE_MIN = 1.0          # bit/s: the smallest rate ovs-vsctl takes (OVS clamps an HTB min-rate up to one MTU/s)
RATE_MAX = 1.6e12       # bit/s: twice the fastest Ethernet (IEEE 802.3df, 800 Gbit/s)
TIME_MAX = 1e6          # s (11.6 days): float64 simulated time still resolves 1 ns there
DURATION_MIN = 1e-3     # s: a traffic run shorter than 1 ms measures nothing (a host's RTT is ~20-50 us)
INTERVAL_MIN = 1e-6     # s: the spacing of a periodic sender (ping -i); no tool sends one flow at over 1 MHz
DELAY_MAX = 10.0        # s: a per-packet delay or cost; any packet held this long is long dropped by TCP/ping
SIZE_MAX = 2.0 ** 40    # bytes (1 TiB): beyond any socket buffer, queue or transfer a scenario can hold
COUNT_MAX = 10 ** 7     # replications, samples, evaluations: beyond any budget (and int64-safe)
SEED_MAX = 2 ** 63 - 1  # numpy's SeedSequence takes any int; JSON and CSV readers need int64

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


def _within(out: float, value, what: str, low: float, high: float, shown) -> float:
    if not low <= out <= high:
        side = "below" if out < low else "above"
        raise UnitError(f"{what} {value!r} is {side} the physical range {shown(low)} .. {shown(high)}")
    return out


def rate(value, what: str = "rate") -> float:
    """A rate in bit/s from ``"100mbit"``, ``"1gbit"``, ``"12.5mbps"`` or a number of bit/s: 0 (none, as
    an HFSC curve's m1) or RATE_MIN .. RATE_MAX."""
    out = _parse(value, _RATE, what, "100mbit")
    return out if out == 0 else _within(out, value, what, RATE_MIN, RATE_MAX, fmt_rate)


def link_rate(value, what: str = "rate") -> float:
    """A rate a link or shaper sends at: RATE_MIN .. RATE_MAX bit/s."""
    return _within(rate(value, what), value, what, RATE_MIN, RATE_MAX, fmt_rate)


def size(value, what: str = "size") -> float:
    """A size in bytes from ``"1470b"``, ``"32k"``, ``"1514"`` or a number of bytes (0 .. SIZE_MAX)."""
    return _within(_parse(value, _SIZE, what, "1514b"), value, what, 0.0, SIZE_MAX, lambda b: f"{b:.4g}B")


def time(value, what: str = "time") -> float:
    """A time in seconds from ``"5ms"``, ``"100us"``, ``"10s"`` or a number of seconds (0 .. TIME_MAX)."""
    return _within(_parse(value, _TIME, what, "5ms"), value, what, 0.0, TIME_MAX, fmt_time)


def duration(value, what: str = "duration") -> float:
    """How long traffic runs: DURATION_MIN .. TIME_MAX seconds."""
    return _within(time(value, what), value, what, DURATION_MIN, TIME_MAX, fmt_time)


def interval(value, what: str = "interval") -> float:
    """The spacing of a periodic sender: INTERVAL_MIN .. TIME_MAX seconds."""
    return _within(time(value, what), value, what, INTERVAL_MIN, TIME_MAX, fmt_time)


def delay(value, what: str = "delay") -> float:
    """A per-packet delay or cost: 0 .. DELAY_MAX seconds."""
    return _within(time(value, what), value, what, 0.0, DELAY_MAX, fmt_time)


def whole(value, what: str, low: int = 1, high: int = COUNT_MAX) -> int:
    """A whole number ``low .. high`` (a count, replications, a seed); booleans and floats are refused."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise UnitError(f"{what} must be a whole number, got {value!r}")
    if not low <= value <= high:
        raise UnitError(f"{what} must be {low} .. {high}, got {value!r}")
    return value


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
