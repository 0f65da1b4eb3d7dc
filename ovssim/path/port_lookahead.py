"""The lookahead transmit mode of :class:`~ovssim.path.port.EgressPort` (any qdisc).

A transmission's end costs an event only when a packet is waiting for it (the next dequeue must
happen then); otherwise the packet goes on at once with its departure time.  A shaping qdisc that
holds packets arms the watchdog (``qdisc_watchdog_schedule_ns``).
"""
from __future__ import annotations

from ..sched import FIRE, Call, schedule
from .afpacket import truesize

_INF = float("inf")


class LookaheadTx:
    """Mixin: arrivals, wake-ups and the watchdog with lookahead."""

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
        if self._frozen_from <= now < self._frozen_until:   # a late watchdog's window: no qdisc_run
            q.enqueue(pkt, now)
            return
        busy_until = self._busy_until
        if busy_until > now:              # the device is busy: a wake-up at its end dequeues
            q.enqueue(pkt, now)
            if self._wake is None:
                self._schedule_wake(busy_until)
            return
        if q.can_bypass and not q.stats.qlen and q.bypass(pkt, now):
            # an empty FIFO (TCQ_F_CAN_BYPASS): straight to the idle device; the owed dequeue of an
            # empty FIFO returns nothing and changes nothing, so it is not made
            self._kick_la(now, pkt)
            return
        owed = self._idle_dequeue_at      # due: owed <= busy_until <= now
        if owed is not None:
            self._idle_dequeue_at = None
            if not q.stats.qlen:          # else packets wait and a wake-up will dequeue
                q.dequeue(owed)           # empty: returns nothing, may retire state
        q.enqueue(pkt, now)
        self._kick_la(now)

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
        schedule(env, t, wake)

    def _kick_la(self, now: float, pkt=None) -> None:
        """``_kick`` with lookahead, at ``now`` (= ``env.now``): the same dequeues, events
        (times and order) and counters, with the transmission's ``_send`` inlined.  A
        transmission's end costs an event only when packets wait for it.  ``pkt``: one that
        bypassed the empty qdisc (``_arrive_la``), sent as if just dequeued."""
        q = self.qdisc
        self._idle_dequeue_at = None      # this dequeue is the one it stood for
        if pkt is None:
            pkt = q.dequeue(now)
            if pkt is None:
                if q.stats.qlen:          # a shaper holds packets: its watchdog
                    self._arm_watchdog(q, now)
                return
        spb = self._sec_per_byte
        if spb and pkt.gso_segs == 1:     # a wire: its common case, the packet goes on at once
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
                    done = self._train_done(pkt, now)
                else:
                    done = now + (size + self.framing) * spb
            elif self.service is not None:
                ho = self._handoff_at     # a watchdog run's deferred hand-off: the backend starts then
                done = self.service(pkt, now if ho is None or ho <= now else ho)
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
            t = now + self.prop_delay
            if self._handoff_at is not None and self._handoff_at > t:     # a watchdog run's deferred hand-off
                t = self._handoff_at
            pkt.t = t
            self.out.put(pkt)
            pkt = q.dequeue(now)
        if q.stats.qlen:                  # a shaper holds packets: its watchdog
            self._arm_watchdog(q, now)

    def _arm_watchdog(self, q, now: float) -> None:
        """``qdisc_watchdog_schedule_ns``: wake the port when the qdisc can send (if earlier
        than the pending wake-up)."""
        w, late = self._late_wakeup(q, now)
        if w is not None and w < self._watchdog_at:
            self._freeze(w, late)
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
            schedule(env, w, wd)

    def _on_watchdog_la(self, _ev=None) -> None:
        self._watchdog = None
        self._watchdog_at = _INF
        now = self.env._now
        if self._busy_until <= now:
            if self.watchdog_handoff is not None:       # its frames go on after the deferred softirq
                self._handoff_at = now + self.watchdog_handoff()
                try:
                    self._kick_la(now)
                finally:
                    self._handoff_at = None
            else:
                self._kick_la(now)

    def _on_wake(self, _=None) -> None:
        self._wake = None
        now = self.env._now
        if self._busy_until <= now:
            self._kick_la(now)
