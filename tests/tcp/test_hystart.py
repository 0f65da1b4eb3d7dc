"""HyStart as Linux 6.x runs it (net/ipv4/tcp_cubic.c ``hystart_update``, ``hystart_ack_delay``).

The delay test needs HYSTART_MIN_SAMPLES = 8 RTT samples in one round, one per ACK.  Behind a
shaper that releases 64 KB GSO skbs whole (HTB on a bridge port, data/local/tcp_window) the
receiver ACKs once per 45-segment skb, so slow start runs until a round holds 8 skbs: this
host's kernel left slow start at cwnd 855, 914 and 1256 behind a 20 Mbit/s HTB.  With MSS
frames (an ACK per two segments) the same test fires within a few rounds.
"""
import pytest

from ovssim.path.port import EgressPort
from ovssim.tcp import connect
from ovssim.tcp.cubic import Cubic

HTB_20MBIT = {"kind": "htb", "default": "10",
              "classes": [{"classid": "1:10", "parent": "1:", "rate": "20mbit", "ceil": "20mbit"}]}


def _exit_cwnd(make_path, gso: bool) -> int:
    """Slow start's end behind an HTB of 20 Mbit/s on a veth-fast link (probe.py --bridge)."""
    p = make_path(rate=10e9, delay=25e-6, limit=1000)
    p.a.out = EgressPort(p.env, 10e9, HTB_20MBIT, out=p.b, prop_delay=25e-6, name="htb")
    p.a.gso = gso
    c, _ = connect(p.env, p.a, p.b, 5001, cc="cubic")
    c.sender.bulk(3.0)
    p.env.run(until=3.0)
    assert c.sender.cc.hystart_exits == 1 and c.sender.retransmits == 0
    return c.sender.ssthresh


def test_one_ack_per_gso_skb_keeps_slow_start_going_until_a_round_holds_8_skbs(make_path):
    segs = 45                                      # (65536 - MAX_TCP_HEADER - 1) // 1448
    with_gso = _exit_cwnd(make_path, gso=True)
    assert 8 * segs <= with_gso <= 1256 * 1.1      # the measured exits: 855, 914, 1256
    assert _exit_cwnd(make_path, gso=False) < 8 * segs // 2


class _Sock:
    pacing = pacing_fq = False
    gso_max_bytes = 65536 - 193


@pytest.mark.parametrize("rate, delay", [(0.0, 0.0), (1e6, 0.001), (1e9, 4 * (65536 - 193) / 1e9)])
def test_ack_delay_is_four_gso_skbs_at_the_pacing_rate_capped_at_1ms(rate, delay):
    cc = Cubic()
    s = _Sock()
    s.pacing_rate = rate
    cc.s = s
    assert cc._ack_delay() == pytest.approx(delay)
