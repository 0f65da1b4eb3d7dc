"""Fit a delay sample, write it into a profile, and simulate with it.

The sample here is synthetic, so you can see the fit recover what made it: 4,000 upcall delays drawn from a
shifted log-normal (40 us floor, median 40 + 80 us), as a probe of ovs-vswitchd's slow path might record
them.  Give ``--csv FILE --column NAME`` (and ``--unit us``) to fit your own measurements instead.  The
script fits the candidate families (by BIC, with KS and Anderson-Darling), writes the chosen one as
``ovs.upcall`` into a profile that inherits the rest from the default, loads that profile back, and runs the
datapath's slow path with it: the simulated first-packet delay of a new flow follows the fitted distribution.

    python examples/fit_delay_to_profile.py [--out my_profile.toml] [--csv FILE --column C --unit us]
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import simpy
from scipy import stats

from ovssim import CpuPool, FlowKey, OvsDatapath, Profile, Sink, Source
from ovssim.fit.families import fit_samples
from ovssim.fit.profile_writer import build_profile, write_profile
from ovssim.fit.samples import read_samples


def first_packet_delays(profile: Profile, n: int = 2000, seed: int = 2) -> np.ndarray:
    """Simulated delay of n first packets of new flows, far apart (no queueing), through one OVS bridge."""
    env = simpy.Environment()
    rng = np.random.default_rng(seed)
    ovs = OvsDatapath(env, "br0", CpuPool(env, cores=2), stats=profile.sampler("ovs.stats", rng),
                      lookup=profile.sampler("ovs.lookup", rng), actions=profile.sampler("ovs.actions", rng),
                      upcall=profile.sampler("ovs.upcall", rng), lookahead=False)
    sink = Sink(env, keep=True)
    vm = ovs.add_port("vm1-vif", Sink(env))
    ovs.add_port("vm2-vif", sink)
    Source(env, vm, rate=64 * 8 * 100, size=64, arrivals="cbr", flows=n, count=n,
           flow=FlowKey("vm1", "vm2", 1024, 80, "tcp"))        # 100 new flows/s: never two upcalls at once
    env.run()
    return sink.delays()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", help="a file of measured delays (CSV, Parquet or JSON lines)")
    ap.add_argument("--column", help="its delay column")
    ap.add_argument("--unit", help="the column's unit (s, ms, us, ns)")
    ap.add_argument("--out", help="where to write the profile (default: a temporary file)")
    ap.add_argument("--quick", action="store_true", help="(accepted for symmetry with the other examples)")
    args = ap.parse_args()

    if args.csv:
        (sample,) = read_samples(args.csv, column=args.column, unit=args.unit).values()
        truth = None
    else:
        truth = stats.lognorm(s=0.6, loc=40e-6, scale=80e-6)
        sample = truth.rvs(size=4000, random_state=np.random.default_rng(7))
    fit = fit_samples(sample, families=["lognorm", "gamma", "weibull", "expon"])
    print(fit.table()[["family", "n_params", "bic", "ks", "ad", "chosen"]].to_string(index=False))
    print(f"\nchosen: {fit.chosen.family} {fit.chosen.spec}")
    if truth is not None:
        print("truth:  lognorm s=0.6 loc=40 scale=80 (us)")

    doc = build_profile(name="upcall-fit", params={"ovs.upcall": fit.chosen.spec}, method="fit_samples (BIC)",
                        description="ovs.upcall fitted to a delay sample; everything else from the default")
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp()) / "upcall_fit.toml"
    write_profile(out, doc)
    print(f"wrote {out}")

    profile = Profile.load(out)
    sim = first_packet_delays(profile)
    hit_cost = sum(profile.dist(k).mean() for k in ("ovs.stats", "ovs.lookup", "ovs.actions"))
    upcalls = sim - hit_cost
    print(f"\nsimulated first packets: median upcall {np.median(upcalls) * 1e6:.1f} us "
          f"(sample {np.median(sample) * 1e6:.1f}), p99 {np.percentile(upcalls, 99) * 1e6:.1f} us "
          f"(sample {np.percentile(sample, 99) * 1e6:.1f}); two-sample KS "
          f"{stats.ks_2samp(upcalls, sample).statistic:.3f}")


if __name__ == "__main__":
    main()
