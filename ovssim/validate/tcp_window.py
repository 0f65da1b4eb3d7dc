"""Issue 18: TCP windows, CUBIC and BBR behind an HTB or TBF shaper on this host (``data/local/tcp_window``).

Measured with ``validation/tcp_window/probe.py`` (root): namespace A -> veth -> B with HTB or TBF (burst
32 kB, latency 400 ms) on A's own veth ("sender": TCP Small Queues binds), or on the port towards B of a
Linux bridge (``--bridge``) or a forwarding namespace (``--router``) in between; the veths' offloads as
Linux sets them (TSO on: 64 KB GSO skbs), ``iperf3 -C CC -P N -t 8`` with ``ping -i 0.05`` beside it;
kernel 6.18, default sysctls unless the row names some (``--sysctl``).  Simulated:
``validation/scenarios/local_netns.toml`` with a Linux bridge, the same shaper on ns1's own interface
(``egress_qdisc``) or on ns2's VIF port (bridge and router), the same sysctls and tools; ping RTT over the
transfer's seconds 1..8 (probe.py's window: icmp_seq 30..170).

Split: nothing here is fitted -- the TCP model is Linux's code and the host's sysctl defaults, the path costs
are the default profile's -- so every row is held out.
"""
from __future__ import annotations

import copy
import gzip
import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from .base import ROOT, SCENARIOS, Settings, TestbedResult
from .compare import Comparison, mean_ci

DATA = ROOT / "data" / "local" / "tcp_window"
SCENARIO = SCENARIOS / "local_netns.toml"
FAST = {("htb", "20mbit"), ("tbf", "20mbit")}      # the --fast subset


def shaper(kind: str, rate: str) -> dict:
    """The shaper probe.py installs, in the scenario's tc form."""
    if kind == "htb":
        return {"kind": "htb", "default": "10", "classes": [
            {"classid": "1:10", "parent": "1:", "rate": rate, "ceil": rate}]}
    return {"kind": "tbf", "rate": rate, "burst": "32kb", "latency": "400ms"}


def scenario(args: dict) -> dict:
    """The scenario dict of one probe.py run's arguments (``args`` of its JSON file)."""
    from ..scenario import load_scenario
    d = copy.deepcopy({k: v for k, v in load_scenario(SCENARIO).data.items() if not k.startswith("_")})
    t = float(args["time"])
    d["scenario"]["duration"] = f"{t + 0.5}s"
    d["bridge"][0]["kind"] = "linux"
    on_sender = not args.get("bridge") and not args.get("router")
    for vm in d["vm"]:
        # probe.py leaves the veths' offloads as Linux sets them (TSO on: 64 KB GSO skbs reach the shaper and
        # the receiver whole); the collector's ``tx off`` in local_netns.toml is not applied there
        vm.pop("features", None)
        if args.get("sysctl"):                      # probe.py --sysctl k=v, set in both namespaces
            vm["sysctl"] = dict(kv.replace(",", " ").split("=", 1) for kv in args["sysctl"])
        if on_sender and vm["name"] == "ns1":      # probe.py's default: the shaper on the sender's own veth
            vm["egress_qdisc"] = shaper(args["shaper"], args["rate"])
        elif not on_sender and vm["name"] == "ns2":
            vm["qdisc"] = shaper(args["shaper"], args["rate"])
    d["workload"] = [
        {"name": "tcp", "tool": "iperf3", "proto": "tcp", "from": "ns1", "to": "ns2", "C": args["cc"],
         "P": int(args["flows"]), "t": f"{t}s", "start": "0.5s"},
        {"name": "ping", "tool": "ping", "from": "ns1", "to": "ns2", "i": "0.05s", "start": "0s"}]
    return d


def window(rtts: np.ndarray, t: float) -> np.ndarray:
    """The pings probe.py's summary keeps: icmp_seq 30 .. 30 + 20 (t - 1), i.e. the transfer's seconds
    1..t (ping -i 0.05 starts 0.5 s before iperf3; the first second of slow start is left out)."""
    return rtts[29:30 + int(20 * (t - 1))]


def simulate(args: dict, reps: int, seed: int = 1) -> list[dict]:
    """One dict per replication: Mbit/s, mean and max ping RTT (ms) over probe.py's window."""
    from ..runner import run_scenario
    d = scenario(args)
    out = []
    for k in range(reps):
        res = run_scenario(d, reps=1, seed=seed + k)
        summ = res.summary.set_index(["workload", "metric"])["mean"]
        rtt = window(res.samples["ping:rtt"], float(args["time"])) * 1e3
        out.append({"mbps": float(summ[("tcp", "throughput")]), "ping_mean_ms": float(rtt.mean()),
                    "ping_max_ms": float(rtt.max())})
    return out


def placement(args: dict) -> str:
    """Where probe.py put the shaper: the sender's own veth, a Linux bridge's port, or a router's port."""
    return "bridge" if args.get("bridge") else "router" if args.get("router") else "sender"


def measured(data: Path = DATA) -> dict[tuple, list[dict]]:
    """The runs ovssim can express, by (placement, shaper, rate, flows, cc, sysctls): not the pfifo-limit,
    no-GSO or autocorking variants, nor the 32 s BBR run."""
    from ..tcp.buffers import TcpSysctls
    runs = defaultdict(list)
    for f in sorted(data.glob("*.json.gz")):
        with gzip.open(f, "rt") as fh:
            r = json.load(fh)
        a = r["args"]
        sysctl = tuple(a.get("sysctl") or ())
        if (a.get("limit") or a.get("no_gso") or int(a["time"]) != 8
                or any(kv.split("=", 1)[0] not in TcpSysctls.KEYS for kv in sysctl)):
            continue
        runs[(placement(a), a["shaper"], a["rate"], int(a["flows"]), a["cc"], sysctl)].append(r)
    return runs


METRICS = (("ping_mean_ms", "rtt", "ms", "mean RTT under load"),
           ("ping_max_ms", "rtt", "ms", "max RTT under load"),
           ("mbps", "throughput", "Mbit/s", "throughput"))


def run(runner, settings: Settings, data: Path = DATA) -> list[TestbedResult]:
    tb = TestbedResult("tcp_window", "Issue 18: TCP windows, CUBIC and BBR behind HTB/TBF shapers (this host)")
    runs = measured(data)
    if not runs:
        tb.notes.append(f"No data at {data.relative_to(ROOT)}: run `sudo .venv/bin/python "
                        "validation/tcp_window/probe.py --bridge ...` (see its docstring).")
        return [tb]
    rate_key = lambda r: float(r.rstrip("mbit"))
    for key in sorted(runs, key=lambda k: (k[0], k[1], rate_key(k[2]), k[3], k[4], k[5])):
        where, kind, rate, flows, cc, sysctl = key
        if settings.fast and (kind, rate) not in FAST:
            continue
        real = runs[key]
        sims = simulate(real[0]["args"], settings.reps)
        label = " ".join([where, kind, rate, f"P{flows}", cc, *sysctl])
        for field, metric, unit, what in METRICS:
            y, lo, hi = mean_ci([r["summary"][field] for r in real])
            m, slo, shi = mean_ci([s[field] for s in sims])
            tb.rows.append(Comparison(tb.name, f"{label} {what}", metric, unit, y, lo, hi, m, slo, shi,
                                      "held-out", metric, note=f"{len(real)} runs"))
    tb.split = ("Held out entirely: nothing in the TCP model is fitted (Linux's algorithms with the host's "
                "sysctl defaults); the path uses the default profile.")
    tb.notes += NOTES
    return [tb]


NOTES = [
    "Measured 24 Nov 2026 on the shared 2-core machine while other helpers ran (loaded; probe.py does not "
    "record machine state, the repeats show the spread: HTB 20 Mbit/s P1 CUBIC 717-918 ms mean RTT over three "
    "runs, HyStart exits at cwnd 855, 914 and 1256; TBF 10 Mbit/s P1 BBR 29.6 vs 122.3 ms).",
    "**What sets the window (Linux, this host).** Behind the bridge port TCP Small Queues does not bind (the "
    "veth orphans each skb). HTB keeps the 64 KB GSO skbs whole, so the receiver ACKs once per 45 segments: "
    "`tcp_grow_window` opens the receive window by 2 x skb->len per skb, HyStart's delay test (8 samples a "
    "round) fires only near cwnd 900 at 20 Mbit/s, then CUBIC grows and the 4 MB send buffer (tcp_wmem[2], "
    "the writer woken at 2/3 of it) caps what is queued; BBR's cwnd is its ACK-aggregation term (45 segments "
    "an ACK) over a BDP of about one segment. TBF segments skbs larger than its burst: per-MSS queue and ACKs.",
    "**Why rows miss.** CUBIC at 100 Mbit/s (HTB): Linux leaves slow start at cwnd 16 (ssthresh 16 in both "
    "runs: an ACK train of two skbs less than 2 ms apart in the first rounds); the model's first rounds carry "
    "one skb each, so no train forms, it leaves near cwnd 925 and fills the queue earlier (mean RTT high). "
    "CUBIC 10 Mbit/s P4 (HTB): three of the model's four flows still take a spurious RTO in slow start "
    "(an RTT jump from ~35 to ~300 ms within one round), which Linux's flows did not; the timestamp echo "
    "now shows it spurious and the timeout is undone (ovssim/tcp/loss.py: tcp_process_loss, "
    "tcp_try_undo_loss, F-RTO), one retransmission each, so the flows grow to cwnd ~1000 as Linux's "
    "(mean RTT +6 %, max +14 %; before the undo -42 % / -43 %). "
    "BBR: in every run Linux's ss shows bandwidth excursions -- a pacing rate of 0.4-24 Gbit/s behind a "
    "10-100 Mbit/s shaper, cwnd 150-400 for a few hundred ms, in startup and in most runs again later (100 Mbit/s: "
    "every 1-3 s) -- and these set its max RTT. Their cause is tcp_rate.c's fresh interval: an skb sent with nothing in flight "
    "starts a sample at its own send time, and a whole GSO skb that the shaper's accumulated tokens let "
    "through at once is ACKed within tens of microseconds, so its rate sample is gigabits. The model now "
    "takes that sample too in startup (its test counted the new skb's own segments as in flight before), "
    "which brings BBR's max-RTT errors from a median of -67 % to -40 % (1 of 22 rows within 10 %); its "
    "later excursions, and a steady state with smaller skbs (Linux: ~10-segment skbs and cwnd ~20 behind "
    "20 Mbit/s, i.e. an ACK-aggregation term of about one skb; the model keeps 45-segment skbs and cwnd "
    "~52), are not reproduced, so mean RTTs of single BBR flows are high (sender HTB 10/20 Mbit/s P1 "
    "+114/+147 %). Single-flow BBR repeats differ by up to 4x (TBF 10 Mbit/s P1: 29.6 vs 122.3 ms).",
    "Shaper on the sender's own veth (`sender` rows): TCP Small Queues keeps two 64 KB skbs per flow in the "
    "qdisc (`tcp_small_queue_check`: sk_wmem_alloc > 2 x truesize of the next skb), so ping max = (2N+1) "
    "x 68130-B skbs at the rate (81.8 / 136.0 / 245.0 ms for 1 / 2 / 4 flows at 20 Mbit/s). Router rows are "
    "simulated as the bridge placement (the shaper on the receiver's port, behind a veth). Not simulated: "
    "the pfifo-limit, no-GSO and autocorking variants, the 32 s BBR run.",
]
