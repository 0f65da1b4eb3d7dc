"""The namespace testbed's CPU-bound sender: what its core does in the model, against iperf3's cpu_client.

    cd /tmp && PYTHONPATH=REPO REPO/.venv/bin/python REPO/validation/sender_core.py [--profile P] [KEY=VALUE ...]

Runs the validation's Linux-bridge TCP configurations (``ovssim.validate.local._config``: 1 bridge, 2 and 4
veth-chained bridges, no qdisc) with the committed profile (default ``calibration/local_netns.toml``; KEY=VALUE
overrides a parameter, e.g. ``host.stack_cpu=0.5us``), records every piece of CPU work the host's cores serve
(``CpuPool.serve``, wrapped) and prints, over the iperf3 run's steady window: the sender core's busy share, its
CPU per 1448-byte segment split by the element that booked it, and the other core's; beside the measured iperf3
``cpu_client`` / ``cpu_server`` (data/local/2026-11-24/local-bridges, offloads off) as CPU per segment, and the sender core's idle
time by the work that ended each gap (``linux_bridge.process``: the bridge waiting out the veth's non-CPU
``vif.container-veth.backend_delay``).  The run's
``cpu_util.local.core1`` averages over the whole simulated run (0.4 s, iperf3 0.3 s of it), so it reads ~25 %
below the window's share.
"""
from __future__ import annotations

import collections
import json
import sys
from pathlib import Path


from ovssim.cpu import pool as P
from ovssim.profile import Profile
from ovssim.runner import run_replication
from ovssim.scenario import load_scenario
from ovssim.validate.local import DATA, _config, load_measured, without_offloads

ROOT = Path(__file__).resolve().parents[1]
WINDOW = (0.11, 0.30)         # after iperf3's -O 0.1 s (the run starts ~5 ms in), before its end at ~0.305 s
SEGMENT_BITS = 1448 * 8
CONFIGS = ((1, "-"), (2, "veth"), (4, "veth"))


def measured() -> dict[int, tuple[float, float, float]]:
    """Per chain: (throughput bit/s, cpu_client, cpu_server), means over the runs."""
    d = without_offloads(load_measured(DATA))
    d = d[(d["bridge"] == "linux") & (d["qdisc"] == "none") & (d["workload"] == "tcp")]
    p = d.pivot_table(index=["run_id", "chain"], columns="metric", values="value").reset_index()
    m = p.groupby("chain")[["throughput", "cpu_client", "cpu_server"]].mean()
    return {int(c): (r["throughput"], r["cpu_client"], r["cpu_server"]) for c, r in m.iterrows()}


def trace(chain: int, link: str, prof: Profile) -> tuple[list, dict]:
    """Every served piece of work: (start, done, core, caller), and the run's rows."""
    log = []
    orig = P.CpuPool.serve

    def serve(self, t, work, key=None, thread=None, arrival=None):
        f = sys._getframe(1)
        name = f"{Path(f.f_code.co_filename).stem}.{f.f_code.co_name}"
        before = list(self.busy)
        done = orig(self, t, work, key, thread, arrival)
        if done is not None:
            core = next((i for i, (a, b) in enumerate(zip(before, self.busy)) if a != b), -1)
            log.append((self.served_start, done, core, name))
        return done

    P.CpuPool.serve = serve
    try:
        sc = load_scenario(_config("linux", chain, link, "none", ["tcp"]).scenario)
        rows, _, _ = run_replication(sc, prof, 0, 1)
    finally:
        P.CpuPool.serve = orig
    return log, {r["metric"]: r["value"] for r in rows}


def main(argv: list[str]) -> None:
    path = ROOT / "calibration" / "local_netns.toml"
    sets = {}
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--profile":
            path = Path(args.pop(0))
        elif "=" not in a:
            sys.exit(f"sender_core.py: error: {a!r} is not KEY=VALUE -- usage: sender_core.py [--profile FILE] "
                     "[KEY=VALUE ...], e.g. host.stack_cpu=0.5us")
        else:
            k, v = a.split("=", 1)
            try:
                v = json.loads(v)
            except ValueError:
                pass
            sets[k] = v
    prof = Profile.load(str(path))
    if sets:
        prof = prof.with_overrides(sets, source="command line")
    meas = measured()
    t0, t1 = WINDOW
    for chain, link in CONFIGS:
        log, rows = trace(chain, link, prof)
        win = [w for w in log if t0 <= w[0] < t1]
        segs = sum(1 for w in win if w[3] == "receiver.on_data")
        busy = collections.Counter()
        per = collections.defaultdict(float)
        for s, d, c, name in win:
            busy[c] += d - s
            per[(c, name)] += d - s
        sender = max(busy, key=busy.get)
        thr, cli, srv = meas[chain]
        mseg = thr / SEGMENT_BITS
        print(f"{chain} bridge(s): simulated {rows['throughput']:.0f} Mbit/s (measured {thr / 1e6:.0f}); "
              f"sender core {sender} busy {busy[sender] / (t1 - t0) * 100:.1f} % of {t0:g}-{t1:g} s "
              f"(cpu_util.local.core{sender} {rows[f'cpu_util.local.core{sender}']:.1f} % over the run; measured "
              f"cpu_client {cli * 100:.1f} %)")
        print(f"   sender core per segment {busy[sender] / segs * 1e6:.2f} us (measured cpu_client {cli / mseg * 1e6:.2f}),"
              f" other core {sum(v for c, v in busy.items() if c != sender) / segs * 1e6:.2f} us"
              f" (measured cpu_server {srv / mseg * 1e6:.2f})")
        # the sender core's idle gaps in the window, by the work that ends each (what it waited for)
        gaps = collections.Counter()
        end = t0
        for s, d, c, name in sorted(w for w in win if w[2] == sender):
            if s > end:
                gaps[name] += s - end
            end = max(end, d)
        print("   sender core idle before: " + ", ".join(f"{n} {g / (t1 - t0) * 100:.1f} %" for n, g in gaps.most_common(3)))
        for (c, name), v in sorted(per.items()):
            print(f"      core{c} {name:28s} {v / segs * 1e6:6.3f} us/segment")


if __name__ == "__main__":
    main(sys.argv[1:])
