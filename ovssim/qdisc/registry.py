"""Build a qdisc from a scenario's table: ``{kind = "pfifo", limit = 1000}``.

Kinds are registered lazily (module path + class name), so importing
``ovssim.qdisc`` stays cheap and one broken module does not break the rest.
The OVS QoS form (``type = "linux-htb"``, ``other-config``, ``queues``) is
translated in ``ovs_qos.py`` when that module is present.
"""
from __future__ import annotations

import importlib

from ..errors import ConfigError
from .base import Qdisc

# kind -> "module:Class" (relative to this package)
KINDS: dict[str, str] = {
    "pfifo": "pfifo:PFifo",
    "bfifo": "bfifo:BFifo",
    "pfifo_fast": "pfifo_fast:PfifoFast",
    "sfq": "sfq:Sfq",
    "codel": "codel:Codel",
    "fq_codel": "fq_codel:FqCodel",
    "tbf": "tbf:Tbf",
    "htb": "htb:Htb",
    "hfsc": "hfsc:Hfsc",
    "noop": "noop:Noop",
    "fq": "fq:Fq",
}
# A classful qdisc built from a spec with no classes does nothing useful (net/sched/sch_htb.c sends every
# packet through its direct queue unshaped; sch_hfsc.c drops what no class takes), so a spec must give classes.
CLASSFUL = {"htb": "sends every packet unshaped (its direct queue)",
            "hfsc": "drops every packet (no class takes it)"}
ALIASES: dict[str, str] = {"fifo": "pfifo", "fq-codel": "fq_codel", "fqcodel": "fq_codel",
                           "pfifo-fast": "pfifo_fast", "default": "pfifo_fast"}


def register(kind: str, target: str, *aliases: str) -> None:
    """Register ``kind`` as ``"module:Class"`` in this package (used by each qdisc module's author)."""
    KINDS[kind] = target
    for a in aliases:
        ALIASES[a] = kind


def qdisc_class(kind: str) -> type[Qdisc]:
    k = ALIASES.get(kind, kind)
    target = KINDS.get(k)
    if target is None:
        raise ConfigError(f"unknown qdisc kind {kind!r}", key="qdisc.kind",
                          fix=f"use one of: {', '.join(sorted(KINDS))}")
    mod, cls = target.split(":")
    return getattr(importlib.import_module(f"{__package__}.{mod}"), cls)


def make_qdisc(spec: dict | str | None) -> Qdisc:
    """A qdisc from ``"pfifo"``, ``{kind = "tbf", rate = "10mbit", ...}`` or an OVS QoS table."""
    if spec is None:
        spec = {"kind": "pfifo_fast" if "pfifo_fast" in KINDS else "pfifo"}
    if isinstance(spec, str):
        spec = {"kind": spec}
    spec = dict(spec)
    if "type" in spec and "kind" not in spec:
        from .ovs_qos import qdisc_from_ovs_qos  # noqa: PLC0415 - optional module
        return qdisc_from_ovs_qos(spec)
    kind = spec.pop("kind", None)
    if kind is None:
        raise ConfigError("qdisc table has neither 'kind' (tc form) nor 'type' (OVS QoS form)",
                          key="qdisc", fix='write e.g. qdisc = { kind = "pfifo", limit = 1000 }')
    if ALIASES.get(kind, kind) in CLASSFUL and not spec.get("classes"):
        k = ALIASES.get(kind, kind)
        curve = 'rate = "10mbit"' if k == "htb" else 'sc = "10mbit", ul = "10mbit"'
        raise ConfigError(f"{k} without classes {CLASSFUL[k]}, as tc's does", key="qdisc.classes",
                          fix=f'give it classes, e.g. {{kind = "{k}", default = "1", classes = '
                              f'[{{classid = "1:1", {curve}}}]}}, or use the OVS QoS form '
                              f'{{type = "linux-{k}", other-config = {{max-rate = "100000000"}}}}')
    return qdisc_class(kind).from_spec(spec)
