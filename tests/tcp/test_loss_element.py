"""The random-loss element: Bernoulli drops at rate p, seeded, or an exact pattern."""
from __future__ import annotations

import math

import pytest
import simpy

from ovssim.packet import FlowKey, Packet
from ovssim.path.base import Sink
from ovssim.path.loss import RandomLoss


def feed(loss, n, kind="data"):
    for i in range(n):
        loss.put(Packet(FlowKey("a", "b"), 100, 0.0, seq=i, kind=kind))


@pytest.mark.parametrize("p", [0.001, 0.01, 0.3])
def test_drop_fraction_is_binomial(p):
    env = simpy.Environment()
    sink = Sink(env)
    loss = RandomLoss(env, p, sink, seed=5)
    n = 50_000
    feed(loss, n)
    # within 4 standard deviations of n p
    assert abs(loss.dropped - n * p) <= 4 * math.sqrt(n * p * (1 - p))
    assert loss.arrived == loss.forwarded + loss.dropped == n
    assert sink.count == loss.forwarded


def test_same_seed_same_drops_and_pattern_is_exact():
    env = simpy.Environment()
    runs = []
    for _ in range(2):
        sink = Sink(env, keep=True)
        feed(RandomLoss(env, 0.1, sink, seed=9), 1000)
        runs.append([pk.seq for pk in sink.packets])
    assert runs[0] == runs[1]
    sink = Sink(env, keep=True)
    feed(RandomLoss(env, 0.0, sink, pattern={0, 5, 6}), 10)
    assert [pk.seq for pk in sink.packets] == [1, 2, 3, 4, 7, 8, 9]


def test_kinds_spare_other_packets():
    env = simpy.Environment()
    sink = Sink(env)
    loss = RandomLoss(env, 1.0, sink, kinds={"data"})
    feed(loss, 10, kind="ack")
    feed(loss, 10, kind="data")
    assert sink.count == 10 and loss.dropped == 10


def test_bad_probability():
    with pytest.raises(ValueError):
        RandomLoss(simpy.Environment(), 1.5)
