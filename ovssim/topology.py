"""Build hosts, VMs, bridges, links, NICs and switches from a validated scenario.

One call, :func:`build`, wires the elements of :mod:`ovssim.path` into the
path the scenario describes -- for the thesis testbed (seed 000 Fig. 10):
VM -> VIF -> OVS -> NIC -> 100 Mbit/s switch -> NIC -> OVS -> VIF -> VM -- with
every parameter taken from the profile and every random stream named, so a
replication is a pure function of (scenario, profile, seed, replication).
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field

from .cpu import CpuPool, GuestCpus, WakePlacement, base_slice, conn_key
from .distributions import Sampler, SumSampler
from .path.afxdp import AfxdpPort, PmdThread
from .path.core_turns import CoreTurns
from .path.datapath import OvsDatapath, QueueRule, idle_stall_state
from .path.vswitchd_loop import VswitchdLoop
from .path.endpoint import Endpoint, ReceiveStack
from .path.features import resolve
from .path.gso import SoftwareGso
from .path.linux_bridge import LinuxBridge
from .path.links import PatchPort, VethLink
from .path.nic import Nic
from .path.port import EgressPort
from .path.switch import PhysicalSwitch
from .path.vif import INLINE_KINDS, VifBackend, VifLatency
from .path.vcpu_wake import VcpuWake
from .errors import ConfigError
from .tcp.buffers import TcpSysctls
from .packet import FlowKey, Packet
from .profile import Profile
from .sched import call_at
from .scenario import Scenario

DEFAULT_VIF_QDISC = {"kind": "pfifo_fast"}


@dataclass
class Topology:
    env: object
    hosts: dict = field(default_factory=dict)        # name -> CpuPool
    endpoints: dict = field(default_factory=dict)    # vm name -> Endpoint
    bridges: dict = field(default_factory=dict)      # member name -> Bridge
    ports: dict = field(default_factory=dict)        # "bridge:port" -> EgressPort
    nics: dict = field(default_factory=dict)
    switches: dict = field(default_factory=dict)
    vifs: dict = field(default_factory=dict)         # vm -> (tx, rx)
    guest_cpus: dict = field(default_factory=dict)
    pmds: dict = field(default_factory=dict)         # host -> PmdThread (hosts with AF_XDP bridges)

    def counters(self) -> dict[str, dict]:
        """Per-element counters for the run's report (datapath, qdiscs, CPU refusals)."""
        out = {}
        for port in self.ports.values():
            port.sync()
        for name, br in self.bridges.items():
            out[f"bridge:{name}"] = br.counters()
        for name, port in self.ports.items():
            st = port.qdisc.stats
            out[f"qdisc:{name}"] = {"kind": port.qdisc.kind, "sent_packets": st.packets, "sent_bytes": st.bytes,
                                    "drops": st.drops, "overlimits": st.overlimits, "backlog": st.backlog,
                                    "qlen": st.qlen, "port_drops": port.dropped}
        for name, cpu in self.hosts.items():
            out[f"cpu:{name}"] = {"refused": cpu.refused, "jobs": cpu.jobs}
        for name, pmd in self.pmds.items():
            out[f"pmd:{name}"] = {**pmd.perf_show(),
                                  "rx_dropped": sum(q.rx_dropped for q in pmd.rxqs),
                                  "tx_dropped": sum(q.tx_dropped for q in pmd.rxqs)}
        return out


def _qdisc_spec(spec):
    if spec is None:
        return None
    return spec


def host_pool(env, cores: int, name: str, profile: Profile, rng, **kw) -> CpuPool:
    """A host's cores with the profile's idle states and cold starts; ``rng(name)`` gives a numpy Generator."""
    return CpuPool(env, cores, name, idle_exit=profile.sampler("host.idle_exit", rng(f"{name}.idle_exit")),
                   idle_exit_after=profile.time("host.idle_exit_after"),
                   cold_factor=profile.factor("host.cold_factor"), cold_work=profile.time("host.cold_work"),
                   shallow_exit=profile.sampler("host.shallow_exit", rng(f"{name}.shallow_exit")),
                   shallow_after=profile.time("host.shallow_after") or None,
                   shallow_cold_factor=profile.factor("host.shallow_cold_factor"),
                   idle_busy=profile.time("host.idle_busy"), **kw)


def _vswitchd_key(host: str) -> int:
    """The core key of ``host``'s ovs-vswitchd thread (its home core: ``key % cores``)."""
    return zlib.crc32(f"{host}.ovs-vswitchd".encode())


def build(env, sc: Scenario, profile: Profile, rng) -> Topology:
    """Wire the scenario's path; ``rng(name)`` returns the named numpy Generator."""
    topo = Topology(env)
    d = sc.data
    backlog = profile.int("host.netdev_max_backlog")
    # a host with AF_XDP bridges runs one PMD thread on a core of its own (pmd-cpu-mask): the host's
    # other work gets the remaining cores
    pmd_hosts = {b["host"] for b in d.get("bridge", []) if b.get("port_type") == "afxdp"}
    guest_hosts = {h["guest_of"] for h in d.get("host", []) if h.get("guest_of")}
    # bare-metal hosts first: a guest host's vCPUs are threads on its hypervisor host's cores
    for h in sorted(d.get("host", []), key=lambda h: bool(h.get("guest_of"))):
        pmd = h["name"] in pmd_hosts
        if h.get("guest_of"):
            pool = GuestCpus(env, h["cores"] - pmd, h["name"], topo.hosts[h["guest_of"]], pin=h.get("vcpu_pin"),
                             speed=1.0 / profile.factor("guest.cpu_factor"), backlog_limit=backlog)
        else:
            pool = host_pool(env, h["cores"] - pmd, h["name"], profile, rng, backlog_limit=backlog)
        topo.hosts[h["name"]] = pool
        if h.get("sched_slice"):
            pool.slice = h["sched_slice"]
        pool.schedule_threads = bool(h.get("schedule_threads") or h.get("background_threads")
                                     or h["name"] in guest_hosts or h.get("guest_of") or any(
            v.get("vcpus_on_host") for v in d.get("vm", []) if v["host"] == h["name"]))
        if h.get("background_threads"):
            pool.add_background(h["background_threads"], period=h.get("background_period"),
                                on=h.get("background_on"))
        if pmd:
            topo.pmds[h["name"]] = PmdThread(
                env, core=h["cores"] - 1, per_batch=profile.time("ovs.afxdp.per_batch"),
                per_packet=profile.time("ovs.afxdp.per_packet"), empty_poll=profile.time("ovs.afxdp.empty_poll"),
                tsc_hz=1e6 * profile.int("ovs.afxdp.tsc_mhz"), name=f"{h['name']}.pmd")
            if h.get("pmd_core_threads"):
                # the PMD's core shared with other CPU-bound threads (other OVS instances' PMDs): turns of whole
                # ticks, starting where the scheduler happens to be when the run begins
                turns = CoreTurns.of_scheduler(h["pmd_core_threads"], h.get("sched_slice") or base_slice(h["cores"]))
                turns.phase = float(rng(f"{h['name']}.pmd.turns").uniform(0.0, turns.cycle))
                topo.pmds[h["name"]].turns = turns
    afxdp_members: set = set()

    # bridges and their chains
    chain_members: dict[str, list] = {}
    # one ovs-vswitchd datapath thread per host: its idle-stall state is shared by the host's OVS bridges
    ovs_threads: dict = {}

    hosts_by_name = {h["name"]: h for h in d.get("host", [])}

    def _ovs_thread(host: str):
        if host not in ovs_threads:
            prob, busy = profile.prob("ovs.idle_stall_prob"), profile.busy_share()
            load = _background_share(hosts_by_name[host])
            if load is not None:
                # the scenario states the host's background load: the share of its cores busy with other
                # work is the load's, and the wait for a busy core is the scheduler's (ovssim.cpu), not
                # the fitted tick stall that stood in for it
                prob, busy = 0.0, load
            ovs_threads[host] = idle_stall_state(prob, profile.time("ovs.idle_stall"),
                                                 profile.time("ovs.idle_after"), rng(f"{host}.ovs.idle_stall"), host,
                                                 idle_wake=profile.time("ovs.idle_wake"), busy_share=busy)
        return ovs_threads[host]

    vswitchd: dict = {}
    vswitchd_loops: dict = {}

    def _vswitchd_loop(host: str) -> VswitchdLoop:
        # netdev: the main loop of that thread, whose every run goes through each of the host's netdev bridges
        if host not in vswitchd_loops:
            vswitchd_loops[host] = VswitchdLoop(profile.time("ovs.bridge_run"))
        loop = vswitchd_loops[host]
        loop.add_bridge()
        return loop

    def _vswitchd_thread(host: str):
        # netdev: ovs-vswitchd's one thread does every bridge's packets; first on its key's core (as serve
        # keys it), unpinned: an ordinary task the scheduler wakes on an idle core (ovssim.cpu.wake)
        if host not in vswitchd:
            cpu, key = topo.hosts[host], _vswitchd_key(host)
            vswitchd[host] = cpu.app_thread(f"{host}.ovs-vswitchd", key, "ovs-vswitchd")
        return vswitchd[host]

    vswitchd_places: dict = {}

    def _vswitchd_place(host: str) -> WakePlacement:
        # the same thread where the host does not schedule threads: its core, chosen at each wake-up
        if host not in vswitchd_places:
            vswitchd_places[host] = WakePlacement(topo.hosts[host], _vswitchd_key(host))
        return vswitchd_places[host]

    for b in d.get("bridge", []):
        afxdp = b.get("port_type") == "afxdp"
        # AF_XDP: the datapath's work (and its patch ports') runs in the PMD thread, which never sleeps
        cpu = topo.pmds[b["host"]] if afxdp else topo.hosts[b["host"]]
        members = []
        for i in range(b["chain"]):
            name = b["name"] if i == 0 else f"{b['name']}-{i + 1}"
            if b["kind"] == "ovs":
                handlers = profile.int("ovs.handlers")
                # AF_XDP: the PMD's whole per-frame pass is ovs.afxdp.per_packet (the fitted netdev costs
                # ovs.stats/lookup/actions carry AF_PACKET's system calls and copies, which XSK rings replace)
                # (a step's stream is the bridge's, or with ``port`` that ingress port's own)
                def step(key, port=None, name=name, afxdp=afxdp):
                    if afxdp:
                        return Sampler(0.0, rng(key))
                    return profile.sampler(key, rng(f"{name}.{key[4:]}" + ("" if port is None else f".{port}")))
                br = OvsDatapath(env, name, cpu, stats=step("ovs.stats"), lookup=step("ovs.lookup"),
                                 actions=step("ovs.actions"),
                                 # a pass's cost drawn per ingress port (each direction its own streams)
                                 port_hits=lambda port, step=step: SumSampler(*(
                                     step(k, port) for k in ("ovs.stats", "ovs.lookup", "ovs.actions"))).it,
                                 upcall=profile.sampler("ovs.upcall", rng(f"{name}.upcall")),
                                 upcall_wakeup=profile.sampler("ovs.upcall_wakeup", rng(f"{name}.upcall_wakeup")),
                                 lookup_per_mask=profile.time("ovs.lookup_per_mask"),
                                 masks=profile.int("ovs.masks"), handlers=handlers,
                                 upcall_queue=profile.int("ovs.upcall_queue"),
                                 max_idle=profile.time("ovs.max_idle"),
                                 flow_limit=profile.int("ovs.flow_limit"),
                                 rules=[QueueRule(f.get("match", {}), f["set_queue"]) for f in b["flows"]],
                                 latency=None if afxdp else profile.sampler("ovs.latency", rng(f"{name}.latency")),
                                 deliver_share=0.0 if afxdp else profile.prob("ovs.deliver_share"),
                                 sndbuf=0 if afxdp else int(profile.size("ovs.tx_sndbuf")),
                                 rcvbuf=0 if afxdp else int(profile.size("ovs.rx_rcvbuf")),
                                 stall_state=None if afxdp else _ovs_thread(b["host"]),
                                 # netdev: ovs-vswitchd's one polling thread does every packet's work
                                 thread_key=(_vswitchd_key(b["host"])
                                             if b.get("datapath_type") == "netdev" and not afxdp else None),
                                 thread=(_vswitchd_thread(b["host"])
                                         if b.get("datapath_type") == "netdev" and not afxdp else None),
                                 loop=(_vswitchd_loop(b["host"])
                                       if b.get("datapath_type") == "netdev" and not afxdp else None),
                                 placement=(_vswitchd_place(b["host"])
                                            if b.get("datapath_type") == "netdev" and not afxdp else None))
                if afxdp:
                    afxdp_members.add(name)
            else:
                br = LinuxBridge(env, name, cpu, forward=profile.sampler("linux_bridge.forward",
                                                                         rng(f"{name}.forward")),
                                 port_forward=lambda port, name=name: profile.sampler(
                                     "linux_bridge.forward", rng(f"{name}.forward.{port}")))
            topo.bridges[name] = br
            members.append(br)
        for a, z in zip(members, members[1:]):
            _link(env, topo, a, z, b["link"], cpu, profile)
        chain_members[b["name"]] = members

    # switches
    for s in d.get("switch", []):
        topo.switches[s["name"]] = PhysicalSwitch(env, s["name"], latency=s.get("latency",
                                                                                profile.time("switch.latency")))

    # NICs: bridge uplink <-> NIC <-> switch port
    for n in d.get("nic", []):
        bname = d["_uplinks"][n["name"]]
        last = chain_members[bname][-1]
        nic = Nic(env, n["name"], n["rate"], qdisc=n.get("qdisc", {"kind": "pfifo_fast"}),
                  rx_delay=profile.sampler("nic.rx_delay", rng(f"{n['name']}.rx")),
                  prop_delay=n["prop_delay"], mtu=n["mtu"], txqueuelen=n.get("txqueuelen", 1000),
                  features=n.get("features"), cpu=topo.hosts[n["host"]],
                  cpu_per_poll=profile.time("nic.cpu_per_poll"),
                  cpu_per_packet=profile.time("nic.cpu_per_packet"),
                  cpu_per_byte=profile.time("nic.cpu_per_byte"),
                  gso_per_segment=profile.time("gso.cpu_per_segment"),
                  gso_per_byte=profile.time("gso.cpu_per_byte"), rx_frames=n.get("rx_frames", 0))
        up = last.add_port(n["name"], nic.xmit, vlan=n.get("vlan"), trunks=n.get("trunks"))
        nic.rx.out = up
        _qdisc_cost(nic.tx, topo.hosts[n["host"]], profile, rng)
        topo.nics[n["name"]] = nic
        topo.ports[f"{last.name}:{n['name']}"] = nic.tx
        sw_name = n.get("switch")
        if sw_name is not None:
            sw = topo.switches[sw_name]
            buf = next((s.get("buffer") for s in d.get("switch", []) if s["name"] == sw_name), None)
            sw_port = sw.add_link(f"to-{n['name']}", n["rate"], nic.rx,
                                  buffer_bytes=int(buf or profile.size("switch.buffer")),
                                  prop_delay=n["prop_delay"])
            nic.tx.out = sw_port
        else:
            nic.tx.out = _Blackhole()

    # VMs: endpoint <-> VIF <-> bridge port
    for v in d.get("vm", []):
        host_cpu = topo.hosts[v["host"]]
        kind = v["vif"]
        if kind in ("container-veth", "bare-metal"):
            guest = host_cpu              # shares the host's kernel: its work runs where its threads run
        elif v.get("vcpus_on_host"):
            guest = GuestCpus(env, v["vcpus"], f"{v['name']}.vcpu", host_cpu, pin=v.get("vcpu_pin"))
        else:
            guest = CpuPool(env, v["vcpus"], f"{v['name']}.vcpu", backlog_limit=backlog)
        topo.guest_cpus[v["name"]] = guest
        features = resolve(kind, v.get("features"))
        ep = Endpoint(env, v["name"], cpu=guest, vlan=v.get("vlan"), mtu=v["mtu"],
                      inline_tx=kind in INLINE_KINDS,      # run to completion: no backend thread
                      features=features, tsq=kind not in INLINE_KINDS or not v.get("veth_orphans", True))
        ep.vif_kind = kind
        ep.icmp_echo = profile.time("host.icmp_echo")
        if v.get("kernel"):
            ep.kernel = tuple(int(x) for x in v["kernel"].split(".")[:2])
        if v.get("sysctl"):
            # the guest kernel's net.ipv4.tcp_* (default cc, tcp_rmem/tcp_wmem): ovssim/tcp/buffers.py
            try:
                ep.tcp_sysctls = TcpSysctls.from_mapping(v["sysctl"])
            except ConfigError as e:
                raise ConfigError(e.problem, file=sc.file, key=f"vm.{v['name']}.{e.key}", fix=e.fix) from None
        br = topo.bridges[v["bridge"]]
        vd = f"vif.{kind}"
        tx = VifBackend(env, kind, host_cpu,
                        delay=profile.sampler(f"{vd}.backend_delay", rng(f"{v['name']}.vif.tx")),
                        cpu_per_packet=profile.time(f"{vd}.cpu_per_packet"),
                        cpu_per_byte=profile.time(f"{vd}.cpu_per_byte"), lookahead=True, direction="tx",
                        name=v["name"], frees_skb=v.get("veth_orphans", True) or kind not in INLINE_KINDS)
        rx = VifBackend(env, kind, host_cpu,
                        delay=profile.sampler(f"{vd}.backend_delay", rng(f"{v['name']}.vif.rx")),
                        cpu_per_packet=profile.time(f"{vd}.cpu_per_packet"),
                        cpu_per_byte=profile.time(f"{vd}.cpu_per_byte"), lookahead=True, direction="rx",
                        name=v["name"])
        # the receive stack's CPU per packet (host.stack_cpu, 0 = none), on the endpoint's own CPU
        stack_cpu = profile.time("host.stack_cpu")
        into = ReceiveStack(env, guest, ep, cpu_per_packet=stack_cpu) if stack_cpu > 0.0 else ep
        stack = VifLatency(env, profile.sampler("host.stack_delay", rng(f"{v['name']}.stack")), into,
                           lookahead=True, stage="stack")
        rx.out = stack
        if isinstance(guest, GuestCpus):          # the guest takes the packet when its vCPU runs
            stack.out = VcpuWake(env, guest, into, key=lambda p: conn_key(p.flow), lookahead=True)
        if br.name in afxdp_members:
            _afxdp_vif(env, topo, sc, v, br, tx, rx, profile)
        else:
            port = EgressPort(env, None, v.get("qdisc", DEFAULT_VIF_QDISC), rx.latency, mtu=v["mtu"],
                              name=f"{v['name']}-vif", service=rx.service, lookahead=True)
            _qdisc_cost(port, host_cpu, profile, rng)
            tx.out = br.add_port(f"{v['name']}-vif", port, vlan=v.get("vlan"), trunks=v.get("trunks"))
            topo.ports[f"{br.name}:{v['name']}-vif"] = port
        # the guest interface's transmit: a GSO skb goes whole to a device with TSO, else it is
        # segmented in software on the guest's CPU (validate_xmit_skb -> skb_gso_segment)
        ep.out = tx if features["tso"] else SoftwareGso(
            env, guest, tx, checksum=features["tx-checksumming"],
            cpu_per_segment=profile.time("gso.cpu_per_segment"), cpu_per_byte=profile.time("gso.cpu_per_byte"))
        if v.get("egress_qdisc") is not None:
            # a qdisc on the guest's own interface (tc ... dev eth0 in the guest): its skbs are not yet
            # orphaned, so they stay charged to their socket (TCP Small Queues binds here)
            ep.out = EgressPort(env, None, v["egress_qdisc"], ep.out, mtu=v["mtu"], name=f"{v['name']}-eth0")
            ep.tsq = True
        topo.endpoints[v["name"]] = ep
        topo.vifs[v["name"]] = (tx, rx)
    for ep in topo.endpoints.values():
        call_at(env, 0.0, _announce, ep)
    return topo


def _afxdp_vif(env, topo, sc, v, br, tx, rx, profile) -> None:
    """The VIF as an OVS ``afxdp`` port: frames from the guest's veth land in the XSK rx ring (the XDP
    program's redirect, on the host's cores), the host's PMD polls it into the bridge; frames for the
    guest leave through the tx ring at the PMD's flush, straight to the device (generic-mode
    ``__xsk_generic_xmit`` -> ``__dev_direct_xmit``: no qdisc), then the veth's crossing (``rx``, on the
    PMD's core: the ``sendto`` kick runs it)."""
    if v.get("qdisc") is not None:
        raise ConfigError("an AF_XDP port's transmit bypasses the qdisc (generic mode: __dev_direct_xmit)",
                          file=sc.file, key=f"vm.{v['name']}.qdisc",
                          fix='drop the qdisc, or use port_type = "system" on its bridge')
    pmd = topo.pmds[v["host"]]
    xsk = AfxdpPort(env, f"{v['name']}-vif", ring_size=profile.int("ovs.afxdp.ring_size"), out=rx)
    pmd.add_rxq(xsk)
    # the kick's sendto() transmits on the veth in the PMD's own context (veth_xmit -> netif_rx onto
    # the PMD core's backlog): the crossing towards the guest is the PMD core's work
    rx.cpu = pmd
    xsk.ingress = br.add_port(xsk.name, xsk.txring, vlan=v.get("vlan"), trunks=v.get("trunks"))
    tx.out = xsk


# Every endpoint announces its MAC with a gratuitous ARP at time 0, as a guest
# does when its interface comes up and as the tools' control connections do
# before a test: bridges learn where each VM is, so measured traffic is unicast
# rather than flooded.  Workloads start after ARP_SETTLE.
ARP_SETTLE = 0.005
BROADCAST = "ff:ff:ff:ff:ff:ff"


def _announce(ep: Endpoint) -> None:
    pkt = Packet(FlowKey(ep.name, BROADCAST, 0, 0, "arp"), 60, ep.env.now, kind="garp",
                 src_mac=ep.name, dst_mac=BROADCAST)
    ep.send(pkt)


class _Blackhole:
    """Where a NIC with no switch sends: nowhere (counted)."""

    def __init__(self):
        self.count = 0

    def put(self, pkt) -> None:
        self.count += 1


def _background_share(host: dict) -> float | None:
    """The share of ``host``'s cores its scenario background load keeps busy (``background_threads``,
    each busy ``background_on`` in every ``background_period``), or None when it states none."""
    n = host.get("background_threads") or 0
    if not n:
        return None
    period, on = host.get("background_period"), host.get("background_on")
    duty = 1.0 if period is None else min(1.0, on / period)
    return min(1.0, n * duty / host["cores"])


def _qdisc_cost(port: EgressPort, cpu, profile, rng) -> None:
    """The port's qdisc costs ``qdisc.<kind>.cpu_per_packet`` of the host's CPU per skb (if > 0), and its
    watchdog latency ``qdisc.watchdog_latency`` (a constant, or a distribution drawn per watchdog), and how
    long the frames a watchdog run dequeues wait for the next hop (``qdisc.watchdog_handoff``, default off)."""
    late = profile.dist("qdisc.watchdog_latency")
    if late.const is not None:
        port.watchdog_latency = late.const
    else:
        port.watchdog_late = Sampler(late, rng(f"{port.name}.watchdog"))
    handoff = profile.dist("qdisc.watchdog_handoff")
    if handoff.const != 0.0:
        port.watchdog_handoff = Sampler(handoff, rng(f"{port.name}.handoff")).next
    key = f"qdisc.{port.qdisc.kind}.cpu_per_packet"
    cost = profile.time(key) if key in profile.params else 0.0
    if cost > 0.0:
        port.cpu = cpu
        port.qdisc_cost = cost
        port.put = port._put_costed


def veth_cost_key(profile: Profile, cost: str) -> str:
    """The profile key that prices ``cost`` (``cpu_per_packet`` or ``cpu_per_byte``) of a veth pair between
    two bridges.

    Its crossing is the same driver path as a namespace's veth (``container-veth``): ``veth_xmit`` ->
    ``veth_forward_skb`` -> ``__dev_forward_skb`` (``skb_scrub_packet``) -> ``__netif_rx`` ->
    ``enqueue_to_backlog`` onto the sending CPU's backlog, then ``process_backlog`` ->
    ``__netif_receive_skb`` into the peer's rx_handler (``br_handle_frame`` of the next Linux bridge,
    ``packet_rcv`` of OVS's AF_PACKET socket) -- drivers/net/veth.c, net/core/dev.c.  A namespace crossing
    only adds ``skb_scrub_packet``'s few stores.  So where a profile prices the container's veth
    (fitted, e.g. calibration/local_netns_host.toml) and not the link's own ``veth.*``, the link costs what
    the container's veth costs, not the embedded default's order of magnitude (2 us per skb against 0.24 us
    fitted on this machine: a 2-bridge Linux-bridge chain then lost 41 % of its TCP throughput where it
    loses 24 %).  ``veth.*`` stated by the profile or a scenario wins; with neither stated, the default's
    ``veth.*``."""
    own, same = f"veth.{cost}", f"vif.container-veth.{cost}"
    explicit = profile.explicit()
    return same if own not in explicit and same in explicit else own


def _link(env, topo, a, z, kind, cpu, profile) -> None:
    if kind == "patch":
        tr = profile.time("patch.translate")
        cost = profile.time("patch.cpu_per_packet")
        pa = a.add_port(f"patch-{z.name}", PatchPort(env, translate=tr, cpu=cpu, cpu_per_packet=cost,
                                                     key=getattr(a, "thread_key", None)))
        pz = z.add_port(f"patch-{a.name}", PatchPort(env, translate=tr, cpu=cpu, cpu_per_packet=cost,
                                                     key=getattr(z, "thread_key", None)))
        pa.egress.out, pz.egress.out = pz, pa
        return
    per_pkt, per_byte = (profile.time(veth_cost_key(profile, c)) for c in ("cpu_per_packet", "cpu_per_byte"))
    va = VethLink(env, cpu, cpu_per_packet=per_pkt, cpu_per_byte=per_byte)
    vz = VethLink(env, cpu, cpu_per_packet=per_pkt, cpu_per_byte=per_byte)
    ea = EgressPort(env, None, {"kind": "pfifo"}, va, name=f"veth-{a.name}-{z.name}", lookahead=True)
    ez = EgressPort(env, None, {"kind": "pfifo"}, vz, name=f"veth-{z.name}-{a.name}", lookahead=True)
    pa = a.add_port(f"veth-{z.name}", ea)
    pz = z.add_port(f"veth-{a.name}", ez)
    pa.link = pz.link = True
    va.out, vz.out = pz, pa
    topo.ports[f"{a.name}:veth-{z.name}"] = ea
    topo.ports[f"{z.name}:veth-{a.name}"] = ez
