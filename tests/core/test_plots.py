"""``ovssim run --plot`` and ``ovssim sweep --plot`` draw the results; their paths are checked before any run."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ovssim.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sweep"))
from sweep_helpers import GRID, SCENARIO, write_sweep  # noqa: E402


def test_run_plot_writes_a_figure_and_refuses_to_replace_one(tmp_path, capsys):
    (tmp_path / "tiny.toml").write_text(SCENARIO)
    fig = tmp_path / "run.png"
    assert main(["run", str(tmp_path / "tiny.toml"), "--reps", "2", "--workers", "1", "--no-progress",
                 "--format", "csv", "--plot", str(fig)]) in (0, None)
    assert fig.stat().st_size > 10_000
    assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    capsys.readouterr()
    # an existing figure is not replaced without --force, and the check comes before the simulation
    assert main(["run", str(tmp_path / "tiny.toml"), "--reps", "2", "--plot", str(fig)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ovssim: error:") and "--force" in err[0]


def test_run_plot_into_a_missing_folder_fails_before_the_run(tmp_path, capsys):
    (tmp_path / "tiny.toml").write_text(SCENARIO)
    assert main(["run", str(tmp_path / "tiny.toml"), "--plot", str(tmp_path / "no" / "such" / "f.png")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "does not exist" in err[0]


def test_sweep_plot_draws_every_point(tmp_path, capsys):
    sw = write_sweep(tmp_path, GRID)
    fig = tmp_path / "sweep.png"
    assert main(["sweep", str(sw), "--out", str(tmp_path / "out"), "--workers", "1", "--no-progress",
                 "--plot", str(fig)]) in (0, None)
    assert fig.stat().st_size > 10_000
    assert "figure:" in capsys.readouterr().err
