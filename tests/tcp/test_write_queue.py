"""skbs built at write time (tcp_sendmsg_locked, tcp_push, autocorking): ovssim/tcp/write_queue.py."""
from __future__ import annotations

import statistics

import pytest
import simpy
from hypothesis import given, settings, strategies as st

from ovssim.path.endpoint import Endpoint
from ovssim.path.features import resolve
from ovssim.path.port import EgressPort
from ovssim.runner import run_scenario
from ovssim.scenario import from_dict
from ovssim.tcp.connection import connect
from ovssim.tcp.defaults import MAX_TCP_HEADER
import ovssim.tcp.sender as sender_mod
from ovssim.sched import call_at
from ovssim.tcp.write_queue import WriteQueue, xmit_size_goal

MSS = 1448
GOAL = xmit_size_goal(MSS, 65536, 65535, 1 << 30)


def test_size_goal_is_gso_max_in_whole_segments_bounded_by_half_the_peer_window():
    assert GOAL == (65536 - MAX_TCP_HEADER - 1) // MSS * MSS == 45 * MSS
    assert xmit_size_goal(MSS, 65536, 65535, 40000) == 20000 // MSS * MSS       # tcp_bound_to_half_wnd
    assert xmit_size_goal(MSS, 65536, 16, 1 << 30) == 16 * MSS                  # sk_gso_max_segs
    assert xmit_size_goal(MSS, None, 65535, 1 << 30) == MSS                     # no GSO: one segment


def test_writes_fill_the_unsent_tail_then_new_skbs_and_a_sent_skb_is_never_refilled():
    wq = WriteQueue()
    wq.append(16384, GOAL, 0)
    wq.append(16384, GOAL, 0)                    # into the unsent tail: one skb of 32 KiB
    assert list(wq.ends) == [32768]
    wq.append(65536, GOAL, 0)                    # tail filled to size_goal, the rest a new skb
    assert list(wq.ends) == [GOAL, 32768 + 65536]
    wq.sent(wq.write_seq)                        # everything left: the next write starts a new skb
    wq.append(100, GOAL, wq.write_seq)
    assert len(wq) == 1 and wq.tail_len(wq.write_seq - 100) == 100


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 300_000), st.integers(0, 100_000), st.integers(0, GOAL)),
                min_size=1, max_size=30))
def test_write_queue_conserves_bytes_and_keeps_skbs_within_size_goal(ops):
    wq, snd_nxt, written = WriteQueue(), 0, 0
    for nbytes, send, grow in ops:
        wq.append(nbytes, GOAL, snd_nxt)
        written += nbytes
        if grow and len(wq) > 1 and wq.ends[0] - snd_nxt + grow <= GOAL:
            wq.grow_head(snd_nxt, grow)                       # tcp_grow_skb never beyond what tcp_tso_segs allows
        snd_nxt = min(snd_nxt + send, wq.write_seq)
        wq.sent(snd_nxt)
        starts = [snd_nxt] + list(wq.ends)[:-1]
        lens = [e - s for s, e in zip(starts, wq.ends)]
        assert wq.write_seq == written
        assert sum(lens) == written - snd_nxt                 # every unsent byte in exactly one skb
        assert all(0 < n <= GOAL for n in lens)


def _veth_scenario(length: int) -> dict:
    """Two namespaces on a Linux bridge (container veths, offloads on), one iperf3 -l ``length``."""
    vm = {"host": "h", "vif": "container-veth", "bridge": "br"}
    return {
        "scenario": {"name": "writes", "duration": "0.3s", "reps": 1, "seed": 5, "profile": "default"},
        "host": [{"name": "h", "cores": 2}],
        "bridge": [{"name": "br", "host": "h", "kind": "linux"}],
        "vm": [{"name": "a", **vm}, {"name": "b", **vm}],
        "workload": [{"name": "tcp", "tool": "iperf", "proto": "tcp", "from": "a", "to": "b",
                      "O": "0.05s", "t": "0.2s", "l": length}],
    }


def _skb_payloads(monkeypatch, length: int):
    """Payload of every new-data skb the iperf3 client's socket sends, and the run's summary."""
    sizes: list[int] = []
    orig = sender_mod.TcpSender._transmit

    def record(self, seq, n, now, new, segs=1):
        if new and self.bulk_until is not None:
            sizes.append(n)
        return orig(self, seq, n, now, new, segs)
    monkeypatch.setattr(sender_mod.TcpSender, "_transmit", record)
    res = run_scenario(from_dict(_veth_scenario(length), file="x"), reps=1)
    return sizes, res.summary


def test_skbs_follow_the_writes_on_an_unloaded_veth_path(monkeypatch):
    """A veth frees each skb's charge at once, so nothing autocorks: a 16 KiB write leaves as one skb
    of its own (its last part-segment held by Nagle joins the next write), a 128 KiB write as two
    gso_max-sized skbs and its 752-byte rest (Linux on a bare veth pair: 25.2 and 55.0 KB per skb)."""
    small, _ = _skb_payloads(monkeypatch, 16384)
    big_skbs = [n for n in small if n >= MSS]
    near = [n for n in big_skbs if abs(n - 16384) <= MSS]
    assert len(near) >= 0.8 * len(big_skbs)             # the rest: writes piled up while cwnd-limited
    assert max(small) <= GOAL
    monkeypatch.undo()
    big, _ = _skb_payloads(monkeypatch, 131072)
    assert statistics.median(big) == GOAL
    assert statistics.mean(big) > 2 * statistics.mean(small)


def _slow_free_path(hold: float):
    """a -> an element that frees each skb's socket charge ``hold`` s after it arrives -> b."""
    env = simpy.Environment()
    a = Endpoint(env, "a", features=resolve("kvm-tap"), tsq=True)
    b = Endpoint(env, "b", features=resolve("kvm-tap"))

    class Free:
        def put(self, p):
            if p.owner is not None:
                p.owner.tsq_free(p, env.now + hold)
            fwd.put(p)
    fwd = EgressPort(env, 10e9, {"kind": "pfifo", "limit": 10**5}, b, lookahead=True, prop_delay=20e-6)
    a.out, b.out = Free(), EgressPort(env, 10e9, {"kind": "pfifo", "limit": 10**5}, a, lookahead=True,
                                      prop_delay=20e-6)
    return env, a, b


@pytest.mark.parametrize("hold", [0.0, 1e-3])
def test_autocorking_coalesces_writes_while_an_skb_of_the_socket_is_below_it(hold):
    env, a, b = _slow_free_path(hold)
    c, s = connect(env, a, b, 5001, client={"nodelay": True})
    c.sender.snd_wnd = c.sender.max_window = 1 << 22
    c.sender.cwnd = 1000
    sent: list[int] = []
    orig = c.sender._transmit
    c.sender._transmit = lambda seq, n, now, new, segs=1: (sent.append(n), orig(seq, n, now, new, segs))

    def writes(_):
        for _ in range(8):
            c.write(4000)
    call_at(env, 0.001, writes)
    env.run(until=0.2)
    assert s.receiver.bytes_received == 8 * 4000                     # bytes conserved
    if hold:
        # tcp_should_autocork: a write stays in the unsent tail while the socket's charges below it
        # (sk_wmem_alloc) exceed the tail's truesize; the tail goes once it outgrows them (after 2
        # writes: 8832 > 4833, then after 4: 16832 > 13665), the last write at TX completion
        assert sent == [4000, 2 * 4000, 4 * 4000, 4000]
        assert c.sender.wmem_queued == 0
    else:
        assert sent == [4000] * 8                                     # freed at once: nothing corks


def test_same_seed_same_skbs(monkeypatch):
    first, s1 = _skb_payloads(monkeypatch, 16384)
    monkeypatch.undo()
    second, s2 = _skb_payloads(monkeypatch, 16384)
    assert first == second and s1.equals(s2)


def test_grow_skb_fills_the_head_from_the_next_skb_only():
    wq = WriteQueue()
    for _ in range(3):
        wq.append(GOAL, GOAL, 0)
    assert wq.grow_head(GOAL - 5000, 8000) == GOAL + 8000      # a 5000-byte head takes 8000 bytes...
    assert list(wq.ends) == [GOAL + 8000, 2 * GOAL, 3 * GOAL]
    assert wq.grow_head(GOAL, 10 ** 6) == 2 * GOAL               # ...or the whole next skb, never more
    assert list(wq.ends) == [2 * GOAL, 3 * GOAL]
    assert wq.grow_head(2 * GOAL, 10 ** 6) == 3 * GOAL and len(wq) == 1
    assert wq.tail_len(2 * GOAL) == GOAL                          # the grown head is the tail now


def test_grow_skb_leaves_the_write_queues_last_skb_as_it_is():
    # tcp_grow_skb returns at once when the head is the last skb (tcp_skb_is_last): with the writer
    # behind, the remainder of a 45-segment skb after two 16-segment cuts leaves as 13 segments
    mss = 1448
    wq = WriteQueue()
    wq.append(45 * mss, 45 * mss, 0)
    wq.sent(16 * mss)
    wq.sent(32 * mss)
    assert wq.grow_head(32 * mss, 3 * mss) == 45 * mss and list(wq.ends) == [45 * mss]
    wq.append(45 * mss, 45 * mss, 32 * mss)             # the writer in time: tcp_sendmsg tops the unsent tail up
    assert list(wq.ends) == [77 * mss, 90 * mss]        # to size_goal itself, and the head is not short
