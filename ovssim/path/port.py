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

from heapq import heappush

from simpy.events import NORMAL

from ..packet import ETH_PREAMBLE_FCS_IFG
from ..qdisc import make_qdisc
from ..qdisc.base import Device
from ..qdisc.pfifo import PFifo
from ..sched import FIRE, Call, call_at
from .afpacket import truesize
from .cpu import conn_key

_INF = float("inf")


class EgressPort:
    """``put(pkt)`` in, ``.out`` onward; ``qdisc`` is any :class:`ovssim.qdisc.Qdisc`."""

    def __init__(self, env, rate_bps: float | None = None, qdisc=None, out=None, *,
                 name: str = "port", mtu: int = 1500, txqueuelen: int = 1000,
                 framing: int = ETH_PREAMBLE_FCS_IFG, prop_delay: float = 0.0,
                 lookahead: bool = False, on_drop=None, service=None, cpu=None,
                 qdisc_cost: float = 0.0):
        if rate_bps is not None and not rate_bps > 0:
            raise ValueError(f"port {name}: rate must be > 0 bit/s, got {rate_bps}")
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

    def attach_sock(self, sock) -> None:
        """Charge ``sock`` for every packet from its arrival until it leaves the qdisc."""
        self.sock = sock
        self.qdisc.on_drop = self._sock_dropped

    # -- input -------------------------------------------------------------------
    def put(self, pkt) -> None:
        env = self.env
        t = pkt.t
        if t > env._now:
            # call_at(env, t, self._arrive_cb, pkt), inlined: the hottest line of a run
            heappush(env._queue, (t, NORMAL, next(env._eid), Call(self._arrive_cb, pkt)))
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

    def sync(self, now: float | None = None) -> None:
        """Bring an analytic FIFO's qdisc counters up to ``now`` (packets that started are sent)."""
        if not self.analytic:
            return
        now = self.env._now if now is None else now
        st = self.qdisc.stats
        waiting = self._waiting
        while waiting and waiting[0][0] <= now:
            size = waiting.popleft()[1]
            st.qlen -= 1
            st.backlog -= size
            st.packets += 1
            st.bytes += size

    def _arrive_fifo(self, pkt) -> None:
        now = self.env._now
        sock = self.sock
        if sock is not None:
            ts = truesize(pkt.size)
            if not sock.charge(now, ts):
                return
        self.arrived += 1
        q = self.qdisc
        st = q.stats
        st.arrivals += 1
        stamps = pkt.stamps
        if stamps is not None:
            stamps[self.name + ".enq"] = now
        waiting = self._waiting
        if waiting and waiting[0][0] <= now:
            self.sync(now)
        if (st.qlen >= q.limit) if self._pkt_limit else q.full_for(pkt):
            q.drop(pkt, now, "limit")
            return
        size = pkt.size
        free_at = self._free_at
        start = now if now >= free_at else free_at
        if self._sec_per_byte:
            if pkt.gso_segs > 1:
                done = self._train_done(pkt, start, free_at)
            else:
                done = start + (size + self.framing) * self._sec_per_byte
        elif self.service is not None:
            done = self.service(pkt, start)
            if done is None:
                st.packets += 1
                st.bytes += size
                if sock is not None:      # it left the qdisc at ``start``
                    sock.release_at(start, ts)
                self._dropped(pkt, now, "backend")
                return
        else:
            done = start
        if sock is not None:              # the skb leaves the qdisc at ``start``
            if start > now:
                sock.release_at(start, ts)
            else:
                sock.release(ts)
        if start > now:
            st.qlen += 1
            st.backlog += size
            waiting.append((start, size))
        else:
            st.packets += 1
            st.bytes += size
        self._free_at = done
        self.busy_time += done - start
        if stamps is not None:
            stamps[self.name + ".deq"] = start
        self.tx_packets += 1
        self.tx_bytes += size
        pkt.t = done + self.prop_delay
        if pkt.first_at is not None:
            pkt.first_at += self.prop_delay
        self.out.put(pkt)

    def _arrive(self, pkt) -> None:
        now = self.env._now
        sock = self.sock
        if sock is not None and not sock.charge(now, truesize(pkt.size)):
            return
        self.arrived += 1
        if pkt.stamps is not None:
            pkt.stamps[self.name + ".enq"] = now
        self.qdisc.enqueue(pkt, now)
        if not self.busy:
            self._kick()

    def _arrive_la(self, pkt) -> None:
        """``_arrive`` with lookahead (the port's own path for a non-FIFO qdisc).

        ``_idle_dequeue_at`` is None or equal to ``_busy_until`` (both are set by the same
        transmission), so the owed dequeue is due exactly when the device is idle."""
        now = self.env._now
        sock = self.sock
        if sock is not None and not sock.charge(now, truesize(pkt.size)):
            return
        self.arrived += 1
        stamps = pkt.stamps
        if stamps is not None:
            stamps[self.name + ".enq"] = now
        q = self.qdisc
        busy_until = self._busy_until
        if busy_until > now:              # the device is busy: a wake-up at its end dequeues
            q.enqueue(pkt, now)
            if self._wake is None:
                self._schedule_wake(busy_until)
            return
        owed = self._idle_dequeue_at      # due: owed <= busy_until <= now
        if owed is not None:
            self._idle_dequeue_at = None
            if not q.stats.qlen:          # else packets wait and a wake-up will dequeue
                q.dequeue(owed)           # empty: returns nothing, may retire state
        q.enqueue(pkt, now)
        # _kick_la(now), inlined (``_idle_dequeue_at`` is already None)
        pkt = q.dequeue(now)
        if pkt is None:
            if q.stats.qlen:              # a shaper holds packets: its watchdog
                self._arm_watchdog(q, now)
            return
        spb = self._sec_per_byte
        if spb and pkt.gso_segs == 1:     # a wire: its common case, the packet goes on at once
            size = pkt.size
            done = now + (size + self.framing) * spb
            if done > now:
                if sock is not None:
                    sock.release(truesize(size))
                stamps = pkt.stamps
                if stamps is not None:
                    stamps[self.name + ".deq"] = now
                self.tx_packets += 1
                self.tx_bytes += size
                self.busy_time += done - now
                self._busy_until = done
                pkt.t = done + self.prop_delay
                self.out.put(pkt)
                if q.stats.qlen:
                    self._schedule_wake(done)
                else:
                    self._idle_dequeue_at = done
                return
        self._xmit_la(q, pkt, now)

    def _schedule_wake(self, t: float) -> None:
        """The device's wake-up at the end of a transmission (``_on_wake`` at ``t``).  The
        port's one wake-up Call is reused once it fired; a new one only while it is pending."""
        wake = self._wake_call
        if wake is None or wake.callbacks is not None:    # never made, or still in the heap
            wake = self._wake_call = Call(self._on_wake, None)
        else:
            wake.callbacks = FIRE
        self._wake = wake
        env = self.env
        heappush(env._queue, (t, NORMAL, next(env._eid), wake))

    def _dropped(self, pkt, now, reason) -> None:
        self.dropped += 1
        if self.on_drop is not None:
            self.on_drop(pkt, now, reason)

    def _sock_dropped(self, pkt, now, reason) -> None:
        """The qdisc's drop with a socket attached: the freed skb's charge is released."""
        self.sock.release(truesize(pkt.size))
        self._dropped(pkt, now, reason)

    # -- transmit ------------------------------------------------------------------
    def _kick(self, _=None) -> None:
        """Without lookahead: dequeue and transmit while the device is free (``qdisc_run``)."""
        env = self.env
        q = self.qdisc
        sock = self.sock
        while True:
            now = env._now
            pkt = q.dequeue(now)
            if pkt is None:
                if q.stats.qlen:
                    w = q.next_wakeup(now)
                    if w is not None and w < self._watchdog_at:
                        if self._watchdog is not None:
                            self._watchdog.cancel()
                        self._watchdog_at = w if w > now else now
                        self._watchdog = call_at(env, self._watchdog_at, self._on_watchdog)
                return
            if sock is not None:
                sock.release(truesize(pkt.size))
            if pkt.stamps is not None:
                pkt.stamps[self.name + ".deq"] = now
            if self._sec_per_byte:
                if pkt.gso_segs > 1:
                    done = self._train_done(pkt, now, now)
                else:
                    done = now + (pkt.size + self.framing) * self._sec_per_byte
            elif self.service is not None:
                done = self.service(pkt, now)
                if done is None:          # backend refused it (CPU backlog full)
                    self._dropped(pkt, now, "backend")
                    continue
            else:
                done = now
            if done > now:
                self.busy_time += done - now
                self.busy = True
                call_at(env, done, self._done, pkt)
                return
            self._send(pkt, now)

    def _kick_la(self, now: float) -> None:
        """``_kick`` with lookahead, at ``now`` (= ``env.now``): the same dequeues, events
        (times and order) and counters, with the transmission's ``_send`` inlined.  A
        transmission's end costs an event only when packets wait for it."""
        q = self.qdisc
        self._idle_dequeue_at = None      # this dequeue is the one it stood for
        pkt = q.dequeue(now)
        if pkt is None:
            if q.stats.qlen:              # a shaper holds packets: its watchdog
                self._arm_watchdog(q, now)
            return
        spb = self._sec_per_byte
        if spb and pkt.gso_segs == 1:     # a wire: its common case, as in _arrive_la
            size = pkt.size
            done = now + (size + self.framing) * spb
            if done > now:
                sock = self.sock
                if sock is not None:
                    sock.release(truesize(size))
                stamps = pkt.stamps
                if stamps is not None:
                    stamps[self.name + ".deq"] = now
                self.tx_packets += 1
                self.tx_bytes += size
                self.busy_time += done - now
                self._busy_until = done
                pkt.t = done + self.prop_delay
                self.out.put(pkt)
                if q.stats.qlen:
                    self._schedule_wake(done)
                else:
                    self._idle_dequeue_at = done
                return
        self._xmit_la(q, pkt, now)

    def _xmit_la(self, q, pkt, now: float) -> None:
        """The rest of ``_kick_la`` from a dequeued ``pkt``: transmit while the device stays
        free (a virtual device, a backend), then the watchdog if a shaper holds packets."""
        sock = self.sock
        while pkt is not None:
            size = pkt.size
            if sock is not None:
                sock.release(truesize(size))
            stamps = pkt.stamps
            if stamps is not None:
                stamps[self.name + ".deq"] = now
            spb = self._sec_per_byte
            if spb:
                if pkt.gso_segs > 1:
                    done = self._train_done(pkt, now, self._busy_until)
                else:
                    done = now + (size + self.framing) * spb
            elif self.service is not None:
                done = self.service(pkt, now)
                if done is None:          # backend refused it (CPU backlog full)
                    self._dropped(pkt, now, "backend")
                    pkt = q.dequeue(now)
                    continue
            else:
                done = now
            self.tx_packets += 1
            self.tx_bytes += size
            if done > now:
                self.busy_time += done - now
                self._busy_until = done
                pkt.t = done + self.prop_delay
                if pkt.first_at is not None:
                    pkt.first_at += self.prop_delay
                self.out.put(pkt)
                if q.stats.qlen:
                    self._schedule_wake(done)
                else:
                    self._idle_dequeue_at = done
                return
            pkt.t = now + self.prop_delay
            self.out.put(pkt)
            pkt = q.dequeue(now)
        if q.stats.qlen:                  # a shaper holds packets: its watchdog
            self._arm_watchdog(q, now)

    def _arm_watchdog(self, q, now: float) -> None:
        """``qdisc_watchdog_schedule_ns``: wake the port when the qdisc can send (if earlier
        than the pending wake-up)."""
        w = q.next_wakeup(now)
        if w is not None and w < self._watchdog_at:
            wd = self._watchdog
            if wd is None:                # none pending: the last one fired, schedule it again
                wd = self._watchdog_call
                if wd is None:
                    wd = Call(self._on_watchdog_la, None)
            else:                         # an earlier time: cancel the pending one (its heap
                wd.callbacks = ()         # entry stays, with nothing to call) and take a new one
                wd = Call(self._on_watchdog_la, None)
            wd.callbacks = self._watchdog_cbs     # SimPy calls _on_watchdog_la(wd) directly
            if w < now:
                w = now
            self._watchdog_at = w
            self._watchdog = self._watchdog_call = wd
            env = self.env
            heappush(env._queue, (w, NORMAL, next(env._eid), wd))

    def _on_watchdog(self, _=None) -> None:
        self._watchdog = None
        self._watchdog_at = _INF
        if not self.busy:
            self._kick()

    def _on_watchdog_la(self, _ev=None) -> None:
        self._watchdog = None
        self._watchdog_at = _INF
        now = self.env._now
        if self._busy_until <= now:
            self._kick_la(now)

    def _on_wake(self, _=None) -> None:
        self._wake = None
        now = self.env._now
        if self._busy_until <= now:
            self._kick_la(now)

    def _done(self, pkt) -> None:
        self.busy = False
        self._send(pkt, self.env._now)
        self._kick()

    def _send(self, pkt, now: float) -> None:
        self.tx_packets += 1
        self.tx_bytes += pkt.size
        t = now + self.prop_delay
        pkt.t = t
        if pkt.first_at is not None:
            pkt.first_at += self.prop_delay
        if self.lookahead or t <= now:
            self.out.put(pkt)
        else:
            call_at(self.env, t, self.out.put, pkt)

    def _train_done(self, pkt, start: float, free: float) -> float:
        """End of a TSO/GSO skb on the wire: its ``gso_segs`` frames back to back, each with its
        own framing, exactly when per-frame serialisation would end -- without an event per frame.

        The NIC cuts a TSO skb and sends the frames back to back (``start`` + the train's time).
        A train that came off another wire (``first_at`` set, a store-and-forward hop) could start
        when its first frame had fully arrived, if the device was free then (``free``), but its
        last frame cannot leave before it arrived (``pkt.t``) and was serialised.  Sets
        ``first_at`` to when the first frame is fully out."""
        spb = self._sec_per_byte
        segs = pkt.gso_segs
        fr = self.framing
        hdr = (pkt.size - pkt.payload) // segs
        first = pkt.gso_size + hdr + fr
        last = pkt.payload - pkt.gso_size * (segs - 1) + hdr + fr
        total = (pkt.size + fr * segs) * spb
        begin = start
        fa = pkt.first_at
        if fa is not None and fa < start:
            begin = fa if fa > free else free
            if begin > start:
                begin = start
        done = begin + total
        tail = pkt.t + last * spb
        if tail > done:
            done = tail
        pkt.first_at = begin + first * spb
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
