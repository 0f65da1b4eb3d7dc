"""Analytic queueing results on a single EgressPort and on the CPU pool."""
import math

import numpy as np
import pytest
import simpy

from ovssim.packet import ETH_PREAMBLE_FCS_IFG, FlowKey, Packet
from ovssim.path.base import Sink
from ovssim.path.cpu import CpuPool
from ovssim.path.port import EgressPort

RATE = 100e6
FLOW = FlowKey("a", "b", 1, 2, "udp")


def _poisson_port(sizes, lam, seed=3, qdisc="pfifo", limit=100000):
    env = simpy.Environment()
    sink = Sink(env, keep=True)
    port = EgressPort(env, RATE, {"kind": qdisc, "limit": limit}, sink, name="p")
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(1 / lam, len(sizes))
    occupancy = []  # (time, packets in system) samples at arrivals, for Little's law

    def src(env):
        for g, s in zip(gaps, sizes):
            yield env.timeout(g)
            occupancy.append(port.queued)
            port.put(Packet(FLOW, int(s), env.now))
    env.process(src(env))
    env.run()
    soj = np.array(sink.arrival_times) - np.array([p.created for p in sink.packets])
    return soj, np.array(occupancy), env.now


def test_md1_mean_sojourn():
    n, size = 60000, 1500
    service = (size + ETH_PREAMBLE_FCS_IFG) * 8 / RATE
    lam = 0.7 / service
    soj, _, _ = _poisson_port(np.full(n, size), lam)
    rho = lam * service
    expected = service + rho * service / (2 * (1 - rho))      # Pollaczek-Khinchine, M/D/1
    assert soj.mean() == pytest.approx(expected, rel=0.03)


def test_mm1_mean_sojourn_and_littles_law():
    n, mean_size = 80000, 1000
    rng = np.random.default_rng(11)
    # exponential service times: exponential frame sizes (in bytes incl. framing)
    sizes = np.maximum(1, rng.exponential(mean_size, n)).round() - ETH_PREAMBLE_FCS_IFG
    sizes = np.maximum(sizes, 1)
    mean_service = (sizes + ETH_PREAMBLE_FCS_IFG).mean() * 8 / RATE
    lam = 0.6 / mean_service
    soj, occ, horizon = _poisson_port(sizes, lam, seed=5)
    rho = lam * mean_service
    assert soj.mean() == pytest.approx(mean_service / (1 - rho), rel=0.06)   # M/M/1: T = S/(1-rho)
    # Little's law: L = lambda * W, with L observed at Poisson arrivals (PASTA)
    lam_hat = len(soj) / horizon
    assert occ.mean() == pytest.approx(lam_hat * soj.mean(), rel=0.05)


def test_pfifo_drops_at_limit_and_conserves():
    n, size = 5000, 1500
    service = (size + ETH_PREAMBLE_FCS_IFG) * 8 / RATE
    soj, _, _ = _poisson_port(np.full(n, size), 2.0 / service, limit=20)
    # overload: sojourn bounded by (limit + 1) services
    assert soj.max() <= 21 * service + 1e-12


def test_cpu_pool_matches_erlang_c():
    """Kiefer-Wolfowitz FIFO M/M/2: mean wait = C(2, a) / (2 mu - lambda)."""
    env = simpy.Environment()
    cpu = CpuPool(env, 2, backlog_limit=None)
    rng = np.random.default_rng(2)
    mu, lam, n = 1 / 10e-6, 1.4 / 10e-6, 200000
    t = np.cumsum(rng.exponential(1 / lam, n))
    s = rng.exponential(1 / mu, n)
    waits = np.array([cpu.serve(ti, si) - ti - si for ti, si in zip(t, s)])
    a, c = lam / mu, 2
    rho = a / c
    erlang_c = (a ** c / math.factorial(c) / (1 - rho)) / (
        sum(a ** k / math.factorial(k) for k in range(c)) + a ** c / math.factorial(c) / (1 - rho))
    assert waits.mean() == pytest.approx(erlang_c / (c * mu - lam), rel=0.05)
    assert sum(cpu.utilisation(t[-1])) == pytest.approx(a, rel=0.03)


def test_cpu_backlog_limit_refuses_and_counts():
    env = simpy.Environment()
    cpu = CpuPool(env, 1, backlog_limit=3)
    done = [cpu.serve(0.0, 1.0) for _ in range(6)]
    # one in service, three waiting, the rest refused (netdev_max_backlog semantics)
    assert done[:4] == [1.0, 2.0, 3.0, 4.0]
    assert done[4:] == [None, None]
    assert cpu.refused == 2
