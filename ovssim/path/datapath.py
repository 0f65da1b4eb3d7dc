"""The Open vSwitch datapath: flow cache fast path and upcall slow path.

Per packet, the kernel datapath (``ovs_dp_process_packet``, datapath.c) does
what seed 001 measured as four steps: read the datapath's per-CPU stats, look
the flow up in the flow table, on a miss send an *upcall* to ovs-vswitchd,
then update the flow's stats and apply its actions.  Seed 001 found the stats
step the largest, then the lookup; each is a profile distribution here, and
together they are CPU work on the host's cores (softirq context).

Flow cache (megaflow semantics): one entry serves every packet of a megaflow,
installed when its upcall completes.  Its key holds only the fields the slow
path looked at (ofproto-dpif-xlate.c un-wildcards what the translation and the
classifier examined): for the NORMAL action the ingress port, the Ethernet
addresses and the VLAN (``xlate_normal``; ``ovs-dpctl dump-flows`` shows
``in_port(..),eth(src=..,dst=..),eth_type(0x0800),ipv4(frag=no)``, ports
wildcarded), plus every field an OpenFlow rule (:class:`QueueRule`) matches on
-- so a new TCP connection between two known hosts takes no upcall unless a rule
matches its ports.  An
entry idle longer than ``max_idle`` (``other_config:max-idle``, 10 s) is gone
-- the revalidators delete it -- and at ``flow_limit`` entries
(``other_config:flow-limit``, 200000) the least recently used is evicted.
Lookup cost grows with the number of masks (tuple-space search visits one
subtable per mask), not with the number of rules: seed 001 saw 2000 extra
rules barely change the lookup delay.

Miss: the packet waits in a bounded upcall queue (overflow counted as
``lost``, as ``ovs-dpctl show`` reports it) for one of ``handlers`` threads,
which runs the slow path (classifier lookup, MAC learning, flow setup); the
flow is installed and the packet executed.  A handler with nothing to do
sleeps in ``poll()`` on its netlink socket (ofproto/ofproto-dpif-upcall.c
``udpif_upcall_handler``: ``recv_upcalls`` found nothing -> ``dpif_recv_wait``,
``poll_block``); an upcall that finds every handler asleep first waits
``upcall_wakeup`` (profile ``ovs.upcall_wakeup``, default 0) for one to be
scheduled, while upcalls arriving during a burst find it awake and reading
its batch (``UPCALL_MAX_BATCH`` = 64 per ``recv_upcalls``).  Packets of the same flow that
arrive before the install also miss, as in OVS.

Delivery (``deliver_share``, profile ``ovs.deliver_share``, default 0; the ``netdev``
datapath only): ovs-vswitchd sends each frame with ``sendto()`` on the output port's AF_PACKET
socket (``netdev_linux_send``, lib/netdev-linux.c), so into a namespace's veth the receiving stack's
softirq work -- ``veth_xmit``, ``netif_rx``, IP/TCP receive and the ACK it sends -- runs on the
thread's core inside the pass, while into a veth that links two bridges it only queues the frame on
the next bridge's AF_PACKET socket (``packet_rcv``).  A fast-path pass whose output port is such a
link pays ``1 - deliver_share`` of the pass cost; a chain of k veth-linked bridges costs
``k - (k - 1) * deliver_share`` passes per frame, not k.  Such a frame arrives on the next bridge's
socket inside the sending pass and waits for the rest of ovs-vswitchd's main-loop run (``loop``, a
:class:`~ovssim.path.vswitchd_loop.VswitchdLoop` shared by the host's netdev bridges, profile
``ovs.bridge_run`` per bridge), as does any frame that reaches the thread in that time.

``latency`` (profile ``ovs.latency``, default 0) is per-packet delay that is
not CPU work -- the userspace ``netdev`` datapath's polling and wake-ups --
added after the fast or slow path, in order.

Wake-up after idling (``idle_stall_prob``, ``idle_stall``, ``idle_after``,
``idle_wake``, ``busy_share``; profile ``ovs.idle_stall_prob`` etc., default
off): the ``netdev`` datapath's non-PMD thread sleeps in ``poll()`` when it
has nothing to do (``dpif_netdev_wait`` arms its ports' fds, ``poll_block``
in lib/poll-loop.c).  A packet that finds it idle for longer than
``idle_after`` wakes it, and what the wake-up costs depends on the state of
the host, through ``busy_share`` (the share of the cores busy with other
work, profile ``[state] cpu_busy``): with probability ``busy_share`` its core
runs another task and, with probability ``idle_stall_prob`` of those, the
thread waits one ``idle_stall`` (the next scheduler tick); otherwise the core
is idle and the thread pays ``idle_wake``, the idle core's own wake-up (a
halted vCPU is woken through the host).  Packets arriving meanwhile wait for
the same wake-up.  All OVS bridges of a host share the one thread (and so its
idle state): a chain of bridges wakes it at most once per idle period.
Measured on this machine: busy (cpu_busy 1.0, data/local/local-bridges),
18-28 % of pings sent every 10 ms through OVS took one extra timer tick
(3.92-3.94 ms; CONFIG_HZ=250); quiet (cpu_busy 0.02, data/local/2026-11-24)
0-0.2 %, but every ping took ~0.1 ms longer than qperf's tcp_lat round trip.

OpenFlow rules with ``set_queue:N`` (``rules``: a list of :class:`QueueRule`)
are resolved by the slow path and cached with the flow: every packet of the
flow leaves with ``queue_id = N``, which the port's linux-htb / linux-hfsc QoS
maps to tc class ``1:(N+1)`` (lib/netdev-linux.c); unmatched packets use the
QoS's default queue 0.

AF_PACKET socket buffers (``sndbuf``, ``rcvbuf``; profile ``ovs.tx_sndbuf``,
``ovs.rx_rcvbuf``; 0 = not modelled, the kernel datapath's default): the
userspace ``netdev`` datapath sends every packet through one shared AF_PACKET
socket, whose skbs stay charged until each egress qdisc hands them to its
device; when the send buffer is full the send fails (EAGAIN) and the packet is
dropped, counted as ``tx_dropped``.  Each port's AF_PACKET receive socket holds
frames until the datapath thread reads them (the start of its CPU work here);
a full one drops arriving frames, counted per port as ``rx_dropped``.  See
:mod:`ovssim.path.afpacket`.  Receive accounting needs each port's frames to
reach :meth:`OvsDatapath.process` in time order, as a VIF, a veth or a NIC
delivers them.  Each :class:`OvsDatapath` has its own send socket; in OVS all
bridges of one ovs-vswitchd share it (a chain of bridges joined by veth pairs
would share one buffer there).

Where the fast path runs (``datapath_type``, the Bridge column of that name):
``"system"`` (the kernel datapath, default) processes a packet in the softirq
of whoever delivered it, on the core of the packet's flow -- for a container's
sender, its own core (run to completion, :mod:`ovssim.path.endpoint`);
``"netdev"`` (the userspace datapath without DPDK) processes every packet in
ovs-vswitchd's one polling thread (``thread_key``: the home core of that thread,
shared by every netdev bridge of the host), so a sender hands its packets over
and goes on, and the thread's backlog is where they wait.  The thread is not pinned: woken from
``poll()`` while its core is busy -- the sending task whose ``sendto()`` queued the frame still
running there -- it runs on an idle core (``placement``, :mod:`ovssim.cpu.wake`; a host that
schedules threads: :meth:`~ovssim.cpu.pool.CpuPool.run`'s wake-up balancing).

Counters: ``hit``, ``missed``, ``lost``, ``flows`` -- ``ovs-dpctl show``'s --
and, with socket buffers, ``tx_dropped`` and ``rx_dropped`` (total and per port).
"""
from __future__ import annotations

from collections import OrderedDict

from ..distributions import Sampler, SumSampler
from ..packet import VLAN_TAG
from .afpacket import AfPacketSockets, truesize
from .bridge import Bridge
from .cpu import CpuPool, conn_key

_INF = float("inf")

class QueueRule:
    """An OpenFlow rule ``match -> set_queue:N,NORMAL``; match fields: src, dst, sport, dport, proto, tos."""

    FIELDS = ("src", "dst", "sport", "dport", "proto", "tos")

    def __init__(self, match: dict, queue: int):
        unknown = set(match) - set(self.FIELDS)
        if unknown:
            raise ValueError(f"unknown match field(s) {sorted(unknown)}; use {', '.join(self.FIELDS)}")
        if not isinstance(queue, int) or isinstance(queue, bool) or queue < 0:
            raise ValueError(f"set_queue needs a queue number >= 0, got {queue!r}")
        self.match = dict(match)
        self.queue = queue

    def matches(self, pkt) -> bool:
        f = pkt.flow
        for k, v in self.match.items():
            got = pkt.tos if k == "tos" else getattr(f, k)
            if got != v:
                return False
        return True


MAX_IDLE = 10.0          # ofproto: OFPROTO_MAX_IDLE_DEFAULT = 10000 ms
FLOW_LIMIT = 200_000     # ofproto: OFPROTO_FLOW_LIMIT_DEFAULT
UPCALL_QUEUE = 1000      # per-handler netlink socket backlog, order of magnitude


class OvsDatapath(Bridge):
    """An OVS bridge with the NORMAL action, its datapath and ovs-vswitchd's handlers.

    Samplers (``stats``, ``lookup``, ``actions``, ``upcall``) return seconds;
    ``cpu`` is the host's :class:`CpuPool`.  ``handlers`` is the number of
    handler threads (OVS: cores - revalidators, at least 1).  ``sndbuf`` /
    ``rcvbuf``: AF_PACKET socket buffer sizes in bytes (0: not modelled).
    """

    stage = "ovs"

    def __init__(self, env, name: str, cpu: CpuPool, *, stats: Sampler, lookup: Sampler,
                 actions: Sampler, upcall: Sampler, lookup_per_mask: float = 0.0, masks: int = 1,
                 handlers: int = 1, upcall_queue: int = UPCALL_QUEUE, max_idle: float = MAX_IDLE,
                 flow_limit: int = FLOW_LIMIT, rules: list | None = None, latency: Sampler | None = None,
                 lookahead: bool = True, sndbuf: int = 0, rcvbuf: int = 0,
                 idle_stall_prob: float = 0.0, idle_stall: float = 0.004, idle_after: float = 0.004,
                 stall_rng=None, stall_state: list | None = None, thread_key: int | None = None,
                 idle_wake: float = 0.0, busy_share: float = 1.0, upcall_wakeup: Sampler | None = None,
                 thread=None, deliver_share: float = 0.0, loop=None, placement=None, port_hits=None):
        super().__init__(env, name, lookahead=lookahead)
        # None: the kernel datapath (each flow's work on its own core); else the core key of the
        # userspace datapath's thread, which does the work of every flow
        self.thread_key = thread_key
        # netdev, a host that does not schedule threads: where that thread wakes up (ovssim.cpu.wake,
        # shared by the host's netdev bridges), or None (it runs on thread_key's core)
        self._place = placement if thread_key is not None and thread is None else None
        # that thread as a schedulable ovssim.cpu.Thread (a host that schedules threads), on core thread_key % cores
        self.thread = thread
        if not 0.0 <= deliver_share < 1.0:
            raise ValueError(f"{name}: deliver_share must be in [0, 1), got {deliver_share!r}")
        # netdev: what a fast-path pass costs when its output is a veth link to another bridge -- the pass
        # without its delivery into a receiving stack (``deliver_share``); the kernel datapath: all of it
        self._link_keep = 1.0 - deliver_share if thread_key is not None else 1.0
        # netdev: the main-loop run of ovs-vswitchd's thread around its passes (VswitchdLoop), or None
        # (the kernel datapath runs in softirq; a loop whose bridges cost nothing changes nothing)
        self.loop = loop if thread_key is not None and loop is not None and loop.bridge_run > 0.0 else None
        if handlers < 1 or upcall_queue < 1 or flow_limit < 1 or masks < 1:
            raise ValueError(f"{name}: handlers, upcall_queue, flow_limit and masks must be >= 1")
        self.cpu = cpu
        # the slow path's samplers, one attribute: an instance with 30 or more attributes
        # loses CPython's fast attribute access, and this object is on every packet's path
        self._slow_s = (stats, lookup, actions, upcall)
        self._hit_it = SumSampler(stats, lookup, actions).it    # stats + lookup + actions per hit
        # ``port_hits(port name)``: the per-hit draws of the frames that enter by that port, a stream of
        # their own (:meth:`add_port`); None: every port draws from the one stream above
        self._port_hits = port_hits
        # (lookup_per_mask, masks, their product: the per-packet mask cost), one attribute
        self._masks = (lookup_per_mask, masks, lookup_per_mask * masks)
        self.max_idle = max_idle
        self.flow_limit = flow_limit
        self.handlers = CpuPool(env, handlers, f"{name}.handlers", backlog_limit=upcall_queue)
        self.upcall_wakeup_s = (upcall_wakeup if upcall_wakeup is not None and upcall_wakeup.const != 0.0
                                else None)
        self.rules = list(rules or [])
        # the flow fields the megaflows un-wildcard beyond L2: those the rules match on
        self._match_fields = tuple(sorted({k for r in self.rules for k in r.match} - {"src", "dst", "tos"}))
        self._match_tos = any("tos" in r.match for r in self.rules)
        self.latency_s = latency if latency is not None and latency.const != 0.0 else None
        self._last_out = 0.0
        # [busy * prob, stall, idle_after, uniform draws, last wake-up, asleep until, busy, idle_wake], or
        # None (off); one
        # attribute, as above.  ``stall_state`` (from :func:`idle_stall_state`) shares one thread's
        # state among datapaths: every OVS bridge of a host runs in the same ovs-vswitchd thread.
        self._stall = stall_state if stall_state is not None else idle_stall_state(
            idle_stall_prob, idle_stall, idle_after, stall_rng, name, idle_wake=idle_wake, busy_share=busy_share)
        # key -> [installed_at, last_used, queue, core key (self._core_key(flow))]
        self.cache: OrderedDict = OrderedDict()
        # each ingress port's ``memo``: (flow, vlan, tos, key, entry, core) of its last hit, so the next
        # packet of the same flow object on that port skips hashing its key -- a port usually carries one
        # flow a direction (a connection's data in on one port, its ACKs on another); cleared on every port
        # whenever an entry leaves the cache (:meth:`_forget`)
        self._mru = None       # the cache's last (most recently used) entry, or None if unknown
        self.hit = 0
        self.missed = 0
        self.lost = 0
        self.cpu_drops = 0
        self.evicted = 0
        self.expired = 0
        # the netdev datapath's AF_PACKET sockets, or None (kernel datapath: not modelled)
        self.afp = AfPacketSockets(sndbuf, rcvbuf, name) if sndbuf or rcvbuf else None

    lookup_per_mask = property(lambda self: self._masks[0],
                               lambda self, v: setattr(self, "_masks", (v, self._masks[1], v * self._masks[1])))
    masks = property(lambda self: self._masks[1],
                     lambda self, v: setattr(self, "_masks", (self._masks[0], v, self._masks[0] * v)))

    def add_port(self, name: str, egress=None, *, vlan: int | None = None, trunks=None):
        port = super().add_port(name, egress, vlan=vlan, trunks=trunks)
        # a fast-path pass's cost, drawn per ingress port: the draw a frame takes depends only on the
        # frames before it on its own port -- its direction of its connection -- not on how the other
        # direction's passes interleave with it in call order (lookahead elements call ahead of time)
        port.hits = self._hit_it if self._port_hits is None else self._port_hits(name)
        if self.afp is not None:
            self.afp.add_port(name, egress)
        return port

    def _megaflow(self, port, pkt, vlan) -> tuple:
        """The cache key: ingress port, Ethernet addresses, VLAN and the fields the rules match."""
        f = pkt.flow
        key = (port.no, f.src, f.dst, vlan, *[getattr(f, k) for k in self._match_fields])
        return key + (pkt.tos,) if self._match_tos else key

    stats_s = property(lambda self: self._slow_s[0])
    lookup_s = property(lambda self: self._slow_s[1])
    actions_s = property(lambda self: self._slow_s[2])
    upcall_s = property(lambda self: self._slow_s[3])

    # -- the fast path -------------------------------------------------------------
    def process(self, port, pkt, vlan, t: float) -> None:
        place = self._place
        if self.thread_key is not None:
            # netdev: the frame waits on the port's AF_PACKET socket for ovs-vswitchd's thread; a sending
            # task's softirq pass ends at packet_rcv (net/packet/af_packet.c): close its context
            cpu = self.cpu
            ctx = cpu.tx_ctx
            cpu.tx_ctx = None
            if place is not None:
                # the thread's core for this frame (its wake-up, if asleep); the sender whose sendto() is
                # carrying the frame (IperfUdp._carry) runs on its flow's core, and goes on running
                place.place(t, None if ctx is None else ctx[0] % cpu.cores)
        afp = self.afp
        if afp is not None and not self._rx_read(afp, port, pkt, t):
            return
        if self._stall is not None:
            t = self._woken(t)
        loop = self.loop
        if loop is not None:
            t = loop.read_at(t)
        mask_cost = self._masks[2]
        flow = pkt.flow
        m = port.memo
        if m is not None and m[0] is flow and m[1] == vlan and (not self._match_tos or m[2] == pkt.tos):
            key, entry, core = m[3], m[4], m[5]
        else:
            key = self._megaflow(port, pkt, vlan)
            entry = self.cache.get(key)
            core = None
            if entry is not None:
                # the packet's own core (a megaflow serves many connections, each on its core)
                core = self._core_key(flow)
                port.memo = (flow, vlan, pkt.tos, key, entry, core)
        if place is not None:
            core = place.core                        # the datapath thread's, wherever it woke
        if entry is not None and t - entry[1] > self.max_idle:
            del self.cache[key]                      # revalidator removed the idle flow
            self._forget()
            self.expired += 1
            entry = None
        if entry is not None and entry[0] <= t:
            self.hit += 1
            entry[1] = t
            if entry is not self._mru:               # LRU order: a hit makes the entry last
                self.cache.move_to_end(key)
                self._mru = entry
            if entry[2] is not None:
                pkt.queue_id = entry[2]
            cost = next(port.hits)
            dst = None                               # the destination's FDB entry, when looked up for the cost
            if self._link_keep != 1.0:
                dst = self.fdb.get((vlan, pkt.dst_mac))
                if dst is not None and dst[0].link:  # sendto() into the next bridge's AF_PACKET socket
                    cost *= self._link_keep
            done = (self.cpu.serve(t, cost + mask_cost, core) if self.thread is None else
                    self.cpu.run(self.thread, t, cost + mask_cost))
            if done is None:
                self.cpu_drops += 1
                if afp is not None:
                    self._rx_unread(afp, port, pkt, t)
                return
            if place is not None:                    # busy to the pass's end and the rest of its run
                place.ran(done if loop is None else done + loop.rest)
            if self.latency_s is not None:
                done = self._after_latency(done)
            if loop is not None:                     # sent (the output batch flushed): the run goes on
                loop.passed(done)
            # Bridge.deliver, inlined for a unicast frame to a known, live destination
            fdb = self.fdb
            fdb[(vlan, pkt.src_mac)] = (port, done)          # learn
            # the destination's entry: the one found for the cost, unless learning replaced it
            e = dst if dst is not None and pkt.src_mac != pkt.dst_mac else fdb.get((vlan, pkt.dst_mac))
            self.forwarded += 1
            if e is None or done - e[1] > self.mac_aging:
                self._flood(port, pkt, vlan, done)
                return
            out = e[0]
            if out is port:
                return
            ov = out.vlan
            if ov is not None:                       # access: leaves untagged (Bridge._emit)
                if vlan != ov:
                    return
                if pkt.vlan is not None:
                    pkt.size -= VLAN_TAG * pkt.gso_segs
                pkt.vlan = None
            else:                                    # trunk: keeps / gains the tag
                if out.trunks is not None and vlan not in out.trunks:
                    return
                if vlan is not None and pkt.vlan is None:
                    pkt.size += VLAN_TAG * pkt.gso_segs
                pkt.vlan = vlan
            pkt.t = done
            out.tx += 1
            out.egress.put(pkt)
            return
        # -- miss: upcall to ovs-vswitchd -------------------------------------------
        self.missed += 1
        fkey = self._core_key(pkt.flow)
        t_miss = (self.cpu.serve(t, self.stats_s.next() + self.lookup_s.next() + mask_cost, fkey)
                  if self.thread is None else
                  self.cpu.run(self.thread, t, self.stats_s.next() + self.lookup_s.next() + mask_cost))
        if t_miss is None:
            self.cpu_drops += 1
            if afp is not None:
                self._rx_unread(afp, port, pkt, t)
            return
        if place is not None:
            place.ran(t_miss if loop is None else t_miss + loop.rest)
        if loop is not None:
            loop.passed(t_miss)
        wake = self.upcall_wakeup_s
        ready = t_miss
        if wake is not None and min(self.handlers.free) <= t_miss:   # every handler asleep in poll()
            ready += wake.next()              # upcalls arriving meanwhile queue behind this one
        done = self.handlers.serve(ready, self.upcall_s.next(), arrival=t_miss)
        if done is None:
            self.lost += 1
            return
        queue = next((r.queue for r in self.rules if r.matches(pkt)), None)
        if queue is not None:
            pkt.queue_id = queue
        if entry is None:
            if len(self.cache) >= self.flow_limit:
                self.cache.popitem(last=False)
                self._forget()
                self.evicted += 1
            self.cache[key] = entry = [done, done, queue, fkey]
            self._mru = entry
        self.deliver(port, pkt, vlan, self._after_latency(done + self.actions_s.next()))

    def _forget(self) -> None:
        """An entry left the cache: no port's memo or the MRU mark may still hold it."""
        for p in self.ports:
            p.memo = None
        self._mru = None

    # -- AF_PACKET receive sockets ----------------------------------------------------
    def _rx_read(self, afp, port, pkt, t: float) -> bool:
        """Queue the frame on ``port``'s receive socket at ``t`` (False: full, dropped).

        It stays charged until the datapath thread reads it, when its CPU work starts:
        the core :meth:`CpuPool.serve` will pick for this flow is free at ``max(t, free)``
        (the same key as the cache entry's, :meth:`_core_key`), known now -- a timed
        release, no event."""
        rx = afp.rx[port.no]
        if rx is None:
            return True
        ts = truesize(pkt.size)
        if not rx.charge(t, ts):
            return False
        cpu = self.cpu
        free = cpu.free[cpu.core_of(self._core_key(pkt.flow))]
        if free > t:
            rx.release_at(free, ts)
        else:
            rx.release(ts)
        return True

    def _rx_unread(self, afp, port, pkt, t: float) -> None:
        """The CPU refused the frame at ``t``: its charge ends at ``t``, not at the read
        :meth:`_rx_read` booked (cancelled by an opposite entry at the same time)."""
        rx = afp.rx[port.no]
        if rx is None:
            return
        ts = truesize(pkt.size)
        cpu = self.cpu
        free = cpu.free[cpu.core_of(self._core_key(pkt.flow))]   # unchanged by the refused call
        if free > t:
            rx.release(ts)
            rx.release_at(free, -ts)

    def _core_key(self, flow) -> int:
        """The core key of this flow's datapath work: its own (kernel) or the datapath thread's (the core it
        runs on now where it wakes up on an idle one, :mod:`ovssim.cpu.wake`; a scheduled thread's core)."""
        if self.thread_key is None:
            return conn_key(flow)
        if self._place is not None:
            return self._place.core
        return self.thread_key if self.thread is None else self.thread.core

    def _woken(self, t: float) -> float:
        """When the datapath thread starts on a packet that reached it at ``t`` (wake-up after idling)."""
        st = self._stall
        if t < st[5]:                                # asleep, its wake-up already late: wait for it
            return st[5]
        if t - st[4] > st[2]:
            u = next(st[3])                          # one draw: [0, busy*prob) stall, [busy, 1) idle core
            if u < st[0]:
                st[5] = t = t + st[1]
            elif u >= st[6] and st[7]:
                st[5] = t = t + st[7]
        st[4] = t
        return t

    def _after_latency(self, t: float) -> float:
        """Add the datapath's per-packet latency that is not CPU work, keeping packets in order.

        Zero by default (the kernel datapath runs to completion in softirq).  The userspace
        ``netdev`` datapath's non-PMD thread wakes up and polls in batches: latency the
        packet waits without using a core (validation/report.md, this machine's testbed).
        """
        if self.latency_s is None:
            return t
        t += self.latency_s.next()
        if t < self._last_out:
            t = self._last_out
        self._last_out = t
        return t

    # -- views -------------------------------------------------------------------
    def flows(self, t: float | None = None) -> int:
        """Datapath flows alive at ``t`` (installed and not idle past ``max_idle``)."""
        t = self.env.now if t is None else t
        return sum(1 for inst, used, _q, _k in self.cache.values() if inst <= t and t - used <= self.max_idle)

    def counters(self) -> dict:
        c = super().counters()
        c.update(hit=self.hit, missed=self.missed, lost=self.lost, flows=self.flows(),
                 cpu_drops=self.cpu_drops, evicted=self.evicted)
        afp = self.afp
        if afp is not None:
            c["tx_dropped"] = afp.tx.drops if afp.tx is not None else 0
            c["rx_dropped"] = sum(rx.drops for rx in afp.rx if rx is not None)
            for p, rx in zip(self.ports, afp.rx):
                if rx is not None:
                    c[f"rx_dropped.{p.name}"] = rx.drops
        return c

    def dpctl_show(self) -> str:
        return (f"system@{self.name}:\n  lookups: hit:{self.hit} missed:{self.missed} lost:{self.lost}\n"
                f"  flows: {self.flows()}")


def idle_stall_state(prob: float, stall: float, idle_after: float, rng, name: str = "ovs", *,
                     idle_wake: float = 0.0, busy_share: float = 1.0) -> list | None:
    """The wake-up-after-idling state of one datapath thread (None when neither a stall nor an idle
    wake-up can happen: ``prob``, ``stall`` or ``busy_share`` 0, and ``idle_wake`` 0 or ``busy_share`` 1).

    Pass the same state to every :class:`OvsDatapath` the thread serves (``stall_state``).
    """
    if not 0.0 <= prob <= 1.0 or not 0.0 <= busy_share <= 1.0 or stall < 0 or idle_after < 0 or idle_wake < 0:
        raise ValueError(f"{name}: idle_stall_prob and busy_share must be in [0, 1], idle_stall, idle_after "
                         "and idle_wake >= 0")
    stalls = prob * busy_share > 0.0 and stall > 0.0
    wakes = idle_wake > 0.0 and busy_share < 1.0
    if not (stalls or wakes):
        return None
    if rng is None:
        raise ValueError(f"{name}: an idle stall needs a random generator (stall_rng)")
    return [prob * busy_share if stalls else 0.0, stall, idle_after, _uniforms(rng), -_INF, -_INF, busy_share,
            idle_wake]


def _uniforms(rng):
    """Uniform [0, 1) draws from ``rng`` in batches (one C-level step per draw)."""
    while True:
        yield from rng.random(4096).tolist()
