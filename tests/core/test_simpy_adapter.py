"""ovssim's one adapter to SimPy's private scheduling state (ovssim.sched) matches the SimPy installed,
and every SimPy version the dependency allows."""
from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import simpy

from ovssim import sched

ROOT = Path(__file__).resolve().parents[2]


def test_installed_simpy_has_the_shape_ovssim_uses():
    sched.check_simpy()


def test_a_changed_shape_is_caught():
    env = simpy.Environment()
    env._queue = {}                      # what a SimPy that kept its heap elsewhere would look like
    with pytest.raises(RuntimeError, match="simpy>=4.1,<4.2"):
        sched.check_simpy(env)


def test_the_dependency_has_an_upper_bound():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (spec,) = [d for d in deps if d.startswith("simpy")]
    assert "<" in spec, spec


@pytest.mark.slow
@pytest.mark.parametrize("version", ["4.1.0", "4.1.1", "4.1.2"])
def test_every_allowed_simpy_version(version, tmp_path):
    """Installs each SimPy release the bound allows into a private folder and runs the check there."""
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(tmp_path),
                        f"simpy=={version}"], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        pytest.skip(f"simpy {version} could not be fetched from the package index: {r.stderr.strip()[-200:]}")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    code = ("import simpy, ovssim.sched as s; assert simpy.__version__ == %r, simpy.__version__; "
            "s.check_simpy(); print('ok')" % version)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
