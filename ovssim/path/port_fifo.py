"""The analytic FIFO transmit mode of :class:`~ovssim.path.port.EgressPort`.

With lookahead and a plain FIFO qdisc (pfifo/bfifo), each packet's start and end of
transmission follow from its arrival time (Lindley's recursion), exactly, because arrivals
are materialised in time order: the completion costs no event and the packet goes on with its
departure time.  A TSO skb is serialised as its train of frames (``_train_done``).
"""
from __future__ import annotations

from .afpacket import truesize


class AnalyticFifoTx:
    """Mixin: ``_arrive_fifo`` and ``sync`` (the port's state lives in EgressPort.__init__)."""

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
                done = self._train_done(pkt, start)
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
