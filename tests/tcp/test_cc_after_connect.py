"""A congestion control set on the established socket (iperf3 -C) keeps the pacing of the module the
connection started under: ``bbr_init`` sets SK_PACING_NEEDED and ``tcp_reinit_congestion_control``
(net/ipv4/tcp_cong.c) does not clear it, so on a host whose default is BBR ``iperf3 -C cubic`` is a
paced CUBIC (measured on this host: one 64 KB skb every 4.2 ms from the pacing timer, at ss's
pacing_rate).  And ``tcp_tso_should_defer`` sends when the window has room for a full-sized TSO skb,
whatever the length of the skb at the head, so a paced flow whose writer leaves its window unused
stops growing cwnd (``tcp_is_cwnd_limited``), as Linux's cwnd stopped at 2276 with 1900-2170 segments
in flight behind a 100 Mbit/s HTB."""
from __future__ import annotations

import pytest

from ovssim.path.port import EgressPort
from ovssim.tcp.buffers import TcpSysctls
from ovssim.tcp.connection import connect
from ovssim.workloads.iperf_tcp import IperfTcp


def _sock(make_path, default: str, **kw):
    p = make_path()
    p.a.tcp_sysctls = TcpSysctls(congestion_control=default)
    c, _ = connect(p.env, p.a, p.b, 5201, **kw)
    return c


def test_cubic_set_after_connect_on_a_bbr_host_is_paced(make_path):
    c = _sock(make_path, "bbr", cc="cubic", cc_after_connect=True)
    assert c.sender.cc.name == "bbr"              # established under the host's default
    c.set_congestion_control()                    # the application's setsockopt(TCP_CONGESTION)
    assert c.sender.cc.name == "cubic"
    assert c.sender.pacing


@pytest.mark.parametrize("default, kw", [
    ("bbr", {"cc": "cubic"}),                               # set before connect: CUBIC from the start
    ("cubic", {"cc": "cubic", "cc_after_connect": True}),   # started under CUBIC: never asked for pacing
    ("cubic", {}),
])
def test_cubic_is_not_paced_unless_it_started_under_bbr(make_path, default, kw):
    c = _sock(make_path, default, **kw)
    c.set_congestion_control()
    assert c.sender.cc.name == "cubic" and not c.sender.pacing


def test_bbr_is_paced_however_it_was_chosen(make_path):
    c = _sock(make_path, "cubic", cc="bbr", cc_after_connect=True)
    c.set_congestion_control()
    assert c.sender.cc.name == "bbr" and c.sender.pacing
    assert _sock(make_path, "bbr").sender.pacing


def test_writing_data_applies_a_pending_congestion_control(make_path):
    c = _sock(make_path, "bbr", cc="cubic", cc_after_connect=True)
    c.bulk(0.01)
    assert c.sender.cc.name == "cubic" and c.pending_cc is None


def test_the_cookie_ack_is_processed_under_bbr_then_cubic_starts_fresh(make_path):
    """iperf3 writes its 37-byte cookie, then sets -C: on a veth the cookie's ACK is in before the
    setsockopt, so BBR (STARTUP: cwnd += acked) takes cwnd 10 -> 11 -- Linux's first CUBIC data flight
    here was 11 segments (tcp_probe) -- and CUBIC's init then starts HyStart's round at the cookie's end
    with no minimum RTT yet (cubictcp_init zeroes its state)."""
    p = make_path()
    p.a.tcp_sysctls = TcpSysctls(congestion_control="bbr")
    c, _ = connect(p.env, p.a, p.b, 5201, cc="cubic", cc_after_connect=True)
    c.write(37, before_setsockopt=True)
    c.set_congestion_control_once_acked()
    assert c.sender.cc.name == "bbr"
    p.env.run(until=0.05)                         # the path's round trip is 10 ms
    cc = c.sender.cc
    assert cc.name == "cubic" and c.sender.pacing
    assert c.sender.cwnd == 11
    assert cc.delay_min == 0.0 and cc.end_seq == 37 and not cc.found


def test_iperf3_sets_congestion_control_after_connect_iperf2_does_not():
    assert IperfTcp.from_spec({"tool": "iperf3", "proto": "tcp", "C": "cubic"}).cc_after_connect
    assert not IperfTcp.from_spec({"tool": "iperf", "proto": "tcp", "C": "cubic"}).cc_after_connect


def _htb_100mbit_flow(make_path, default: str):
    """A bulk ``-C cubic`` flow (set after connect) behind a 100 Mbit/s HTB on a port after the sender's
    device (no TCP Small Queues, as behind a bridge), GSO on, tcp_wmem[2] = 4 MB: samples of
    (cwnd, in-flight, unsent bytes) every 50 ms over the last 2 of 8 s."""
    htb = {"kind": "htb", "default": "10",
           "classes": [{"classid": "1:10", "parent": "1:", "rate": "100mbit", "ceil": "100mbit"}]}
    p = make_path(rate=10e9, delay=0.0001)
    p.a.out = EgressPort(p.env, 10e9, htb, out=p.b, prop_delay=0.0001, name="htb")
    p.a.gso = p.b.gso = True
    p.a.tcp_sysctls = TcpSysctls(congestion_control=default)
    c, _ = connect(p.env, p.a, p.b, 5201, cc="cubic", cc_after_connect=True)
    s = c.sender
    rows = []

    def sample(_=None):
        if p.env.now >= 6.0:
            rows.append((s.cwnd, s.in_flight, s.wq.write_seq - s.snd_nxt))
        p.env.timeout(0.05).callbacks.append(sample)
    sample()
    c.bulk(8.0)
    p.env.run(until=8.0)
    return s, rows


def test_a_paced_flow_its_writer_leaves_below_cwnd_stops_growing_cwnd(make_path):
    s, rows = _htb_100mbit_flow(make_path, "bbr")
    assert s.pacing
    flight = max(f for _, f, _ in rows)
    # in flight stays below what the 4 MB buffer holds, with bytes waiting unsent behind the pacing
    assert flight < 0.85 * s.sndbuf / s.mss
    assert max(n for _, _, n in rows) > 500_000
    # the window stopped where the flow stopped using it (tcp_is_cwnd_limited), not at the buffer
    assert s.cwnd < 1.15 * flight
    assert rows[0][0] == rows[-1][0]


def test_an_unpaced_flow_fills_its_send_buffer_and_cwnd_follows(make_path):
    s, rows = _htb_100mbit_flow(make_path, "cubic")
    assert not s.pacing
    assert max(f for _, f, _ in rows) > 0.9 * s.sndbuf / s.mss
