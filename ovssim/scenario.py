"""Scenario files: TOML in the vocabulary of ``tc`` and ``ovs-vsctl`` -> validated objects.

This is the only module that reads scenario files.  Layout (every table is
optional except ``[scenario]``, ``[[host]]`` and ``[[workload]]``)::

    [scenario]   name, description, duration ("10s"), reps, seed, profile, warmup, speed_index,
                 precision (0.01, or {metric = rel}), abs_precision ({metric = value}), min_reps,
                 max_reps -- replications until the CIs are that narrow (ovssim.sequential)
    [params]     "dotted.profile.name" = value     # overrides the profile
    [[host]]     name, cores
    [[bridge]]   name, host, kind = "ovs" | "linux", chain = 1..9, link = "patch" | "veth",
                 uplink = NIC name, datapath_type = "system" | "netdev" (OVS only; default system),
                 port_type = "system" | "afxdp" (the VIFs' OVS interface type; afxdp needs netdev)
    [[vm]]       name, host, vif = "kvm-tap" | "xen-vif" | "xen-hvm-tap" | "container-veth" |
                 "bare-metal", vcpus, bridge (a bridge or chain member "br0-2"), vlan | trunks,
                 qdisc (the VIF port's egress qdisc: tc form or OVS QoS form),
                 features = { tso = false, ... } (the guest interface's ``ethtool -K`` offloads)
    [[nic]]      name, host, rate ("100mbit"), qdisc, switch, prop_delay, vlan | trunks, mtu, features,
                 rx_frames (ethtool -C rx-frames; rx-usecs is the profile's nic.rx_delay)
    [[switch]]   name, latency, buffer
    [[workload]] tool = "iperf" | "ping" | "netperf", from, to, and the tool's own flags

Every problem is a :class:`~ovssim.errors.ConfigError` naming the file, the
key and the fix.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path

from . import units
from .errors import ConfigError, OvssimError
from .path.datapath import QueueRule
from .path.features import FEATURES
from .tomlfile import read_toml
from .path.vif import VIF_KINDS
from .scenario_keys import SECTION_HELP, SECTION_KEYS

SECTIONS = set(SECTION_HELP)
KEYS = {sec: set(keys) for sec, keys in SECTION_KEYS.items()}


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
    precision: object = None        # ovssim.sequential.Precision, or None for a fixed ``reps``
    speed_index: float | None = None     # the simulated host's (ovssim.collect.state); None: the profile's

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


def _features_check(file, key: str, item: dict) -> None:
    """``features``: a table of ``ethtool -K`` offload names to true/false."""
    f = item.get("features")
    if f is None:
        return
    if not isinstance(f, dict):
        raise _err(file, f"{key}.features", f"features must be a table, got {f!r}",
                   "write e.g. features = { tso = false, gro = true }")
    for k, v in f.items():
        if k not in FEATURES:
            raise _err(file, f"{key}.features.{k}", f"unknown offload feature {k!r}",
                       f"use ethtool -K names: {', '.join(FEATURES)}")
        if not isinstance(v, bool):
            raise _err(file, f"{key}.features.{k}", f"{k} must be true or false, got {v!r}",
                       f"write e.g. {k} = false")


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
    duration = _conv(file, "scenario.duration", units.duration, sc.get("duration", "10s"))
    warmup = _conv(file, "scenario.warmup", units.time, sc.get("warmup", 0))
    reps = _conv(file, "scenario.reps", lambda v: units.whole(v, "reps", 1), sc.get("reps", 10))
    seed = _conv(file, "scenario.seed", lambda v: units.whole(v, "seed", 0, units.SEED_MAX), sc.get("seed", 1))
    trace_every = _conv(file, "scenario.trace_every", lambda v: units.whole(v, "trace_every", 0),
                        sc.get("trace_every", 0))
    from .sequential import parse_precision
    precision = parse_precision(sc.get("precision"), sc.get("abs_precision"), sc.get("min_reps"),
                                sc.get("max_reps"), where="scenario.precision", file=file)
    if precision is not None and "reps" in sc:
        raise _err(file, "scenario.reps", "reps and precision are both given",
                   "keep reps for a fixed count, or precision (with min_reps/max_reps) to stop at a CI width")
    speed_index = sc.get("speed_index")
    if speed_index is not None and (isinstance(speed_index, bool) or not isinstance(speed_index, (int, float))
                                    or not 0 < speed_index < 1e6):
        raise _err(file, "scenario.speed_index", f"speed_index must be a positive number, got {speed_index!r}",
                   "write e.g. speed_index = 0.8 (the index ovssim.collect.state measured on the host)")
    profile = sc.get("profile", "default")
    if not isinstance(profile, str) or not profile.strip():
        raise _err(file, "scenario.profile", f"profile must name a profile, got {profile!r}",
                   'write e.g. profile = "thesis_kvm" (a name in calibration/, a path, or "default")')
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
        if not isinstance(h.setdefault("schedule_threads", False), bool):
            raise _err(file, f"host.{n}.schedule_threads",
                       f"schedule_threads must be true or false, got {h['schedule_threads']!r}",
                       "write schedule_threads = true")
        if ("background_period" in h) != ("background_on" in h):
            raise _err(file, f"host.{n}.background_period", "background_period and background_on go together",
                       'write e.g. background_period = "200ms" background_on = "4ms"')
        if "background_period" in h:
            h["background_period"] = _conv(file, f"host.{n}.background_period", units.delay, h["background_period"])
            h["background_on"] = _conv(file, f"host.{n}.background_on", units.delay, h["background_on"])
            if not 0 < h["background_on"] <= h["background_period"]:
                raise _err(file, f"host.{n}.background_on", "background_on must be > 0 and at most "
                           "background_period", 'write e.g. background_period = "200ms" background_on = "4ms"')
        _conv(file, f"host.{n}.background_threads", lambda b: units.whole(b, "background_threads", 0, 4096),
              h.setdefault("background_threads", 0))
        _conv(file, f"host.{n}.pmd_core_threads", lambda b: units.whole(b, "pmd_core_threads", 0, 64),
              h.setdefault("pmd_core_threads", 0))
        if "sched_slice" in h:
            h["sched_slice"] = _conv(file, f"host.{n}.sched_slice", units.delay, h["sched_slice"])
            if not h["sched_slice"] > 0:
                raise _err(file, f"host.{n}.sched_slice", "sched_slice must be > 0", 'write e.g. sched_slice = "3ms"')
    _guest_host_check(file, hosts)
    switches = _names(_list(data, "switch", file), "switch", file)
    for n, s in switches.items():
        s["latency"] = _conv(file, f"switch.{n}.latency", units.delay, s.get("latency", "3us"))
        if "buffer" in s:
            s["buffer"] = _conv(file, f"switch.{n}.buffer", units.size, s["buffer"])
    bridges = _names(_list(data, "bridge", file), "bridge", file)
    members: dict[str, str] = {}
    for n, b in bridges.items():
        if _ref(b.get("host")) not in hosts:
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
        pt = b.get("port_type")           # the VIFs' OVS interface type (AF_XDP: issue 18)
        if pt is not None and pt not in ("system", "afxdp"):
            raise _err(file, f"bridge.{n}.port_type", f"unknown port_type {pt!r}",
                       'use "system" (AF_PACKET, default) or "afxdp"')
        if pt == "afxdp" and (kind != "ovs" or dpt != "netdev"):
            raise _err(file, f"bridge.{n}.port_type", "AF_XDP ports need an OVS bridge on the userspace datapath",
                       'set kind = "ovs" and datapath_type = "netdev"')
        if pt == "afxdp" and hosts[b["host"]]["cores"] < 2:
            raise _err(file, f"host.{b['host']}.cores", "an AF_XDP bridge's PMD thread takes a core of its own",
                       "give the host cores = 2 or more")
        flows = b.setdefault("flows", [])
        if flows and kind != "ovs":
            raise _err(file, f"bridge.{n}.flows", "OpenFlow rules need an OVS bridge", 'use kind = "ovs"')
        if not isinstance(flows, list):
            raise _err(file, f"bridge.{n}.flows", "flows must be a list of tables",
                       'write flows = [{ match = { dport = 5001 }, set_queue = 1 }]')
        for i, fl in enumerate(flows):
            if not isinstance(fl, dict) or set(fl) - {"match", "set_queue"} or "set_queue" not in fl \
                    or not isinstance(fl.get("match", {}), dict):
                raise _err(file, f"bridge.{n}.flows[{i}]", "a flow is { match = {...}, set_queue = N }",
                           'write e.g. { match = { proto = "udp", dport = 5001 }, set_queue = 1 }')
            try:
                for port in ("sport", "dport"):
                    if port in fl.get("match", {}):
                        units.whole(fl["match"][port], f"match {port}", 0, 65535)
                QueueRule(fl.get("match", {}), fl["set_queue"])
            except ValueError as exc:
                raise _err(file, f"bridge.{n}.flows[{i}]", str(exc), "see README 'Scenario files'") from None
    vms = _names(_list(data, "vm", file), "vm", file)
    for n, v in vms.items():
        if _ref(v.get("host")) not in hosts:
            raise _err(file, f"vm.{n}.host", f"vm {n!r} is on unknown host {v.get('host')!r}",
                       f"hosts are: {', '.join(hosts)}")
        kind = v.setdefault("vif", "kvm-tap")
        if _ref(kind) not in VIF_KINDS:
            raise _err(file, f"vm.{n}.vif", f"unknown VIF kind {kind!r}", f"use one of: {', '.join(VIF_KINDS)}")
        _conv(file, f"vm.{n}.vcpus", lambda c: units.whole(c, "vcpus", 1, 1024), v.setdefault("vcpus", 1))
        _vcpu_placement_check(file, n, v, hosts[v["host"]]["cores"])
        br = v.get("bridge")
        if _ref(br) not in members:
            raise _err(file, f"vm.{n}.bridge", f"vm {n!r} attaches to unknown bridge {br!r}",
                       f"bridges (and chain members) are: {', '.join(members) or '(none defined)'}")
        if bridges[members[br]]["host"] != v["host"]:
            raise _err(file, f"vm.{n}.bridge", f"vm {n!r} is on {v['host']} but bridge {br!r} is not",
                       "attach a VM to a bridge on its own host")
        _vlan_check(file, f"vm.{n}", v)
        mtu = v.setdefault("mtu", 1500)
        if isinstance(mtu, bool) or not isinstance(mtu, int) or not 68 <= mtu <= 9216:
            raise _err(file, f"vm.{n}.mtu", f"MTU must be 68..9216, got {mtu!r}", "write e.g. mtu = 1500")
        _features_check(file, f"vm.{n}", v)
        if not isinstance(v.get("veth_orphans", True), bool):
            raise _err(file, f"vm.{n}.veth_orphans", f"veth_orphans must be true or false, got {v['veth_orphans']!r}",
                       "write veth_orphans = false (or true, the default)")
        kernel = v.get("kernel")
        if kernel is not None and not (isinstance(kernel, str) and re.fullmatch(r"[2-9]\.\d{1,2}(\.\d+)?", kernel)):
            raise _err(file, f"vm.{n}.kernel", f"kernel must be a Linux version such as \"6.1\", got {kernel!r}",
                       'write kernel = "6.1" (or leave it out: this machine\'s 6.18)')
    nics = _names(_list(data, "nic", file), "nic", file)
    uplinks = {}
    for n, b in bridges.items():
        up = b.get("uplink")
        if up is not None:
            if _ref(up) not in nics:
                raise _err(file, f"bridge.{n}.uplink", f"uplink {up!r} is not a [[nic]]", "define it as [[nic]]")
            if nics[up].get("host") != b["host"]:
                raise _err(file, f"bridge.{n}.uplink", f"NIC {up!r} is not on host {b['host']}", "use a NIC of the same host")
            uplinks[up] = n
    for n, nic in nics.items():
        if _ref(nic.get("host")) not in hosts:
            raise _err(file, f"nic.{n}.host", f"nic {n!r} is on unknown host {nic.get('host')!r}",
                       f"hosts are: {', '.join(hosts)}")
        nic["rate"] = _conv(file, f"nic.{n}.rate", units.link_rate, nic.get("rate", "1gbit"))
        if nic["rate"] > 400e9:
            raise _err(file, f"nic.{n}.rate", f"{units.fmt_rate(nic['rate'])} is beyond any Ethernet NIC",
                       'write e.g. rate = "10gbit"')
        nic["prop_delay"] = _conv(file, f"nic.{n}.prop_delay", units.delay, nic.get("prop_delay", "25ns"))
        sw = nic.get("switch")
        if sw is not None and _ref(sw) not in switches:
            raise _err(file, f"nic.{n}.switch", f"unknown switch {sw!r}", "define it as [[switch]]")
        if n not in uplinks:
            raise _err(file, f"nic.{n}", f"NIC {n!r} is no bridge's uplink", f'set uplink = "{n}" on a [[bridge]]')
        mtu = nic.setdefault("mtu", 1500)
        if isinstance(mtu, bool) or not isinstance(mtu, int) or not 68 <= mtu <= 9216:
            raise _err(file, f"nic.{n}.mtu", f"MTU must be 68..9216, got {mtu!r}", "write e.g. mtu = 1500")
        _vlan_check(file, f"nic.{n}", nic)
        if "txqueuelen" in nic:
            _conv(file, f"nic.{n}.txqueuelen", lambda q: units.whole(q, "txqueuelen", 0), nic["txqueuelen"])
        _features_check(file, f"nic.{n}", nic)
        rf = nic.setdefault("rx_frames", 0)
        if isinstance(rf, bool) or not isinstance(rf, int) or not 0 <= rf <= 65535:
            raise _err(file, f"nic.{n}.rx_frames", f"rx_frames must be 0..65535, got {rf!r}",
                       "write e.g. rx_frames = 32 (ethtool -C rx-frames; 0: by rx-usecs alone)")
    workloads = _list(data, "workload", file)
    if not workloads:
        raise _err(file, "workload", "no [[workload]] defined", 'add [[workload]] tool = "ping" from = "vm1" to = "vm2"')
    seen = set()
    for i, w in enumerate(workloads):
        w.setdefault("name", f"{w.get('tool', 'workload')}{i + 1}")
        if not isinstance(w["name"], str) or not w["name"].strip():
            raise _err(file, f"workload[{i}].name", f"a workload's name must be a non-empty string, got {w['name']!r}",
                       f'write name = "{w.get("tool", "workload")}{i + 1}"')
        if w["name"] in seen:
            raise _err(file, f"workload.{w['name']}", "two workloads share a name", "give each a unique name")
        seen.add(w["name"])
        for end in ("from", "to"):
            if _ref(w.get(end)) not in vms:
                raise _err(file, f"workload.{w['name']}.{end}", f"{end} = {w.get(end)!r} is not a [[vm]]",
                           f"VMs are: {', '.join(vms) or '(none defined)'}")
        if w["from"] == w["to"]:
            raise _err(file, f"workload.{w['name']}.to", f"from and to are both {w['to']!r}: no packet would "
                       "cross the switch", "send between two different [[vm]]s")
    data["_members"] = members
    data["_uplinks"] = uplinks
    _check_elements(file, data)
    return Scenario(name=name, data=data, file=file, base_dir=base_dir or Path.cwd(), duration=duration,
                    warmup=warmup, reps=reps, seed=seed, profile=profile, trace_every=trace_every,
                    precision=precision,
                    speed_index=None if speed_index is None else float(speed_index))


def _check_elements(file, data: dict) -> None:
    """Build every port's qdisc and every workload once, so a bad value fails here, before any run."""
    from .qdisc.registry import make_qdisc
    from .workloads.registry import make_workload
    items = [(f"{sec}.{it['name']}.{k}", make_qdisc, it[k]) for sec in ("vm", "nic")
             for it in data.get(sec, []) for k in ("qdisc", "egress_qdisc") if it.get(k) is not None]
    items += [(f"workload.{w['name']}", make_workload, w) for w in data.get("workload", [])]
    for key, build, spec in items:
        if not isinstance(spec, (str, dict)):
            raise _err(file, key, f"{key} must be a name or a table, got {spec!r}",
                       'write e.g. qdisc = { kind = "pfifo", limit = 1000 }')
        try:
            build(spec)
        except ConfigError as exc:
            raise ConfigError(exc.problem, file=file, key=exc.key or key, fix=exc.fix) from None
        except OvssimError as exc:
            raise _err(file, key, str(exc), "see README 'Scenario files'") from None
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            raise _err(file, key, f"invalid value ({exc})", "see README 'Scenario files'") from None


def _ref(value):
    """``value`` when it can name an element (a string), else None: a list or table names nothing."""
    return value if isinstance(value, str) else None


def _vcpu_placement_check(file, n: str, v: dict, cores: int) -> None:
    """``vcpus_on_host`` (a bool) and ``vcpu_pin`` (one list of host cores per vCPU)."""
    on = v.setdefault("vcpus_on_host", "vcpu_pin" in v)
    if not isinstance(on, bool):
        raise _err(file, f"vm.{n}.vcpus_on_host", f"vcpus_on_host must be true or false, got {on!r}",
                   "write vcpus_on_host = true")
    pin = v.get("vcpu_pin")
    if pin is None:
        return
    if not on:
        raise _err(file, f"vm.{n}.vcpu_pin", "vcpu_pin needs the vCPUs on the host's cores",
                   "drop vcpus_on_host = false (vcpu_pin implies it)")
    _pin_check(file, f"vm.{n}.vcpu_pin", pin, v["vcpus"], cores)


def _pin_check(file, key: str, pin, vcpus: int, cores: int) -> None:
    """``vcpu_pin``: one list of the host's cores (0..``cores`` - 1) per vCPU."""
    ok = (isinstance(pin, list) and len(pin) == vcpus
          and all(isinstance(p, list) and p and all(isinstance(c, int) and not isinstance(c, bool)
                                                    and 0 <= c < cores for c in p) for p in pin))
    if not ok:
        raise _err(file, key, f"vcpu_pin must list, for each of the {vcpus} vCPUs, host cores "
                   f"0..{cores - 1}; got {pin!r}", "write e.g. vcpu_pin = [[0], [1]] for 2 vCPUs")


def _guest_host_check(file, hosts: dict) -> None:
    """``guest_of``: the host is a virtual machine on another (not itself a guest) host; ``vcpu_pin``: its
    vCPUs' cores on that host."""
    for n, h in hosts.items():
        parent = h.get("guest_of")
        if parent is None:
            if "vcpu_pin" in h:
                raise _err(file, f"host.{n}.vcpu_pin", "vcpu_pin on a [[host]] needs guest_of",
                           'write guest_of = "<the host whose cores run its vCPUs>"')
            continue
        if not isinstance(parent, str) or parent not in hosts or parent == n:
            raise _err(file, f"host.{n}.guest_of", f"guest_of must name another [[host]], got {parent!r}",
                       f"hosts are: {', '.join(k for k in hosts if k != n)}")
        if hosts[parent].get("guest_of") is not None:
            raise _err(file, f"host.{n}.guest_of", f"host {parent!r} is itself a guest: nested virtualisation is "
                       "not modelled", f"make {n} a guest of a bare-metal host")
        if "vcpu_pin" in h:
            _pin_check(file, f"host.{n}.vcpu_pin", h["vcpu_pin"], h["cores"], hosts[parent]["cores"])


def _vlan_check(file, key, item) -> None:
    vlan, trunks = item.get("vlan"), item.get("trunks")
    if vlan is not None and trunks is not None:
        raise _err(file, f"{key}.vlan", "a port is access (vlan) or trunk (trunks), not both", "remove one")
    if vlan is not None and (isinstance(vlan, bool) or not isinstance(vlan, int) or not 1 <= vlan <= 4094):
        raise _err(file, f"{key}.vlan", f"VLAN tag must be 1..4094, got {vlan!r}", "write e.g. vlan = 10")
    if trunks is not None and (not isinstance(trunks, list) or
                               not all(isinstance(t, int) and not isinstance(t, bool) and 1 <= t <= 4094 for t in trunks)):
        raise _err(file, f"{key}.trunks", "trunks must be a list of VLAN tags 1..4094", "write e.g. trunks = [10, 20]")
