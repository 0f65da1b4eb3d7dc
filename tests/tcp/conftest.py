"""Small hand-built paths for the TCP tests: A -> port (-> loss) -> B and B -> port -> A."""
from __future__ import annotations

import numpy as np
import pytest
import simpy

from ovssim.path.endpoint import Endpoint
from ovssim.path.loss import RandomLoss
from ovssim.path.port import EgressPort
from ovssim.workloads.base import RunContext


class Path:
    def __init__(self, rate=100e6, delay=0.005, limit=1000, loss_p=0.0, seed=1,
                 fwd_pattern=None, rev_pattern=None, rev_rate=None):
        self.env = env = simpy.Environment()
        self.a = Endpoint(env, "a")
        self.b = Endpoint(env, "b")
        self.fwd = EgressPort(env, rate, {"kind": "pfifo", "limit": limit}, out=self.b,
                              prop_delay=delay, name="fwd")
        self.rev = EgressPort(env, rev_rate or rate, {"kind": "pfifo", "limit": limit}, out=self.a,
                              prop_delay=delay, name="rev")
        self.a.out = self.fwd
        self.b.out = self.rev
        self.loss = None
        if loss_p or fwd_pattern is not None:
            self.loss = RandomLoss(env, loss_p, self.fwd, seed=seed, pattern=fwd_pattern,
                                   kinds={"data"})
            self.a.out = self.loss
        if rev_pattern is not None:
            self.rloss = RandomLoss(env, 0.0, self.rev, pattern=rev_pattern)
            self.b.out = self.rloss

    def ctx(self, duration, seed=0):
        return RunContext(env=self.env, src=self.a, dst=self.b, duration=duration,
                          rng=lambda name: np.random.default_rng(
                              [seed, sum(map(ord, name))]))


@pytest.fixture
def make_path():
    return Path
