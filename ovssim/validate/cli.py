"""``ovssim validate``: fit each testbed's profile on its fitting split, predict the rest, write the report."""
from __future__ import annotations

import time
from pathlib import Path

import click


@click.command("validate")
@click.option("--only", "only", multiple=True, type=click.Choice(["thesis", "local", "load", "interim", "xenserver", "chains", "batching"]),
              help="Run only this testbed (repeatable).")
@click.option("--report", "report", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("validation/report.md"), show_default=True, help="Markdown report to write.")
@click.option("--no-fit", is_flag=True, help="Use the committed calibration/*.toml instead of re-fitting.")
@click.option("--fast", is_flag=True, help="Only the fast subset (what tests/validate re-runs); implies --no-fit.")
@click.option("--reps", type=int, default=2, show_default=True, help="Replications per predicted configuration.")
@click.option("--max-evals", type=int, default=24, show_default=True, help="Calibration evaluations per fit.")
@click.option("--workers", type=int, default=2, show_default=True, help="Simulation worker processes.")
def validate(only, report, no_fit, fast, reps, max_evals, workers):
    """Reproduce the seeds' and this machine's measurements and write validation/report.md."""
    from .base import Settings
    from .report import run_testbeds, write_json, write_report
    settings = Settings(reps=reps, max_evals=max_evals, workers=workers, fit=not (no_fit or fast), fast=fast,
                        figures_dir=report.parent / "figures",
                        command="ovssim validate" + "".join(f" --only {o}" for o in only))
    t0 = time.time()
    results = run_testbeds(settings, list(only) or None, progress=lambda m: click.echo(m, err=True))
    elapsed = time.time() - t0
    from .report import PREAMBLE
    write_report(results, settings, report, elapsed, preamble=PREAMBLE)
    write_json(results, settings, report.with_name("results.json") if report.name == "report.md"
               else report.with_suffix(".json"))
    click.echo(f"wrote {report} ({elapsed:.0f} s)")
