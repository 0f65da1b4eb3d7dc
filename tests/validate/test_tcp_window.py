"""The tcp_window validation section (ovssim/validate/tcp_window.py) against this host's measurements."""
import numpy as np
import pytest

from ovssim.validate.tcp_window import DATA, measured, simulate, window


def test_ping_window_is_probes_icmp_seq_30_to_170():
    # ping -i 0.05 from 0 s, iperf3 from 0.5 s for 8 s: probe.py keeps icmp_seq 30..170 (1-based)
    seqs = np.arange(1, 200, dtype=float)
    kept = window(seqs, 8.0)
    assert kept[0] == 30 and kept[-1] == 170


@pytest.mark.skipif(not DATA.is_dir(), reason="no data/local/tcp_window")
def test_cubic_behind_a_bridge_port_htb_is_within_the_real_runs_spread():
    # three real runs of HTB 20 Mbit/s, one CUBIC flow: mean RTT 717-918 ms (HyStart at cwnd 855-1256)
    runs = measured()[("htb", "20mbit", 1, "cubic")]
    real = [r["summary"]["ping_mean_ms"] for r in runs]
    sim, = simulate(runs[0]["args"], reps=1)
    assert 0.9 * min(real) <= sim["ping_mean_ms"] <= 1.1 * max(real)
    assert sim["mbps"] == pytest.approx(np.mean([r["summary"]["mbps"] for r in runs]), rel=0.03)
