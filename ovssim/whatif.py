"""What-if: which qdisc gives my VMs the throughput, latency and jitter they need?

:func:`whatif_sweep` turns one scenario and a list of qdiscs into a sweep
(every VIF port's qdisc replaced, as the thesis configured the scheduler on
the VM's tap port through the OVS QoS table, seed 000 §4); :func:`rank`
ranks the qdiscs per metric with mean and 95% CI over replications
(:func:`ovssim.intervals.interval`), and tests each against the best: a paired t-test on the
per-replication differences when the runs share random numbers (CRN makes
replication ``r`` of every qdisc see the same arrivals and service draws), a
Welch t-test otherwise (scipy.stats).  The k-1 p-values of a metric are
Holm-adjusted (statsmodels ``multipletests``), so "significant" holds
family-wise at 5% within each metric; across metrics nothing is adjusted.
:func:`figure` draws bars with CIs per metric and the ECDF of RTT per qdisc.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .atomic import save_figure
from .errors import ConfigError
# raw samples recorded in seconds (ping rtt, iperf one_way_delay), drawn in ms; the rest are in ms already
from .plots import SECONDS_TO_MS as TO_MS

DEFAULT_METRICS = ("throughput", "transactions", "rtt_mean", "rtt_p99", "latency_mean", "latency_p99", "jitter",
                   "loss")
HIGHER_IS_BETTER = ("throughput", "transactions", "fairness", "goodput")
ALIASES = {"rtt": "rtt_mean", "latency": "rtt_mean", "tput": "throughput", "bw": "throughput",
           "tps": "transactions"}
SAMPLE_PATTERNS = ("*:rtt", "*:rr_latency")


def parse_qdiscs(text: str) -> list[dict]:
    """``"pfifo_fast,sfq(perturb=10),tbf(rate=10mbit burst=32kb latency=50ms)"`` -> qdisc tables."""
    from .qdisc.registry import ALIASES as QALIASES, KINDS
    items, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    items.append(cur)
    out = []
    for raw in (i.strip() for i in items):
        if not raw:
            continue
        m = re.fullmatch(r"([A-Za-z_][\w-]*)\s*(?:\((.*)\))?", raw)
        if not m or depth != 0:
            raise ConfigError(f"cannot read qdisc {raw!r}", key="--qdiscs",
                              fix='write kinds separated by commas, parameters in brackets: "sfq,tbf(rate=10mbit burst=32kb)"')
        kind = m.group(1)
        if kind.startswith("linux-"):                    # OVS QoS type: parameters go to other-config
            from .qdisc.ovs_qos import TYPES
            if kind not in TYPES:
                raise ConfigError(f"unknown OVS QoS type {kind!r}", key="--qdiscs", fix=f"use one of: {', '.join(TYPES)}")
            oc = {}
            for kv in (m.group(2) or "").replace(",", " ").split():
                k, sep, v = kv.partition("=")
                if not sep or not k:
                    raise ConfigError(f"qdisc parameter {kv!r} is not key=value", key="--qdiscs",
                                      fix='write e.g. "linux-htb(max-rate=100000000)"')
                oc[k] = v
            spec = {"type": kind, "other-config": oc} if oc else {"type": kind}
            if kind in ("linux-htb", "linux-hfsc"):
                spec["queues"] = {"0": {k: v for k, v in oc.items() if k in ("max-rate", "min-rate")}}
            out.append(spec)
            continue
        if QALIASES.get(kind, kind) not in KINDS:
            raise ConfigError(f"unknown qdisc kind {kind!r}", key="--qdiscs", fix=f"use one of: {', '.join(sorted(KINDS))}")
        if QALIASES.get(kind, kind) in ("htb", "hfsc") and not (m.group(2) or "").strip():
            # a bare classful name: tc's HTB/HFSC without classes would send everything unshaped (HTB's
            # direct queue) or drop it (HFSC, no default class) -- so it stands for what Open vSwitch
            # installs with no parameters: max-rate = the port's link speed, queue 0 as the default class
            out.append({"type": f"linux-{QALIASES.get(kind, kind)}"})
            continue
        spec = {"kind": kind}
        for kv in (m.group(2) or "").replace(",", " ").split():
            k, sep, v = kv.partition("=")
            if not sep or not k:
                raise ConfigError(f"qdisc parameter {kv!r} is not key=value", key="--qdiscs",
                                  fix='write e.g. "sfq(perturb=10)"')
            spec[k] = _value(v)
        out.append(spec)
    if not out:
        raise ConfigError("no qdiscs given", key="--qdiscs", fix="write e.g. --qdiscs pfifo_fast,sfq,codel")
    return out


# The six schedulers of the thesis, configured as it did through the OVS QoS table (seed 000 §2.3.3, §4);
# the thesis gives no HTB/HFSC rates, so root and queue 0 get max-rate = its 100 Mbit/s link.
THESIS_QDISCS = {
    "pfifo_fast": {"kind": "pfifo_fast"},
    "sfq": {"type": "linux-sfq", "other-config": {"perturb": "10"}},
    "codel": {"type": "linux-codel"},
    "fq_codel": {"type": "linux-fq_codel"},
    "htb": {"type": "linux-htb", "other-config": {"max-rate": "100000000"}, "queues": {"0": {"max-rate": "100000000"}}},
    "hfsc": {"type": "linux-hfsc", "other-config": {"max-rate": "100000000"}, "queues": {"0": {"max-rate": "100000000"}}},
}


def qdisc_choices(text: str) -> tuple[list[str], list[dict]]:
    """(labels, qdisc tables) for ``--qdiscs``; ``thesis`` stands for the thesis's six schedulers."""
    if text.strip().lower() == "thesis":
        return list(THESIS_QDISCS), [dict(v) for v in THESIS_QDISCS.values()]
    specs = parse_qdiscs(text)
    return [qdisc_label(q) for q in specs], specs


def _value(v: str):
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(v.lower(), v)


def qdisc_label(spec: dict) -> str:
    from .sweep import _short
    return _short(spec)


def whatif_sweep(scenario, qdiscs: list[dict], *, on: list[str] | None = None, reps: int | None = None,
                 seed: int | None = None, crn: bool = True, duration: str | None = None,
                 labels: list[str] | None = None, separately: bool = False, fixed: dict | None = None,
                 precision=None):
    """A :class:`~ovssim.sweep.Sweep` that tries each qdisc on the ports ``on`` (default: every VM's VIF port).

    ``separately`` runs each ``[[workload]]`` of the scenario on its own (the thesis ran its throughput,
    latency and jitter tests one at a time); ``fixed`` are further changes (``--set``) for every run.
    """
    from .sweep import sweep_from_dict
    from .tomlfile import read_toml
    path = Path(scenario)
    raw = read_toml(path, "scenario", "check the path (examples/ has ready-made scenarios)")
    vms = [v.get("name") for v in raw.get("vm", []) if isinstance(v, dict)]
    if on is None:
        on = [f"vm.{v}.qdisc" for v in vms]
    if not on:
        raise ConfigError("the scenario has no [[vm]] whose qdisc could be changed", file=str(path), key="vm",
                          fix="add VMs, or name the ports with --on nic.eth0.qdisc")
    for key in on:
        if not key.endswith(".qdisc"):
            raise ConfigError(f"--on {key!r} is not a qdisc key", key="--on", fix="write e.g. vm.vm2.qdisc or nic.eth0.qdisc")
    labels = labels or [qdisc_label(q) for q in qdiscs]
    if len(set(labels)) != len(labels):
        raise ConfigError("the same qdisc is listed twice", key="--qdiscs", fix="list each qdisc once")
    sweep_tbl = {"name": f"whatif-{raw.get('scenario', {}).get('name', path.stem)}", "crn": crn,
                 "keep_samples": list(SAMPLE_PATTERNS), "max_samples": 400}
    if reps is not None:
        sweep_tbl["reps"] = reps
    if seed is not None:
        sweep_tbl["seed"] = seed
    grid = {",".join(on): qdiscs}
    wls = [w for w in raw.get("workload", []) if isinstance(w, dict)]
    if separately and len(wls) > 1:
        for i, w in enumerate(wls):
            w.setdefault("name", f"{w.get('tool', 'workload')}{i + 1}")
        grid["workload"] = [[w] for w in wls]
    data = {"sweep": sweep_tbl, "grid": grid, "set": dict(fixed or {})}
    if duration is not None:
        data["set"]["scenario.duration"] = duration
    sw = sweep_from_dict(data, file=str(path), base_dir=path.parent, base_scenario=raw)
    sw.base_file = str(path)
    if precision is not None:
        sw.precision = precision
    by_spec = {_canon_spec(q): lab for q, lab in zip(qdiscs, labels)}
    for p in sw.points:
        p.label = by_spec[_canon_spec(p.changes[",".join(on)])]
    return sw


def _canon_spec(q) -> str:
    import json
    return json.dumps(q, sort_keys=True, default=str)


def test_groups(sw, on: str) -> list[list]:
    """The points of a what-if sweep grouped by test (everything but the qdisc key ``on``): the qdiscs
    ranked against each other, whose replications stop together."""
    groups: dict = {}
    for p in sw.points:
        groups.setdefault(_canon_spec({k: v for k, v in p.changes.items() if k != on}), []).append(p)
    return list(groups.values())


def settle_rule(metrics, precision, *, paired: bool):
    """The what-if stopping rule for one test's qdiscs at ``n`` replications: stop when the ranking
    it reports is settled -- every qdisc's difference from the best significant after Holm (or
    identical in every replication, under CRN) on every ranked metric -- or when every ranked
    metric's CI is within ``precision``; else at ``max_reps``.

    Looking at the tests after every batch is a sequential test: the 5 % of each look is not the 5 %
    of the whole procedure (Jennison & Turnbull, *Group Sequential Methods*, ch. 1); the report
    names the rule that stopped each test and after how many looks.
    """
    from .sequential import Precision, Stopping, check, stopping_of

    def decide(values_by_point: dict, n: int, looks: int):
        rows = [(pid, r, wl, m, u, reps.get(r, np.nan)) for pid, vals in values_by_point.items()
                for (wl, m, u), reps in vals.items() for r in range(n)]
        df = pd.DataFrame(rows, columns=["label", "rep", "workload", "metric", "unit", "value"])
        try:
            rankings = rank_all(df, metrics, paired=paired)
        except ConfigError:
            rankings = []
        ranked = {(r.workload, r.metric) for r in rankings}
        if rankings and all(_settled(r) for r in rankings):
            return Stopping(n, "ranking settled", [], looks)
        watch = precision if precision.rel or precision.abs else Precision({"*": 0.0}, {}, precision.min_reps,
                                                                             precision.max_reps)
        checks = [c for vals in values_by_point.values()
                  for c in check({k: [reps.get(r, np.nan) for r in range(n)] for k, reps in vals.items()
                                  if k[:2] in ranked}, watch)]
        return stopping_of(checks, n, looks, precision)
    return decide


def _settled(r: "Ranking") -> bool:
    t = r.table[~r.table["no_data"].astype(bool)]
    rest = t.iloc[1:]
    return bool(len(t) and (rest["significant"] | rest["identical"]).all())


# --------------------------------------------------------------------------- analysis

@dataclass
class Ranking:
    workload: str
    metric: str
    unit: str
    higher_is_better: bool
    table: pd.DataFrame      # rank, qdisc, mean, ci95_low, ci95_high, delta_pct, p_value, p_holm, significant
    test: str


def higher_is_better(metric: str) -> bool:
    return metric.startswith(HIGHER_IS_BETTER)


def _canonical(name: str) -> str:
    name = ALIASES.get(name, name)
    m = re.fullmatch(r"p(\d+)_(\w+)", name)          # p99_rtt -> rtt_p99
    return f"{m.group(2)}_p{m.group(1)}" if m else name


def resolve_metrics(df: pd.DataFrame, requested) -> list[tuple[str, str]]:
    """(workload, metric) pairs for names like ``p99_rtt``, ``ping:rtt_mean`` or ``throughput``."""
    avail = df[df["workload"] != "system"][["workload", "metric"]].drop_duplicates()
    pairs = list(avail.itertuples(index=False, name=None))
    if not requested:
        out = [(w, m) for name in DEFAULT_METRICS for (w, m) in pairs if m == name]
        # netperf TCP_RR reports rtt_mean (= 1/transactions, as the thesis) and latency_mean: show one
        return [(w, m) for (w, m) in out if not (m == "latency_mean" and (w, "rtt_mean") in out)]
    out = []
    for req in requested:
        wl, _, name = req.rpartition(":")
        name = _canonical(name)
        hit = [(w, m) for (w, m) in pairs if m == name and (not wl or w == wl)]
        if not hit and name == "rtt_mean":               # netperf TCP_RR's latency is its RTT
            hit = [(w, m) for (w, m) in pairs if m == "latency_mean" and (not wl or w == wl)]
        if not hit:
            raise ConfigError(f"no metric {req!r} in the results", key="--metric",
                              fix="use one of: " + ", ".join(sorted({f'{w}:{m}' for w, m in pairs})))
        out += [h for h in hit if h not in out]
    return out


def rank(df: pd.DataFrame, workload: str, metric: str, *, paired: bool, order: list[str] | None = None,
         alpha: float = 0.05) -> Ranking:
    """Rank the points of ``df`` (one per label) on one metric and test each against the best."""
    from scipy import stats
    from statsmodels.stats.multitest import multipletests

    from .intervals import interval
    sub = df[(df["workload"] == workload) & (df["metric"] == metric)]
    unit = sub["unit"].iloc[0] if len(sub) else ""
    hib = higher_is_better(metric)
    by = {lab: g.set_index("rep")["value"].sort_index() for lab, g in sub.groupby("label", sort=False)}
    labels = order or list(by)
    labels = [lab for lab in labels if lab in by]
    rows = []
    for lab in labels:
        ci = interval(by[lab].to_numpy(), unit, metric)
        rows.append({"qdisc": lab, "mean": ci.mean, "ci95_low": ci.low, "ci95_high": ci.high, "reps": ci.n,
                     "reps_run": int(len(by[lab]))})
    t = pd.DataFrame(rows)
    if t.empty:
        return Ranking(workload, metric, unit, hib, t, "")
    # a qdisc with no value in any replication (jitter of a stream it dropped entirely, the RTT of a
    # ping with no reply) is not ranked: it goes last, marked, and is not the "best" of anything
    has_value = np.isfinite(t["mean"].to_numpy(float))
    missing = t[~has_value].assign(rank=pd.NA, p_value=np.nan, p_holm=np.nan, significant=False, identical=False,
                                   delta_pct=np.nan, no_data=True)
    t = t[has_value]
    if t.empty:
        t = missing.reset_index(drop=True)
        t.insert(0, "rank", t.pop("rank").astype("Int64"))
        return Ranking(workload, metric, unit, hib, t, "")
    t = t.sort_values("mean", ascending=not hib, kind="stable").reset_index(drop=True)
    best = t["qdisc"].iloc[0]
    pvals, same = [], []
    for lab in t["qdisc"].iloc[1:]:
        a, b = by[best], by[lab]
        if paired:
            common = a.index.intersection(b.index)
            x, y = a.loc[common].to_numpy(), b.loc[common].to_numpy()
            ok = np.isfinite(x) & np.isfinite(y)
            x, y = x[ok], y[ok]
            d = y - x
            same.append(bool(len(d) and np.all(d == 0)))
            if len(d) < 2:
                p = float("nan")
            elif np.ptp(d) <= 1e-9 * max(np.abs(x).max(), np.abs(y).max(), 1e-300):
                p = 1.0 if abs(d.mean()) <= 1e-9 * max(np.abs(x).max(), 1e-300) else 0.0   # (near) constant
            else:
                p = float(stats.ttest_rel(y, x).pvalue)
        else:
            x, y = a.to_numpy(), b.to_numpy()
            x, y = x[np.isfinite(x)], y[np.isfinite(y)]
            same.append(bool(len(x) == len(y) and np.array_equal(np.sort(x), np.sort(y))))
            if len(x) < 2 or len(y) < 2:
                p = float("nan")
            elif x.std() == 0 and y.std() == 0:
                p = 1.0 if x.mean() == y.mean() else 0.0
            else:
                p = float(stats.ttest_ind(y, x, equal_var=False).pvalue)
        pvals.append(p)
    t["p_value"] = [np.nan] + pvals
    holm = [np.nan] * len(pvals)
    finite = [i for i, p in enumerate(pvals) if np.isfinite(p)]
    if finite:
        adj = multipletests([pvals[i] for i in finite], alpha=alpha, method="holm")[1]
        for i, a in zip(finite, adj):
            holm[i] = float(a)
    t["p_holm"] = [np.nan] + holm
    t["significant"] = [False] + [bool(np.isfinite(p) and p < alpha) for p in holm]
    t["identical"] = [False] + same          # every replication equal to the best's (under CRN: same path)
    ref = t["mean"].iloc[0]
    t["delta_pct"] = (t["mean"] - ref) / abs(ref) * 100.0 if ref else np.nan
    t.insert(0, "rank", range(1, len(t) + 1))
    t["no_data"] = False
    if len(missing):
        t = pd.concat([t, missing], ignore_index=True)
        t["rank"] = t["rank"].astype("Int64")
    test = "paired t-test (CRN)" if paired else "Welch t-test"
    return Ranking(workload, metric, unit, hib, t, test)


def rank_all(df: pd.DataFrame, metrics, *, paired: bool, order=None) -> list[Ranking]:
    return [rank(df, w, m, paired=paired, order=order) for w, m in resolve_metrics(df, metrics)]


def format_rankings(rankings: list[Ranking], width: int = 110) -> str:
    """Rich tables, one per metric: rank, qdisc, mean, 95% CI, difference from the best, Holm p, verdict."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from .intervals import ci_text
    console = Console(record=True, width=width)
    with console.capture() as cap:
        for r in rankings:
            arrow = "higher is better" if r.higher_is_better else "lower is better"
            tbl = Table(title=escape(f"{r.workload}: {r.metric} [{r.unit}] ({arrow}; {r.test} vs best, Holm-adjusted)"))
            for col in ("rank", "qdisc", "mean", "95% CI", "vs best", "p (Holm)", "verdict"):
                tbl.add_column(col, justify="left" if col in ("qdisc", "verdict") else "right")
            for row in r.table.itertuples():
                if getattr(row, "no_data", False):
                    tbl.add_row("-", escape(row.qdisc), "-", "-", "", "",
                                "no data (nothing measured: e.g. all traffic dropped)")
                    continue
                full = int(r.table["reps_run"].iloc[0]) if "reps_run" in r.table else row.reps
                if row.rank == 1:
                    verdict, p, d = "best", "", ""
                else:
                    p = f"{row.p_holm:.3g}" if np.isfinite(row.p_holm) else "n/a"
                    verdict = ("worse" if row.significant else
                               "identical results" if row.identical else "no significant difference")
                    d = f"{row.delta_pct:+.2f}%" if np.isfinite(row.delta_pct) else ""
                if row.reps < full:          # some replications gave no value: say so beside the verdict
                    verdict += f" ({row.reps} of {full} reps have a value)"
                tbl.add_row(str(row.rank), escape(row.qdisc), f"{row.mean:.5g}", ci_text(row.ci95_low, row.ci95_high),
                            d, p, verdict)
            console.print(tbl)
    return cap.get()


def figure(rankings: list[Ranking], samples: dict, path, order: list[str] | None = None) -> Path:
    """Bars with 95% CIs per metric and the ECDF of RTT per qdisc; written with matplotlib's Agg backend."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = sorted({k for d in samples.values() for k in d})
    n = len(rankings) + len(names)
    cols = min(3, max(1, n))
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.4 * rows), squeeze=False)
    flat = list(axes.flat)
    labels = order or sorted({q for r in rankings for q in r.table.get("qdisc", [])})
    colours = {lab: plt.cm.tab10(i % 10) for i, lab in enumerate(labels)}
    styles = {lab: ("-", "--", ":", "-.")[i % 4] for i, lab in enumerate(labels)}
    for ax, r in zip(flat, rankings):
        t = r.table.set_index("qdisc").reindex([lab for lab in labels if lab in set(r.table["qdisc"])])
        x = np.arange(len(t))
        err = np.vstack([t["mean"] - t["ci95_low"], t["ci95_high"] - t["mean"]])
        ax.bar(x, t["mean"], yerr=err, capsize=4, color=[colours[q] for q in t.index])
        ax.set_xticks(x, t.index, rotation=30, ha="right", fontsize=8)
        ax.set_title(f"{r.workload}: {r.metric}", fontsize=9)
        ax.set_ylabel(r.unit)
        lo, hi = float(np.nanmin(t["ci95_low"])), float(np.nanmax(t["ci95_high"]))
        if np.isfinite(lo) and np.isfinite(hi) and hi > lo and lo > 0 and (hi - lo) < 0.2 * hi:
            pad = (hi - lo) * 0.5
            ax.set_ylim(lo - pad, hi + pad)      # near-equal bars: zoom so the CIs are visible
            ax.set_title(f"{r.workload}: {r.metric} (axis zoomed)", fontsize=9)
    for ax, name in zip(flat[len(rankings):], names):
        scale = TO_MS.get(name.rpartition(":")[2], 1.0)
        lo, hi = np.inf, 0.0
        for lab in labels:
            v = samples.get(lab, {}).get(name)
            if v is None or not len(v):
                continue
            v = np.sort(np.asarray(v, float)) * scale
            lo, hi = min(lo, v[0]), max(hi, v[-1])
            ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", label=lab, color=colours[lab],
                    linestyle=styles[lab])
        if lo > 0 and hi / lo > 20:
            ax.set_xscale("log")
        ax.set_title(f"ECDF of {name} (all replications)", fontsize=9)
        ax.set_xlabel("ms")
        ax.set_ylabel("P(X <= x)")
        ax.legend(fontsize=7)
    for ax in flat[n:]:
        ax.set_visible(False)
    fig.tight_layout()
    path = save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path
