"""A measurement campaign: a matrix of configurations x repetitions, run in a drift-safe order.

A campaign file (TOML) names qdiscs (``[[qdisc]]``), workloads (``[[workload]]``)
and one or more ``[[matrix]]`` blocks whose cartesian products (bridge, chain,
link, qdisc, workload and optional size/rate/streams/cc overrides) are the
configurations; every configuration runs ``repetitions`` times.  The order is
``interleaved`` (rep 1 of every configuration, then rep 2, ...), ``randomised``
(each repetition's block shuffled with ``seed``) or ``sequential``; the first
two keep drift on a shared machine from biasing one configuration.  See
data/campaigns/*.toml and data/README.md.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import platform
import random
import re
import shutil
import time
import tomllib
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ..errors import ConfigError, DataError, OvssimError
from . import bounds
from . import state as machine_state
from .qos import AppliedQos, QdiscSpec, QosError, probe_qdiscs, root_counters, tc_stats
from ..signals import signals_interrupt
from .shell import CommandError, check_name, run, ssh_prefix, tool_version, which
from .store import CampaignStore
from ..atomic import write_atomic
from .testbed import Testbed, TestbedSpec, check_prefix, reap_stale
from .tools import Target, ToolFailed
from .tools import iperf2, iperf3, netperf, ping, qperf, sockperf

TOOLS = {
    "iperf3": ("iperf3", ["iperf3", "--version"]),
    "iperf2": ("iperf", ["iperf", "-v"]),
    "qperf": ("qperf", ["qperf", "--version"]),
    "sockperf": ("sockperf", ["sockperf", "--version"]),
    "ping": ("ping", ["ping", "-V"]),
    "netperf": ("netperf", ["netperf", "-V"]),
}
ORDERS = ("interleaved", "randomised", "sequential")


@dataclass(frozen=True)
class WorkloadSpec:
    """One traffic pattern: a tool and its parameters."""
    name: str
    tool: str
    proto: str = "tcp"
    streams: int = 1
    cc: str | None = None
    size: int | None = None
    rate: float | None = None
    count: int = 100                 # ping
    interval: float = 0.01           # ping
    test: str = ""                   # qperf test(s) / netperf test
    duration: float | None = None    # overrides the campaign's
    flush_flows: bool | None = None  # overrides the campaign's
    alongside: object = None         # a latency workload (ping/sockperf) run during this one
    alongside_start: float = 0.5     # seconds after this one starts (past slow start)
    beside: tuple = field(default=(), repr=False)   # thin loads (UDP) run with the probe, e.g. ("udp",)
    tos: int = field(default=0, repr=False)   # ping -Q: the probe's IP TOS byte (0x10 lowdelay -> band 0)
    cpus: str | None = field(default=None, repr=False)   # taskset -c LIST for client and server (iperf2 TCP)

    @classmethod
    def from_dict(cls, d: dict, *, file=None) -> "WorkloadSpec":
        key = f"workload.{d.get('name', '?')}"
        allowed = set(cls.__dataclass_fields__)
        bad = set(d) - allowed
        if bad:
            raise ConfigError(f"unknown workload setting(s) {sorted(bad)}", file=file, key=key,
                              fix=f"use only {sorted(allowed)}")
        if "name" not in d or "tool" not in d:
            raise ConfigError("a [[workload]] needs name and tool", file=file, key=key,
                              fix='e.g. name = "tcp", tool = "iperf3"')
        bounds.label(d["name"], file=file, key="workload", what="workload name")
        if not isinstance(d["tool"], str) or d["tool"] not in TOOLS:
            raise ConfigError(f"unknown tool {d['tool']!r}", file=file, key=key,
                              fix=f"use one of {', '.join(TOOLS)}")
        return cls(**{k: cls._convert(k, v, d, file=file, key=f"{key}.{k}")
                      for k, v in d.items()}).check(file=file, key=key)

    @staticmethod
    def _convert(k: str, v, d: dict, *, file=None, key=None):
        """One setting as the runner uses it, inside the bounds the real tool accepts.

        ``d`` gives the workload's other settings (the size limit depends on tool and proto)."""
        where = {"file": file, "key": key}
        if k == "proto" and v not in ("tcp", "udp"):
            raise ConfigError(f"proto must be tcp or udp, not {v!r}", **where)
        if k == "rate":
            return bounds.rate(v, **where)
        if k == "size":
            tcp = d.get("proto", "tcp") == "tcp" and d.get("tool") in ("iperf3", "netperf")
            return bounds.size(v, bounds.TCP_WRITE if tcp else bounds.UDP_PAYLOAD, **where)
        if k == "duration":
            return bounds.duration(v, **where)
        if k == "interval":
            return bounds.duration(v, *bounds.PING_INTERVAL, **where)
        if k == "alongside_start":
            return bounds.duration(v, 0.0, bounds.DURATION[1], **where)
        if k == "count":
            return bounds.whole(v, 1, 1_000_000, **where)
        if k == "streams":
            return bounds.whole(v, 1, 128, **where)
        if k == "flush_flows":
            return bounds.flag(v, **where)
        if k == "cc" and v is not None and not (isinstance(v, str) and re.fullmatch(r"[a-z][a-z0-9_]{0,15}", v)):
            raise ConfigError(f"congestion control {v!r} is not a name", **where)
        if k == "test" and not (isinstance(v, str) and re.fullmatch(r"[A-Za-z0-9_,]*", v)):
            raise ConfigError(f"test {v!r} is not a test name (or comma-separated names)", **where)
        if k == "cpus" and v is not None and not (isinstance(v, str) and re.fullmatch(r"\d+([-,]\d+)*", v)):
            raise ConfigError(f"cpus must be a taskset -c list such as \"0\" or \"0-1\", not {v!r}", **where)
        if k == "alongside" and not isinstance(v, str):
            raise ConfigError(f"alongside names a workload, not {v!r}", **where)
        if k == "beside":
            names = [v] if isinstance(v, str) else v
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise ConfigError(f"beside names workloads (a name or a list of names), not {v!r}", **where)
            return tuple(names)
        if k == "tos":
            try:
                tos = int(v, 0) if isinstance(v, str) else v
            except ValueError:
                tos = v
            if isinstance(tos, bool) or not isinstance(tos, int) or not 0 <= tos <= 255:
                raise ConfigError(f"tos must be a byte 0..255, got {v!r}", **where)
            return tos
        return v

    def check(self, *, file=None, key=None) -> "WorkloadSpec":
        """Rules between settings (after matrix overrides too)."""
        key = key or f"workload.{self.name}"
        if self.cpus and not (self.tool == "iperf2" and self.proto == "tcp"):
            raise ConfigError("cpus (taskset) is an iperf2 TCP setting", file=file, key=key,
                              fix='use tool = "iperf2", proto = "tcp" or drop cpus')
        if self.tool == "ping" and self.count * self.interval > bounds.DURATION[1]:
            raise ConfigError(f"{self.count} pings every {self.interval:g} s last longer than a day",
                              file=file, key=key, fix="lower count or interval")
        if self.beside and self.alongside is None:
            raise ConfigError("beside runs thin loads with the latency probe", file=file, key=key,
                              fix='name the probe too: alongside = "ping"')
        if self.tos and self.tool != "ping":
            raise ConfigError("tos is a ping setting (ping -Q)", file=file, key=key,
                              fix="mark the probe: put tos on the ping workload")
        return self


@dataclass(frozen=True)
class RunConfig:
    """One configuration of the matrix."""
    testbed: TestbedSpec
    qdisc: QdiscSpec
    workload: WorkloadSpec

    def as_columns(self) -> dict:
        w, q, t = self.workload, self.qdisc, self.testbed
        return {"bridge": t.bridge, "chain": t.chain, "link": t.link if t.chain > 1 else "-",
                "datapath": t.resolved_datapath() + ("+afxdp" if t.vif_type == "afxdp" else ""),
                "vm_tx_offload": t.vm_tx_offload,
                "qdisc": q.name, "qdisc_kind": q.kind, "qdisc_rate": q.rate,
                "qdisc_via": q.via, "workload": w.name, "tool": w.tool, "proto": w.proto,
                "size": w.size, "rate": w.rate, "streams": w.streams, "cpus": w.cpus}

    def config_id(self) -> str:
        w = self.workload
        # settings added later stay out of the repr, so earlier campaigns keep their ids
        extra = {k: v for k, v in (("leaf", self.qdisc.leaf), ("tos", w.tos), ("cpus", w.cpus),
                                   ("probe_tos", getattr(w.alongside, "tos", 0)),
                                   ("beside", [repr(b) for b in w.beside])) if v}
        blob = json.dumps([repr(self.testbed.key()), repr(self.qdisc), repr(w)] + ([extra] if extra else []))
        return hashlib.sha256(blob.encode()).hexdigest()[:10]

    def describe(self) -> str:
        t = self.testbed
        chain = f"x{t.chain} {t.link}" if t.chain > 1 else ""
        return f"{t.bridge}{chain} | {self.qdisc.describe()} | {self.workload.name}"


@dataclass
class Campaign:
    name: str
    file: str
    file_hash: str
    text: str
    repetitions: int
    order: str
    seed: int
    duration: float
    cooldown: float
    flush_flows: bool
    prefix: str
    configs: list[RunConfig]
    endpoints: dict | None = None
    testbed_defaults: dict = field(default_factory=dict)
    keep_testbeds: bool = True

    def runs(self) -> list[tuple[int, RunConfig, int]]:
        """(order index, configuration, repetition) in execution order."""
        reps = range(1, self.repetitions + 1)
        if self.order == "sequential":
            seq = [(c, r) for c in self.configs for r in reps]
        else:
            rng = random.Random(self.seed)
            seq = []
            for r in reps:
                block = list(self.configs)
                if self.order == "randomised":
                    rng.shuffle(block)
                seq += [(c, r) for c in block]
        return [(i, c, r) for i, (c, r) in enumerate(seq)]


def _list(v):
    return v if isinstance(v, list) else [v]


LOAD_TOOLS = ("iperf3", "iperf2", "netperf")
PROBE_TOOLS = ("ping", "sockperf")


def _resolve_alongside(spec: WorkloadSpec, workloads: dict, camp_duration: float, f: str) -> WorkloadSpec:
    """Replace ``alongside = "name"`` by that workload's spec, after checking the pair makes sense:
    a load generator with a latency probe that fits inside its run (latency under load)."""
    key = f"workload.{spec.name}.alongside"
    other = workloads.get(spec.alongside) if isinstance(spec.alongside, str) else None
    if other is None:
        raise ConfigError(f"alongside names no defined workload ({spec.alongside!r})", file=f, key=key,
                          fix=f"name one of: {', '.join(n for n in workloads if n != spec.name)}")
    if spec.tool not in LOAD_TOOLS or other.tool not in PROBE_TOOLS:
        raise ConfigError(f"alongside runs a latency probe ({'/'.join(PROBE_TOOLS)}) during a load "
                          f"({'/'.join(LOAD_TOOLS)}), not {other.tool} during {spec.tool}", file=f, key=key,
                          fix="put alongside on the iperf3/iperf2/netperf workload, naming a ping or sockperf one")
    duration = spec.duration if spec.duration is not None else camp_duration
    window = duration - spec.alongside_start
    need = other.count * other.interval if other.tool == "ping" else (other.duration or 0.0)
    if spec.alongside_start < 0 or need > window:
        raise ConfigError(f"the probe {other.name!r} needs {need:g} s but only {window:g} s of the "
                          f"{duration:g} s load remain after alongside_start", file=f, key=key,
                          fix="lower the ping count/interval (or the sockperf duration), lower "
                              "alongside_start, or lengthen the load")
    beside = []
    for name in spec.beside:
        b = workloads.get(name)
        if b is None or b.tool != "iperf2":
            raise ConfigError(f"beside names a thin UDP load (tool iperf2), not {name!r}", file=f,
                              key=f"workload.{spec.name}.beside",
                              fix="define it as [[workload]] tool = \"iperf2\" proto = \"udp\" rate = \"1mbit\"")
        beside.append(b)
    return WorkloadSpec(**{**spec.__dict__, "alongside": other, "beside": tuple(beside)})


def load_campaign(path: str | Path, overrides: dict | None = None) -> Campaign:
    """Read and validate a campaign file (TOML)."""
    path = Path(path)
    try:
        bounds.input_file(path, "campaign")
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read campaign file: {exc.strerror}", file=str(path)) from None
    try:
        doc = tomllib.loads(raw.decode())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"not valid TOML: {exc}", file=str(path)) from None
    except RecursionError:
        raise ConfigError("not a campaign file: values nested too deeply", file=str(path)) from None
    f = str(path)
    for k in doc:
        if k not in ("campaign", "testbed", "endpoints", "qdisc", "workload", "matrix"):
            raise ConfigError(f"unknown section [{k}]", file=f,
                              fix="sections: campaign, testbed, endpoints, qdisc, workload, matrix")
    for k in ("campaign", "testbed", "endpoints"):
        if k in doc and not isinstance(doc[k], dict):
            raise ConfigError(f"[{k}] must be one table", file=f, key=k, fix=f"write it as [{k}] with key = value lines")
    for k in ("qdisc", "workload", "matrix"):
        if k in doc and not (isinstance(doc[k], list) and all(isinstance(x, dict) for x in doc[k])):
            raise ConfigError(f"{k} must be an array of tables", file=f, key=k, fix=f"write each as [[{k}]]")
    c = dict(doc.get("campaign", {}))
    c.update(overrides or {})
    allowed = {"name", "repetitions", "order", "seed", "duration", "cooldown", "flush_flows",
               "prefix", "description", "keep_testbeds"}
    if set(c) - allowed:
        raise ConfigError(f"unknown [campaign] setting(s) {sorted(set(c) - allowed)}", file=f,
                          key="campaign", fix=f"use only {sorted(allowed)}")
    name = c.get("name", path.stem)
    check_name(name, "namespace", file=f, key="campaign.name")
    reps = bounds.whole(c.get("repetitions", 10), 1, bounds.MAX_REPETITIONS, file=f, key="campaign.repetitions")
    order = c.get("order", "interleaved")
    if order not in ORDERS:
        raise ConfigError(f"order must be one of {ORDERS}, not {order!r}", file=f,
                          key="campaign.order")
    seed = bounds.whole(c.get("seed", 1), 0, 2**63 - 1, file=f, key="campaign.seed")
    duration = bounds.duration(c.get("duration", "5s"), file=f, key="campaign.duration")
    cooldown = bounds.duration(c.get("cooldown", "0.2s"), 0.0, 3600.0, file=f, key="campaign.cooldown")
    flush_flows = bounds.flag(c.get("flush_flows", True), file=f, key="campaign.flush_flows")
    keep_testbeds = bounds.flag(c.get("keep_testbeds", True), file=f, key="campaign.keep_testbeds")
    if not isinstance(c.get("description", ""), str):
        raise ConfigError("description must be a string", file=f, key="campaign.description")
    prefix = c.get("prefix", "ovss")
    check_prefix(prefix, file=f, key="campaign.prefix")

    qdiscs = {"none": QdiscSpec(name="none")}
    for q in doc.get("qdisc", []):
        spec = QdiscSpec.from_dict(q, file=f)
        check_name(spec.port, "interface", file=f, key=f"qdisc.{spec.name}.port")
        if spec.name in qdiscs:
            raise ConfigError(f"qdisc {spec.name!r} is defined twice" + (" ('none' means no qdisc)"
                              if spec.name == "none" else ""), file=f, key=f"qdisc.{spec.name}",
                              fix="give every [[qdisc]] its own name")
        qdiscs[spec.name] = spec
    workloads = {}
    for w in doc.get("workload", []):
        spec = WorkloadSpec.from_dict(w, file=f)
        if spec.name in workloads:
            raise ConfigError(f"workload {spec.name!r} is defined twice", file=f, key=f"workload.{spec.name}",
                              fix="give every [[workload]] its own name")
        workloads[spec.name] = spec
    for wname, spec in list(workloads.items()):
        if spec.alongside is not None:
            workloads[wname] = _resolve_alongside(spec, workloads, duration, f)
    if not workloads:
        raise ConfigError("the campaign defines no [[workload]]", file=f, key="workload",
                          fix='add [[workload]] name = "tcp" tool = "iperf3"')
    tb_defaults = dict(doc.get("testbed", {}))
    TestbedSpec.from_dict({k: v for k, v in tb_defaults.items() if k != "prefix"}, file=f, check=False)
    for k, v in tb_defaults.items():      # each value alone (a matrix axis may override it)
        if k == "prefix":
            raise ConfigError("a campaign's testbed prefix is [campaign] prefix", file=f, key="testbed.prefix",
                              fix="move prefix to [campaign]")
        TestbedSpec(**{k: v}).validate(file=f)
    endpoints = doc.get("endpoints")
    if endpoints is not None:
        endpoints = _check_endpoints(endpoints, f)

    matrices = doc.get("matrix") or [{}]
    configs: dict[str, RunConfig] = {}
    for mi, m in enumerate(matrices):
        mkey = f"matrix[{mi}]"
        allowed_m = {"bridge", "chain", "link", "qdisc", "workload", "size", "rate", "streams",
                     "cc", "cpus", "vm_tx_offload", "datapath", "vif_type"}
        if set(m) - allowed_m:
            raise ConfigError(f"unknown matrix axis {sorted(set(m) - allowed_m)}", file=f, key=mkey,
                              fix=f"axes: {sorted(allowed_m)}")
        for ax, values in m.items():
            if any(isinstance(v, (list, dict)) for v in _list(values)):
                raise ConfigError(f"axis {ax} must be a value or a list of values, not {values!r}",
                                  file=f, key=f"{mkey}.{ax}")
            if ax in TestbedSpec.__dataclass_fields__:     # each value alone, before combining them
                for v in _list(values):
                    TestbedSpec(**{ax: v}).validate(file=f)
        for qn in _list(m.get("qdisc", ["none"])):
            if qn not in qdiscs:
                raise ConfigError(f"qdisc {qn!r} is not defined", file=f, key=mkey,
                                  fix=f"define it in a [[qdisc]] (known: {', '.join(qdiscs)})")
        for wn in _list(m.get("workload", list(workloads))):
            if wn not in workloads:
                raise ConfigError(f"workload {wn!r} is not defined", file=f, key=mkey,
                                  fix=f"define it in a [[workload]] (known: {', '.join(workloads)})")
        axes = {
            "bridge": _list(m.get("bridge", [tb_defaults.get("bridge", "ovs")])),
            "chain": _list(m.get("chain", [tb_defaults.get("chain", 1)])),
            "link": _list(m.get("link", [tb_defaults.get("link", "patch")])),
            "vm_tx_offload": _list(m.get("vm_tx_offload", [tb_defaults.get("vm_tx_offload", False)])),
            "datapath": _list(m.get("datapath", [tb_defaults.get("datapath", "auto")])),
            "vif_type": _list(m.get("vif_type", [tb_defaults.get("vif_type", "system")])),
            "qdisc": _list(m.get("qdisc", ["none"])),
            "workload": _list(m.get("workload", list(workloads))),
            "size": _list(m.get("size", [None])),
            "rate": _list(m.get("rate", [None])),
            "streams": _list(m.get("streams", [None])),
            "cc": _list(m.get("cc", [None])),
            "cpus": _list(m.get("cpus", [None])),
        }
        for combo in itertools.product(*axes.values()):
            a = dict(zip(axes, combo))
            if a["bridge"] == "linux" and a["chain"] > 1 and a["link"] == "patch":
                continue   # no patch ports on a Linux bridge: not a configuration
            if a["bridge"] == "linux" and a["vif_type"] != "system":
                continue   # AF_XDP ports are an OVS feature
            tb_kw = {k: v for k, v in tb_defaults.items() if k not in ("prefix",)}
            tb_kw.update(bridge=a["bridge"], chain=a["chain"],
                         link=a["link"] if a["chain"] > 1 else "patch",
                         vm_tx_offload=a["vm_tx_offload"], datapath=a["datapath"],
                         vif_type=a["vif_type"])
            tb = TestbedSpec.from_dict(tb_kw, file=f)
            q = qdiscs[a["qdisc"]]
            if q.kind != "none" and endpoints is None and q.port not in tb.ports():
                raise ConfigError(f"qdisc {q.name!r} is put on port {q.port!r}, which this testbed does not "
                                  "have: every run of it would fail", file=f, key=f"qdisc.{q.name}.port",
                                  fix=f"use one of {', '.join(tb.ports())}")
            if q.via == "ovs" and tb.bridge == "linux":
                q = QdiscSpec(**{**q.__dict__, "via": "tc"})
            w = workloads[a["workload"]]
            over = {k: WorkloadSpec._convert(k, a[k], {**w.__dict__, k: a[k]}, file=f, key=f"{mkey}.{k}")
                    for k in ("size", "rate", "streams", "cc", "cpus") if a[k] is not None}
            if over:
                w = WorkloadSpec(**{**w.__dict__, **over, "name": w.name + "".join(
                    f"-{k}{v:g}" if isinstance(v, float) else f"-{k}{v}".replace(",", "_")
                    for k, v in over.items())})
                w.check(file=f, key=mkey)
            rc = RunConfig(tb, q, w)
            configs.setdefault(rc.config_id(), rc)
    if not configs:
        raise ConfigError("the matrix gives no configuration to run", file=f, key="matrix",
                          fix="give every axis at least one value")
    if len(configs) * reps > bounds.MAX_RUNS:
        raise ConfigError(f"{len(configs)} configurations x {reps} repetitions = {len(configs) * reps} runs, "
                          f"more than {bounds.MAX_RUNS}", file=f, key="campaign.repetitions",
                          fix="lower repetitions or split the matrix into several campaigns")
    if endpoints is not None and any(rc.qdisc.kind != "none" for rc in configs.values()):
        raise ConfigError("[endpoints] runs between given hosts: the collector does not put qdiscs "
                          "on their ports", file=f, key="matrix",
                          fix="drop the qdisc axis, or use the built-in testbed")
    if endpoints is not None and any(rc.testbed.chain > 1 for rc in configs.values()):
        raise ConfigError("[endpoints] runs between given hosts: bridge chains cannot be built there",
                          file=f, key="matrix", fix="drop the chain axis or the [endpoints] section")
    return Campaign(name=name, file=f, file_hash=hashlib.sha256(raw).hexdigest(), text=raw.decode(),
                    repetitions=reps, order=order, seed=seed, duration=duration,
                    cooldown=cooldown, flush_flows=flush_flows, prefix=prefix,
                    configs=list(configs.values()), endpoints=endpoints,
                    testbed_defaults=tb_defaults, keep_testbeds=keep_testbeds)


def _check_endpoints(e: dict, f: str) -> dict:
    """Each side is an ssh destination ``"[user@]host[:port]"`` (also as ``["ssh", "..."]``) or a
    local namespace ``["ip", "netns", "exec", NAME]``; ``server_ip`` the server's address.

    Nothing else: a campaign file must not run an arbitrary local command (README: campaign
    files are trusted input like a Makefile, and still only these two forms are accepted)."""
    if not isinstance(e, dict) or set(e) - {"client", "server", "server_ip"}:
        raise ConfigError("[endpoints] takes client, server and server_ip", file=f, key="endpoints")
    out = {}
    for side in ("client", "server"):
        key = f"endpoints.{side}"
        pre = e.get(side)
        if isinstance(pre, str):
            out[side] = ssh_prefix(pre, file=f, key=key)
        elif isinstance(pre, list) and len(pre) == 2 and pre[0] == "ssh":
            out[side] = ssh_prefix(pre[1], file=f, key=key)
        elif isinstance(pre, list) and len(pre) == 4 and pre[:3] == ["ip", "netns", "exec"]:
            out[side] = ["ip", "netns", "exec", check_name(pre[3], "namespace", file=f, key=key)]
        else:
            raise ConfigError(f"{side} must be an ssh destination or a local namespace, not {pre!r}",
                              file=f, key=key, fix='write "user@host[:port]" or ["ip", "netns", "exec", "NAME"]')
    ip = e.get("server_ip")
    import ipaddress
    try:
        ipaddress.ip_address(ip)
    except (TypeError, ValueError):
        raise ConfigError(f"endpoints.server_ip {ip!r} is not an IP address", file=f,
                          key="endpoints.server_ip") from None
    out["server_ip"] = ip
    return out


# -- preflight -------------------------------------------------------------------------------
def preflight(camp: Campaign) -> dict:
    """Check root, tools, qdisc kinds and endpoints before any run; return what was found."""
    problems = []
    if camp.endpoints is None and os.geteuid() != 0:
        raise ConfigError("the built-in testbed needs root (network namespaces, veth, OVS)",
                          file=camp.file, fix="run as root, e.g. sudo ovssim collect ...")
    needed = {"ip", "tc", "ss"}
    if camp.endpoints is None:
        needed |= {"ethtool"}
        if any(rc.testbed.bridge == "ovs" for rc in camp.configs):
            needed |= {"ovs-vsctl", "ovs-appctl", "ovsdb-server", "ovs-vswitchd", "ovsdb-tool"}
    for rc in camp.configs:
        needed.add(TOOLS[rc.workload.tool][0])
        if rc.workload.alongside is not None:
            needed.add(TOOLS[rc.workload.alongside.tool][0])
        needed |= {TOOLS[b.tool][0] for b in rc.workload.beside}
        if rc.workload.tool == "netperf":
            needed.add("netserver")
    for tool in sorted(needed):
        if not which(tool):
            problems.append(f"{tool} is not installed")
    if problems:
        raise ConfigError("; ".join(problems), file=camp.file,
                          fix="install them (./setup.sh as root installs all but netperf)")
    kinds = sorted({rc.qdisc.kind for rc in camp.configs} | {rc.qdisc.leaf for rc in camp.configs if rc.qdisc.leaf}
                   | {"pfifo_fast", "htb", "tbf", "fq_codel",
                                                              "codel", "sfq", "hfsc", "netem"})
    avail = probe_qdiscs(kinds) if os.geteuid() == 0 else {}
    if camp.endpoints is not None:
        for side in ("client", "server"):
            res = run(camp.endpoints[side] + ["true"], check=False, timeout=15)
            if res.returncode != 0:
                raise ConfigError(f"endpoint {side} ({' '.join(camp.endpoints[side])}) is not "
                                  f"reachable: {res.stderr.strip()[:200]}", file=camp.file,
                                  key=f"endpoints.{side}")
        res = run(camp.endpoints["client"] + ["ping", "-c", "1", "-W", "2",
                                              camp.endpoints["server_ip"]], check=False, timeout=15)
        if res.returncode != 0:
            raise ConfigError(f"the client cannot ping {camp.endpoints['server_ip']}",
                              file=camp.file, key="endpoints.server_ip")
    return {"qdisc_availability": {k: {"available": v[0], "reason": v[1]} for k, v in avail.items()}}


# -- host snapshot ---------------------------------------------------------------------------
def cpu_times() -> list[tuple[float, float]]:
    """(busy, total) jiffies per core from /proc/stat."""
    out = []
    with open("/proc/stat") as fh:
        for line in fh:
            if line.startswith("cpu") and line[3].isdigit():
                v = [float(x) for x in line.split()[1:]]
                idle = v[3] + (v[4] if len(v) > 4 else 0)
                out.append((sum(v) - idle, sum(v)))
    return out


def cpu_busy(before, after) -> dict:
    m = {}
    busy_all = tot_all = 0.0
    for i, ((b0, t0), (b1, t1)) in enumerate(zip(before, after)):
        if t1 > t0:
            m[f"cpu{i}_busy"] = ((b1 - b0) / (t1 - t0), "ratio")
            busy_all += b1 - b0
            tot_all += t1 - t0
    if tot_all:
        m["cpu_busy"] = (busy_all / tot_all, "ratio")
    return m


def machine_metadata() -> dict:
    cpu_model = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = {t: tool_version(argv) for t, (binary, argv) in TOOLS.items() if which(binary)}
    versions["ovs-vswitchd"] = tool_version(["ovs-vswitchd", "--version"]) if which("ovs-vswitchd") else ""
    versions["iproute2"] = tool_version(["tc", "-V"])
    cc = ""
    try:
        cc = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().strip()
    except OSError:
        pass
    # the per-namespace sysctls that size TCP windows (read by ovssim/tcp/buffers.py TcpSysctls)
    sysctls = {}
    for name in TCP_SYSCTLS:
        try:
            sysctls[name] = " ".join(Path("/proc/sys/" + name.replace(".", "/")).read_text().split())
        except OSError:
            pass
    return {"kernel": platform.release(), "machine": platform.machine(), "cpu_model": cpu_model,
            "cpu_count": os.cpu_count(), "python": platform.python_version(),
            "tool_versions": versions, "tcp_available_congestion_control": cc, "tcp_sysctls": sysctls,
            "openvswitch_kernel_module": Path("/sys/module/openvswitch").exists()}


TCP_SYSCTLS = ("net.ipv4.tcp_congestion_control", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
               "net.ipv4.tcp_moderate_rcvbuf", "net.ipv4.tcp_limit_output_bytes", "net.ipv4.tcp_autocorking",
               "net.ipv4.tcp_notsent_lowat", "net.core.default_qdisc")


# -- running ---------------------------------------------------------------------------------
MAX_ATTEMPTS = 3     # a failed run is retried on --resume until it has failed this many times


def run_id(rc: RunConfig, rep: int) -> str:
    return f"{rc.config_id()}-r{rep:03d}"


class CampaignRunner:
    """Runs a campaign into a store; testbeds are built on first use and kept until the end."""

    def __init__(self, camp: Campaign, out: str | Path, *, resume: bool = False,
                 progress: bool = True, log=print):
        self.camp, self.resume, self.progress, self.log = camp, resume, progress, log
        self.store = CampaignStore(out)
        self.testbeds: dict[tuple, Testbed] = {}
        self.qdisc_avail: dict = {}
        self.meta: dict = {}

    # -- setup ------------------------------------------------------------------------------
    def _prepare_store(self) -> set[str]:
        d = self.store.dir
        meta_path = d / "metadata.json"
        if d.exists() and (d / "runs.jsonl").exists():
            try:
                old = json.loads(meta_path.read_text()) if meta_path.exists() else {}
            except (OSError, ValueError):
                raise DataError(f"{meta_path} is unreadable or not JSON -- fix: restore it, or "
                                "collect into another --out") from None
            if old.get("kind") == "import" or (not old and d.joinpath("runs.jsonl").stat().st_size):
                raise ConfigError(f"{d} holds imported or unknown data, not a collected campaign",
                                  fix="collect into another --out")
            if not self.resume:
                raise ConfigError(f"{d} already holds results of a campaign",
                                  fix="pass --resume to complete it, or choose another --out")
            if old.get("campaign_sha256") not in (None, self.camp.file_hash):
                raise ConfigError(f"{d} was collected with a different campaign file "
                                  "(its hash differs)", file=self.camp.file,
                                  fix="resume with the same campaign file, or use another --out")
            self.meta = old
        torn = self.store.create()
        if torn:
            self.log(f"cut a torn last line ({torn} bytes) off the journal: the run being written "
                     "when the collector was killed is redone")
        shutil.rmtree(d / ".work", ignore_errors=True)     # temporary files of a killed collector
        return self.store.done_run_ids()

    def _write_meta(self, **extra) -> None:
        self.meta.update(extra)
        write_atomic(self.store.dir / "metadata.json",
                          json.dumps(self.meta, indent=1, sort_keys=True, default=str))

    def testbed_for(self, spec: TestbedSpec) -> Testbed:
        tb = self.testbeds.get(spec.key())
        if tb is not None and tb.ovs is not None and not tb.ovs.running:
            self.log(f"testbed {tb.name}: OVS stopped unexpectedly; rebuilding it")
            tb.down()
            tb = None
        if tb is None:
            tb = Testbed(spec, prefix=self.camp.prefix).up()
            try:
                tb.wait_ready()
            except BaseException:
                tb.down()
                raise
            self.testbeds[spec.key()] = tb
            info = self.meta.setdefault("testbeds", {})
            info[repr(spec.key())] = {"datapath": spec.resolved_datapath(), "notes": tb.notes,
                                      "ovs_version": tb.ovs.version() if tb.ovs else None}
        return tb

    def teardown(self) -> None:
        for tb in list(self.testbeds.values()):
            try:
                tb.down()
            except Exception as exc:  # noqa: BLE001
                self.log(f"could not tear down testbed {tb.name}: {exc}")
        self.testbeds.clear()

    # -- one run ----------------------------------------------------------------------------
    def _target(self, tb: Testbed | None) -> Target:
        if tb is None:
            e = self.camp.endpoints
            work = self.store.dir / ".work"      # emptied at every start
            work.mkdir(exist_ok=True)
            return Target(client=e["client"], server=e["server"], server_ip=e["server_ip"],
                          workdir=str(work))
        return Target(client=tb.vm_prefix(1), server=tb.vm_prefix(2), server_ip=tb.vm_ip[1],
                      workdir=str(tb.workdir))

    def _counters(self, tb: Testbed | None) -> dict:
        c = {}
        if tb is None:
            return c
        if tb.ovs is not None:
            try:
                c.update(tb.ovs.counters())
            except CommandError:
                pass
        for port in tb.ports():
            for k, v in root_counters(tc_stats(tb.sw_prefix, port)).items():
                c[f"tc_{port}_{k[len('qdisc_'):]}"] = v
        return c

    def run_one(self, rc: RunConfig, rep: int, order: int) -> tuple[dict, dict]:
        w = rc.workload
        duration = w.duration or self.camp.duration
        record = {"campaign": self.camp.name, "config_id": rc.config_id(), "rep": rep,
                  "order": order, "run_id": run_id(rc, rep), "duration": duration,
                  **rc.as_columns()}
        record["start"] = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
        samples: dict = {}
        missing = [k for k in (rc.qdisc.kind, rc.qdisc.leaf) if k and
                   not self.qdisc_avail.get(k, {"available": True}).get("available", True)]
        if missing:
            record.update(status="skipped", error=f"qdisc {missing[0]} unavailable in this "
                          f"kernel: {self.qdisc_avail[missing[0]].get('reason', '')}", metrics={})
            record["end"] = record["start"]
            return record, samples
        try:
            tb = None if self.camp.endpoints else self.testbed_for(rc.testbed)
        except (CommandError, ConfigError) as exc:
            self.testbeds.pop(rc.testbed.key(), None)
            record.update(status="failed", error=f"testbed: {exc}", metrics={})
            record["end"] = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
            return record, samples
        target = self._target(tb)
        qos = AppliedQos(rc.qdisc, tb.sw_prefix if tb else [], tb.ovs if tb else None)
        metrics: dict = {}
        try:
            if tb is not None:
                qos_info = qos.apply()
                record["qdisc_readback"] = qos_info
                flush = w.flush_flows if w.flush_flows is not None else self.camp.flush_flows
                if flush and tb.ovs is not None:
                    tb.ovs.purge_flows()
            afxdp = tb is not None and tb.ovs is not None and tb.spec.vif_type == "afxdp"
            if afxdp:
                tb.ovs.clear_pmd_stats()
            load1 = float(Path("/proc/loadavg").read_text().split()[0])
            c0, cpu0, t0 = self._counters(tb), cpu_times(), time.monotonic()
            if w.alongside is not None:
                result = self._run_with_probe(w, target, duration)
                record["alongside"] = w.alongside.name
                if w.beside:
                    record["beside"] = [b.name for b in w.beside]
            else:
                result = self._run_tool(w, target, duration)
            wall = time.monotonic() - t0
            c1, cpu1 = self._counters(tb), cpu_times()
            metrics.update(result.metrics)
            metrics.update(cpu_busy(cpu0, cpu1))
            metrics["wall_time"] = (wall, "s")
            metrics["loadavg_1min"] = (load1, "count")   # the machine's load when the run began
            if afxdp:   # pmd-perf-show counts since the clear above: already per run
                for k, v in tb.ovs.pmd_perf().items():
                    unit = "cycles" if "cycles" in k else "us" if k.endswith("upcall") else "count"
                    metrics[k] = (v, unit)
            for k, v1 in c1.items():
                d = v1 - c0.get(k, 0.0)
                if k.startswith("cov_") and d == 0:
                    continue
                gauge = (k.endswith(("_backlog", "_qlen", "dp_flows", "_rx_queue"))
                         or k.startswith("upcall_"))
                metrics[k] = (v1 if gauge else d, "count" if not k.endswith("bytes") else "bytes")
            port = rc.qdisc.port
            if tb is not None and f"tc_{port}_bytes" in metrics and wall > 0:
                metrics["qdisc_wire_rate"] = (metrics[f"tc_{port}_bytes"][0] * 8 / duration, "bit/s")
            if rc.qdisc.rate and "throughput" in metrics and w.proto == "tcp":
                metrics["throughput_over_qdisc_rate"] = (metrics["throughput"][0] / rc.qdisc.rate,
                                                         "ratio")
            samples = result.samples
            record["tool_version"] = result.info.get("version", "")
            record["congestion_control"] = result.info.get("congestion_control", w.cc)
            record["status"] = "ok"
        except (ToolFailed, CommandError, QosError) as exc:
            record.update(status="failed", error=str(exc))
        finally:
            try:
                qos.remove()
            except CommandError as exc:
                record.setdefault("cleanup_error", str(exc))
        record["metrics"] = {k: [float(v), u] for k, (v, u) in metrics.items()}
        record["end"] = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
        return record, samples

    def _run_with_probe(self, w: WorkloadSpec, target: Target, duration: float):
        """The load and, ``alongside_start`` seconds into it, its latency probe (and the thin UDP
        loads named by ``beside``, for the probe's window), concurrently.

        The probe's metrics are kept with a ``probe_`` prefix, a beside load's with its name's
        (``udp_loss``); the probe's samples (e.g. ``rtt``) keep their names: they are the RTTs
        under this load.  A failure of any fails the run."""
        from concurrent.futures import ThreadPoolExecutor
        p = w.alongside
        window = p.duration or duration - w.alongside_start
        with ThreadPoolExecutor(max_workers=1 + len(w.beside)) as pool:
            submitted = time.time()
            load = pool.submit(self._run_tool, w, target, duration)
            time.sleep(w.alongside_start)
            thin = [(b, pool.submit(self._run_tool, b, target, window)) for b in w.beside]
            probe_err = None
            try:
                probe = self._run_tool(p, target, window)
            except (ToolFailed, CommandError) as exc:
                probe_err = exc
            result = load.result()       # waits for the load; re-raises its failure
            thin = [(b, f.result()) for b, f in thin]
        if probe_err is not None:
            raise ToolFailed(f"probe {p.name} failed during the load: {probe_err}")
        load_start = result.info.get("client_start_epoch", submitted)
        first_send = probe.info.get("first_send_epoch")
        if first_send is not None:     # when the probe really began, seconds into the load
            result.metrics["probe_start_offset"] = (first_send - load_start, "s")
        for k, v in probe.metrics.items():
            result.metrics[f"probe_{k}"] = v
        for b, r in thin:
            for k, v in r.metrics.items():
                result.metrics[f"{b.name}_{k}"] = v
        for k, v in probe.samples.items():
            result.samples.setdefault(k, v)
        return result

    def _run_tool(self, w: WorkloadSpec, target: Target, duration: float):
        if w.tool == "iperf3":
            return iperf3.run(target, duration=duration, proto=w.proto, streams=w.streams,
                              cc=w.cc, size=w.size, rate=w.rate)
        if w.tool == "iperf2" and w.proto == "tcp":
            return iperf2.run_tcp(target, duration=duration, streams=w.streams, cpus=w.cpus)
        if w.tool == "iperf2":
            return iperf2.run(target, duration=duration, rate=w.rate or 1e6, size=w.size or 1470)
        if w.tool == "qperf":
            tests = tuple((w.test or f"{w.proto}_lat").split(","))
            return qperf.run(target, duration=duration, tests=tests, size=w.size or 1)
        if w.tool == "sockperf":
            return sockperf.run(target, duration=duration, size=w.size or 64, proto=w.proto)
        if w.tool == "ping":
            return ping.run(target, count=w.count, interval=w.interval, size=w.size or 56, tos=w.tos)
        if w.tool == "netperf":
            return netperf.run(target, duration=duration, test=w.test or "TCP_STREAM", size=w.size)
        raise ToolFailed(f"no runner for tool {w.tool}")

    # -- the campaign -----------------------------------------------------------------------
    def run(self) -> dict:
        camp = self.camp
        done = self._prepare_store()
        reaped = reap_stale() + machine_state.reap_stale()
        if reaped:
            self.log(f"removed testbeds left by a killed collector: {', '.join(reaped)}")
        found = preflight(camp)
        self.qdisc_avail = found["qdisc_availability"]
        for k, v in self.qdisc_avail.items():
            if not v["available"] and any(rc.qdisc.kind == k for rc in camp.configs):
                self.log(f"qdisc {k} is not available in this kernel ({v['reason']}): its runs "
                         "will be recorded as skipped")
        write_atomic(self.store.dir / "campaign.toml", camp.text)
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.meta.setdefault("started", now)
        self._write_meta(campaign=camp.name, campaign_file=os.path.basename(camp.file),
                         campaign_sha256=camp.file_hash, repetitions=camp.repetitions,
                         order=camp.order, seed=camp.seed, duration_s=camp.duration,
                         configurations=len(camp.configs), machine=machine_metadata(),
                         qdisc_availability=self.qdisc_avail,
                         sessions=self.meta.get("sessions", []) + [{"started": now}])
        states = {"before": self._machine_state("before")}
        self._write_meta(machine_state=states)
        attempts = self.store.attempts()
        all_runs = camp.runs()
        todo = [r for r in all_runs if run_id(r[1], r[2]) not in done]
        runs = [r for r in todo if attempts.get(run_id(r[1], r[2]), 0) < MAX_ATTEMPTS]
        if len(runs) < len(todo):
            self.log(f"{len(todo) - len(runs)} run(s) failed {MAX_ATTEMPTS} times and are not retried; "
                     "the campaign stays incomplete (see their errors in runs.jsonl)")
        total = len(all_runs)
        counts = {"ok": 0, "failed": 0, "skipped": 0, "given_up": len(todo) - len(runs)}
        try:
            with ExitStack() as stack:
                stack.enter_context(signals_interrupt())
                stack.callback(self.teardown)
                bar = self._progress(stack, total, len(done))
                for order, rc, rep in runs:
                    if not camp.keep_testbeds:
                        # only the testbed this run needs stays up (idle OVS daemons cost CPU)
                        for key in [k for k in self.testbeds if k != rc.testbed.key()]:
                            self.testbeds.pop(key).down()
                    if bar:
                        bar[0].update(bar[1], description=f"{rc.describe()} rep {rep}")
                    record, samples = self.run_one(rc, rep, order)
                    record["attempt"] = attempts.get(record["run_id"], 0) + 1
                    self.store.append(record, samples)
                    counts[record["status"]] += 1
                    if record["status"] == "failed":
                        self.log(f"run {record['run_id']} ({rc.describe()}) failed: "
                                 f"{record.get('error')}")
                    if bar:
                        bar[0].advance(bar[1])
                    if camp.cooldown:
                        time.sleep(camp.cooldown)
            # after the testbeds are down, as before they were up (an interrupted campaign has no "after")
            states["after"] = self._machine_state("after")
        finally:
            self.store.rebuild_table()
            sessions = self.meta.get("sessions", [])
            if sessions:
                sessions[-1]["ended"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
                sessions[-1].update(counts)
            # complete: every run succeeded or is recorded as skipped with its reason
            complete = {run_id(rc, rep) for _, rc, rep in all_runs} <= self.store.done_run_ids()
            self._write_meta(ended=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                             complete=complete)
        return {"total": total, "previously_done": len(done), **counts, "machine_state": states}

    def _machine_state(self, when: str) -> dict:
        """The host's speed benchmark, load and versions now (:mod:`ovssim.collect.state`); a failure is
        recorded, it does not stop the campaign."""
        try:
            st = machine_state.measure()
        except (OvssimError, OSError) as exc:
            self.log(f"machine state {when} the campaign not measured: {exc}")
            return {"error": str(exc)}
        self.log(f"machine state {when} the campaign: {machine_state.describe(st)}")
        return st

    def _progress(self, stack: ExitStack, total: int, done: int):
        if not self.progress:
            return None
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeElapsedColumn, TimeRemainingColumn)
        prog = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn())
        stack.enter_context(prog)
        task = prog.add_task("starting", total=total, completed=done)
        return prog, task


def run_campaign(path, out=None, *, resume=False, progress=True, overrides=None, log=print) -> dict:
    camp = load_campaign(path, overrides)
    out = Path(out) if out else Path("data/local") / camp.name
    return CampaignRunner(camp, out, resume=resume, progress=progress, log=log).run()
