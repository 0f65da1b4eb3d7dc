"""Scenario files: TOML in the vocabulary of ``tc`` and ``ovs-vsctl`` -> validated objects.

This is the only module that reads scenario files.  Layout (every table is
optional except ``[scenario]``, ``[[host]]`` and ``[[workload]]``)::

    [scenario]   name, description, duration ("10s"), reps, seed, profile, warmup
    [params]     "dotted.profile.name" = value     # overrides the profile
    [[host]]     name, cores
    [[bridge]]   name, host, kind = "ovs" | "linux", chain = 1..9, link = "patch" | "veth",
                 uplink = NIC name, datapath_type = "system" | "netdev" (OVS only; default system)
    [[vm]]       name, host, vif = "kvm-tap" | "xen-vif" | "xen-hvm-tap" | "container-veth" |
                 "bare-metal", vcpus, bridge (a bridge or chain member "br0-2"), vlan | trunks,
                 qdisc (the VIF port's egress qdisc: tc form or OVS QoS form)
    [[nic]]      name, host, rate ("100mbit"), qdisc, switch, prop_delay, vlan | trunks, mtu
    [[switch]]   name, latency, buffer
    [[workload]] tool = "iperf" | "ping" | "netperf", from, to, and the tool's own flags

Every problem is a :class:`~ovssim.errors.ConfigError` naming the file, the
key and the fix.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path

from . import units
from .errors import ConfigError, OvssimError
from .path.datapath import QueueRule
from .tomlfile import read_toml
from .path.vif import VIF_KINDS

SECTIONS = {"scenario", "params", "host", "bridge", "vm", "nic", "switch", "workload"}
KEYS = {
    "scenario": {"name", "description", "duration", "reps", "seed", "profile", "warmup", "trace_every"},
    "host": {"name", "cores"},
    "bridge": {"name", "host", "kind", "chain", "link", "uplink", "flows", "datapath_type"},
    "vm": {"name", "host", "vif", "vcpus", "bridge", "vlan", "trunks", "qdisc", "mtu", "sysctl"},
    "nic": {"name", "host", "rate", "qdisc", "switch", "prop_delay", "vlan", "trunks", "mtu", "txqueuelen"},
    "switch": {"name", "latency", "buffer"},
}


@dataclass
class Scenario:
    """A validated scenario; ``data`` keeps the normalised tables for the topology builder."""
    name: str
    data: dict
    file: str = "<memory>"
    base_dir: Path = field(default_factory=Path.cwd)
    duration: float = 10.0
    warmup: float = 0.0
    reps: int = 10
    seed: int = 1
    profile: str = "default"
    trace_every: int = 0

    @property
    def hosts(self) -> list[dict]:
        return self.data.get("host", [])

    @property
    def workloads(self) -> list[dict]:
        return self.data.get("workload", [])

    def replace(self, **changes) -> "Scenario":
        """A copy with dotted keys changed, e.g. ``{"vm.vm1.qdisc": "sfq", "scenario.reps": 5}``."""
        data = copy.deepcopy(self.data)
        for dotted, value in changes.items():
            set_key(data, dotted, value)
        return from_dict(data, file=self.file, base_dir=self.base_dir)


def set_key(data: dict, dotted: str, value) -> None:
    """Set ``section.name.key`` (list sections by element name) or ``section.key`` in ``data``."""
    parts = dotted.split(".")
    sec = parts[0]
    if sec not in SECTIONS:
        raise ConfigError(f"unknown section {sec!r} in key {dotted!r}", key=dotted,
                          fix=f"use one of {', '.join(sorted(SECTIONS))}")
    if sec in ("scenario", "params"):
        tbl = data.setdefault(sec, {})
        if sec == "params":
            tbl[".".join(parts[1:])] = value
            return
        tbl[".".join(parts[1:])] = value
        return
    if len(parts) < 3:
        raise ConfigError(f"key {dotted!r} must be {sec}.<name>.<key>", key=dotted,
                          fix=f"e.g. {sec}.{(data.get(sec) or [{}])[0].get('name', 'NAME')}.<key>")
    name, key = parts[1], ".".join(parts[2:])
    for item in data.get(sec, []):
        if item.get("name") == name:
            if "." in key:                         # nested, e.g. vm.vm1.qdisc.target
                head, rest = key.split(".", 1)
                sub = item.setdefault(head, {})
                if isinstance(sub, str):
                    sub = item[head] = {"kind": sub}
                sub[rest] = value
            else:
                item[key] = value
            return
    raise ConfigError(f"no {sec} named {name!r} for key {dotted!r}", key=dotted,
                      fix=f"names are: {', '.join(i.get('name', '?') for i in data.get(sec, []))}")


def load_scenario(source) -> Scenario:
    """A :class:`Scenario` from a path, a TOML string's parsed dict, or a Scenario."""
    if isinstance(source, Scenario):
        return source
    if isinstance(source, dict):
        return from_dict(source)
    path = Path(source)
    data = read_toml(path, "scenario", "check the path (examples/ has ready-made scenarios)")
    return from_dict(data, file=str(path), base_dir=path.parent)


def _err(file, key, problem, fix):
    return ConfigError(problem, file=file, key=key, fix=fix)


def _list(data: dict, sec: str, file: str) -> list[dict]:
    items = data.get(sec, [])
    if isinstance(items, dict):
        items = [items]
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise _err(file, sec, f"[[{sec}]] must be an array of tables", f"write [[{sec}]] blocks")
    return items


def _names(items, sec, file) -> dict[str, dict]:
    out = {}
    for i, it in enumerate(items):
        n = it.get("name")
        if not isinstance(n, str) or not n:
            raise _err(file, f"{sec}[{i}].name", f"{sec} #{i + 1} has no name", f'add name = "{sec}{i + 1}"')
        if n in out:
            raise _err(file, f"{sec}.{n}", f"two {sec} entries are named {n!r}", "give each a unique name")
        out[n] = it
    return out


def _conv(file, key, fn, value):
    try:
        return fn(value)
    except OvssimError as exc:
        raise _err(file, key, str(exc), "see README 'Scenario files' for units") from None


def from_dict(data: dict, *, file: str = "<memory>", base_dir: Path | None = None) -> Scenario:
    data = {k: v for k, v in copy.deepcopy(data).items() if not k.startswith("_")}
    unknown = set(data) - SECTIONS
    if unknown:
        raise _err(file, sorted(unknown)[0], f"unknown section [{sorted(unknown)[0]}]",
                   f"sections are: {', '.join(sorted(SECTIONS))}")
    sc = data.get("scenario")
    if not isinstance(sc, dict):
        raise _err(file, "scenario", "missing [scenario] table", 'add [scenario] name = "..." duration = "10s"')
    for sec, keys in KEYS.items():
        tables = [sc] if sec == "scenario" else _list(data, sec, file)
        for t in tables:
            bad = set(t) - keys
            if bad:
                k = sorted(bad)[0]
                raise _err(file, f"{sec}.{t.get('name', '')}.{k}".replace("..", "."),
                           f"unknown key {k!r} in [{sec}]", f"[{sec}] takes: {', '.join(sorted(keys))}")
    name = sc.get("name") or (Path(file).stem if file != "<memory>" else "scenario")
    duration = _conv(file, "scenario.duration", units.time, sc.get("duration", "10s"))
    warmup = _conv(file, "scenario.warmup", units.time, sc.get("warmup", 0))
    if duration <= 0:
        raise _err(file, "scenario.duration", "duration must be > 0", 'write e.g. duration = "10s"')
    reps = sc.get("reps", 10)
    if isinstance(reps, bool) or not isinstance(reps, int) or reps < 1:
        raise _err(file, "scenario.reps", f"reps must be a whole number >= 1, got {reps!r}", "write e.g. reps = 10")
    seed = sc.get("seed", 1)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise _err(file, "scenario.seed", f"seed must be a whole number >= 0, got {seed!r}", "write e.g. seed = 1")
    params = data.get("params", {})
    if not isinstance(params, dict):
        raise _err(file, "params", "[params] must be a table", 'write [params] "ovs.upcall" = "80us"')

    hosts = _names(_list(data, "host", file), "host", file)
    if not hosts:
        raise _err(file, "host", "no [[host]] defined", 'add [[host]] name = "host1" cores = 4')
    for n, h in hosts.items():
        c = h.setdefault("cores", 1)
        if isinstance(c, bool) or not isinstance(c, int) or not 1 <= c <= 1024:
            raise _err(file, f"host.{n}.cores", f"cores must be 1..1024, got {c!r}", "write e.g. cores = 4")
    switches = _names(_list(data, "switch", file), "switch", file)
    for n, s in switches.items():
        s["latency"] = _conv(file, f"switch.{n}.latency", units.time, s.get("latency", "3us"))
        if "buffer" in s:
            s["buffer"] = _conv(file, f"switch.{n}.buffer", units.size, s["buffer"])
    bridges = _names(_list(data, "bridge", file), "bridge", file)
    members: dict[str, str] = {}
    for n, b in bridges.items():
        if b.get("host") not in hosts:
            raise _err(file, f"bridge.{n}.host", f"bridge {n!r} is on unknown host {b.get('host')!r}",
                       f"hosts are: {', '.join(hosts)}")
        kind = b.setdefault("kind", "ovs")
        if kind not in ("ovs", "linux"):
            raise _err(file, f"bridge.{n}.kind", f"unknown bridge kind {kind!r}", 'use "ovs" or "linux"')
        chain = b.setdefault("chain", 1)
        if isinstance(chain, bool) or not isinstance(chain, int) or not 1 <= chain <= 9:
            raise _err(file, f"bridge.{n}.chain", f"chain must be 1..9 bridges, got {chain!r}",
                       "write e.g. chain = 2 (seeds 003/004 measured 1-9)")
        link = b.setdefault("link", "patch" if kind == "ovs" else "veth")
        if link not in ("patch", "veth"):
            raise _err(file, f"bridge.{n}.link", f"unknown link {link!r}", 'use "patch" or "veth"')
        if link == "patch" and kind == "linux" and chain > 1:
            raise _err(file, f"bridge.{n}.link", "Linux bridges have no patch ports",
                       'use link = "veth" to chain Linux bridges')
        for i in range(chain):
            members[n if i == 0 else f"{n}-{i + 1}"] = n
        dpt = b.get("datapath_type")      # OVS's; a Linux bridge ignores it (a sweep may switch the kind)
        if dpt is not None and dpt not in ("system", "netdev"):
            raise _err(file, f"bridge.{n}.datapath_type", f"unknown datapath_type {dpt!r}",
                       'use "system" (the kernel datapath) or "netdev" (the userspace datapath)')
        flows = b.setdefault("flows", [])
        if flows and kind != "ovs":
            raise _err(file, f"bridge.{n}.flows", "OpenFlow rules need an OVS bridge", 'use kind = "ovs"')
        if not isinstance(flows, list):
            raise _err(file, f"bridge.{n}.flows", "flows must be a list of tables",
                       'write flows = [{ match = { dport = 5001 }, set_queue = 1 }]')
        for i, fl in enumerate(flows):
            if not isinstance(fl, dict) or set(fl) - {"match", "set_queue"} or "set_queue" not in fl:
                raise _err(file, f"bridge.{n}.flows[{i}]", "a flow is { match = {...}, set_queue = N }",
                           'write e.g. { match = { proto = "udp", dport = 5001 }, set_queue = 1 }')
            try:
                QueueRule(fl.get("match", {}), fl["set_queue"])
            except ValueError as exc:
                raise _err(file, f"bridge.{n}.flows[{i}]", str(exc), "see README 'Scenario files'") from None
    vms = _names(_list(data, "vm", file), "vm", file)
    for n, v in vms.items():
        if v.get("host") not in hosts:
            raise _err(file, f"vm.{n}.host", f"vm {n!r} is on unknown host {v.get('host')!r}",
                       f"hosts are: {', '.join(hosts)}")
        kind = v.setdefault("vif", "kvm-tap")
        if kind not in VIF_KINDS:
            raise _err(file, f"vm.{n}.vif", f"unknown VIF kind {kind!r}", f"use one of: {', '.join(VIF_KINDS)}")
        vc = v.setdefault("vcpus", 1)
        if isinstance(vc, bool) or not isinstance(vc, int) or vc < 1:
            raise _err(file, f"vm.{n}.vcpus", f"vcpus must be >= 1, got {vc!r}", "write e.g. vcpus = 2")
        br = v.get("bridge")
        if br not in members:
            raise _err(file, f"vm.{n}.bridge", f"vm {n!r} attaches to unknown bridge {br!r}",
                       f"bridges (and chain members) are: {', '.join(members) or '(none defined)'}")
        if bridges[members[br]]["host"] != v["host"]:
            raise _err(file, f"vm.{n}.bridge", f"vm {n!r} is on {v['host']} but bridge {br!r} is not",
                       "attach a VM to a bridge on its own host")
        _vlan_check(file, f"vm.{n}", v)
        mtu = v.setdefault("mtu", 1500)
        if isinstance(mtu, bool) or not isinstance(mtu, int) or not 68 <= mtu <= 9216:
            raise _err(file, f"vm.{n}.mtu", f"MTU must be 68..9216, got {mtu!r}", "write e.g. mtu = 1500")
    nics = _names(_list(data, "nic", file), "nic", file)
    uplinks = {}
    for n, b in bridges.items():
        up = b.get("uplink")
        if up is not None:
            if up not in nics:
                raise _err(file, f"bridge.{n}.uplink", f"uplink {up!r} is not a [[nic]]", "define it as [[nic]]")
            if nics[up].get("host") != b["host"]:
                raise _err(file, f"bridge.{n}.uplink", f"NIC {up!r} is not on host {b['host']}", "use a NIC of the same host")
            uplinks[up] = n
    for n, nic in nics.items():
        if nic.get("host") not in hosts:
            raise _err(file, f"nic.{n}.host", f"nic {n!r} is on unknown host {nic.get('host')!r}",
                       f"hosts are: {', '.join(hosts)}")
        nic["rate"] = _conv(file, f"nic.{n}.rate", units.rate, nic.get("rate", "1gbit"))
        if nic["rate"] <= 0:
            raise _err(file, f"nic.{n}.rate", "a NIC rate must be > 0", 'write e.g. rate = "100mbit"')
        if nic["rate"] > 400e9:
            raise _err(file, f"nic.{n}.rate", f"{units.fmt_rate(nic['rate'])} is beyond any Ethernet NIC",
                       'write e.g. rate = "10gbit"')
        nic["prop_delay"] = _conv(file, f"nic.{n}.prop_delay", units.time, nic.get("prop_delay", "25ns"))
        sw = nic.get("switch")
        if sw is not None and sw not in switches:
            raise _err(file, f"nic.{n}.switch", f"unknown switch {sw!r}", "define it as [[switch]]")
        if n not in uplinks:
            raise _err(file, f"nic.{n}", f"NIC {n!r} is no bridge's uplink", f'set uplink = "{n}" on a [[bridge]]')
        mtu = nic.setdefault("mtu", 1500)
        if isinstance(mtu, bool) or not isinstance(mtu, int) or not 68 <= mtu <= 9216:
            raise _err(file, f"nic.{n}.mtu", f"MTU must be 68..9216, got {mtu!r}", "write e.g. mtu = 1500")
        _vlan_check(file, f"nic.{n}", nic)
    workloads = _list(data, "workload", file)
    if not workloads:
        raise _err(file, "workload", "no [[workload]] defined", 'add [[workload]] tool = "ping" from = "vm1" to = "vm2"')
    seen = set()
    for i, w in enumerate(workloads):
        w.setdefault("name", f"{w.get('tool', 'workload')}{i + 1}")
        if w["name"] in seen:
            raise _err(file, f"workload.{w['name']}", "two workloads share a name", "give each a unique name")
        seen.add(w["name"])
        for end in ("from", "to"):
            if w.get(end) not in vms:
                raise _err(file, f"workload.{w['name']}.{end}", f"{end} = {w.get(end)!r} is not a [[vm]]",
                           f"VMs are: {', '.join(vms) or '(none defined)'}")
    data["_members"] = members
    data["_uplinks"] = uplinks
    return Scenario(name=name, data=data, file=file, base_dir=base_dir or Path.cwd(), duration=duration,
                    warmup=warmup, reps=reps, seed=seed, profile=sc.get("profile", "default"),
                    trace_every=int(sc.get("trace_every", 0)))


def _vlan_check(file, key, item) -> None:
    vlan, trunks = item.get("vlan"), item.get("trunks")
    if vlan is not None and trunks is not None:
        raise _err(file, f"{key}.vlan", "a port is access (vlan) or trunk (trunks), not both", "remove one")
    if vlan is not None and (isinstance(vlan, bool) or not isinstance(vlan, int) or not 1 <= vlan <= 4094):
        raise _err(file, f"{key}.vlan", f"VLAN tag must be 1..4094, got {vlan!r}", "write e.g. vlan = 10")
    if trunks is not None and (not isinstance(trunks, list) or
                               not all(isinstance(t, int) and 1 <= t <= 4094 for t in trunks)):
        raise _err(file, f"{key}.trunks", "trunks must be a list of VLAN tags 1..4094", "write e.g. trunks = [10, 20]")
