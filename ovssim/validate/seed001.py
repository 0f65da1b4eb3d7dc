"""Seed 001's per-packet datapath time against the data rate, from the idle states a core reaches between packets.

Seed 001 (Sec. V-B, Fig. 3; ``data/seeds/seed_expectations.csv`` E001-03) found the OVS kernel datapath's
per-packet processing time falling as the data rate rose -- 10-15 kbit/s of 56-B packets slowest, 250 kbit/s of
576-B packets slower than the higher rates -- and put it down to context switches and cache hits.  At those
rates the packets are 4.6-45 ms apart, so no batch ever holds two of them: what the rate changes is how long
the core idled before each packet, hence the idle state it reached and how cold its caches are when the
datapath runs (:mod:`ovssim.cpu.pool`: ``host.shallow_after``, ``host.idle_exit_after``, the cold factors).

:func:`pass_times` runs the model's kernel-datapath pass (the profile's ``ovs.stats`` + ``ovs.lookup`` +
``ovs.actions`` per cache hit, as :class:`~ovssim.path.datapath.OvsDatapath` charges it) on one core of a
:class:`~ovssim.cpu.pool.CpuPool` built from a host profile as a scenario's host is (:func:`ovssim.topology.host_pool`), one packet every ``size x 8 / rate`` seconds,
and times each pass from its start -- after the core's exit from its idle state, which the paper's probes
inside the datapath do not see -- to its end.  Nothing runs on that core before the pass (the receive driver's
work that precedes it in a real kernel would take part of the cold start): a simplification that can only
overstate the cold pass, not change which packets find a cold core.
"""
from __future__ import annotations

import numpy as np
import simpy

from ..distributions import SumSampler
from ..profile import Profile
from ..runner import rng_factory
from ..topology import host_pool

# (label, rate in bit/s, packet size in bytes): E001-01's VOI rate and Fig. 3's rates (250 kbit/s and up)
RATES = (("10-15 kbit/s, 56 B", 12.5e3, 56), ("250 kbit/s, 576 B", 250e3, 576),
         ("500 kbit/s, 576 B", 500e3, 576), ("750 kbit/s, 576 B", 750e3, 576), ("1 Mbit/s, 576 B", 1e6, 576))


def this_machine(base: Profile | None = None) -> Profile:
    """``base`` (default: the default profile, whose datapath steps are seed 001's) with this machine's idle
    states and cold start as the chain-ping probe measured them (:mod:`ovssim.validate.cold`), the values the
    local profiles fix."""
    from .cold import idle_params, idle_states
    hot, _, deep = idle_states().levels_us
    return (base or Profile.default()).with_overrides(idle_params((deep - hot) * 1e-6), source="this machine's idle states")


def pass_times(profile: Profile, rate: float, size: int, packets: int = 400, seed: int = 1) -> np.ndarray:
    """Each packet's datapath pass (s), packets of ``size`` bytes at ``rate`` bit/s through one core."""
    rng = rng_factory(seed, 0)
    pool = host_pool(simpy.Environment(), 1, "voi", profile, rng)
    hit = SumSampler(*(profile.sampler(k, rng(f"voi.{k}")) for k in ("ovs.stats", "ovs.lookup", "ovs.actions"))).it
    gap = size * 8.0 / rate
    out = np.empty(packets)
    for i in range(packets):
        done = pool.serve(i * gap, next(hit), key=0)
        out[i] = done - pool.served_start
    return out


def trend(profile: Profile) -> list[tuple[str, float, float]]:
    """(label, gap between packets in ms, median pass in us) at each of :data:`RATES`."""
    return [(label, size * 8e3 / rate, float(np.median(pass_times(profile, rate, size))) * 1e6)
            for label, rate, size in RATES]
