"""NIC receive: interrupt coalescing, NAPI polls and GRO, a train at a time.

What the kernel does (net/core/dev.c ``net_rx_action``/``napi_poll``, net/core/gro.c,
the driver's interrupt moderation): the NIC raises an interrupt ``rx-usecs`` after
the first frame of a quiet period (or at once when ``rx-frames`` frames are
waiting); the interrupt schedules NAPI; a poll takes up to ``weight`` = 64 frames
(``NAPI_POLL_WEIGHT``) that have arrived, GRO merging the in-order segments of one
flow into one skb of up to ``gro_max_size`` = 64 KB (``tcp_gro_receive``), and at
the end of the poll GRO flushes (``napi_complete_done`` -> ``gro_flush``), so
the stack sees one skb per flow per poll.  A poll that used its whole budget is
repolled at once; ``net_rx_action`` stops after ``netdev_budget`` = 300 frames or
``netdev_budget_usecs`` (8 ms on this machine's HZ=250 kernel) per softirq round
and ksoftirqd carries on.

Here a frame train off the wire (a TSO skb: ``first_at`` .. ``t``, frames evenly
spaced, :meth:`ovssim.path.port.EgressPort._train_done`), handed on when its first
frame arrives, is cut analytically into the polls it meets: one event per poll,
at the poll's time, none per frame.  Each poll costs ``cpu_per_poll`` (the
interrupt, the softirq entry, the flush) + ``cpu_per_packet`` per frame +
``cpu_per_byte``; frames that arrive while a poll runs are taken by the next
poll.  With GRO off every frame is delivered on its own, at its poll's end.
A single frame (not a train) is one poll of one frame, as before (delivered when
it is handed on, unless a train's polls are still to come: then behind them).

Softirq rounds (``net_rx_action``): polls run back to back while frames keep arriving, within a
budget of ``netdev_budget`` = 300 frames and ``netdev_budget_usecs`` (2 jiffies: 8 ms at HZ=250,
``sysctl net.core.netdev_budget_usecs`` = 8000 on this machine).  A round that spends it counts a
``time_squeeze`` (``/proc/net/softnet_stat``'s third column) and the rest goes to a re-raised softirq
or ksoftirqd; on the model's cores, which nothing else competes for at softirq priority, that next
round starts at once, so the budget changes no timing here -- ``time_squeeze`` shows when a real
host would hand work to ksoftirqd (and a scheduler would delay it).

``rx_delay`` (a profile distribution, ``nic.rx_delay``) is the coalescing
delay plus the scheduling of the softirq, drawn once per interrupt.
"""
from __future__ import annotations

from collections import deque

from ..sched import call_at
from .cpu import conn_key
from .features import GRO_MAX_SIZE
from .gso import segment

NAPI_POLL_WEIGHT = 64
NETDEV_BUDGET = 300               # net.core.netdev_budget
NETDEV_BUDGET_USECS = 8e-3        # net.core.netdev_budget_usecs: 2 jiffies at HZ=250 (this machine: 8000)


class NapiRx:
    """A NIC's receive side: ``put(frame or train)`` -> GRO'd skbs to ``out``, in order."""

    stage = "napi"

    def __init__(self, env, rx_delay, out=None, *, cpu=None, gro: bool = True,
                 cpu_per_poll: float = 0.0, cpu_per_packet: float = 0.0, cpu_per_byte: float = 0.0,
                 rx_frames: int = 0, weight: int = NAPI_POLL_WEIGHT, gro_max_size: int = GRO_MAX_SIZE,
                 budget: int = NETDEV_BUDGET, budget_usecs: float = NETDEV_BUDGET_USECS,
                 name: str = "nic.rx"):
        self.env = env
        self.delay = rx_delay
        self.out = out
        self.cpu = cpu
        self.gro = gro
        self.cpu_per_poll = cpu_per_poll
        self.cpu_per_packet = cpu_per_packet
        self.cpu_per_byte = cpu_per_byte
        self.rx_frames = rx_frames
        self.weight = weight
        self.gro_max_size = gro_max_size
        self.name = name
        self._poll_end = 0.0          # when the last poll finished (frames before it were taken)
        self._last = 0.0              # delivery order
        self.polls = 0
        self.frames = 0
        self.skbs = 0
        self.dropped = 0
        self.budget = budget
        self.budget_usecs = budget_usecs
        self._round_frames = 0        # frames taken in the current softirq round
        self._round_start = 0.0
        self.time_squeeze = 0         # rounds that ran out of budget with work left
        self._pending: deque = deque()    # trains (and frames behind them) still to poll:
        #                                   [frames, first arrival, gap, next frame]

    def put(self, pkt) -> None:
        now = self.env._now
        last = pkt.t if pkt.t > now else now
        segs = pkt.gso_segs
        first = pkt.first_at if (segs > 1 and pkt.first_at is not None) else last
        pkt.first_at = None
        pending = self._pending
        if segs <= 1 and not pending:
            self._deliver([pkt], self._poll_at(last, 1), 1, pkt.size)
            return
        # a train (or a frame behind one): its frames evenly spaced from first to last, taken poll
        # by poll at each poll's time, behind what is already waiting
        pending.append([segment(pkt), first, (last - first) / (segs - 1) if segs > 1 else 0.0, 0])
        if len(pending) == 1:
            self._next_poll()

    def _next_poll(self) -> None:
        """Schedule the poll that takes the first waiting frame (``_poll`` at the poll's time)."""
        frames, first, gap, i = self._pending[0]
        call_at(self.env, self._poll_at(first + i * gap, len(frames) - i, gap), self._poll)

    def _poll(self, _=None) -> None:
        """A poll of a train's frames at its own time: the frames in by now, at most a poll's weight.

        A train is cut into polls as they happen, not all at once when it is handed on (at its first
        frame): each poll's CPU work and skbs at that poll's time, so work later in the train books no
        core ahead of the clock (a core serves booked work in order, with no backfilling)."""
        now = self.env._now
        pending = self._pending
        item = pending[0]
        frames, first, gap, i = item
        left = len(frames) - i
        k = int((now - first) / gap + 1e-9) + 1 - i if gap > 0.0 else left
        if k < 1:
            k = 1
        if k > self.weight:
            k = self.weight
        if k > left:
            k = left
        batch = frames[i:i + k]
        if k < left:
            item[3] = i + k
        else:
            pending.popleft()
        self._deliver(batch, now, k, sum(f.size for f in batch) if k > 1 else batch[0].size)
        if pending:
            self._next_poll()

    def _poll_at(self, arrival: float, waiting: int, gap: float = 0.0) -> float:
        """When the poll that takes a frame arriving at ``arrival`` starts: never before ``env.now``
        (a frame handed on late is polled at once, its CPU work and skbs from now, not in the past)."""
        if arrival < self._poll_end:
            poll = self._poll_end     # NAPI still scheduled: the next poll runs when this one ends
        else:
            delay = self.delay.next()
            if self.rx_frames and gap > 0.0:
                by_frames = (self.rx_frames - 1) * gap
                if by_frames < delay:
                    delay = by_frames     # rx-frames reached first: interrupt then
            poll = arrival + delay
        now = self.env._now
        return poll if poll > now else now

    def _deliver(self, frames: list, poll: float, n: int, nbytes: int) -> None:
        work = self.cpu_per_poll + self.cpu_per_packet * n + self.cpu_per_byte * nbytes
        done = poll + work
        if work > 0.0 and self.cpu is not None:
            done = self.cpu.serve(poll, work, conn_key(frames[0].flow))
            if done is None:
                self.dropped += n
                return
        if poll > self._poll_end:     # NAPI was idle: an interrupt starts a new softirq round
            self._round_frames = 0
            self._round_start = poll
        self._round_frames += n
        if self._round_frames >= self.budget or done - self._round_start >= self.budget_usecs:
            self.time_squeeze += 1    # net_rx_action: budget or time spent, the rest in the next round
            self._round_frames = 0
            self._round_start = done
        self.polls += 1
        self.frames += n
        self._poll_end = done
        if done < self._last:
            done = self._last
        self._last = done
        out = self.out
        if n == 1:                    # one frame: nothing to merge
            skb = frames[0]
            skb.t = done
            self.skbs += 1
            out.put(skb)
            return
        for skb in (gro_merge(frames, self.gro_max_size) if self.gro else frames):
            skb.t = done
            self.skbs += 1
            out.put(skb)


def gro_merge(frames: list, max_size: int = GRO_MAX_SIZE) -> list:
    """``napi_gro_receive`` over one poll, then the flush (net/core/gro.c, net/ipv4/tcp_offload.c
    ``tcp_gro_receive``): a TCP data segment joins the skb held for its flow when it starts where
    that skb ends, carries the same ACK and the same timestamp option (TSval ticks in ms, so
    segments sent in one ms), is no longer than the held skb's segments, and the skb stays within
    ``max_size``; a segment shorter than ``gso_size`` is the skb's last.  Anything else -- another
    flow, a gap, a pure ACK, a non-TCP frame -- starts anew or passes by itself.  Bytes, payload
    and segment counts are conserved; order within a flow is kept."""
    held: dict = {}       # flow -> the skb being built (an element of ``out``)
    out: list = []
    for f in frames:
        key = f.flow
        h = held.get(key)
        if h is not None and f.payload and f.kind == "data":
            mss = h.gso_size or h.payload
            if (h.seq + h.payload == f.seq and f.ack == h.ack and int(f.ts_val * 1000) == int(h.ts_val * 1000)
                    and f.gso_segs == 1 and f.payload <= mss
                    and h.payload + f.payload + (h.size - h.payload) // h.gso_segs <= max_size):
                h.gso_size = mss
                h.payload += f.payload
                h.size += f.size
                h.gso_segs += 1
                h.sack = f.sack
                h.rwnd = f.rwnd
                if f.payload < mss:
                    del held[key]     # a short segment ends the skb
                continue
        out.append(f)
        if f.kind == "data" and f.payload and f.flow[4] == "tcp":
            held[key] = f
        else:
            held.pop(key, None)
    return out
