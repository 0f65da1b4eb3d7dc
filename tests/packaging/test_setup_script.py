"""setup.sh: a user without root still gets the Python package (simulating needs no system package);
root gets the collector's system packages installed.  System tools are stand-ins on PATH that record
their calls; the .venv is marked as installed so pip is not run."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path



ROOT = Path(__file__).resolve().parents[2]


def _tree(tmp_path: Path, uid: int) -> tuple[Path, dict]:
    tree = tmp_path / "tree"
    (tree / ".venv" / "bin").mkdir(parents=True)
    for f in ("setup.sh", "pyproject.toml"):
        shutil.copy(ROOT / f, tree / f)
    (tree / ".venv" / "bin" / "python").symlink_to(sys.executable)
    (tree / ".venv" / ".ovssim-installed").write_text(
        hashlib.sha256((tree / "pyproject.toml").read_bytes()).hexdigest() + "\n")
    fake = tmp_path / "bin"
    fake.mkdir()
    log = tmp_path / "calls.log"
    for tool, body in {"dpkg-query": "exit 1",                       # every package is missing
                       "apt-get": f'echo "apt-get $*" >> {log}',
                       "id": f'[ "$1" = -u ] && echo {uid} || /usr/bin/id "$@"'}.items():
        (fake / tool).write_text(f"#!/bin/sh\n{body}\n")
        (fake / tool).chmod(0o755)
    os.chmod(tmp_path, 0o755)
    env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}")
    return tree, env


def test_a_user_without_root_gets_the_python_package_and_a_note(tmp_path):
    tree, env = _tree(tmp_path, uid=1000)
    r = subprocess.run(["bash", str(tree / "setup.sh"), "--no-example"], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert "sudo ./setup.sh" in r.stderr and "openvswitch-switch" in r.stderr
    assert not (tmp_path / "calls.log").exists()                   # no apt-get without root


def test_root_installs_the_system_packages(tmp_path):
    tree, env = _tree(tmp_path, uid=0)
    r = subprocess.run(["bash", str(tree / "setup.sh"), "--no-example"], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    calls = (tmp_path / "calls.log").read_text()
    assert "apt-get update" in calls and "install" in calls and "iperf3" in calls



