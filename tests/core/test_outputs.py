"""Outputs (issue 20): results on stdout only, files written whole or not at all, nothing replaced unasked."""
from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from ovssim.atomic import write_atomic
from ovssim.errors import OvssimError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "thesis_kvm_ovs.toml"


def _short(tmp_path) -> Path:
    sc = tmp_path / "s.toml"
    sc.write_text(EXAMPLE.read_text().replace('duration = "10s"', 'duration = "0.2s"'))
    return sc


def test_csv_on_stdout_is_clean_with_the_progress_display_on(tmp_path):
    r = subprocess.run([sys.executable, "-m", "ovssim", "run", str(_short(tmp_path)), "--reps", "2", "--workers", "1",
                        "--progress", "--format", "csv"], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("scenario,workload,metric,unit,mean")          # no blank first line
    df = pd.read_csv(io.StringIO(r.stdout))
    assert len(df) > 5 and df["reps"].eq(2).all()


def test_out_is_replaced_only_with_force(tmp_path):
    out = tmp_path / "r.csv"
    out.write_text("earlier results\n")
    args = [sys.executable, "-m", "ovssim", "run", str(_short(tmp_path)), "--reps", "1", "--workers", "1",
            "--format", "csv", "--out", str(out)]
    r = subprocess.run(args, capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 2 and "--force" in r.stderr and out.read_text() == "earlier results\n"
    r = subprocess.run(args + ["--force"], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert out.read_text().startswith("scenario,") and sorted(os.listdir(tmp_path)) == ["r.csv", "s.toml"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "profile.toml"
    target.write_text("old\n")

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OvssimError, match="No space left"):
        write_atomic(target, "new\n")
    assert target.read_text() == "old\n" and os.listdir(tmp_path) == ["profile.toml"]


def test_an_existing_file_is_kept_without_overwrite(tmp_path):
    target = tmp_path / "p.toml"
    target.write_text("old\n")
    with pytest.raises(OvssimError, match="already exists"):
        write_atomic(target, "new\n", overwrite=False)
    assert write_atomic(tmp_path / "q.toml", "new\n", overwrite=False).read_text() == "new\n"


@pytest.mark.slow
def test_validate_fits_leave_the_committed_profiles_alone(tmp_path):
    """Without --write-profiles the profiles a validation fits go beside the report."""
    def digest():
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (ROOT / "calibration").glob("*.toml")}
    before = digest()
    r = subprocess.run([sys.executable, "-m", "ovssim", "validate", "--only", "chains", "--max-evals", "2", "--reps",
                        "1", "--workers", "1", "--report", str(tmp_path / "out" / "report.md")],
                       capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert digest() == before
    fitted = tmp_path / "out" / "calibration" / "chained_bridges_desktop.toml"
    assert fitted.exists() and "ovssim validate" in fitted.read_text()
