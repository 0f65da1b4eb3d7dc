"""TCP behaviour that differs between kernel versions (a VM's ``kernel`` key) and ``tcp_cwnd_validate``.

* An skb head's truesize: Linux >= 6.3 takes it from the 576-byte small-head cache (832 with the
  sk_buff), older kernels from kmalloc (a distribution kernel's 320 + 320 -> 1024, so 1280); inside
  UML's 6.1, ``ss -tinm`` showed skmem t = unacked x 2728 for 1448-byte segments
  (data/uml/2026-11-25/uml-window).
* ``tcp_grow_skb`` (Linux >= 6.10, "tcp: try to send bigger TSO packets"): a head skb shorter than the
  congestion window's quota takes bytes of the next unsent skb.  Before it an skb sent never spans two
  of the write queue's skbs, and an skb ``tcp_write_xmit`` cut (``tso_fragment``) before
  ``tcp_small_queue_check`` held it back keeps that size when it leaves.
* ``tcp_cwnd_validate`` (net/ipv4/tcp_output.c, since 6.1): a window found cwnd-limited stays so until
  snd_una passes the snd_nxt of that moment; ``max_packets_out`` is the most segments out in the window.
"""
from __future__ import annotations

import pytest

from ovssim.errors import ConfigError
from ovssim.path.port import EgressPort
from ovssim.scenario import from_dict
from ovssim.tcp.buffers import tcp_skb_head_truesize, tcp_skb_truesize
from ovssim.tcp.connection import connect
from ovssim.tcp.write_queue import WriteQueue


def test_an_skb_head_costs_what_each_kernels_allocator_gives():
    assert tcp_skb_head_truesize() == 576 + 256                  # small-head cache + sk_buff (6.3+)
    assert tcp_skb_head_truesize((6, 18)) == tcp_skb_head_truesize()
    assert tcp_skb_head_truesize((6, 1)) == 1024 + 256           # kmalloc-1024 + sk_buff
    assert tcp_skb_truesize(1448, tcp_skb_head_truesize((6, 1))) == 2728     # measured in UML's 6.1


def _htb_flow(make_path, kernel):
    """A CUBIC flow with GSO and TSQ behind a 20 Mbit/s HTB on the sender's own device, on ``kernel``:
    (path, connection, sender)."""
    htb = {"kind": "htb", "default": "10",
           "classes": [{"classid": "1:10", "parent": "1:", "rate": "20mbit", "ceil": "20mbit"}]}
    p = make_path(rate=10e9, delay=0.002, limit=1000)
    p.a.out = EgressPort(p.env, 10e9, htb, out=p.b, prop_delay=0.002, name="htb")
    p.a.gso = True
    p.a.tsq = True
    p.a.kernel = kernel
    c, _ = connect(p.env, p.a, p.b, 5001, cc="cubic")
    return p, c, c.sender


def _sent_skbs_and_write_queue_ends(make_path, kernel):
    """A bulk CUBIC flow behind a 20 Mbit/s HTB on the sender's own device (cwnd far below a 45-segment
    write-queue skb, so every skb is cut to the window's quota): each new-data skb sent (seq, end) and
    the end of every write-queue skb once another was built after it (its final end)."""
    p, c, s = _htb_flow(make_path, kernel)
    ends, sent = set(), []
    append = WriteQueue.append

    def record_append(wq, *args, **kw):
        out = append(wq, *args, **kw)
        ends.update(list(wq.ends)[:-1])           # skbs with one after them: no write fills them any more
        return out
    transmit = s._transmit

    def record(seq, n, now, new, segs=1):
        if new:
            sent.append((seq, seq + n, segs, s.cwnd))
        transmit(seq, n, now, new, segs)
    s._transmit = record
    s.wq.append = record_append.__get__(s.wq)
    c.bulk(2.0)
    p.env.run(until=2.0)
    return sent, ends


@pytest.mark.parametrize("kernel", [(6, 1), None])
def test_only_kernels_with_tcp_grow_skb_send_an_skb_across_two_written_skbs(make_path, kernel):
    sent, ends = _sent_skbs_and_write_queue_ends(make_path, kernel)
    assert len(sent) > 200
    assert all(segs <= max(cwnd >> 1, 1) for _, _, segs, cwnd in sent)      # tcp_cwnd_test's quota
    spanning = [(a, b) for a, b, _, _ in sent if any(a < e < b for e in ends)]
    if kernel == (6, 1):
        assert not spanning                       # the remainder of a cut skb leaves on its own
        small = sum(1 for a, b, segs, cwnd in sent if segs < max(cwnd >> 1, 1) // 2)
        assert small > len(sent) // 10            # ... as a short skb
    else:
        assert len(spanning) > len(sent) // 4     # tcp_grow_skb refills the head from the next skb


def test_a_window_found_cwnd_limited_stays_limited_until_its_data_is_acked(make_path):
    p = make_path()
    c, _ = connect(p.env, p.a, p.b, 5001)
    s = c.sender
    s.cwnd, s.ssthresh = 40, 20                   # congestion avoidance
    mss = s.mss
    s.snd_una, s.snd_nxt = 0, 40 * mss
    s._cwnd_validate(True, 40)                    # a push stopped on the window at snd_nxt = 40 MSS
    assert s.window_used()
    s.snd_una, s.snd_nxt = 10 * mss, 45 * mss
    s._cwnd_validate(False, 35)                   # later pushes stopped on something else (TSQ, pacing)...
    assert s.window_used() and s.max_packets_out == 40
    s.snd_una = 40 * mss
    s._cwnd_validate(False, 5)                    # ...until the limited window's data is acknowledged
    assert not s.window_used() and s.max_packets_out == 5
    s.cwnd, s.ssthresh = 8, 1 << 30               # slow start: grow while cwnd < 2 x max_packets_out
    assert s.window_used()
    s.snd_nxt = 41 * mss
    s._cwnd_validate(False, 3)                    # within the window a smaller flight does not lower it
    assert s.max_packets_out == 5
    s._cwnd_validate(False, 6)                    # a larger one raises it
    assert s.max_packets_out == 6


def _two_containers(**vm_a) -> dict:
    return {"scenario": {"name": "k", "duration": "1s"}, "host": [{"name": "h"}],
            "bridge": [{"name": "br", "host": "h", "kind": "linux"}],
            "vm": [{"name": "a", "host": "h", "vif": "container-veth", "bridge": "br", **vm_a},
                   {"name": "b", "host": "h", "vif": "container-veth", "bridge": "br"}],
            "workload": [{"name": "p", "tool": "ping", "from": "a", "to": "b"}]}


@pytest.mark.parametrize("bad", ["six", "6", 6.1, "6.1.x"])
def test_a_vm_kernel_must_be_a_linux_version(bad):
    with pytest.raises(ConfigError, match="kernel must be a Linux version"):
        from_dict(_two_containers(kernel=bad), file="<test>")
    from_dict(_two_containers(kernel="6.1"), file="<test>")


@pytest.mark.parametrize("bad", ["no", 0, "false"])
def test_veth_orphans_must_be_true_or_false(bad):
    with pytest.raises(ConfigError, match="veth_orphans must be true or false"):
        from_dict(_two_containers(veth_orphans=bad), file="<test>")


def _throttled_cuts_and_next_sends(make_path, kernel):
    """The HTB flow of :func:`_sent_skbs_and_write_queue_ends`: each skb TCP Small Queues held back
    (its start and length: the cut to the window's quota of that moment), the length of the
    new-data skb that next left from that start and ``tcp_tso_segs`` (bytes) when it left."""
    p, c, s = _htb_flow(make_path, kernel)
    held, pairs = {}, []
    tsq_full = s._tsq_full

    def record_check(nbytes):
        full = tsq_full(nbytes)
        if full:
            held.setdefault(s.snd_nxt, nbytes)    # the first cut held at this sequence
        return full
    transmit = s._transmit

    def record_send(seq, n, now, new, segs=1):
        if new and seq in held:
            pairs.append((held.pop(seq), n, s.tso_segs() * s.mss))
        transmit(seq, n, now, new, segs)
    s._tsq_full = record_check
    s._transmit = record_send
    c.bulk(2.0)
    p.env.run(until=2.0)
    return pairs


@pytest.mark.parametrize("kernel", [(6, 1), None])
def test_an_skb_cut_before_tsq_held_it_keeps_its_size_without_tcp_grow_skb(make_path, kernel):
    """tcp_write_xmit cuts the head skb (``tso_fragment``) before ``tcp_small_queue_check``: an skb TSQ
    holds back stays cut at the quota of that moment, and on 6.1 it leaves at that size however far the
    window has opened since -- cut again only when ``tcp_tso_segs`` (the pacing rate's 1 ms, which falls as
    srtt grows) is smaller by then (``tcp_mss_split_point``'s limit, ``tso_fragment``); ``tcp_grow_skb``
    (6.10+) refills it from the next skb first."""
    pairs = _throttled_cuts_and_next_sends(make_path, kernel)
    assert len(pairs) > 50
    grown = sum(1 for cut, sent, _ in pairs if sent > cut)
    if kernel == (6, 1):
        assert grown == 0
        assert all(sent == min(cut, goal) for cut, sent, goal in pairs)
        assert sum(1 for cut, sent, _ in pairs if sent == cut) > len(pairs) // 2
    else:
        assert grown > len(pairs) // 20           # the window opened while it was held
