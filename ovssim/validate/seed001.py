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

from ..cpu import GuestCpus
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


def pass_times(profile: Profile, rate: float, size: int, packets: int = 400, seed: int = 1,
               guest_factor: float | None = None) -> np.ndarray:
    """Each packet's datapath pass (s), packets of ``size`` bytes at ``rate`` bit/s through one core; with
    ``guest_factor``, through the one vCPU of a virtual machine on that core (``guest.cpu_factor``: the OVS of
    a ``[[host]]`` with ``guest_of``, :class:`~ovssim.cpu.guest.GuestCpus`), timed from when its vCPU runs."""
    rng = rng_factory(seed, 0)
    env = simpy.Environment()
    pool = host_pool(env, 1, "voi", profile, rng)
    core = pool if guest_factor is None else GuestCpus(env, 1, "voi.vm", pool, pin=[[0]], speed=1.0 / guest_factor)
    hit = SumSampler(*(profile.sampler(k, rng(f"voi.{k}")) for k in ("ovs.stats", "ovs.lookup", "ovs.actions"))).it
    gap = size * 8.0 / rate
    out = np.empty(packets)
    for i in range(packets):
        done = core.serve(i * gap, next(hit), key=0)
        out[i] = done - pool.served_start
    return out


def trend(profile: Profile) -> list[tuple[str, float, float]]:
    """(label, gap between packets in ms, median pass in us) at each of :data:`RATES`."""
    return [(label, size * 8e3 / rate, float(np.median(pass_times(profile, rate, size))) * 1e6)
            for label, rate, size in RATES]


# Seed 001's VM at its lowest rate (Sec. V-A): (label, rate bit/s, sizes in bytes)
VOI_RAM = ("10-15 kbit/s, 56 B (Fig. 2)", 12.5e3, (56,))
SIZES = (64, 128, 256, 576, 1024, 1400)        # Figs. 4 and 7 vary the size at 750 kbit/s; their values are not given
AT_750 = 750e3


def _over_sizes(profile: Profile, guest_factor: float | None) -> np.ndarray:
    """Every pass at 750 kbit/s over :data:`SIZES` (one run of 400 packets each)."""
    return np.concatenate([pass_times(profile, AT_750, n, guest_factor=guest_factor) for n in SIZES])


def voi_boi() -> "TestbedResult":
    """OVS inside a Xen VM (VOI) against OVS on bare metal (BOI), seed 001 Secs. V-VI, as report rows.

    The paper timed the kernel datapath's pass from inside the module: 10-40 us in a 1-vCPU Xen VM, at most
    10 us on bare metal.  The model: the default profile's datapath steps (its seed-001 figures: stats,
    lookup, actions; the bare-metal install) on a core, and the same on the one vCPU of a ``[[host]]`` that is
    a guest of that core (``guest_of``), its work ``guest.cpu_factor`` times longer -- one factor, fitted to the
    VM's shortest pass (E001-06, about 10 us); the VM's median at 10-15 kbit/s (E001-01), its longest pass at
    750 kbit/s (E001-04) and the bare-metal to VM ratio of longest passes (E001-12) are held out.  The paper
    states bounds, not values, so the rows carry no target: a row is inside when it keeps the bound."""
    from .base import TestbedResult
    from .compare import Comparison
    from .seed_data import expectations
    e = expectations("seed001").set_index("expectation_id")
    prof = Profile.default()
    us = 1e6
    boi = _over_sizes(prof, None) * us
    # the factor that makes the VM's shortest pass E001-06's: a pass scales with it where nothing else runs on
    # the core, so one division
    factor = float(e.loc["E001-06", "value"]) / float(boi.min())
    tb = TestbedResult("seed001_voi", "Seed 001: OVS inside a Xen VM (VOI) against bare metal (BOI)",
                       section="seed001")
    tb.split = ("Fitted: `guest.cpu_factor` (a `[[host]]` with `guest_of`: its vCPUs are threads on another host's "
                "cores, its CPU work this many times the bare-metal figures) to the VM's shortest pass, E001-06. "
                "Held out: the VM's median at 10-15 kbit/s (E001-01), its longest pass at 750 kbit/s (E001-04), the "
                "bare-metal longest passes (E001-09, E001-10) and their ratio to the VM's (E001-12). The bare-metal "
                "steps are the default profile's, set by hand from the same paper's figures.")
    tb.profile = "default (guest.cpu_factor fitted here, written to no profile)"
    tb.fit = {"params": {"guest.cpu_factor": f"{factor:.2f}"}}

    def row(config, metric, eid, sim, split):
        bound = float(e.loc[eid, "value"])
        if e.loc[eid, "bound"] == "approx":
            tol = float(e.loc[eid, "tolerance"])
            lo, hi = bound - tol, bound + tol
        else:
            lo, hi = 0.0, bound
        tb.rows.append(Comparison(tb.name, config, metric, "us" if metric != "ratio" else "1", bound, lo, hi,
                                  sim, sim, sim, split, "", band="the paper's bound",
                                  note=f"{eid}: {e.loc[eid, 'bound']} {bound:g}"))

    label, rate, (size,) = VOI_RAM
    voi_ram = pass_times(prof, rate, size, guest_factor=factor) * us
    voi = _over_sizes(prof, factor) * us
    boi_rates = np.concatenate([pass_times(prof, r, 576) for _, r, _ in RATES[1:]]) * us
    row("VOI, 750 kbit/s, sizes 64-1400 B: shortest pass", "datapath_pass_min", "E001-06", float(voi.min()),
        "in-sample")
    row(f"VOI, {label}: median pass", "datapath_pass_p50", "E001-01", float(np.median(voi_ram)), "held-out")
    row("VOI, 750 kbit/s, sizes 64-1400 B: longest pass", "datapath_pass_max", "E001-04", float(voi.max()), "held-out")
    row("BOI, 576 B, 250 kbit/s-1 Mbit/s: longest pass", "datapath_pass_max", "E001-09", float(boi_rates.max()),
        "held-out")
    row("BOI, 750 kbit/s, sizes 64-1400 B: longest pass", "datapath_pass_max", "E001-10", float(boi.max()), "held-out")
    row("BOI / VOI longest pass, 750 kbit/s", "ratio", "E001-12", float(boi.max() / voi.max()), "held-out")
    spread = lambda x: float(np.percentile(x, 90) / np.percentile(x, 10))
    tb.notes.append(
        f"**One factor, {factor:.2f}.** The VM's passes are the bare-metal ones {factor:.2f} times longer: "
        f"VOI {voi.min():.1f}-{voi.max():.1f} us (median {np.median(voi):.1f}), BOI {boi.min():.1f}-{boi.max():.1f} us "
        f"(median {np.median(boi):.1f}) over {len(SIZES)} sizes x 400 packets at 750 kbit/s; the paper's VM range "
        "(10-40 us) is four times its bare-metal bound (10 us), and the model's spread (p90 / p10: "
        f"VOI {spread(voi):.2f}, BOI {spread(boi):.2f}) is the same in both, the default steps' log-normal spread "
        "scaled. What the paper saw beyond a factor -- VM delays 'less consistent' (E001-11), which it put down "
        "to two levels of scheduling -- needs the hypervisor's other work on the VM's core: a `[[host]]` with "
        "`guest_of` schedules its vCPUs on its hypervisor host's cores with everything else there (a "
        "`background_threads` load, other guests, vhost/netback threads), but the paper does not say what else ran "
        "on its Xen host, so none is assumed here. Packet size does not enter the model's pass (E001-05, E001-10: "
        "'larger packets take a little more time'): the datapath's steps are per packet. The two installs ran on "
        "different CPUs (Xeon E5420 and Core 2 Quad Q6600, both 2.4-2.5 GHz Core microarchitecture), so the factor "
        "holds the hardware's difference as well as virtualisation's.")
    if voi.max() > float(e.loc["E001-04", "value"]):
        tb.notes.append(
            f"**Why E001-04 misses**: the VM's longest pass, {voi.max():.1f} us, is {voi.max() / voi.min():.1f} times "
            "its shortest, where the paper's VM range is 10-40 us (4 times): the default steps' log-normal spread "
            f"(s = 0.4 each; {boi.max() / boi.min():.1f} times over the same bare-metal passes) is a little wider than "
            "the paper's, whose figures give ranges, not a distribution to fit.")
    return tb


def run(runner, settings) -> list:
    """The report section (``ovssim validate --only seed001``): :func:`voi_boi`."""
    return [voi_boi()]
