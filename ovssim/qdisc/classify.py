"""Helpers the qdiscs share: flow hashing, priorities, tc class ids, unit converters.

* :class:`FlowHasher` -- a deterministic, seedable stand-in for the kernel's
  ``skb_get_hash`` + ``reciprocal_scale`` (SFQ, FQ-CoDel).  It hashes the
  5-tuple with CRC-32 (never Python's salted ``hash``), so a run is
  reproducible; a new ``perturbation`` re-hashes every flow, as SFQ's
  ``perturb`` timer does.
* :func:`tos_to_priority` -- ``rt_tos2priority``: the skb priority a socket
  with ``IP_TOS`` gives its packets (net/ipv4/route.c ``ip_tos2prio``).
* :func:`parse_classid` -- tc's ``major:minor`` handles (``"1:10"`` is hex 0x10).
"""
from __future__ import annotations

import zlib

from .. import units
from . import defaults


class FlowHasher:
    """``bucket(flow) -> 0..buckets-1``; cached per flow until :meth:`perturb`."""

    __slots__ = ("buckets", "perturbation", "_cache")

    def __init__(self, buckets: int, perturbation: int = 0):
        self.buckets = buckets
        self.perturbation = perturbation & 0xFFFFFFFF
        self._cache: dict = {}

    def bucket(self, flow) -> int:
        b = self._cache.get(flow)
        if b is None:
            key = "|".join(map(str, flow)).encode()
            h = zlib.crc32(key, self.perturbation)
            # reciprocal_scale(hash, n): (hash * n) >> 32, as fq_codel_hash does
            b = (h * self.buckets) >> 32
            self._cache[flow] = b
        return b

    def perturb(self, perturbation: int) -> None:
        self.perturbation = perturbation & 0xFFFFFFFF
        self._cache.clear()


def tos_to_priority(tos: int) -> int:
    """skb->priority of a locally generated packet whose socket set ``IP_TOS = tos``."""
    return defaults.IP_TOS2PRIO[(tos & 0x1E) >> 1]


def pfifo_fast_band(priority: int, priomap=defaults.PFIFO_FAST_PRIOMAP) -> int:
    """Band of a packet in pfifo_fast: ``prio2band[skb->priority & TC_PRIO_MAX]``."""
    return priomap[priority & defaults.TC_PRIO_MAX]


# -- tc handles ------------------------------------------------------------------
def parse_classid(value, default_major: int = 1) -> int:
    """``"1:10"`` -> 0x10010; ``"1:"`` -> 0x10000; a bare int is a minor of ``default_major``."""
    if isinstance(value, bool):
        raise ValueError(f"class id {value!r} is a boolean")
    if isinstance(value, int):
        if not 0 <= value <= 0xFFFF:
            raise ValueError(f"class minor {value} is outside 0..ffff")
        return (default_major << 16) | value
    if not isinstance(value, str):
        raise ValueError(f"class id must be 'major:minor', not {type(value).__name__}")
    s = value.strip().lower()
    if s == "root":
        return 0xFFFFFFFF
    if ":" not in s:
        raise ValueError(f"class id {value!r} is not 'major:minor' (tc writes e.g. '1:10')")
    maj, _, mnr = s.partition(":")
    try:
        major = int(maj, 16) if maj else default_major
        minor = int(mnr, 16) if mnr else 0
    except ValueError:
        raise ValueError(f"class id {value!r}: major and minor are hexadecimal numbers") from None
    if not (0 <= major <= 0xFFFF and 0 <= minor <= 0xFFFF):
        raise ValueError(f"class id {value!r} is outside ffff:ffff")
    return (major << 16) | minor


def fmt_classid(cid: int) -> str:
    return f"{cid >> 16:x}:{cid & 0xFFFF:x}"


def packet_classid(pkt, major: int) -> int | None:
    """The class a packet asks for: OVS ``set_queue:N`` (class ``major:N+1``) or skb->priority.

    OVS's kernel datapath turns ``set_queue:N`` into ``skb->priority =
    TC_H_MAKE(1 << 16, N + 1)`` (``dpif_netlink_queue_to_priority``); HTB and
    HFSC look a class up by ``skb->priority`` before running filters.
    """
    q = pkt.queue_id
    if q is not None:
        return (major << 16) | (q + 1)
    prio = pkt.priority
    if prio >> 16 == major:
        return prio
    return None


# -- converters for PARAMS ---------------------------------------------------------
def whole(v) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise ValueError(f"{v!r} is not a whole number")
    f = float(v)
    if not abs(f) <= units.COUNT_MAX or f != int(f):
        raise ValueError(f"{v!r} is not a whole number up to {units.COUNT_MAX}")
    return int(f)


def flag(v) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.lower() in ("true", "yes", "on", "1", "ecn"):
        return True
    if isinstance(v, str) and v.lower() in ("false", "no", "off", "0", "noecn"):
        return False
    if isinstance(v, int) and v in (0, 1):
        return bool(v)
    raise ValueError(f"{v!r} is not true/false")


def size_int(v) -> int:
    return int(round(units.size(v)))


rate = units.rate
size = units.size
time = units.time
