"""A port's QoS given the way Open vSwitch's QoS and Queue tables give it.

``qdisc = { type = "linux-htb", other-config = { max-rate = "95000000" },
queues = { 0 = { min-rate = "10000000", max-rate = "95000000", priority = 1 } } }``
becomes the tc configuration ``lib/netdev-linux.c`` installs:

* ``linux-htb``: ``tc qdisc add dev D root handle 1: htb default 1``; a root
  class ``1:fffe`` with rate = ceil = ``max-rate`` (default: the link speed,
  10 Gbit/s when the device reports none) and a burst of one MTU; queue N is
  class ``1:(N+1)`` under it with rate = ``min-rate`` (at least one MTU per
  second, at most max-rate), ceil = ``max-rate``, burst = cburst =
  ``max(burst, mtu + 64)`` bytes (``burst`` is in bits, as OVS reads it),
  ``prio`` = ``priority``, and quantum = MTU when min-rate / 10 < MTU.
* ``linux-hfsc``: ``... hfsc default 1``; root ``1:fffe`` with ``sc rate
  max-rate ul rate max-rate``; queue N is ``1:(N+1)`` with ``sc rate
  min-rate ul rate max-rate``.
* ``linux-sfq`` (``quantum`` bytes, ``perturb`` seconds, default 10),
  ``linux-codel`` (``target``/``interval`` in microseconds, ``limit``; OVS
  defaults 5000 / 100000 / 10240), ``linux-fq_codel`` (also ``flows``,
  ``quantum``; OVS writes an interval of 1000000 us = 1 s when none is given).
* ``linux-noop``: OVS leaves the device's qdisc alone -- the ``qdisc`` key of
  this table if given (tc form), else the kernel default.
* ``linux-default`` (or ``""``): OVS deletes its qdisc; the kernel default
  (pfifo_fast) returns.

A flow's ``set_queue:N`` action (``Packet.queue_id = N``) selects class
``1:(N+1)``; traffic without a queue goes to class ``1:1`` (queue 0).  A QoS
row without queue 0 gets one as if an empty Queue row had been given
(``iface_configure_qos`` in vswitchd/bridge.c ends with ``netdev_set_queue(netdev,
0, <empty>)`` when no queue 0 was configured; older releases only warned that
"packets not directed to a correctly configured queue may be dropped", which
HFSC did): min-rate at its floor (one MTU per second for HTB, 1 byte per
second for HFSC, as lib/netdev-linux.c clamps them), max-rate the QoS's.  Rates are bit/s (a bare number, as OVS writes them, or tc units such
as ``"95mbit"``).  The tc form of HTB/HFSC (``kind = "htb"``) keeps the
kernel's own rules: no default class -- HTB's direct queue, HFSC drops.
"""
from __future__ import annotations

from ..errors import ConfigError
from .. import units
from . import defaults
from .base import Device
from .hfsc import Hfsc
from .htb import Htb

TYPES = ("linux-htb", "linux-hfsc", "linux-sfq", "linux-codel", "linux-fq_codel",
         "linux-noop", "linux-default", "")


def _norm(d: dict | None, what: str) -> dict:
    if d is None:
        return {}
    if not isinstance(d, dict):
        raise ConfigError(f"OVS QoS {what} must be a table of key = value", key=f"qdisc.{what}",
                          fix='write e.g. other-config = { max-rate = "100000000" }')
    return {str(k).replace("_", "-"): v for k, v in d.items()}


def _conv(what: str, key: str, fn, v):
    try:
        return fn(v)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"OVS QoS {what}: bad {key} {v!r}: {exc}", key=f"qdisc.{what}.{key}",
                          fix="OVS writes rates in bit/s, e.g. max-rate = \"100000000\"") from None


def _bare(v) -> float | None:
    if isinstance(v, bool):
        raise ValueError("a boolean is not a number")
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str) and v.strip().replace(".", "", 1).isdigit():
        return float(v)
    return None


def _bits_to_bytes(v) -> float:
    b = _bare(v)
    return b / 8.0 if b is not None else units.size(v)


def _usec(v) -> float:
    b = _bare(v)
    return b * 1e-6 if b is not None else units.time(v)


def _count(v) -> int:
    b = _bare(v)
    if b is None or b != int(b):
        raise ValueError("not a whole number")
    return int(b)


def _check_keys(what: str, d: dict, allowed: set) -> None:
    bad = sorted(k for k in d if k not in allowed)
    if bad:
        raise ConfigError(f"OVS QoS {what}: unknown key(s) {', '.join(bad)}", key=f"qdisc.{what}",
                          fix=f"{what} takes: {', '.join(sorted(allowed)) or '(nothing)'}")


def _queues(spec: dict) -> dict[int, dict]:
    q = spec.get("queues")
    if q is None:
        q = {}
    if isinstance(q, list):
        q = dict(enumerate(q))
    if not isinstance(q, dict):
        raise ConfigError("OVS QoS queues must map queue numbers to Queue rows", key="qdisc.queues",
                          fix='write queues = { 0 = { min-rate = "1000000" } }')
    out = {}
    for k, row in q.items():
        try:
            qid = int(k)
        except (TypeError, ValueError):
            raise ConfigError(f"OVS QoS queue key {k!r} is not a queue number", key="qdisc.queues",
                              fix="queue numbers are 0, 1, 2, ...") from None
        if not 0 <= qid < defaults.OVS_N_QUEUES:
            raise ConfigError(f"OVS QoS queue {qid} is outside 0..{defaults.OVS_N_QUEUES - 1}",
                              key="qdisc.queues", fix="use a smaller queue number")
        row = _norm(row, f"queues.{qid}")
        if "other-config" in row:
            extra = {k2: v for k2, v in row.items() if k2 != "other-config"}
            row = {**_norm(row["other-config"], f"queues.{qid}.other-config"), **extra}
        out[qid] = row
    out.setdefault(0, {})          # OVS configures queue 0 when the row has none (see the module docstring)
    return out


class _OvsClassful:
    """Mixin: rebuild the class tree at ``attach`` when max-rate comes from the link speed."""

    def _ovs_init(self, spec: dict, builder) -> None:
        self._ovs_spec = spec
        self._ovs_builder = builder
        oc = _norm(spec.get("other-config", spec.get("other_config")), "other-config")
        _check_keys("other-config", oc, {"max-rate"})
        self._ovs_max = _conv("other-config", "max-rate", units.rate, oc["max-rate"]) if "max-rate" in oc else None
        self._ovs_queues = _queues(spec)
        self._ovs_mtu = defaults.ETH_MTU

    def _classes(self, link_bps: float | None, mtu: int) -> list[dict]:
        max_bps = self._ovs_max or link_bps or defaults.OVS_DEFAULT_BPS
        return self._ovs_builder(max_bps, self._ovs_queues, mtu)

    def attach(self, dev: Device) -> None:
        if self._ovs_max is None and (dev.rate_bps or dev.mtu != self._ovs_mtu):
            self._rebuild(self._classes(dev.rate_bps, dev.mtu))
        elif dev.mtu != self._ovs_mtu:
            self._rebuild(self._classes(dev.rate_bps, dev.mtu))
        super().attach(dev)


def _htb_classes(max_bps: float, queues: dict, mtu: int) -> list[dict]:
    max_B = int(max_bps / 8)
    root = defaults.OVS_ROOT_MINOR
    classes = [{"classid": f"1:{root:x}", "parent": "1:", "rate": max_B * 8, "ceil": max_B * 8,
                "burst": mtu, "cburst": mtu}]
    for qid, row in sorted(queues.items()):
        _check_keys(f"queues.{qid}", row, {"min-rate", "max-rate", "burst", "priority"})
        min_B = int(_conv(f"queues.{qid}", "min-rate", units.rate, row["min-rate"]) / 8) if "min-rate" in row else 0
        min_B = min(max(min_B, mtu), max_B)
        qmax_B = int(_conv(f"queues.{qid}", "max-rate", units.rate, row["max-rate"]) / 8) \
            if "max-rate" in row else max_B
        qmax_B = min(max(qmax_B, min_B), max_B)
        burst = int(_conv(f"queues.{qid}", "burst", _bits_to_bytes, row["burst"])) if "burst" in row else 0
        burst = max(burst, mtu + defaults.OVS_HTB_BURST_EXTRA)
        prio = _conv(f"queues.{qid}", "priority", _count, row["priority"]) if "priority" in row else 0
        if not 0 <= prio < defaults.HTB_NUMPRIO:
            raise ConfigError(f"OVS QoS queue {qid}: priority {prio} is outside 0..7",
                              key=f"qdisc.queues.{qid}.priority", fix="0 is the highest priority, 7 the lowest")
        c = {"classid": f"1:{qid + 1:x}", "parent": f"1:{root:x}", "rate": min_B * 8, "ceil": qmax_B * 8,
             "burst": burst, "cburst": burst, "prio": prio}
        if min_B / defaults.OVS_HTB_R2Q < mtu:
            c["quantum"] = mtu
        classes.append(c)
    return classes


def _hfsc_classes(max_bps: float, queues: dict, mtu: int) -> list[dict]:
    max_B = int(max_bps / 8)
    root = defaults.OVS_ROOT_MINOR
    classes = [{"classid": f"1:{root:x}", "parent": "1:", "sc": max_B * 8, "ul": max_B * 8}]
    for qid, row in sorted(queues.items()):
        _check_keys(f"queues.{qid}", row, {"min-rate", "max-rate"})
        min_B = int(_conv(f"queues.{qid}", "min-rate", units.rate, row["min-rate"]) / 8) if "min-rate" in row else 0
        min_B = min(max(min_B, 1), max_B)
        qmax_B = int(_conv(f"queues.{qid}", "max-rate", units.rate, row["max-rate"]) / 8) \
            if "max-rate" in row else max_B
        qmax_B = min(max(qmax_B, min_B), max_B)
        classes.append({"classid": f"1:{qid + 1:x}", "parent": f"1:{root:x}", "sc": min_B * 8, "ul": qmax_B * 8})
    return classes


class OvsHtb(_OvsClassful, Htb):
    """linux-htb as Open vSwitch installs it."""

    def __init__(self, spec: dict):
        self._ovs_init(spec, _htb_classes)
        Htb.__init__(self, classes=self._classes(None, self._ovs_mtu), default=defaults.OVS_DEFAULT_CLASS,
                     r2q=defaults.OVS_HTB_R2Q, name="linux-htb")

    def _rebuild(self, classes) -> None:
        on_drop = self.on_drop
        Htb.__init__(self, classes=classes, default=defaults.OVS_DEFAULT_CLASS, r2q=defaults.OVS_HTB_R2Q,
                     name="linux-htb")
        self.on_drop = on_drop


class OvsHfsc(_OvsClassful, Hfsc):
    """linux-hfsc as Open vSwitch installs it."""

    def __init__(self, spec: dict):
        self._ovs_init(spec, _hfsc_classes)
        Hfsc.__init__(self, classes=self._classes(None, self._ovs_mtu), default=defaults.OVS_DEFAULT_CLASS,
                      name="linux-hfsc")

    def _rebuild(self, classes) -> None:
        on_drop = self.on_drop
        Hfsc.__init__(self, classes=classes, default=defaults.OVS_DEFAULT_CLASS, name="linux-hfsc")
        self.on_drop = on_drop


def qdisc_from_ovs_qos(spec: dict):
    """The qdisc Open vSwitch would install for this QoS row (see module docstring)."""
    from .registry import make_qdisc  # noqa: PLC0415 - registry imports us lazily
    spec = {str(k).replace("_", "-"): v for k, v in dict(spec).items()}
    typ = spec.get("type")
    if not isinstance(typ, str) or typ not in TYPES:
        raise ConfigError(f"unknown OVS QoS type {typ!r}", key="qdisc.type",
                          fix="use one of: " + ", ".join(repr(t) for t in TYPES))
    allowed = {"type", "other-config", "queues"} | ({"qdisc"} if typ == "linux-noop" else set())
    _check_keys("table", spec, allowed)
    if typ in ("linux-htb", "linux-hfsc"):
        return OvsHtb(spec) if typ == "linux-htb" else OvsHfsc(spec)
    if spec.get("queues"):
        raise ConfigError(f"OVS QoS type {typ} has no queues", key="qdisc.queues",
                          fix="queues (min-rate/max-rate) need type linux-htb or linux-hfsc")
    oc = _norm(spec.get("other-config"), "other-config")
    if typ == "linux-sfq":
        _check_keys("other-config", oc, {"quantum", "perturb"})
        kw = {"perturb": float(_conv("other-config", "perturb", _count, oc["perturb"]))
              if oc.get("perturb") not in (None, 0, "0") else defaults.OVS_SFQ_PERTURB}
        if oc.get("quantum") not in (None, 0, "0"):
            kw["quantum"] = _conv("other-config", "quantum", _count, oc["quantum"])
        return make_qdisc({"kind": "sfq", **kw})
    if typ == "linux-codel":
        _check_keys("other-config", oc, {"target", "limit", "interval"})
        return make_qdisc({
            "kind": "codel",
            "target": _pick(oc, "target", _usec, defaults.OVS_CODEL_TARGET),
            "limit": _pick(oc, "limit", _count, defaults.OVS_CODEL_LIMIT),
            "interval": _pick(oc, "interval", _usec, defaults.OVS_CODEL_INTERVAL)})
    if typ == "linux-fq_codel":
        _check_keys("other-config", oc, {"target", "limit", "interval", "flows", "quantum"})
        return make_qdisc({
            "kind": "fq_codel",
            "target": _pick(oc, "target", _usec, defaults.OVS_FQ_CODEL_TARGET),
            "limit": _pick(oc, "limit", _count, defaults.OVS_FQ_CODEL_LIMIT),
            "interval": _pick(oc, "interval", _usec, defaults.OVS_FQ_CODEL_INTERVAL),
            "flows": _pick(oc, "flows", _count, defaults.OVS_FQ_CODEL_FLOWS),
            "quantum": _pick(oc, "quantum", _count, defaults.OVS_FQ_CODEL_QUANTUM)})
    if oc:
        raise ConfigError(f"OVS QoS type {typ or 'linux-default'} takes no other-config",
                          key="qdisc.other-config", fix="remove other-config")
    if typ == "linux-noop" and spec.get("qdisc") is not None:
        return make_qdisc(spec["qdisc"])
    return make_qdisc({"kind": defaults.DEFAULT_QDISC})


def _pick(oc: dict, key: str, fn, default):
    """OVS treats a missing or zero value as "use the default"."""
    v = oc.get(key)
    if v is None:
        return default
    x = _conv("other-config", key, fn, v)
    return x if x else default
