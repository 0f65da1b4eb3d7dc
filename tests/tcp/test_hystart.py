"""HyStart as Linux 6.x runs it (net/ipv4/tcp_cubic.c ``hystart_update``, ``hystart_ack_delay``).

The delay test needs HYSTART_MIN_SAMPLES = 8 RTT samples in one round, one per ACK.  Behind a
shaper that releases 64 KB GSO skbs whole (HTB on a bridge port, data/local/tcp_window) the
receiver ACKs once per 45-segment skb, so slow start runs until a round holds 8 skbs: this
host's kernel left slow start at cwnd 855, 914 and 1256 behind a 20 Mbit/s HTB.  With MSS
frames (an ACK per two segments) the same test fires within a few rounds.
"""
import gzip
import json
import re
from pathlib import Path

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


# -- where HyStart's rounds start: measured on this host (data/local/tcp_window/2026-11-28-trace) ----------
TRACE = Path(__file__).resolve().parents[2] / "data" / "local" / "tcp_window" / "2026-11-28-trace"
PROBE = re.compile(r"\s(\d+\.\d+): tcp_probe: .*src=(\S+) dest=(\S+) .*snd_nxt=(0x[0-9a-f]+) "
                   r"snd_una=(0x[0-9a-f]+) snd_cwnd=(\d+) ssthresh=(\d+)")


def _sender_acks(name: str):
    """The data flow's tcp_probe rows at the sender (state before each ACK): (t, una, nxt, cwnd, ssthresh),
    sequence numbers from the cookie's first byte; the first row is the cookie's ACK."""
    with gzip.open(TRACE / name, "rt") as fh:
        trace = json.load(fh)["trace"]
    flows: dict = {}
    for line in trace.splitlines():
        m = PROBE.search(line)
        if m and m.group(3).endswith(":5201"):
            flows.setdefault(m.group(2), []).append(m.groups())
    rows = max(flows.values(), key=len)
    base = int(rows[0][4], 16)
    return [(float(t), (int(una, 16) - base) % 2**32, (int(nxt, 16) - base) % 2**32, int(cwnd), int(ssth))
            for t, _, _, nxt, una, cwnd, ssth in rows]


class _Env:
    _now = 0.0


class _Sender:
    pacing, pacing_fq, pacing_rate, gso_max_bytes = True, False, 0.0, 65536 - 193

    def __init__(self):
        self.env = _Env()
        self.snd_una = self.snd_nxt = 0
        self.cwnd, self.ssthresh = 10, 2**31 - 1


def _replay(rows, low_window_gates_the_round: bool = False):
    """Feed CUBIC the measured ACKs (each one's RTT: now minus when the newest byte it acks was sent, i.e.
    the ACK after which snd_nxt passed it); the cwnd at which HyStart ends slow start."""
    sent = lambda seq: next(rows[j][0] for j in range(len(rows) - 1) if rows[j + 1][2] > seq)
    s = _Sender()
    t0, _, cookie_end, _, _ = rows[0]
    s.env._now, s.snd_nxt = t0, cookie_end          # -C set after the cookie (iperf_create_streams)
    cc = Cubic()
    cc.attach(s)
    for i in range(1, len(rows) - 1):
        t, una, nxt, cwnd, _ = rows[i]
        una_after = rows[i + 1][1]
        if una_after <= una:
            continue
        s.env._now, s.snd_una, s.snd_nxt, s.cwnd = t, una_after, nxt, cwnd
        rtt = max(t - sent(una_after - 1), 1e-6)
        if low_window_gates_the_round and cwnd < 16:     # the rule before: no hystart_update below 16
            cc.delay_min = rtt if not cc.delay_min or rtt < cc.delay_min else cc.delay_min
            continue
        cc.on_rtt(rtt, t)
        if cc.found:
            return cwnd
    return None


@pytest.mark.parametrize("name, linux, gated", [
    ("bridge_htb_10mbit_P1_cubic_1795851758.json.gz", 1004, 779),
    ("bridge_htb_10mbit_P1_cubic_1795851943.json.gz", 1424, 1154),
    ("bridge_htb_20mbit_P1_cubic_1795852558.json.gz", 1424, 1154),
])
def test_hystart_rounds_start_at_the_first_ack_as_this_hosts_kernel_counts_them(name, linux, gated):
    """6.18's hystart_update resets the round before it tests hystart_low_window, so rounds are counted
    from the first data ACK (cwnd 11); which round first holds 9 ACKs (one per 64 KB skb) decides the
    exit.  Replayed on the kernel's own ACKs (tcp_probe), the model ends slow start at the cwnd Linux did
    (its ssthresh; nstat TcpExtTCPHystartDelayCwnd); rounds that start only at cwnd 16 end it earlier."""
    rows = _sender_acks(name)
    assert next(ssth for *_, ssth in rows if ssth < 2**31 - 1) == linux
    assert _replay(rows) == linux
    assert _replay(rows, low_window_gates_the_round=True) == gated


def test_a_round_starts_below_the_low_window():
    s = _Sender()
    cc = Cubic()
    cc.attach(s)
    s.snd_nxt, s.cwnd = 11 * 1448, 11
    s.snd_una = 5 * 1448
    cc.on_rtt(0.001, 0.001)                 # cwnd 11 < 16: no detection, but the round starts here
    assert cc.end_seq == 11 * 1448 and cc.round_start == 0.001 and cc.sample_cnt == 0
