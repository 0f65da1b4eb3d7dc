"""``ovssim sweep`` and ``ovssim whatif``: thin click commands over :mod:`ovssim.sweep` and :mod:`ovssim.whatif`."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from .. import units
from ..cli import REPS, SEED, WORKERS
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
@_with(_exec_options)
def sweep(sweep_file, out, reps, workers, dask, resume, progress):
    """Run every point x replication of SWEEP.toml in parallel; each finished run is saved as it completes."""
    from . import load_sweep, run_sweep
    sw = load_sweep(sweep_file, reps=reps)
    out = out or Path(f"sweep-{sw.name}")
    click.echo(f"{sw.name}: {len(sw.points)} points x {sw.reps} reps = {sw.total} runs "
               f"({'common' if sw.crn else 'independent'} random numbers, seed {sw.seed})", err=True)
    _announce_overrides(sw)
    rep = run_sweep(sw, out, workers=workers, dask=dask, resume=resume, progress=_progress_default(progress))
    click.echo(_report_line(rep), err=True)
    if len(sw.points) <= 60:
        import pandas as pd
        summ = pd.read_csv(Path(out) / "summary.csv")
        summ = summ[summ["workload"] != "system"]
        if len(summ):
            summ["value"] = [f"{m:.4g} [{lo:.4g}, {hi:.4g}]" for m, lo, hi in
                             zip(summ["mean"], summ["ci95_low"], summ["ci95_high"])]
            summ["metric"] = summ["workload"] + ":" + summ["metric"] + " (" + summ["unit"] + ")"
            wide = summ.pivot_table(index="label", columns="metric", values="value", aggfunc="first", sort=False)
            with pd.option_context("display.width", 200, "display.max_columns", 12, "display.max_colwidth", 40):
                click.echo(wide.to_string())
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
@_with(_exec_options)
def whatif(scenario, qdiscs, metrics, on, reps, duration, separately, sets, seed, crn, out, fig, workers, dask, resume,
           progress):
    """Compare qdiscs on SCENARIO.toml: a ranked table with 95% CIs and significance, and a figure."""
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
    sw = whatif_sweep(scenario, specs, on=keys, reps=reps, seed=seed, crn=crn, duration=duration, labels=labels,
                      separately=separately, fixed=fixed)
    out = out or Path(f"whatif-{Path(scenario).stem}")
    tests = len(sw.points) // max(1, len(labels))
    click.echo(f"{sw.name}: {len(labels)} qdiscs{f' x {tests} tests' if tests > 1 else ''} x {sw.reps} reps = "
               f"{sw.total} runs", err=True)
    _announce_overrides(sw)
    def check_metrics(rec, _done, _total):
        """The --metric names, checked against the first finished run (not after the last)."""
        if metrics and not separately and rec.get("status") == "ok" and not checked:
            import pandas as pd
            resolve_metrics(pd.DataFrame(rec["rows"], columns=["workload", "metric", "unit", "value"]), metrics)
            checked.append(True)
    checked: list = []
    rep = run_sweep(sw, out, workers=workers, dask=dask, resume=resume, progress=_progress_default(progress),
                    on_run=check_metrics)
    click.echo(_report_line(rep), err=True)
    _check_failures(rep)
    df, samples = load_results(out, samples=True)
    order = list(dict.fromkeys(p.label for p in sw.points))
    df = df[df["point"].isin({p.id for p in sw.points})]
    rankings = rank_all(df, list(metrics), paired=crn, order=order)
    click.echo(format_rankings(rankings), nl=False)
    click.echo(f"{'Paired' if crn else 'Welch'} t-tests of each qdisc against the best, Holm-adjusted over the "
               f"{len(order) - 1} comparisons of each metric (family-wise 5%); metrics are not adjusted across.")
    path = figure(rankings, samples, fig or Path(out) / "whatif.png", order=order)
    click.echo(f"figure: {path}")
