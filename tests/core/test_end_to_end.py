"""The whole path behaves as physics says: offered load passes below capacity, excess is lost above it."""
import pytest

from ovssim.packet import ETH_PREAMBLE_FCS_IFG, udp_frame_size
from ovssim.runner import run_scenario
from ovssim.scenario import load_scenario
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "thesis_kvm_ovs.toml"


def _sc(rate, duration="1s", **changes):
    sc = load_scenario(EXAMPLE)
    return sc.replace(**{"workload.udp.b": rate, "scenario.duration": duration, **changes})


def test_udp_below_capacity_passes_everything():
    res = run_scenario(_sc("50mbit"), reps=2)
    s = res.summary.set_index(["workload", "metric"])["mean"]
    assert s[("udp", "loss")] == 0.0
    assert s[("udp", "throughput")] == pytest.approx(50.0, rel=0.002)
    assert s[("ping", "rtt_mean")] > 0


def test_udp_above_capacity_is_capped_at_line_rate():
    res = run_scenario(_sc("120mbit"), reps=1)
    s = res.summary.set_index(["workload", "metric"])["mean"]
    frame = udp_frame_size(1470) + ETH_PREAMBLE_FCS_IFG
    goodput_cap = 100.0 * 1470 / frame                      # payload share of the 100 Mbit/s wire
    assert s[("udp", "throughput")] == pytest.approx(goodput_cap, rel=0.01)
    # fluid model: the NIC's 1000-packet queue (txqueuelen) absorbs the first excess, the rest is dropped
    lam = 120e6 / (1470 * 8)
    mu = 100e6 / (frame * 8)
    dropped = (lam - mu) * 1.0 - 1000
    assert s[("udp", "loss")] == pytest.approx(100 * dropped / lam, abs=0.5)


def test_replications_are_deterministic_and_independent():
    a = run_scenario(_sc("95mbit", "0.5s"), reps=2, seed=5).per_rep
    b = run_scenario(_sc("95mbit", "0.5s"), reps=2, seed=5).per_rep
    assert a.equals(b)
    jit = a.query("workload == 'udp' and metric == 'jitter'")["value"].tolist()
    assert jit[0] != jit[1]


def test_linux_bridge_and_veth_chain_run():
    sc = load_scenario(EXAMPLE).replace(**{"bridge.br0.kind": "linux", "bridge.br0.chain": 3,
                                           "bridge.br0.link": "veth", "scenario.duration": "0.5s"})
    res = run_scenario(sc, reps=1)
    s = res.summary.set_index(["workload", "metric"])["mean"]
    assert s[("udp", "loss")] == 0.0
