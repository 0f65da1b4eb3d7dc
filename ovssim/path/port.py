"""An egress port: the device transmit side, ``qdisc -> driver -> wire``.

Models ``__dev_xmit_skb``/``qdisc_run``: an arriving packet is enqueued in the
port's qdisc; while the device is idle the port dequeues and serialises one
packet at the line rate (the whole Ethernet frame: L2 frame + preamble, FCS
and inter-frame gap, IEEE 802.3), then asks for the next one.  A shaping qdisc
that has packets but nothing to send now answers ``next_wakeup`` and the port
waits for that watchdog (``qdisc_watchdog_schedule_ns``).

``rate_bps=None`` is a virtual device (tap, veth, patch): no serialisation,
so only a shaping qdisc can hold packets back -- unless ``service`` is given:
a virtual device drained by a backend thread (a tap by vhost, a Xen vif by
netback) is busy for as long as the backend takes, and its qdisc queues
behind it, as when ``netif_tx_stop_queue`` stops a full tap ring.  Propagation delay on the
attached wire is added on the way out.

The three transmit modes are mixins in files of their own: the analytic FIFO
(:mod:`ovssim.path.port_fifo`), lookahead with any qdisc
(:mod:`ovssim.path.port_lookahead`) and event-driven (:mod:`ovssim.path.port_events`);
this file holds the port's state, its input, the socket and qdisc-cost accounting and
the TSO train's exact serialisation (``_train_done``).

Events: one timed callback per packet transmitted (the link is a contention
point), plus one per packet that arrives ahead of ``env.now`` (lookahead).

``qdisc_cost`` (with ``cpu``): the qdisc's own CPU work per skb, enqueue and
dequeue together, charged on the packet's connection core before it enters
(``__dev_xmit_skb`` runs in the sender's context); a profile parameter per
qdisc kind (``qdisc.<kind>.cpu_per_packet``, default 0).

Socket accounting (:meth:`EgressPort.attach_sock`, OVS's netdev datapath): the
sender's :class:`~ovssim.path.afpacket.SockBuf` is charged the packet's skb
truesize when it reaches the port (refused: the packet never enters the qdisc)
and released when it leaves the qdisc -- dequeued for the device or dropped --
in every mode: at the dequeue in the event-driven and lookahead paths, at the
dequeue time the analytic FIFO computes on arrival (a timed release, no event).
"""
from __future__ import annotations

from collections import deque



from .. import units
from ..packet import ETH_PREAMBLE_FCS_IFG
from ..qdisc import make_qdisc
from ..qdisc.base import Device
from ..qdisc.pfifo import PFifo
from ..sched import call_at
from .afpacket import truesize
from .cpu import conn_key
from .port_events import EventTx
from .port_fifo import AnalyticFifoTx
from .port_lookahead import LookaheadTx

_INF = float("inf")


class EgressPort(AnalyticFifoTx, LookaheadTx, EventTx):
    """``put(pkt)`` in, ``.out`` onward; ``qdisc`` is any :class:`ovssim.qdisc.Qdisc`."""

    def __init__(self, env, rate_bps: float | None = None, qdisc=None, out=None, *,
                 name: str = "port", mtu: int = 1500, txqueuelen: int = 1000,
                 framing: int = ETH_PREAMBLE_FCS_IFG, prop_delay: float = 0.0,
                 lookahead: bool = False, on_drop=None, service=None, cpu=None,
                 qdisc_cost: float = 0.0):
        if rate_bps is not None:                 # "10mbit" as tc writes it, or bit/s
            rate_bps = units.positive(units.rate(rate_bps), f"port {name} rate")
        prop_delay = units.time(prop_delay)
        self.env = env
        self.name = name
        self.rate_bps = rate_bps
        self.out = out
        self.framing = framing if rate_bps is not None else 0
        self.prop_delay = prop_delay
        self.lookahead = lookahead
        self.qdisc = make_qdisc(qdisc) if not hasattr(qdisc, "enqueue") else qdisc
        self.dev = Device(name=name, mtu=mtu, rate_bps=rate_bps, txqueuelen=txqueuelen)
        self.qdisc.attach(self.dev)
        self.qdisc.on_drop = self._dropped
        self.on_drop = on_drop
        self._sec_per_byte = 8.0 / rate_bps if rate_bps else 0.0
        # A virtual device drained by a backend thread (tap -> vhost, vif -> netback):
        # ``service(pkt, now) -> completion time`` replaces serialisation.
        self.service = service
        # Analytic FIFO: with lookahead and a plain FIFO qdisc (pfifo/bfifo), each packet's
        # start and end of transmission follow from its arrival time (Lindley's recursion),
        # exactly, because arrivals are materialised in time order; the completion costs
        # no event and the packet goes on with its departure time.
        self.analytic = bool(lookahead and getattr(self.qdisc, "analytic_fifo", False))
        self._free_at = 0.0
        # pfifo's tail-drop test (qlen >= limit), inlined on the analytic path
        self._pkt_limit = type(self.qdisc).full_for is PFifo.full_for if self.analytic else False
        self._arrive_cb = self._arrive_fifo if self.analytic else (self._arrive_la if lookahead else self._arrive)
        # Lookahead with any other qdisc: a transmission's end costs an event only when a
        # packet is waiting for it (the next dequeue must happen then); otherwise the packet
        # goes on at once with its departure time, like the analytic FIFO.
        self._busy_until = 0.0
        self._wake = None                    # the pending wake-up Call, if any
        self._wake_call = None               # the last wake-up Call (reused once fired)
        # Lookahead: the dequeue the device's completion would make on an empty qdisc (qdisc_run
        # asks until it gets nothing), owed until the next arrival.  It can change the qdisc's
        # state (FQ-CoDel retires an emptied flow, CoDel leaves its dropping state), so it is
        # made, at its own time, before the next packet is enqueued.
        self._idle_dequeue_at = None
        self._waiting: deque = deque()       # (start time, size) of packets still in the qdisc
        self.busy = False
        self._watchdog = None                # the pending watchdog Call, if any
        # how late the qdisc watchdog runs the port after the time it was set for (profile
        # qdisc.watchdog_latency, default 0): a constant, or ``watchdog_late``, a sampler drawn once per time
        # the watchdog is set for (_lateness).  The lateness is the processor that would run qdisc_run not being there (UML: the instance's
        # process not scheduled by its host), so from the set time until the late expiry an arrival only
        # enqueues -- no qdisc_run in the sender's context dequeues early.  A shaper whose bucket holds one
        # frame (HTB's default burst) loses the lateness beyond a frame time; one with a deeper bucket less
        self.watchdog_latency = 0.0
        self.watchdog_late = None
        # how long the frames one watchdog run dequeues wait before the next hop takes them (profile
        # qdisc.watchdog_handoff, default off): a sampler drawn once per watchdog run, or None.  The
        # watchdog's hrtimer raises NET_TX in hard-irq context; the frames it dequeues are queued on the
        # CPU's backlog (netif_rx) and raise NET_RX during that softirq pass, which __do_softirq
        # (kernel/softirq.c) does not restart when need_resched() is set -- it wakes ksoftirqd instead, and
        # on a non-preemptible kernel (UML's) ksoftirqd runs only once the task on the CPU gives it up.
        # Measured inside UML (data/uml/2026-11-28/uml-latency): vm2's answer to a ping the watchdog
        # dequeued took +0.1-0.25 ms for 11-41 % of the pings under load, with no frame crossing the
        # bottleneck meanwhile.  Frames an arrival's own qdisc_run dequeues are not deferred.
        self.watchdog_handoff = None
        self._handoff_at = None              # while a watchdog run dequeues: the time its frames go on
        self._late_for = None                # the time the last draw was for, and the draw
        self._late = 0.0
        self._frozen_from = _INF             # [from, until): the late watchdog's window, nothing dequeues
        self._frozen_until = -_INF
        self._watchdog_at = float("inf")
        self._watchdog_call = None           # the lookahead path's last watchdog Call (reused once fired)
        self._watchdog_cbs = (self._on_watchdog_la,)     # its callbacks: no _fire indirection
        # counters
        self.tx_packets = 0
        self.tx_bytes = 0
        self.busy_time = 0.0
        self.arrived = 0
        self.dropped = 0
        self.sock = None                     # the sending socket's SockBuf, if accounted
        # the qdisc's CPU work per skb (enqueue + dequeue, in the sender's context: __dev_xmit_skb)
        self.cpu = cpu
        self.qdisc_cost = qdisc_cost
        if qdisc_cost > 0.0 and cpu is not None:
            self.put = self._put_costed

    def _lateness(self, w: float) -> float:
        """How late the watchdog set for ``w`` fires: the constant, or one draw per time set (the
        arrivals' qdisc_run that ask again before it, and set the same time, do not draw again)."""
        if self.watchdog_late is None:
            return self.watchdog_latency
        if w != self._late_for:
            self._late_for = w
            self._late = self.watchdog_late()
        return self._late

    def _late_wakeup(self, q, now: float) -> tuple[float | None, float]:
        """When the qdisc's watchdog runs the port -- its ``next_wakeup`` plus the lateness (None: no
        wake-up) -- and that lateness."""
        w = q.next_wakeup(now)
        if w is None or w <= now:
            return w, 0.0
        late = self._lateness(w)
        return w + late, late

    def _freeze(self, w: float, late: float) -> None:
        """The watchdog is set to run the port at ``w``, ``late`` after it was due: in that window the
        processor is away and nothing dequeues."""
        self._frozen_from, self._frozen_until = (w - late, w) if late > 0.0 else (_INF, -_INF)

    def attach_sock(self, sock) -> None:
        """Charge ``sock`` for every packet from its arrival until it leaves the qdisc."""
        self.sock = sock
        self.qdisc.on_drop = self._sock_dropped

    # -- input -------------------------------------------------------------------
    def put(self, pkt) -> None:
        """The packet reaches the port at ``pkt.t``; a frame train off another wire (``first_at`` set:
        a TSO skb's frames through a store-and-forward switch) when its first frame has, as a switch
        queues each frame for its egress port once that frame is received -- ``_train_done`` keeps
        its last frame from leaving before it arrived."""
        env = self.env
        t = pkt.t
        fa = pkt.first_at
        if fa is not None:
            t = fa
        if t > env._now:
            call_at(env, t, self._arrive_cb, pkt)
        else:
            self._arrive_cb(pkt)

    def _put_costed(self, pkt) -> None:
        """``put`` when the qdisc's work costs CPU: charged on the packet's connection core first."""
        now = self.env._now
        t = pkt.t if pkt.t > now else now
        done = self.cpu.serve(t, self.qdisc_cost, conn_key(pkt.flow))
        if done is None:
            self._dropped(pkt, now, "cpu")
            return
        pkt.t = done
        EgressPort.put(self, pkt)

    def _dropped(self, pkt, now, reason) -> None:
        self.dropped += 1
        if self.on_drop is not None:
            self.on_drop(pkt, now, reason)

    def _sock_dropped(self, pkt, now, reason) -> None:
        """The qdisc's drop with a socket attached: the freed skb's charge is released."""
        self.sock.release(truesize(pkt.size))
        self._dropped(pkt, now, reason)

    # -- transmit ------------------------------------------------------------------
    def _train_done(self, pkt, start: float) -> float:
        """End of a TSO/GSO skb on the wire: its ``gso_segs`` frames back to back, each with its
        own framing, exactly when per-frame serialisation would end -- without an event per frame.

        The NIC cuts a TSO skb and sends the frames back to back (``start`` + the train's time).
        A train that came off another wire (``first_at`` set, a store-and-forward hop) reached the
        port when its first frame had (:meth:`put`), so it starts then if the device is free, but
        its last frame cannot leave before it arrived (``pkt.t``) and was serialised: on a faster
        wire the frames leave as they come in.  Sets ``first_at`` to when the first frame is fully
        out."""
        spb = self._sec_per_byte
        segs = pkt.gso_segs
        fr = self.framing
        hdr = (pkt.size - pkt.payload) // segs
        first = pkt.gso_size + hdr + fr
        last = pkt.payload - pkt.gso_size * (segs - 1) + hdr + fr
        done = start + (pkt.size + fr * segs) * spb
        tail = pkt.t + last * spb
        if tail > done:
            done = tail
        pkt.first_at = start + first * spb
        return done

    # -- views -------------------------------------------------------------------
    @property
    def queued(self) -> int:
        if self.analytic:
            self.sync()
            return self.qdisc.stats.qlen + (1 if self._free_at > self.env._now else 0)
        if self.lookahead:
            return self.qdisc.stats.qlen + (1 if self._busy_until > self.env._now else 0)
        return self.qdisc.stats.qlen + (1 if self.busy else 0)

    def utilisation(self, duration: float) -> float:
        return self.busy_time / duration if duration > 0 else 0.0
