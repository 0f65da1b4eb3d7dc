"""The event-driven transmit mode of :class:`~ovssim.path.port.EgressPort` (no lookahead).

``__dev_xmit_skb``/``qdisc_run`` as events: a timed callback per packet transmitted and a
watchdog event when a shaper holds packets back.
"""
from __future__ import annotations

from ..sched import call_at
from .afpacket import truesize

_INF = float("inf")


class EventTx:
    """Mixin: arrivals and transmissions, one event per transmission."""

    def _arrive(self, pkt) -> None:
        now = self.env._now
        sock = self.sock
        if sock is not None and not sock.charge(now, truesize(pkt.size)):
            return
        self.arrived += 1
        if pkt.stamps is not None:
            pkt.stamps[self.name + ".enq"] = now
        self.qdisc.enqueue(pkt, now)
        if not self.busy and not self._frozen_from <= now < self._frozen_until:   # (a late watchdog's window)
            self._kick()

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
                    w, late = self._late_wakeup(q, now)
                    if w is not None and w < self._watchdog_at:
                        self._freeze(w, late)
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
                if pkt.gso_segs > 1:      # a train: on its way from its first frame, busy to its last
                    done = self._train_done(pkt, now)
                    self.busy_time += done - now
                    self.busy = True
                    self._send_train(pkt, done)
                    call_at(env, done, self._done, None)
                    return
                done = now + (pkt.size + self.framing) * self._sec_per_byte
            elif self.service is not None:
                ho = self._handoff_at     # a watchdog run's deferred hand-off: the backend starts then
                done = self.service(pkt, now if ho is None or ho <= now else ho)
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

    def _on_watchdog(self, _=None) -> None:
        self._watchdog = None
        self._watchdog_at = _INF
        if not self.busy:
            if self.watchdog_handoff is not None:       # its frames go on after the deferred softirq
                self._handoff_at = self.env._now + self.watchdog_handoff()
                try:
                    self._kick()
                finally:
                    self._handoff_at = None
            else:
                self._kick()

    def _done(self, pkt) -> None:
        self.busy = False
        if pkt is not None:               # (a train was handed on when it started)
            self._send(pkt, self.env._now)
        self._kick()

    def _send_train(self, pkt, done: float) -> None:
        """A TSO skb's train, handed on when its first frame is out (``first_at``, set by
        ``_train_done``), not when its last is: the frames leave one by one (IEEE 802.3) and the
        next hop -- a store-and-forward switch, a NIC's NAPI -- takes each as it arrives."""
        self.tx_packets += 1
        self.tx_bytes += pkt.size
        pkt.t = done + self.prop_delay
        fa = pkt.first_at + self.prop_delay
        pkt.first_at = fa
        if self.lookahead or fa <= self.env._now:
            self.out.put(pkt)
        else:
            call_at(self.env, fa, self.out.put, pkt)

    def _send(self, pkt, now: float) -> None:
        self.tx_packets += 1
        self.tx_bytes += pkt.size
        t = now + self.prop_delay
        if self._handoff_at is not None and self._handoff_at > t:     # a watchdog run's deferred hand-off
            t = self._handoff_at
        pkt.t = t
        if pkt.first_at is not None:
            pkt.first_at += self.prop_delay
        if self.lookahead or t <= now:
            self.out.put(pkt)
        else:
            call_at(self.env, t, self.out.put, pkt)
