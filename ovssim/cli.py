"""The ``ovssim`` command: thin -- it parses arguments and calls the library.

Subcommands owned by other packages (collect, testbed, fit, validate, sweep,
whatif) are loaded lazily, so ``ovssim run`` starts fast and one missing
optional part does not break the rest.  Every :class:`OvssimError` is printed
as one line (``ovssim: error: ...``) with exit status 2, never a traceback.
"""
from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path

import click

from . import __version__, units
from .errors import OvssimError

# option types shared by every command: bounds from ovssim.units, checked before any work
REPS = click.IntRange(1, units.COUNT_MAX)
SEED = click.IntRange(0, units.SEED_MAX)
WORKERS = click.IntRange(1, 4096)
COUNT = click.IntRange(1, units.COUNT_MAX)

LAZY = {
    "collect": ("ovssim.collect.cli", "collect", "gather real measurements through a real OVS/Linux bridge"),
    "testbed": ("ovssim.collect.cli", "testbed", "build / tear down the namespace testbed"),
    "import-data": ("ovssim.collect.cli", "import_data", "import Flent or CSV sample files into the tidy format"),
    "fit": ("ovssim.fit.cli", "fit", "fit delay distributions and calibrate profiles"),
    "validate": ("ovssim.validate.cli", "validate", "compare the simulator with measured data"),
    "sweep": ("ovssim.sweep.cli", "sweep", "run a grid of scenarios in parallel"),
    "whatif": ("ovssim.sweep.cli", "whatif", "rank qdiscs for a scenario"),
}


_PER_CORE = re.compile(r"cpu_util\..+\.core\d+$")


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return sorted(set(super().list_commands(ctx)) | set(LAZY))

    def get_command(self, ctx, name):
        cmd = super().get_command(ctx, name)
        if cmd is not None or name not in LAZY:
            return cmd
        mod, attr, _help = LAZY[name]
        try:
            return getattr(importlib.import_module(mod), attr)
        except (ImportError, AttributeError) as exc:
            why = str(exc)

            @click.command(name=name, help=f"{_help} (not available: {why})")
            def _missing():
                raise OvssimError(f"'ovssim {name}' is not available in this build ({why})")
            return _missing


@click.group(cls=LazyGroup)
@click.version_option(__version__, prog_name="ovssim")
def cli():
    """ovssim: simulate the Open vSwitch packet path (VIF -> bridge -> qdisc -> PIF)."""


def precision_options(fn):
    """``--precision``, ``--abs-precision``, ``--min-reps``, ``--max-reps`` (run, whatif, sweep)."""
    opts = [
        click.option("--precision", multiple=True, metavar="[METRIC=]REL",
                     help="add replications until every reported metric's 95% CI half-width is within REL of its "
                          "mean (0.01 = 1%); METRIC=REL for one metric (repeatable; patterns like rtt_* and "
                          "udp:jitter)"),
        click.option("--abs-precision", multiple=True, metavar="METRIC=VALUE",
                     help="or within VALUE (the metric's unit), e.g. loss=0.1 (repeatable)"),
        click.option("--min-reps", type=click.IntRange(2, units.COUNT_MAX), default=None,
                     help="replications before the first look (default 3)"),
        click.option("--max-reps", type=click.IntRange(2, units.COUNT_MAX), default=None,
                     help="stop here even if the precision is not reached (default 100)"),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


def precision_from_cli(precision, abs_precision, min_reps, max_reps, reps=None, file_precision=None):
    """A :class:`~ovssim.sequential.Precision` from the options (None without --precision/--abs-precision);
    ``--min-reps``/``--max-reps`` not given keep those of ``file_precision`` (the file's own keys)."""
    from .sequential import parse_precision
    if file_precision is not None:
        min_reps = file_precision.min_reps if min_reps is None else min_reps
        max_reps = file_precision.max_reps if max_reps is None else max_reps
        if not precision and not abs_precision and (min_reps, max_reps) != (file_precision.min_reps,
                                                                            file_precision.max_reps):
            precision, abs_precision = [f"{k}={v}" for k, v in file_precision.rel.items()], \
                [f"{k}={v}" for k, v in file_precision.abs.items()]
    prec = parse_precision(precision, abs_precision, min_reps, max_reps)
    if prec is not None and reps is not None:
        raise OvssimError("--reps and --precision are both given; keep --reps for a fixed count, or --precision "
                          "(with --min-reps/--max-reps) to stop at a CI width")
    return prec


def stopping_line(name: str, st) -> str:
    """One line: how many replications a point took and why it stopped."""
    text = f"{name}: {st.reps} replications, {st.reason}"
    if st.unmet:
        shown = ", ".join(st.unmet[:6]) + (f" and {len(st.unmet) - 6} more" if len(st.unmet) > 6 else "")
        text += f" (not within precision: {shown})"
    return text


def _fmt_table(summary) -> str:
    from rich.console import Console
    from rich.table import Table

    from .intervals import ci_text
    table = Table(title=summary["scenario"].iloc[0] if len(summary) else "results")
    for col in ("workload", "metric", "mean", "95% CI", "unit", "reps"):
        table.add_column(col, justify="right" if col in ("mean", "95% CI", "reps") else "left")
    for r in summary.itertuples():
        if _PER_CORE.match(r.metric):
            continue                      # per-core rows: in --format csv/json
        table.add_row(r.workload, r.metric, f"{r.mean:.6g}", ci_text(r.ci95_low, r.ci95_high, ".6g"),
                      r.unit, str(r.reps))
    console = Console(record=True, width=110)
    with console.capture() as cap:
        console.print(table)
    return cap.get()


@cli.command()
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--reps", type=REPS, default=None, help="replications (default: the file's)")
@click.option("--seed", type=SEED, default=None, help="base seed (default: the file's)")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None, help="write here instead of stdout")
@click.option("--force", is_flag=True, help="replace --out (and --plot) if it exists")
@click.option("--plot", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="also draw the results to this PNG: metrics with their 95%% CIs, ECDFs of RTTs and delays")
@click.option("--profile", default=None, help="calibration profile (name in calibration/, path, or 'default')")
@click.option("--progress/--no-progress", default=None, help="progress display (default: when stderr is a terminal)")
@click.option("--workers", type=WORKERS, default=None,
              help="processes running replications (default: one per local core; results do not depend on it)")
@click.option("--separately", is_flag=True,
              help="run each [[workload]] on its own, as the thesis ran its tests (system rows are per test)")
@precision_options
@click.option("--steady-state", is_flag=True,
              help="one long replication: MSER-5 warm-up deletion and batch-means 95%% CIs of every sample series "
                   "(RTTs, delays) instead of replications")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help='a change for this run: "params.ovs.handlers=2" (beats the profiles and [params]) or any '
                   'scenario key, e.g. "vm.vm1.qdisc=sfq" (repeatable)')
def run(scenario, reps, seed, fmt, out, force, plot, profile, progress, workers, separately, precision,
        abs_precision, min_reps, max_reps, steady_state, sets):
    """Run SCENARIO.toml and print throughput, RTT, jitter and loss with 95% CIs."""
    from .atomic import check_output, write_atomic
    from .precedence import resolve, split_sets
    from .runner import local_cores, run_scenario
    from .scenario import load_scenario
    for path, what in ((out, "--out"), (plot, "--plot")):
        if path is not None:
            check_output(path, overwrite=force, what=what)     # before the simulation, not after it
    sc = load_scenario(scenario)
    samples = {}
    params, changes = split_sets(sets)
    if changes:
        sc = sc.replace(**changes)
    prec = precision_from_cli(precision, abs_precision, min_reps, max_reps, reps)
    prof = resolve(sc, profile=profile, sets=params)       # the documented order (ovssim.precedence)
    for line in prof.notes():
        click.echo(f"ovssim: {line}", err=True)
    if progress is None:
        progress = sys.stderr.isatty()
    kw = dict(reps=reps, seed=seed, progress=progress, profile=prof, workers=workers or local_cores(),
              precision=prec)
    if steady_state:
        if prec is not None or (reps or 1) != 1 or separately:
            raise OvssimError("--steady-state estimates from one long replication; drop --reps, --precision and "
                              "--separately (or drop --steady-state)")
        from .steady import steady_state_table
        summary = steady_state_table(run_scenario(sc, **{**kw, "reps": 1}).samples)
        stops = []
        if summary.empty:
            raise OvssimError("--steady-state found no sample series of 40 or more observations; lengthen the "
                              "run (scenario duration) or use a workload that records samples (ping, iperf UDP, "
                              "netperf TCP_RR)")
    elif separately and len(sc.workloads) > 1:
        summary, stops = _run_separately(sc, kw)
    else:
        res = run_scenario(sc, **kw)
        summary, stops, samples = res.summary, [(sc.name, res.stopping)], res.samples
    for name, st in stops:
        if st is not None:
            click.echo(stopping_line(name, st), err=True)
    if fmt == "table" and steady_state:
        text = summary.to_string(index=False) + "\n"
    elif fmt == "table":
        text = _fmt_table(summary)
    elif fmt == "csv":
        text = summary.to_csv(index=False)
    else:
        text = json.dumps(summary.to_dict(orient="records"), indent=1)
    if out:
        write_atomic(out, text, overwrite=force, what="--out")
    else:
        click.echo(text, nl=not text.endswith("\n"))
    if plot is not None and not steady_state:
        from .plots import run_figure
        click.echo(f"figure: {run_figure(summary, samples, plot, overwrite=force)}", err=True)


def _run_separately(sc, kw):
    """Each workload of ``sc`` in a run of its own; one summary (system rows named by the test)."""
    import copy

    import pandas as pd

    from .runner import ReplicationPool, run_scenario
    from .scenario import from_dict
    prec = kw["precision"] or (sc.precision if kw.get("reps") is None else None)
    most = prec.max_reps if prec is not None else (sc.reps if kw.get("reps") is None else kw["reps"])
    workers = min(kw.pop("workers"), most)
    pool = ReplicationPool(workers) if workers > 1 else None     # one pool for all the tests
    parts, stops = [], []
    try:
        for wl in sc.data["workload"]:
            data = copy.deepcopy(sc.data)
            data["workload"] = [wl]
            res = run_scenario(from_dict(data, file=sc.file, base_dir=sc.base_dir), pool=pool, **kw)
            part = res.summary
            part.loc[part["workload"] == "system", "workload"] = f"system ({wl['name']})"
            parts.append(part)
            stops.append((wl["name"], res.stopping))
    except BaseException:
        if pool is not None:
            pool.close(kill=True)
        raise
    if pool is not None:
        pool.close()
    return pd.concat(parts, ignore_index=True), stops


def main(argv=None) -> int:
    """Entry point: run the CLI, turning user errors into one line and exit status 2.

    SIGTERM (``kill``, ``timeout``, batch schedulers, ``docker stop``) and SIGHUP (a closed terminal) are
    handled as Ctrl-C: every command that started processes stops them before exiting."""
    from .signals import signals_interrupt
    with signals_interrupt():
        return _main(argv)


def _main(argv) -> int:
    try:
        cli.main(args=argv, prog_name="ovssim", standalone_mode=False)
    except OvssimError as exc:
        click.echo(f"ovssim: error: {exc}", err=True)
        return 2
    except click.exceptions.Abort:
        click.echo("ovssim: interrupted", err=True)
        return 130
    except click.ClickException as exc:          # a usage error: the same one-line form as every other
        ctx = getattr(exc, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        click.echo(f"ovssim: error: {exc.format_message()}{hint}", err=True)
        return 2
    except KeyboardInterrupt:
        click.echo("ovssim: interrupted", err=True)
        return 130
    return 0


if __name__ == "__main__":   # pragma: no cover
    sys.exit(main())


def console_main() -> None:
    """Console-script wrapper (``ovssim``): exit with :func:`main`'s status."""
    sys.exit(main())
