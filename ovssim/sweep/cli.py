"""``ovssim sweep`` and ``ovssim whatif``: thin click commands over :mod:`ovssim.sweep` and :mod:`ovssim.whatif`."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from .. import units
from ..cli import REPS, SEED, WORKERS, precision_from_cli, precision_options
from ..errors import ConfigError
from ..precedence import parse_set as _parse_set  # noqa: F401 - also ovssim.sweep_cli's
from .executors import check_dask_address


def _progress_default(progress):
    return sys.stderr.isatty() if progress is None else progress


def _report_line(rep) -> str:
    done = f"{rep.ran} runs in {rep.seconds:.1f} s ({rep.rate:.2f} runs/s, {rep.executor})"
    if rep.skipped:
        done += f"; {rep.skipped} already done"
    return f"{done}; results in {rep.out}/runs.jsonl, summary in {rep.out}/summary.csv"


def _reps_text(sw) -> str:
    p = sw.precision
    if p is None:
        return f"{sw.reps} reps = {sw.total} runs"
    return (f"{p.min_reps}..{p.max_reps} reps until the 95% CIs are within "
            + ", ".join([f"{k}={v:g}" if k != "*" else f"{v:.3g} of the mean" for k, v in p.rel.items()]
                        + [f"{k}+-{v:g}" for k, v in p.abs.items()]))


def _echo_stopping(rep, sw) -> None:
    """How many replications each point took, and which metrics were still short of precision at max-reps."""
    if rep.stopping is None:
        return
    from ..cli import stopping_line
    stops = [(p.label, rep.stopping[p.id]) for p in sw.points]
    reps = [st.reps for _, st in stops]
    reasons = {}
    for _, st in stops:
        reasons[st.reason] = reasons.get(st.reason, 0) + 1
    click.echo(f"replications per point: {min(reps)}..{max(reps)} (total {sum(reps)}); "
               + ", ".join(f"{n} {r}" for r, n in reasons.items()) + f"; per point in {rep.out}/stopping.csv", err=True)
    for label, st in stops:
        if st.reason != "precision reached" or len(stops) <= 12:
            click.echo("  " + stopping_line(label, st), err=True)


def _announce_overrides(sw) -> None:
    """Which parameter values the first point's sources override, and whose (ovssim.precedence); a
    point's ``params.*`` changes count as its scenario's [params]."""
    from ..precedence import resolve
    from ..scenario import from_dict
    from .spec import apply_changes
    if not sw.points:
        return
    data = apply_changes(sw.base, {**sw.fixed, **sw.points[0].changes})
    for line in resolve(from_dict(data, file=sw.base_file, base_dir=Path(sw.base_dir))).notes():
        click.echo(f"ovssim: {line}", err=True)


def _check_failures(rep) -> None:
    if rep.failed:
        run, label, err = rep.failed[0]
        raise ConfigError(f"{len(rep.failed)} of {rep.total} runs failed; first: run {run} ({label}): {err}",
                          key="sweep", fix="correct the sweep, then re-run with --resume to redo only the failed runs")


_exec_options = [
    click.option("--workers", type=WORKERS, default=None,
                 help="parallel workers (default: all local cores; 1 runs in this process)"),
    click.option("--dask", default=None, metavar="ADDRESS", callback=lambda _c, _p, v: v and check_dask_address(v),
                 help="run on a Dask cluster: tcp://HOST:8786, or local / local:N for a LocalCluster"),
    click.option("--resume", is_flag=True, help="continue a sweep in --out, skipping finished runs"),
    click.option("--progress/--no-progress", default=None, help="progress display (default: on a terminal)"),
]


def _with(options):
    def deco(fn):
        for opt in reversed(options):
            fn = opt(fn)
        return fn
    return deco


@click.command()
@click.argument("sweep_file", metavar="SWEEP.toml", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="results directory (default: sweep-<name> next to the current directory)")
@click.option("--reps", type=REPS, default=None, help="replications (default: the file's)")
@click.option("--plot", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="also draw every point's metrics with their 95%% CIs to this PNG")
@precision_options
@_with(_exec_options)
def sweep(sweep_file, out, reps, plot, precision, abs_precision, min_reps, max_reps, workers, dask, resume,
          progress):
    """Run every point x replication of SWEEP.toml in parallel; each finished run is saved as it completes."""
    from . import load_sweep, run_sweep
    if plot is not None:
        from ..atomic import check_output
        check_output(plot, overwrite=True, what="--plot")       # before the runs, not after them
    sw = load_sweep(sweep_file, reps=reps)
    prec = precision_from_cli(precision, abs_precision, min_reps, max_reps, reps, sw.precision)
    if prec is not None:
        sw.precision = prec
    out = out or Path(f"sweep-{sw.name}")
    click.echo(f"{sw.name}: {len(sw.points)} points x {_reps_text(sw)} "
               f"({'common' if sw.crn else 'independent'} random numbers, seed {sw.seed})", err=True)
    _announce_overrides(sw)
    rep = run_sweep(sw, out, workers=workers, dask=dask, resume=resume, progress=_progress_default(progress))
    click.echo(_report_line(rep), err=True)
    _echo_stopping(rep, sw)
    if len(sw.points) <= 60:
        import pandas as pd
        summ = pd.read_csv(Path(out) / "summary.csv")
        summ = summ[summ["workload"] != "system"]
        if len(summ):
            from ..intervals import ci_text
            summ["value"] = [f"{m:.4g} {ci_text(lo, hi, '.4g')}" for m, lo, hi in
                             zip(summ["mean"], summ["ci95_low"], summ["ci95_high"])]
            summ["metric"] = summ["workload"] + ":" + summ["metric"] + " (" + summ["unit"] + ")"
            wide = summ.pivot_table(index="label", columns="metric", values="value", aggfunc="first", sort=False)
            with pd.option_context("display.width", 200, "display.max_columns", 12, "display.max_colwidth", 40):
                click.echo(wide.to_string())
    if plot is not None:
        import pandas as pd
        from ..plots import sweep_figure
        click.echo(f"figure: {sweep_figure(pd.read_csv(Path(out) / 'summary.csv'), plot)}", err=True)
    _check_failures(rep)


@click.command()
@click.argument("scenario", metavar="SCENARIO.toml", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--qdiscs", required=True,
              help='qdiscs to compare, e.g. "pfifo_fast,sfq,codel,fq_codel,htb,hfsc" or "tbf(rate=50mbit burst=32kb latency=50ms)"')
@click.option("--metric", "metrics", multiple=True,
              help="metric to rank on (repeatable): p99_rtt, rtt_mean, jitter, throughput, ping:loss, ... "
                   "(default: throughput, RTT, latency, jitter, loss)")
@click.option("--on", "on", default=None,
              help="comma-separated qdisc keys to change (default: every VM's VIF port, vm.<name>.qdisc)")
@click.option("--reps", type=click.IntRange(2, units.COUNT_MAX), default=None,
              help="replications per qdisc (default: the scenario's)")
@click.option("--duration", default=None, help='simulated time per run, e.g. "10s" (default: the scenario\'s)')
@click.option("--seed", type=SEED, default=None, help="base seed (default: the scenario's)")
@click.option("--separately", is_flag=True,
              help="run each [[workload]] on its own, as the thesis ran its tests (default: all together)")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help='a further change for every run, e.g. --set "bridge.br0.kind,bridge.br1.kind=linux" (repeatable)')
@click.option("--crn/--no-crn", default=True, show_default=True,
              help="common random numbers across qdiscs (paired tests)")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="results directory (default: whatif-<scenario name>)")
@click.option("--figure", "fig", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="figure path (default: OUT/whatif.png)")
@precision_options
@click.option("--until-settled", is_flag=True,
              help="add replications until the ranking is settled (every difference from the best significant "
                   "after Holm) or --max-reps; with --precision, also stop when every CI is within it")
@_with(_exec_options)
def whatif(scenario, qdiscs, metrics, on, reps, duration, separately, sets, seed, crn, out, fig, precision,
           abs_precision, min_reps, max_reps, until_settled, workers, dask, resume, progress):
    """Compare qdiscs on SCENARIO.toml: a ranked table with 95% CIs and significance, and a figure.

    With --precision or --until-settled, each test's qdiscs get replications in batches (together,
    so they stay paired) until the ranking is settled or every ranked metric's CI is within the
    precision, or --max-reps; the output says which."""
    from . import load_results, run_sweep
    from ..atomic import check_output
    from ..whatif import figure, format_rankings, qdisc_choices, rank_all, resolve_metrics, whatif_sweep
    if fig is not None:
        check_output(fig, overwrite=True, what="--figure")          # before the runs, not after them
    labels, specs = qdisc_choices(qdiscs)
    keys = [k.strip() for k in on.split(",") if k.strip()] if on is not None else None
    if keys == []:
        raise ConfigError(f"--on {on!r} names no qdisc key", key="--on", fix="write e.g. --on vm.vm2.qdisc")
    fixed = dict(_parse_set(s) for s in sets)
    from dataclasses import replace

    from ..sequential import parse_precision
    prec = None if until_settled and not precision and not abs_precision else \
        precision_from_cli(precision, abs_precision, min_reps, max_reps, reps)
    if until_settled and prec is None:
        if reps is not None:
            raise ConfigError("--reps and --until-settled are both given", key="--until-settled",
                              fix="keep --reps for a fixed count, or --until-settled (with --max-reps)")
        prec = replace(parse_precision(0.5, None, min_reps, max_reps), rel={})    # the ranking alone decides
    sw = whatif_sweep(scenario, specs, on=keys, reps=reps, seed=seed, crn=crn, duration=duration, labels=labels,
                      separately=separately, fixed=fixed, precision=prec)
    out = out or Path(f"whatif-{Path(scenario).stem}")
    tests = len(sw.points) // max(1, len(labels))
    click.echo(f"{sw.name}: {len(labels)} qdiscs{f' x {tests} tests' if tests > 1 else ''} x "
               f"{_reps_text(sw) if prec is None or prec.rel or prec.abs else f'{prec.min_reps}..{prec.max_reps} reps until the ranking is settled'}",
               err=True)
    _announce_overrides(sw)
    kw = {}
    if sw.precision is not None:
        from ..whatif import settle_rule, test_groups
        on_key = next(iter(sw.points[0].changes))
        kw = dict(groups=test_groups(sw, on_key), decide=settle_rule(list(metrics), sw.precision, paired=crn))

    def check_metrics(rec, _done, _total):
        """The --metric names, checked against the first finished run (not after the last)."""
        if metrics and not separately and rec.get("status") == "ok" and not checked:
            import pandas as pd
            resolve_metrics(pd.DataFrame(rec["rows"], columns=["workload", "metric", "unit", "value"]), metrics)
            checked.append(True)
    checked: list = []
    rep = run_sweep(sw, out, workers=workers, dask=dask, resume=resume, progress=_progress_default(progress),
                    on_run=check_metrics, **kw)
    click.echo(_report_line(rep), err=True)
    _echo_stopping(rep, sw)
    _check_failures(rep)
    df, samples = load_results(out, samples=True)
    order = list(dict.fromkeys(p.label for p in sw.points))
    df = df[df["point"].isin({p.id for p in sw.points})]
    if rep.stopping is not None:                 # only the replications the stopping rule counted
        df = df[df["rep"] < df["point"].map({k: v.reps for k, v in rep.stopping.items()})]
    rankings = rank_all(df, list(metrics), paired=crn, order=order)
    click.echo(format_rankings(rankings), nl=False)
    click.echo(f"{'Paired' if crn else 'Welch'} t-tests of each qdisc against the best, Holm-adjusted over the "
               f"{len(order) - 1} comparisons of each metric (family-wise 5%); metrics are not adjusted across.")
    path = figure(rankings, samples, fig or Path(out) / "whatif.png", order=order)
    click.echo(f"figure: {path}")
