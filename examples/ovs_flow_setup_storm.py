"""An OVS flow-setup storm: every packet a new flow, at a rising rate of new flows per second.

Each new flow misses the datapath's flow cache and goes up to ovs-vswitchd as an upcall; the handler threads
set the flow up and the packet goes on.  While the handlers keep up, a first packet pays one upcall; past
their capacity (handlers / mean upcall time) the upcall queue fills, first packets wait longer and longer,
and beyond its bound they are lost -- what ``ovs-dpctl show`` reports as ``lost``.  The datapath takes its
parameters from a profile (the embedded default here; ``--profile NAME`` for a fitted one).

    python examples/ovs_flow_setup_storm.py [--quick] [--handlers 2] [--profile default]
"""
from __future__ import annotations

import argparse

import numpy as np
import simpy

from ovssim import CpuPool, FlowKey, OvsDatapath, Profile, Sink, Source


def storm(profile: Profile, new_flows_per_s: float, duration: float, handlers: int, seed: int = 1):
    env = simpy.Environment()
    rng = np.random.default_rng(seed)
    host = CpuPool(env, cores=4)
    ovs = OvsDatapath(env, "br0", host, stats=profile.sampler("ovs.stats", rng),
                      lookup=profile.sampler("ovs.lookup", rng), actions=profile.sampler("ovs.actions", rng),
                      upcall=profile.sampler("ovs.upcall", rng), handlers=handlers,
                      upcall_queue=profile.int("ovs.upcall_queue"), lookahead=False)
    sink = Sink(env, keep=True)
    vm_port = ovs.add_port("vm1-vif", Sink(env))
    ovs.add_port("vm2-vif", sink)
    # vm2's MAC is not learnt yet: NORMAL floods to every other port -- here just vm2's
    n = int(new_flows_per_s * duration)
    Source(env, vm_port, rate=new_flows_per_s * 64 * 8, size=64, arrivals="poisson", rng=seed,
           flow=FlowKey("vm1", "vm2", 1024, 80, "tcp"), flows=65535, count=min(n, 64000), start=0.001)
    env.run(until=duration + 1.0)
    return ovs.counters(), sink.delays()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="0.2 simulated seconds per rate instead of 2")
    ap.add_argument("--handlers", type=int, default=2, help="ovs-vswitchd handler threads (default 2)")
    ap.add_argument("--profile", default="default", help="calibration profile (default: the embedded one)")
    args = ap.parse_args()
    profile = Profile.load(args.profile)
    duration = 0.2 if args.quick else 2.0
    upcall = profile.dist("ovs.upcall").mean()
    capacity = args.handlers / upcall
    print(f"{args.handlers} handlers, mean upcall {upcall * 1e6:.0f} us: capacity ~{capacity:,.0f} new flows/s")
    print(f"{'new flows/s':>12}{'missed':>9}{'lost':>8}{'p50 first-packet us':>21}{'p99 us':>10}")
    for rate in (0.25, 0.5, 0.9, 1.1, 2.0):
        counters, delays = storm(profile, rate * capacity, duration, args.handlers)
        p50, p99 = (np.percentile(delays, [50, 99]) * 1e6) if delays.size else (float("nan"),) * 2
        print(f"{rate * capacity:>12,.0f}{counters['missed']:>9}{counters['lost']:>8}{p50:>21.0f}{p99:>10.0f}")


if __name__ == "__main__":
    main()
