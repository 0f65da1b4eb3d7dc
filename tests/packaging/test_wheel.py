"""A wheel of ovssim, installed in a fresh virtual environment and run from a folder outside the checkout,
finds its calibrated profiles (``--profile thesis_kvm``) and everything ``validate --fast`` reads.

The fresh environment holds only the wheel; its dependencies (numpy, scipy, ...) are reached through a
``.pth`` line naming this environment's site-packages (a ``.pth`` in a directory added that way is not
processed, so this checkout's editable install stays invisible).  The test asserts that ``ovssim`` is
imported from the fresh environment.
"""
from __future__ import annotations

import os
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                    str(tmp / "dist"), str(ROOT)], check=True, capture_output=True)
    wheel = next((tmp / "dist").glob("ovssim-*.whl"))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp / "venv")], check=True)
    py = tmp / "venv" / "bin" / "python"
    target = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                 check=True, capture_output=True, text=True).stdout.strip())
    with zipfile.ZipFile(wheel) as zf:                 # what pip does for a pure-Python wheel
        zf.extractall(target)
    (target / "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    work = tmp / "elsewhere"
    work.mkdir()
    return py, work, wheel


def _ovssim(py, work, *args, timeout=900):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(py), "-m", "ovssim", *args], cwd=work, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_the_wheel_carries_profiles_seeds_and_a_license(installed):
    _py, _work, wheel = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "ovssim/data/tree/calibration/thesis_kvm.toml" in names
    assert "ovssim/data/tree/data/seeds/seed000_thesis_tables.csv" in names
    assert "ovssim/data/tree/validation/scenarios/thesis_kvm_ovs.toml" in names
    assert any(n.endswith("licenses/LICENSE") for n in names)


@pytest.mark.slow
def test_the_installed_wheel_runs_a_calibrated_profile_and_validate_fast(installed):
    py, work, _wheel = installed
    where = subprocess.run([str(py), "-c", "import ovssim; print(ovssim.__file__)"], cwd=work, capture_output=True,
                           text=True, check=True).stdout
    assert str(py.parents[1]) in where and str(ROOT) not in where
    example = work / "thesis_kvm_ovs.toml"
    example.write_text((ROOT / "examples" / "thesis_kvm_ovs.toml").read_text()
                       .replace('duration = "10s"', 'duration = "0.3s"'))
    r = _ovssim(py, work, "run", example.name, "--profile", "thesis_kvm", "--reps", "2", "--workers", "1",
                "--format", "csv")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("scenario,workload,metric")
    r = _ovssim(py, work, "validate", "--fast", "--only", "thesis", "--report", "out/report.md", "--workers", "1")
    assert r.returncode == 0, r.stderr[-2000:]
    report = (work / "out" / "report.md").read_text()
    assert "thesis" in report.lower() and (work / "out" / "results.json").exists()
    assert not (work / "calibration").exists()           # validate --fast writes no profile
