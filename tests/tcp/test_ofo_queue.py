"""The receiver's out-of-order queue against a plain model: same intervals, bytes and SACK blocks.

The receiver merges a new interval with its neighbours only (found by bisection);
the model sorts and re-merges the whole queue on every arrival and scans it
for the block holding the latest segment -- the receiver's code before its
speed-up.  Random arrivals and hole fills must leave both identical.
"""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ovssim.tcp.defaults import MAX_SACK_BLOCKS
from ovssim.tcp.receiver import TcpReceiver


class _Sock:
    env = None
    flow = ("a", "b", 1, 2, "tcp")


class Model:
    def __init__(self):
        self.ofo, self.bytes, self.last = [], 0, -1

    def add(self, s, e):
        ivs = sorted(self.ofo + [[s, e]])
        merged = []
        for a, b in ivs:
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        self.ofo = merged
        self.bytes = sum(b - a for a, b in merged)
        self.last = s

    def drain(self, nxt):
        while self.ofo and self.ofo[0][0] <= nxt:
            a, b = self.ofo.pop(0)
            self.bytes -= b - a
            nxt = max(nxt, b)
        return nxt

    def blocks(self):
        if not self.ofo:
            return None
        recent = next((blk for blk in self.ofo if blk[0] <= self.last < blk[1]), None)
        out = [tuple(recent)] if recent is not None else []
        for blk in reversed(self.ofo):
            if len(out) >= MAX_SACK_BLOCKS:
                break
            if blk is not recent:
                out.append(tuple(blk))
        return out


ops = st.lists(st.tuples(st.sampled_from(["add", "add", "add", "drain"]),
                         st.integers(0, 60), st.integers(1, 8)), max_size=80)


@settings(max_examples=300, deadline=None)
@given(ops)
def test_ofo_queue_matches_the_plain_model(seq):
    r = TcpReceiver(_Sock(), mss=10, rcvbuf=10_000)
    m = Model()
    nxt = 0
    for op, start, length in seq:
        if op == "add":
            s = nxt + 1 + start * 5          # always above rcv_nxt, as the receiver queues it
            r._add_ofo(s, s + length * 5)
            m.add(s, s + length * 5)
        else:
            reach = nxt + start             # rcv_nxt after an in-order segment
            nxt = m.drain(reach)
            assert r._drain_ofo(reach) == nxt
        assert r.ofo == m.ofo
        assert r.ofo_bytes == m.bytes
        assert r._sack_blocks() == m.blocks()
