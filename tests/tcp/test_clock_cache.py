"""``tcp_tso_should_defer`` decides on ``tp->tcp_clock_cache``, read once per ``tcp_write_xmit``.

``tcp_write_xmit`` refreshes the clock (``tcp_mstamp_refresh``) once and every skb of its loop is sent with
``skb->tstamp = max(tcp_wstamp_ns, tcp_clock_cache)`` (``__tcp_transmit_skb``), so an rtx head sent earlier in
the same loop has its ACK a whole srtt away and the "ACK expected within min(srtt/2, 1 ms)" deferral cannot
hold: the loop sends what the window allows.  The model cuts a loop where the sender's core is busy (run to
completion) and resumes it later in simulated time; the resumed loop keeps its start's clock.

Measured on this host (data/local/tcp_window/2026-11-28-trace, tcp:tcp_probe at the receiver, bridge HTB
10/20 Mbit/s P1 CUBIC): the first flight after iperf3's cookie (cwnd 11, srtt ~13 us from the cookie) is
three skbs of 5, 5 and 1 segments in every run -- the whole window, the third sent although the head was
sent more than srtt/2 before in wall time.  Without the clock cache the model deferred the 1-segment skb
(its head sent 12 us earlier with srtt 8 us) and each slow-start round began a few segments short.
"""
import gzip
import json
import re
from pathlib import Path

import pytest

from ovssim.runner import run_scenario
from ovssim.tcp import sender as sender_mod
from ovssim.validate import tcp_window
from ovssim.validate.base import CALIBRATION

TRACE = Path(__file__).resolve().parents[2] / "data" / "local" / "tcp_window" / "2026-11-28-trace"
PROBE = re.compile(r"tcp_probe: .*src=(\S+) dest=(\S+) .*data_len=(\d+)")


def _linux_first_skbs(name: str, n: int = 3) -> list[int]:
    """Segments of the first ``n`` data skbs the receiver processed after the cookie (37 bytes)."""
    with gzip.open(TRACE / name, "rt") as fh:
        trace = json.load(fh)["trace"]
    rows = [m.groups() for m in map(PROBE.search, trace.splitlines()) if m]
    port = max({s for s, d, _ in rows if d.endswith(":5201")},
               key=lambda s: sum(1 for r in rows if r[0] == s)).rsplit(":", 1)[1]
    lens = [int(dl) for s, d, dl in rows if d.endswith(":" + port) and int(dl) > 0]
    assert lens[0] == 37                      # iperf3's cookie
    return [x // 1448 for x in lens[1:1 + n]]


@pytest.mark.parametrize("name", sorted(p.name for p in TRACE.glob("bridge_htb_*mbit_P1_cubic_*.json.gz")))
def test_linux_first_flight_is_the_whole_window(name):
    assert _linux_first_skbs(name) == [5, 5, 1]


def test_model_first_flight_is_the_whole_window_as_linux():
    args = {"bridge": True, "shaper": "htb", "rate": "20mbit", "flows": 1, "cc": "cubic", "time": 1}
    skbs = {}
    transmit = sender_mod.TcpSender._transmit

    def tx(self, seq, n, now, new, segs=1):
        if new:
            skbs.setdefault(self, []).append(n)
        return transmit(self, seq, n, now, new, segs)
    sender_mod.TcpSender._transmit = tx
    try:
        run_scenario(tcp_window.scenario(args), reps=1, seed=1,
                     profile=str(CALIBRATION / f"{tcp_window.PROFILE}.toml"))
    finally:
        sender_mod.TcpSender._transmit = transmit
    data = max(skbs.values(), key=sum)
    assert data[0] == 37
    assert [n // 1448 for n in data[1:4]] == _linux_first_skbs(
        "bridge_htb_20mbit_P1_cubic_1795852558.json.gz") == [5, 5, 1]
