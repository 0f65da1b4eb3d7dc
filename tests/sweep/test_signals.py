"""SIGTERM / SIGHUP to a command running worker processes: it stops like Ctrl-C, and nothing is left running.

``kill``, ``timeout``, batch schedulers and ``docker stop`` send SIGTERM to the coordinating process only
(Ctrl-C reaches the whole process group); a closed terminal sends SIGHUP.  Every process the command
started (the forkserver and its workers) inherits a marker in its environment, so the test finds them
in /proc whatever their parent.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from sweep_helpers import SCENARIO

pytestmark = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")


def _marked(marker: str) -> list[int]:
    """Pids of live processes whose environment holds ``marker``."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            env = (d / "environ").read_bytes()
            state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in env and state != "Z":
            pids.append(int(d.name))
    return pids


def _start(tmp_path, argv, marker):
    env = dict(os.environ, OVSSIM_TEST_MARKER=marker)
    return subprocess.Popen([sys.executable, "-m", "ovssim", *argv], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_workers(marker, n, timeout=60.0):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if len(_marked(marker)) >= n:
            return
        time.sleep(0.2)
    raise AssertionError(f"fewer than {n} processes started within {timeout} s")


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
@pytest.mark.parametrize("command", ["sweep", "run"])
def test_a_signal_stops_every_process(tmp_path, sig, command):
    # long enough that the signal always comes while the workers are inside a replication (a 20-s one
    # takes under a second on a quiet machine)
    (tmp_path / "tiny.toml").write_text(SCENARIO.replace('duration = "0.3s"', 'duration = "600s"'))
    (tmp_path / "sweep.toml").write_text('[sweep]\nbase = "tiny.toml"\nreps = 6\n\n'
                                         '[grid]\n"vm.vm1.qdisc" = [{kind = "pfifo"}, {kind = "sfq"}]\n')
    argv = (["sweep", "sweep.toml", "--workers", "2", "--out", "out", "--no-progress"] if command == "sweep" else
            ["run", "tiny.toml", "--workers", "2", "--reps", "4", "--no-progress"])
    marker = uuid.uuid4().hex
    proc = _start(tmp_path, argv, marker)
    try:
        _wait_for_workers(marker, 4)            # the command, the forkserver and two workers
        time.sleep(1.0)                         # the workers are inside a 600-s replication
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "ovssim: interrupted" in err and "Traceback" not in err, err
    t0 = time.monotonic()
    while _marked(marker) and time.monotonic() - t0 < 10:
        time.sleep(0.2)
    left = _marked(marker)
    for pid in left:                            # do not leave them to the next test
        os.kill(pid, signal.SIGKILL)
    assert not left, f"{len(left)} process(es) left running after {sig.name}"
