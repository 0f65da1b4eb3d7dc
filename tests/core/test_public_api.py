"""The public API: every exported name imports, elements take tc's units, degenerate specs are errors,
and the Source element's output is what queueing theory says."""
from __future__ import annotations

import math

import numpy as np
import pytest
import simpy
from hypothesis import given, settings, strategies as st

import ovssim
from ovssim.errors import ConfigError, OvssimError


def test_every_exported_name_imports():
    assert len(ovssim.__all__) > 40
    for name in ovssim.__all__:
        assert getattr(ovssim, name) is not None, name
        assert name in dir(ovssim)
    with pytest.raises(AttributeError):
        ovssim.no_such_name  # noqa: B018


def test_port_takes_tc_units():
    env = simpy.Environment()
    a = ovssim.EgressPort(env, "10mbit", {"kind": "pfifo"}, ovssim.Sink(env), prop_delay="2ms")
    b = ovssim.EgressPort(env, 10e6, {"kind": "pfifo"}, ovssim.Sink(env), prop_delay=0.002)
    assert a.rate_bps == b.rate_bps == 10e6 and a.prop_delay == b.prop_delay == 0.002
    with pytest.raises(OvssimError, match="greater than zero"):
        ovssim.EgressPort(env, "0mbit", {"kind": "pfifo"}, ovssim.Sink(env))


@pytest.mark.parametrize("kind", ["htb", "hfsc"])
def test_classful_qdisc_without_classes_is_an_error_that_says_what_to_write(kind):
    with pytest.raises(ConfigError, match="without classes") as exc:
        ovssim.make_qdisc({"kind": kind})
    assert "classes = " in str(exc.value) and f"linux-{kind}" in str(exc.value)


def _md1_run(load: float, seed: int, duration: float = 20.0):
    env = simpy.Environment()
    sink = ovssim.Sink(env, keep=True)
    port = ovssim.EgressPort(env, "10mbit", {"kind": "pfifo"}, sink)
    src = ovssim.Source(env, port, rate=load * 10e6 * 500 / 524, size=500, arrivals="poisson", rng=seed,
                        stop=duration)
    env.run(until=duration + 1)
    return src, sink


@pytest.mark.parametrize("load", [0.3, 0.7])
def test_poisson_source_through_a_fifo_gives_the_md1_mean_delay(load):
    """Pollaczek-Khinchine for M/D/1: W = rho S / (2 (1 - rho)) + S (S: one frame on the wire)."""
    src, sink = _md1_run(load, seed=3)
    service = 524 * 8 / 10e6                       # 500-byte frame + 24 bytes preamble, FCS, gap
    expected = load * service / (2 * (1 - load)) + service
    d = sink.delays()
    assert sink.count == src.sent and d.size > 10_000
    # batch means give the simulation's own 99 % interval; the analytic mean must lie within it (plus 1 %)
    batches = d[: d.size // 20 * 20].reshape(20, -1).mean(axis=1)
    half = 2.86 * batches.std(ddof=1) / math.sqrt(20)
    assert abs(d.mean() - expected) < half + 0.01 * expected


def test_cbr_source_is_exact_and_many_flows_rotate_ports():
    env = simpy.Environment()
    sink = ovssim.Sink(env, keep=True)
    src = ovssim.Source(env, sink, rate="1mbit", size=125, arrivals="cbr", flows=3, stop=0.1)
    env.run()
    assert src.sent == 100                          # 1 Mbit/s of 1000-bit packets for 0.1 s
    np.testing.assert_allclose(np.diff(sink.arrival_times), 1e-3)
    assert [p.flow.sport for p in sink.packets[:4]] == [5000, 5001, 5002, 5000]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), count=st.integers(1, 300))
def test_source_is_deterministic_and_conserves_packets(seed, count):
    runs = []
    for _ in range(2):
        env = simpy.Environment()
        sink = ovssim.Sink(env, keep=True)
        port = ovssim.EgressPort(env, "1gbit", {"kind": "pfifo", "limit": 10_000}, sink)
        ovssim.Source(env, port, rate="100mbit", size=1000, rng=seed, count=count)
        env.run()
        assert sink.count == count and port.dropped == 0
        runs.append(sink.arrival_times)
    assert runs[0] == runs[1]


@pytest.mark.parametrize("bad", [{"rate": 0}, {"rate": "fast"}, {"rate": "1mbit", "size": -5},
                                 {"rate": "1mbit", "arrivals": "bursty"}, {"rate": "1mbit", "flows": 0}])
def test_source_rejects_impossible_values(bad):
    env = simpy.Environment()
    with pytest.raises(OvssimError):
        ovssim.Source(env, ovssim.Sink(env), **bad)


def test_every_element_takes_tc_units():
    """Rates, times and per-packet costs in tc's spelling give the same element as SI numbers."""
    from ovssim.distributions import Sampler
    env = simpy.Environment()
    cpu = ovssim.CpuPool(env, 2)
    rng = np.random.default_rng(1)
    assert ovssim.VethLink(env, cpu, cpu_per_packet="2us", cpu_per_byte="1ns").cpu_per_packet == 2e-6
    assert ovssim.PatchPort(env, translate="1us").translate == 1e-6
    assert ovssim.PhysicalSwitch(env, "sw", latency="3us").latency == 3e-6
    nic = ovssim.Nic(env, "eth0", "1gbit", rx_delay=Sampler("5us", rng), prop_delay="25ns")
    assert nic.rate_bps == 1e9 and nic.tx.prop_delay == pytest.approx(25e-9)
    vif = ovssim.VifBackend(env, "kvm-tap", cpu, delay=Sampler("5us", rng), cpu_per_packet="3us",
                            cpu_per_byte="1ns")
    assert (vif.cpu_per_packet, vif.cpu_per_byte) == (3e-6, 1e-9)
    pmd = ovssim.PmdThread(env, per_batch="2us", per_packet="500ns", empty_poll="0.1us")
    assert (pmd.per_batch, pmd.per_packet, pmd.empty_poll) == pytest.approx((2e-6, 5e-7, 1e-7))
    with pytest.raises(OvssimError):
        ovssim.PhysicalSwitch(env, "sw2", latency="fast")
