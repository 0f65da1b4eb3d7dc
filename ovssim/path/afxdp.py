"""OVS AF_XDP ports on the userspace (netdev) datapath, and the PMD thread that polls them.

What it models (lib/netdev-afxdp.c, lib/dpif-netdev.c ``pmd_thread_main``,
``dp_netdev_process_rxq_port``; lib/dpif-netdev-perf.c):

* :class:`AfxdpPort` -- an ``afxdp`` port: its AF_XDP socket's rx ring (``ring_size``
  descriptors, XSK_RING_CONS__DEFAULT_NUM_DESCS = 2048) that the kernel's XDP program
  fills as frames arrive (a full ring drops: ``rx_dropped``) and its tx ring (2048) that
  the PMD fills and the kernel drains on each ``sendto`` kick.
* :class:`PmdThread` -- one PMD thread pinned to a core of its own, busy-polling its rx
  queues round robin for ever: each visit takes up to ``batch`` (NETDEV_MAX_BURST = 32)
  frames, runs the datapath on them (``per_batch`` + ``per_packet`` seconds: receive,
  miniflow extract, EMC/dpcls lookup, actions) and hands them to their egress port's tx
  ring, then flushes.  A visit that finds nothing costs ``empty_poll``.  The core is never
  released: the host sees it 100 % busy whatever the load (``utilisation``), as ``top``
  shows a PMD core.
* Cycle accounting as ``ovs-appctl dpif-netdev/pmd-perf-show`` reports it: iterations,
  busy and idle iterations and their TSC cycles (``tsc_hz``), rx packets, rx batches and
  packets per batch, tx packets and batches.  Idle stretches are accounted analytically
  (the number of empty iterations that fit) rather than simulated one by one.

In a topology (``[[bridge]] port_type = "afxdp"``, :mod:`ovssim.topology`) the PMD also
runs the bridges' datapath, the way ``dp_netdev_process_rxq_port`` runs ``dp_netdev_input``
in the PMD thread: each polled port has an ``ingress`` (its bridge port); ``per_packet`` is
a frame's whole dpif-netdev pass (the topology charges no ``ovs.stats/lookup/actions``
there), and what the datapath does beyond it (patch crossings, waiting for an upcall, the tx
kick's veth crossing) is charged to the PMD core through :meth:`PmdThread.serve`.  Frames
for an AF_XDP port go to its :class:`TxRing` and leave at the end of the batch
(``dp_netdev_pmd_flush_output_packets``, one ``sendto`` kick per port); in generic (skb)
mode the kernel's ``__xsk_generic_xmit`` hands them to the device with
``__dev_direct_xmit``: no qdisc.

Patch ports between the bridges add nothing to a frame's pass: they are not datapath ports
(ofproto/ofproto-dpif.c ``port_construct`` gives a patch port no odp port, ``dpif/show`` lists
``pt0a 2/none``) and ``patch_port_output`` (ofproto/ofproto-dpif-xlate.c) translates the peer
bridge's actions into the same datapath flow, so a chain of bridges is one megaflow,
``in_port(vif1) ... actions:vif2``, one EMC hit per frame (measured: EMC hits = packets, no
recirculation, 2 datapath flows for 1, 2 and 4 bridges).

Core sharing (:class:`~ovssim.path.core_turns.CoreTurns`, ``turns``): a PMD pinned to a core that
other CPU-bound threads share (the PMDs of other OVS instances: each puts its PMD on the same core
when no pmd-cpu-mask is set) holds it in turns of whole scheduler ticks; frames that arrive while
it is off wait in the rings for its next turn, and work it is doing when its turn ends resumes at
the next.  OVS counts a busy iteration's TSC cycles across such a wait, and so does
:class:`PmdPerf` here.

Costs are parameters (profile keys ``ovs.afxdp.*``).  Not modelled: the fill/completion
rings' recycling of UMEM frames, need_wakeup, several PMDs sharing a queue, the
EMC/SMC/dpcls hit split (one per-packet cost), other threads than CPU-bound ones on the PMD's
core (a thread woken there).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from .. import units
from ..sched import call_at

RING_SIZE = 2048            # XSK_RING_CONS__DEFAULT_NUM_DESCS / XSK_RING_PROD__DEFAULT_NUM_DESCS
NETDEV_MAX_BURST = 32       # packets per rx batch (lib/netdev.h)
INF = float("inf")


class AfxdpPort:
    """An ``afxdp`` port: ``put(pkt)`` is a frame arriving from its device; ``out`` gets what it sends."""

    def __init__(self, env, name: str, *, ring_size: int = RING_SIZE, out=None):
        self.env = env
        self.name = name
        self.ring_size = ring_size
        self.rx: deque = deque()
        self.out = out
        self.pmd: PmdThread | None = None
        self.rx_packets = 0
        self.rx_dropped = 0         # rx ring full (the XDP program's xsk redirect fails)
        self.tx_packets = 0
        self.tx_dropped = 0         # tx ring full
        self.ingress = None         # the bridge port the PMD hands received frames to (topology)
        self.txring = TxRing(self)

    def put(self, pkt) -> None:
        now = self.env._now
        if len(self.rx) >= self.ring_size:
            self.rx_dropped += 1
            return
        self.rx.append((pkt.t if pkt.t > now else now, pkt))
        if self.pmd is not None:
            self.pmd.wake(self.rx[-1][0])

    def transmit(self, batch: list, t: float) -> None:
        """The PMD's tx flush: the batch enters the tx ring; the kick sends it at ``t``."""
        room = self.ring_size
        if len(batch) > room:
            self.tx_dropped += len(batch) - room
            batch = batch[:room]
        for pkt in batch:
            pkt.t = t
        self.tx_packets += len(batch)
        if self.out is None:
            return
        if t > self.env._now:       # the PMD runs ahead of the clock: the frames leave when it gets there
            call_at(self.env, t, self._send, batch)
        else:
            self._send(batch)

    def _send(self, batch: list) -> None:
        for pkt in batch:
            self.out.put(pkt)


class TxRing:
    """An AF_XDP port's tx ring as the datapath fills it: ``put(pkt)`` queues the frame for the
    PMD's flush at the end of its batch; outside a PMD batch (another thread) it is sent at once."""

    def __init__(self, port: AfxdpPort):
        self.port = port
        self.pending: list = []

    def put(self, pkt) -> None:
        pmd = self.port.pmd
        if pmd is None or not pmd.in_batch:
            self.port.transmit([pkt], pkt.t)
            return
        if not self.pending:
            pmd.dirty.append(self)
        self.pending.append(pkt)


@dataclass
class PmdPerf:
    """``dpif-netdev/pmd-perf-show`` counters."""
    iterations: int = 0
    busy_iterations: int = 0
    idle_iterations: int = 0
    busy_cycles: int = 0
    idle_cycles: int = 0
    rx_packets: int = 0
    rx_batches: int = 0
    max_rx_batch: int = 0       # the largest rx batch (the top bin of pmd-perf-show's histogram)
    tx_packets: int = 0
    tx_batches: int = 0

    @property
    def used_cycles(self) -> int:
        return self.busy_cycles + self.idle_cycles

    @property
    def packets_per_batch(self) -> float:
        return self.rx_packets / self.rx_batches if self.rx_batches else 0.0

    @property
    def cycles_per_packet(self) -> float:
        """"avg cycles per packet": all used cycles over rx packets."""
        return self.used_cycles / self.rx_packets if self.rx_packets else 0.0

    @property
    def processing_cycles_per_packet(self) -> float:
        return self.busy_cycles / self.rx_packets if self.rx_packets else 0.0


class PmdThread:
    """One PMD thread on a dedicated core, polling its rx queues for ever."""

    def __init__(self, env, *, core: int = 1, per_batch: float, per_packet: float, empty_poll: float,
                 batch: int = NETDEV_MAX_BURST, tsc_hz: float = 2.0e9, forward=None, name: str = "pmd"):
        per_batch, per_packet, empty_poll = units.time(per_batch), units.time(per_packet), units.time(empty_poll)
        if not (per_batch >= 0 and per_packet >= 0 and empty_poll > 0):
            raise ValueError("PMD costs must be >= 0 (empty_poll > 0)")
        if not 1 <= batch <= NETDEV_MAX_BURST:
            raise ValueError(f"a PMD's rx batch is 1..{NETDEV_MAX_BURST} frames (NETDEV_MAX_BURST), got {batch}")
        self.env = env
        self.core = core
        self.per_batch = per_batch
        self.per_packet = per_packet
        self.empty_poll = empty_poll
        self.batch = batch
        self.tsc_hz = tsc_hz
        self.forward = forward          # pkt -> egress AfxdpPort (None: the port's own peer)
        self.name = name
        self.rxqs: list[AfxdpPort] = []
        self.perf = PmdPerf()
        self.started = env.now
        self.t = env.now                # where the polling loop has got to
        self._next = 0                  # the rx queue visited next
        self._ev_at = INF               # a pending loop event
        self.in_batch = False           # inside a batch's processing: tx goes through the rings
        self.dirty: list[TxRing] = []   # tx rings with frames to flush at the batch's end
        self.turns = None               # CoreTurns: the core shared with other CPU-bound threads (None: its own)

    def add_rxq(self, port: AfxdpPort) -> None:
        port.pmd = self
        self.rxqs.append(port)

    def serve(self, t: float, cost: float, key=None) -> float:
        """Datapath work of ``cost`` seconds on the PMD core (the :class:`~ovssim.path.cpu.CpuPool`
        ``serve`` contract, never refused): it starts when the PMD gets to it, at or after ``t``."""
        start = t if t > self.t else self.t
        self.t = self._work(start, cost)
        if not self.in_batch:           # work handed over from outside the loop: busy time of its own
            self.perf.busy_cycles += int(cost * self.tsc_hz)
        return self.t

    def _work(self, t: float, cost: float) -> float:
        """When ``cost`` seconds of the PMD's CPU started at ``t`` are done (its core's turns, if shared)."""
        return t + cost if self.turns is None else self.turns.run(t, cost)

    # -- the loop -------------------------------------------------------------------------
    def wake(self, arrival: float) -> None:
        """A frame reached a ring at ``arrival``: make sure the loop runs by then."""
        if self._ev_at > arrival or self._ev_at == INF:
            at = max(arrival, self.t)
            if at < self._ev_at:
                self._ev_at = at
                call_at(self.env, at, self._run)

    def _idle_until(self, t: float) -> None:
        """Empty iterations from ``self.t`` to the first poll at or after ``t``, counted, not simulated."""
        if t <= self.t:
            return
        n = -(-(t - self.t) // (self.empty_poll * len(self.rxqs) or self.empty_poll))   # ceil
        n = int(n)
        span = n * self.empty_poll * max(1, len(self.rxqs))
        if self.turns is not None:      # it polls only in its turns: its share of the span's iterations
            n = max(1, round(n * self.turns.share))
        self.perf.iterations += n
        self.perf.idle_iterations += n
        self.perf.idle_cycles += int(span * self.tsc_hz)
        self.t += span

    def _run(self, _=None) -> None:
        self._ev_at = INF
        now = self.env._now
        # polling went on without finding anything since self.t
        first = min((q.rx[0][0] for q in self.rxqs if q.rx), default=INF)
        if first == INF:
            return
        self._idle_until(min(first, now))
        if self.turns is not None:
            # off its core (another thread's turn): the next poll is at its next turn, idle cycles till then
            on = self.turns.on_at(self.t)
            if on > self.t:
                self.perf.idle_cycles += int((on - self.t) * self.tsc_hz)
                self.t = on
        # one pass over the rx queues: an iteration
        busy = 0.0
        got = 0
        perf = self.perf
        for _ in range(len(self.rxqs)):
            q = self.rxqs[self._next]
            self._next = (self._next + 1) % len(self.rxqs)
            batch = []
            t = self.t
            while q.rx and len(batch) < self.batch and q.rx[0][0] <= t:
                batch.append(q.rx.popleft()[1])
            if not batch:
                self.t = self._work(t, self.empty_poll)
                busy += self.empty_poll
                continue
            q.rx_packets += len(batch)
            got += len(batch)
            perf.rx_batches += 1
            perf.rx_packets += len(batch)
            if len(batch) > perf.max_rx_batch:
                perf.max_rx_batch = len(batch)
            if q.ingress is not None:
                self._process_in_datapath(q, batch)
            else:
                self._forward_batch(q, batch)
            busy += self.t - t
        perf.iterations += 1
        if got:
            perf.busy_iterations += 1
            perf.busy_cycles += int(busy * self.tsc_hz)
        else:
            perf.idle_iterations += 1
            perf.idle_cycles += int(busy * self.tsc_hz)
        if any(q.rx for q in self.rxqs):
            nxt = max(self.t, min(q.rx[0][0] for q in self.rxqs if q.rx))
            self._ev_at = nxt
            call_at(self.env, nxt, self._run)

    def _forward_batch(self, q: AfxdpPort, batch: list) -> None:
        """Standalone: ``per_batch`` + ``per_packet`` each, then one flush per egress port."""
        self.t = self._work(self.t, self.per_batch + self.per_packet * len(batch))
        by_port: dict = {}
        for pkt in batch:
            egress = self.forward(pkt) if self.forward is not None else q
            by_port.setdefault(id(egress), (egress, []))[1].append(pkt)
        for egress, pkts in by_port.values():
            egress.transmit(pkts, self.t)
            self.perf.tx_packets += len(pkts)
            self.perf.tx_batches += 1

    def _process_in_datapath(self, q: AfxdpPort, batch: list) -> None:
        """In a topology: ``per_packet`` for each frame's pass, the frame into its bridge (whose
        further work :meth:`serve` charges), then the tx flush, ``per_batch`` covering the rx
        burst and the ``sendto`` kicks."""
        self.in_batch = True
        try:
            for pkt in batch:
                self.t = self._work(self.t, self.per_packet)
                pkt.t = self.t
                q.ingress.put(pkt)
            self.t = self._work(self.t, self.per_batch)
            for ring in self.dirty:
                ring.port.transmit(ring.pending, self.t)
                self.perf.tx_packets += len(ring.pending)
                self.perf.tx_batches += 1
                ring.pending = []
            self.dirty.clear()
        finally:
            self.in_batch = False

    # -- what the host sees ------------------------------------------------------------------
    def utilisation(self, now: float | None = None) -> float:
        """The PMD core's busy share as ``top``/``mpstat`` show it: busy-polling is always 100 %."""
        return 100.0

    def perf_show(self, now: float | None = None) -> dict:
        """``pmd-perf-show`` for the run so far (idle polling up to ``now`` included)."""
        now = self.env.now if now is None else now
        self._idle_until(now)
        p = self.perf
        it = p.iterations or 1
        return {"iterations": p.iterations, "used_tsc_cycles": p.used_cycles,
                "idle_iterations_pct": 100.0 * p.idle_iterations / it,
                "busy_iterations_pct": 100.0 * p.busy_iterations / it,
                "idle_cycles_pct": 100.0 * p.idle_cycles / (p.used_cycles or 1),
                "rx_packets": p.rx_packets, "rx_batches": p.rx_batches,
                "packets_per_rx_batch": p.packets_per_batch, "max_rx_batch": p.max_rx_batch,
                "cycles_per_packet": p.cycles_per_packet,
                "processing_cycles_per_packet": p.processing_cycles_per_packet,
                "tx_packets": p.tx_packets, "tx_batches": p.tx_batches}
