"""Qdiscs and OVS QoS on testbed ports: availability, apply, verify, counters, remove.

Two ways to put a qdisc on a port:

* ``via = "ovs"``: through the OVS QoS table, as seed 000 (Figure 9) does --
  ``ovs-vsctl set port P qos=@q -- --id=@q create qos type=linux-htb
  other-config:max-rate=R queues:0=@q0 -- --id=@q0 create queue
  other-config:max-rate=R``.  OVS then installs the qdisc itself
  (lib/netdev-linux.c).  Types: linux-htb, linux-hfsc, linux-sfq, linux-codel,
  linux-fq_codel, linux-netem.
* ``via = "tc"``: ``tc qdisc replace dev P root ...`` directly (pfifo_fast,
  pfifo, bfifo, tbf, htb, ...).

Either way the result is read back with ``tc -s -j qdisc show`` and checked;
a qdisc the kernel lacks is reported as unavailable (never faked).
"""
from __future__ import annotations

import json
import math
import os
import re
import uuid
from dataclasses import dataclass, field

from .. import units
from . import bounds
from ..errors import ConfigError
from .shell import run

OVS_QOS_TYPES = {"htb": "linux-htb", "hfsc": "linux-hfsc", "sfq": "linux-sfq",
                 "codel": "linux-codel", "fq_codel": "linux-fq_codel", "netem": "linux-netem",
                 "noop": "linux-noop"}
# "noop" exists only through the OVS QoS table (linux-noop: OVS leaves the port's qdisc as it is,
# lib/netdev-linux.c tc_ops_noop), so there is no tc qdisc to probe or to read back
KNOWN_KINDS = ("none", "noop", "pfifo_fast", "pfifo", "bfifo", "htb", "tbf", "hfsc", "sfq", "codel",
               "fq_codel", "netem", "fq", "prio", "red", "cake", "noqueue")

CLASSLESS_LEAVES = ("pfifo_fast", "pfifo", "bfifo", "sfq", "codel", "fq_codel")

# minimal valid arguments that let the kernel accept each kind in the availability probe
_PROBE_ARGS = {"tbf": ["rate", "1mbit", "burst", "10k", "latency", "50ms"],
               "red": ["limit", "100k", "avpkt", "1000", "bandwidth", "10mbit", "min", "10k",
                       "max", "30k"]}
_available_cache: dict[str, tuple[bool, str]] = {}
PROBE_NS = "ovssim-probe-"


def probe_qdiscs(kinds=KNOWN_KINDS) -> dict[str, tuple[bool, str]]:
    """Try each qdisc kind on a veth in a scratch namespace: ``kind -> (available, reason)``."""
    todo = [k for k in kinds if k not in _available_cache and k not in ("none", "noop")]
    if todo:
        ns = f"{PROBE_NS}{os.getpid()}-{uuid.uuid4().hex[:8]}"    # the pid: reap_stale's clue
        run(["ip", "netns", "add", ns])
        try:
            run(["ip", "-n", ns, "link", "add", "p0", "type", "veth", "peer", "name", "p1"])
            for kind in todo:
                res = run(["tc", "-n", ns, "qdisc", "replace", "dev", "p0", "root", kind,
                           *_PROBE_ARGS.get(kind, [])], check=False, timeout=10)
                reason = "" if res.returncode == 0 else (res.stderr.strip() or res.stdout.strip())
                _available_cache[kind] = (res.returncode == 0, reason)
        finally:
            run(["ip", "netns", "del", ns], check=False)
    _available_cache["none"] = _available_cache["noop"] = (True, "")
    return {k: _available_cache[k] for k in kinds}


@dataclass(frozen=True)
class QdiscSpec:
    """A qdisc to put on one testbed port (egress toward the receiver by default)."""
    name: str
    kind: str = "none"
    via: str = "tc"              # "tc" or "ovs"
    port: str = "vif2"           # testbed port name, or "" for the receiver's VIF
    rate: float | None = None    # bit/s (htb, tbf, hfsc)
    burst: float | None = None   # bytes (tbf, htb)
    latency: float | None = None  # seconds (tbf)
    limit: int | None = None     # packets (pfifo) or bytes (bfifo)
    leaf: str | None = field(default=None, repr=False)   # htb via tc: the class's qdisc (default pfifo)
    extra: tuple = field(default=())

    @classmethod
    def from_dict(cls, d: dict, *, file=None) -> "QdiscSpec":
        key = f"qdisc.{d.get('name', '?')}"
        allowed = {"name", "kind", "via", "port", "rate", "burst", "latency", "limit", "leaf"}
        bad = set(d) - allowed
        if bad:
            raise ConfigError(f"unknown qdisc setting(s) {sorted(bad)}", file=file, key=key,
                              fix=f"use only {sorted(allowed)}")
        if "name" not in d:
            raise ConfigError("a [[qdisc]] needs a name", file=file, key="qdisc",
                              fix='add name = "htb50"')
        bounds.label(d["name"], file=file, key="qdisc", what="qdisc name")
        kind = d.get("kind", "none")
        if kind not in KNOWN_KINDS:
            raise ConfigError(f"unknown qdisc kind {kind!r}", file=file, key=key,
                              fix=f"use one of {', '.join(KNOWN_KINDS)}")
        via = d.get("via", "ovs" if kind in ("htb",) else "tc")
        if via not in ("tc", "ovs"):
            raise ConfigError(f"via must be 'tc' or 'ovs', not {via!r}", file=file, key=key)
        if via == "ovs" and kind not in OVS_QOS_TYPES:
            raise ConfigError(f"the OVS QoS table has no type for {kind!r}", file=file, key=key,
                              fix=f'use via = "tc" (OVS types: {", ".join(OVS_QOS_TYPES.values())})')
        # bounds of the kernel's tc interface: burst and limit are u32, latency a u32 of microseconds
        rate = bounds.rate(d["rate"], file=file, key=f"{key}.rate") if "rate" in d else None
        burst = bounds.size(d["burst"], 2**32 - 1, file=file, key=f"{key}.burst") if "burst" in d else None
        latency = (bounds.duration(d["latency"], 1e-6, (2**32 - 1) * 1e-6, file=file, key=f"{key}.latency")
                   if "latency" in d else None)
        limit = bounds.whole(d["limit"], 1, 2**32 - 1, file=file, key=f"{key}.limit") if "limit" in d else None
        if kind in ("htb", "tbf", "hfsc") and not rate:
            raise ConfigError(f"qdisc kind {kind!r} needs a rate", file=file, key=key,
                              fix='add rate = "50mbit"')
        leaf = d.get("leaf")
        if leaf is not None and (kind != "htb" or via != "tc" or leaf not in CLASSLESS_LEAVES):
            raise ConfigError(f"leaf = {leaf!r} needs kind = 'htb', via = 'tc' and a classless qdisc",
                              file=file, key=key, fix=f"use a leaf among {', '.join(CLASSLESS_LEAVES)} "
                              "on an htb qdisc put on with tc (OVS manages its own HTB leaves)")
        return cls(name=d["name"], kind=kind, via=via, port=d.get("port", "vif2"), rate=rate,
                   burst=burst, latency=latency, limit=limit, leaf=leaf)

    def describe(self) -> str:
        s = self.kind
        if self.rate:
            s += f" {units.fmt_rate(self.rate)}"
        if self.leaf:
            s += f" (leaf {self.leaf})"
        return s + (f" via {self.via}" if self.kind != "none" else "")

    # -- tc arguments ----------------------------------------------------------------------
    def tbf_burst(self) -> int:
        # at least 10 full frames, and enough tokens for one 4 ms tick (HZ=250) at the rate
        return int(self.burst or max(10 * 1514, math.ceil(self.rate / 8 * 0.004)))

    def tc_args(self) -> list[list[str]]:
        """The ``tc`` commands (after ``tc``) that install this qdisc on ``dev``."""
        dev = self.port
        root = ["qdisc", "replace", "dev", dev, "root"]
        if self.kind == "tbf":
            return [root + ["tbf", "rate", f"{int(self.rate)}bit", "burst", str(self.tbf_burst()),
                            "latency", f"{int((self.latency or 0.05) * 1e6)}us"]]
        if self.kind == "htb":
            cls = ["class", "replace", "dev", dev, "parent", "1:", "classid", "1:1", "htb",
                   "rate", f"{int(self.rate)}bit", "ceil", f"{int(self.rate)}bit"]
            if self.burst:
                cls += ["burst", str(int(self.burst)), "cburst", str(int(self.burst))]
            leaf = [["qdisc", "replace", "dev", dev, "parent", "1:1", "handle", "10:", self.leaf]] if self.leaf else []
            return [root + ["handle", "1:", "htb", "default", "1"], cls, *leaf]
        if self.kind == "hfsc" and self.rate:
            # one class 1:1 with a linear service curve = upper limit = rate (what OVS's
            # linux-hfsc builds, lib/netdev-linux.c hfsc_setup_class__), every packet in it
            r = f"{int(self.rate)}bit"
            return [root + ["handle", "1:", "hfsc", "default", "1"],
                    ["class", "replace", "dev", dev, "parent", "1:", "classid", "1:1", "hfsc",
                     "sc", "rate", r, "ul", "rate", r]]
        if self.kind in ("pfifo", "bfifo") and self.limit:
            return [root + [self.kind, "limit", str(int(self.limit))]]
        return [root + [self.kind]]


def tc_stats(prefix: list[str], dev: str) -> list[dict]:
    """``tc -s -j qdisc show dev DEV`` as a list of qdisc dicts (run under ``prefix``)."""
    res = run(prefix + ["tc", "-s", "-j", "qdisc", "show", "dev", dev], check=False, timeout=10)
    if res.returncode != 0 or not res.stdout.strip():
        return []
    try:
        return json.loads(res.stdout)
    except ValueError:
        # iproute2 6.1 prints hfsc's options as bare text in its JSON ("options":{default 1 });
        # keep that text as a string so the counters can still be read
        fixed = re.sub(r'"options":\{([^"{}]*)\}', lambda m: json.dumps({"raw": m.group(1).strip()})
                       .join(('"options":', '')), res.stdout)
        return json.loads(fixed)


def tc_classes(prefix: list[str], dev: str) -> list[dict]:
    """HTB classes of ``tc class show dev DEV``: classid, parent, rate and ceil in bit/s.

    (iproute2 6.1 prints no JSON for htb classes, so the text is parsed.)
    """
    res = run(prefix + ["tc", "class", "show", "dev", dev], check=False, timeout=10)
    return parse_tc_classes(res.stdout if res.returncode == 0 else "")


def parse_tc_classes(text: str) -> list[dict]:
    out = []
    for m in re.finditer(r"^class (\w+) (\S+) (?:root|parent (\S+)).*?rate (\S+) ceil (\S+)",
                         text, re.M):
        out.append({"kind": m.group(1), "classid": m.group(2), "parent": m.group(3),
                    "rate_bps": units.rate(m.group(4)), "ceil_bps": units.rate(m.group(5))})
    return out


def root_counters(qdiscs: list[dict]) -> dict[str, float]:
    """Counters of the root qdisc: bytes, packets, drops, overlimits, requeues, backlog, qlen."""
    for q in qdiscs:
        if q.get("root"):
            return {f"qdisc_{k}": float(q.get(k, 0)) for k in
                    ("bytes", "packets", "drops", "overlimits", "requeues", "backlog", "qlen")}
    return {}


class QosError(ConfigError):
    pass


class AppliedQos:
    """Installs a :class:`QdiscSpec` on a port, verifies it, and removes it again."""

    def __init__(self, spec: QdiscSpec, prefix: list[str], ovs=None):
        self.spec, self.prefix, self.ovs = spec, prefix, ovs
        self.applied = False

    def apply(self) -> dict:
        s = self.spec
        if s.kind == "none":
            return {"kind": "none"}
        if s.via == "ovs":
            if self.ovs is None:
                raise QosError(f"qdisc {s.name!r} uses the OVS QoS table but the bridge is not OVS",
                               fix='use via = "tc" for a Linux bridge')
            rate = str(int(s.rate)) if s.rate else None
            args = ["set", "port", s.port, "qos=@q", "--", "--id=@q", "create", "qos",
                    f"type={OVS_QOS_TYPES[s.kind]}"]
            if rate:
                args += [f"other-config:max-rate={rate}", "queues:0=@q0", "--", "--id=@q0",
                         "create", "queue", f"other-config:max-rate={rate}"]
            self.applied = True
            self.ovs.vsctl(*args)
        else:
            self.applied = True
            for cmd in s.tc_args():
                run(self.prefix + ["tc", *cmd])
        return self.verify()

    def verify(self) -> dict:
        """Read the port's qdisc back; raise QosError if it is not what was asked for."""
        s = self.spec
        import time as _t
        deadline = _t.monotonic() + 3.0
        while True:
            qd = tc_stats(self.prefix, s.port)
            root = next((q for q in qd if q.get("root")), None)
            if root and (root.get("kind") == s.kind or s.kind == "noop"):
                break
            if _t.monotonic() > deadline:
                got = root.get("kind") if root else "nothing"
                hint = ""
                if s.via == "ovs" and self.ovs is not None:
                    log = self.ovs.dir / "ovs-vswitchd.log"
                    errs = [ln for ln in log.read_text(errors="replace").splitlines()
                            if "netdev_linux" in ln or "qos" in ln.lower()][-2:]
                    hint = " | ".join(errs)
                raise QosError(f"port {s.port} has root qdisc {got} after applying {s.describe()}"
                               + (f" ({hint})" if hint else ""),
                               fix="check that the kernel has this qdisc (ovssim testbed status)")
            _t.sleep(0.05)
        info = {"kind": root["kind"], "handle": root.get("handle", "")}
        if s.kind == "htb":
            leaf = [c for c in tc_classes(self.prefix, s.port) if c["kind"] == "htb"]
            if leaf:
                info["htb_ceil_bps"] = min(c["ceil_bps"] for c in leaf)
                if abs(info["htb_ceil_bps"] - s.rate) > 0.01 * s.rate:
                    raise QosError(f"port {s.port}: HTB ceil reads back as "
                                   f"{info['htb_ceil_bps']:.0f} bit/s, asked for {s.rate:.0f}")
        if s.leaf:
            got = next((q.get("kind") for q in qd if q.get("parent") == "1:1"), None)
            if got != s.leaf:
                raise QosError(f"port {s.port}: the HTB class 1:1 has leaf {got or 'none'}, asked for {s.leaf}",
                               fix="check that the kernel has this qdisc (ovssim testbed status)")
            info["leaf"] = got
        if s.kind == "tbf":
            opts = root.get("options", {})
            if "rate" in opts:
                info["tbf_rate_bps"] = float(opts["rate"]) * 8
        return info

    def remove(self) -> None:
        if not self.applied:
            return
        s = self.spec
        if s.via == "ovs" and self.ovs is not None:
            self.ovs.vsctl("--if-exists", "clear", "port", s.port, "qos", check=False)
            self.ovs.vsctl("--", "--all", "destroy", "QoS", "--", "--all", "destroy", "Queue",
                           check=False)
        # OVS may leave its qdisc in place; take the root qdisc off so the port is back at default
        qd = tc_stats(self.prefix, s.port)
        root = next((q for q in qd if q.get("root")), None)
        if root and root.get("kind") not in ("noqueue",) and root.get("handle") != "0:":
            run(self.prefix + ["tc", "qdisc", "del", "dev", s.port, "root"], check=False)
        elif root and s.via == "tc":
            run(self.prefix + ["tc", "qdisc", "del", "dev", s.port, "root"], check=False)
        self.applied = False
