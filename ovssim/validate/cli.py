"""``ovssim validate``: fit each testbed's profile on its fitting split, predict the rest, write the report."""
from __future__ import annotations

import time
from pathlib import Path

import click

from ..cli import COUNT, REPS, WORKERS
from . import TESTBEDS


@click.command("validate")
@click.option("--only", "only", multiple=True, type=click.Choice(TESTBEDS),
              help="Run only this testbed (repeatable).")
@click.option("--report", "report", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("validation/report.md"), show_default=True, help="Markdown report to write.")
@click.option("--no-fit", is_flag=True, help="Use the committed calibration/*.toml instead of re-fitting.")
@click.option("--fast", is_flag=True, help="Only the fast subset (what tests/validate re-runs); implies --no-fit.")
@click.option("--reps", type=REPS, default=2, show_default=True, help="Replications per predicted configuration.")
@click.option("--max-evals", type=COUNT, default=24, show_default=True, help="Calibration evaluations per fit.")
@click.option("--workers", type=WORKERS, default=2, show_default=True, help="Simulation worker processes.")
@click.option("--write-profiles", is_flag=True,
              help="Replace the committed calibration/*.toml with the profiles this run fits (without it, "
                   "they are written beside the report, in <report folder>/calibration/).")
def validate(only, report, no_fit, fast, reps, max_evals, workers, write_profiles):
    """Reproduce the seeds' and this machine's measurements and write validation/report.md."""
    from ..atomic import check_output
    from .base import CALIBRATION, Settings
    from .report import run_testbeds, write_json, write_report
    check_output(report, overwrite=True, what="--report", make_parents=True)    # before hours of simulation
    fit = not (no_fit or fast)
    calibration_dir = CALIBRATION
    if fit and not write_profiles:
        calibration_dir = report.parent / "calibration"
        calibration_dir.mkdir(exist_ok=True)
        for committed in CALIBRATION.glob("*.toml"):     # fitted profiles base on each other: start from a copy
            target = calibration_dir / committed.name
            if not target.exists():
                target.write_bytes(committed.read_bytes())
    settings = Settings(reps=reps, max_evals=max_evals, workers=workers, fit=fit, fast=fast,
                        figures_dir=report.parent / "figures", calibration_dir=calibration_dir,
                        command="ovssim validate" + "".join(f" --only {o}" for o in only))
    t0 = time.time()
    results = run_testbeds(settings, list(only) or None, progress=lambda m: click.echo(m, err=True))
    elapsed = time.time() - t0
    from .report import PREAMBLE
    write_report(results, settings, report, elapsed, preamble=PREAMBLE)
    write_json(results, settings, report.with_name("results.json") if report.name == "report.md"
               else report.with_suffix(".json"))
    click.echo(f"wrote {report} ({elapsed:.0f} s)")
