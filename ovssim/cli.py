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
import signal
import sys
import threading
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


def _fmt_table(summary) -> str:
    from rich.console import Console
    from rich.table import Table
    table = Table(title=summary["scenario"].iloc[0] if len(summary) else "results")
    for col in ("workload", "metric", "mean", "95% CI", "unit", "reps"):
        table.add_column(col, justify="right" if col in ("mean", "95% CI", "reps") else "left")
    for r in summary.itertuples():
        if _PER_CORE.match(r.metric):
            continue                      # per-core rows: in --format csv/json
        table.add_row(r.workload, r.metric, f"{r.mean:.6g}", f"[{r.ci95_low:.6g}, {r.ci95_high:.6g}]",
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
@click.option("--force", is_flag=True, help="replace --out if it exists")
@click.option("--profile", default=None, help="calibration profile (name in calibration/, path, or 'default')")
@click.option("--progress/--no-progress", default=None, help="progress display (default: when stderr is a terminal)")
@click.option("--workers", type=WORKERS, default=None,
              help="processes running replications (default: one per local core; results do not depend on it)")
@click.option("--separately", is_flag=True,
              help="run each [[workload]] on its own, as the thesis ran its tests (system rows are per test)")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help='a change for this run: "params.ovs.handlers=2" (beats the profiles and [params]) or any '
                   'scenario key, e.g. "vm.vm1.qdisc=sfq" (repeatable)')
def run(scenario, reps, seed, fmt, out, force, profile, progress, workers, separately, sets):
    """Run SCENARIO.toml and print throughput, RTT, jitter and loss with 95% CIs."""
    from .atomic import check_output, write_atomic
    from .precedence import resolve, split_sets
    from .runner import local_cores, run_scenario
    from .scenario import load_scenario
    if out is not None:
        check_output(out, overwrite=force, what="--out")       # before the simulation, not after it
    sc = load_scenario(scenario)
    params, changes = split_sets(sets)
    if changes:
        sc = sc.replace(**changes)
    prof = resolve(sc, profile=profile, sets=params)       # the documented order (ovssim.precedence)
    for line in prof.notes():
        click.echo(f"ovssim: {line}", err=True)
    if progress is None:
        progress = sys.stderr.isatty()
    kw = dict(reps=reps, seed=seed, progress=progress, profile=prof, workers=workers or local_cores())
    if separately and len(sc.workloads) > 1:
        summary = _run_separately(sc, kw)
    else:
        summary = run_scenario(sc, **kw).summary
    if fmt == "table":
        text = _fmt_table(summary)
    elif fmt == "csv":
        text = summary.to_csv(index=False)
    else:
        text = json.dumps(summary.to_dict(orient="records"), indent=1)
    if out:
        write_atomic(out, text, overwrite=force, what="--out")
    else:
        click.echo(text, nl=not text.endswith("\n"))


def _run_separately(sc, kw):
    """Each workload of ``sc`` in a run of its own; one summary (system rows named by the test)."""
    import copy

    import pandas as pd

    from .runner import ReplicationPool, run_scenario
    from .scenario import from_dict
    workers = min(kw.pop("workers"), sc.reps if kw.get("reps") is None else kw["reps"])
    pool = ReplicationPool(workers) if workers > 1 else None     # one pool for all the tests
    parts = []
    try:
        for wl in sc.data["workload"]:
            data = copy.deepcopy(sc.data)
            data["workload"] = [wl]
            part = run_scenario(from_dict(data, file=sc.file, base_dir=sc.base_dir), pool=pool, **kw).summary
            part.loc[part["workload"] == "system", "workload"] = f"system ({wl['name']})"
            parts.append(part)
    except BaseException:
        if pool is not None:
            pool.close(kill=True)
        raise
    if pool is not None:
        pool.close()
    return pd.concat(parts, ignore_index=True)


def _interrupt(signum, _frame):
    raise KeyboardInterrupt(signal.Signals(signum).name)


def main(argv=None) -> int:
    """Entry point: run the CLI, turning user errors into one line and exit status 2.

    SIGTERM (``kill``, ``timeout``, batch schedulers, ``docker stop``) and SIGHUP (a closed terminal) are
    handled as Ctrl-C: every command that started processes stops them before exiting."""
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            previous[sig] = signal.signal(sig, _interrupt)
    try:
        return _main(argv)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


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
