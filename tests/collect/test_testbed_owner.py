"""``ovssim testbed down --all`` removes only testbeds no live process owns, unless --force;
a stale testbed (its collector SIGKILLed) is reaped by the next start.  Saved states only: the
teardown itself is replaced, so no root is needed (tests/collect/test_netns.py does it for real)."""
import json
import subprocess
import sys

import pytest

from ovssim.cli import main
from ovssim.collect import testbed as tbmod


@pytest.fixture
def states(tmp_path, monkeypatch):
    monkeypatch.setattr(tbmod, "STATE_DIR", tmp_path)
    removed = []
    monkeypatch.setattr(tbmod, "teardown_saved", lambda st: removed.append(st["name"]))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    for name, owner, detached in (("t-live", live.pid, False), ("t-dead", dead.pid, False),
                                  ("t-detached", dead.pid, True)):
        (tmp_path / f"{name}.json").write_text(json.dumps(
            {"name": name, "owner_pid": owner, "detached": detached, "namespaces": [], "workdir": "",
             "spec": {"bridge": "ovs", "chain": 1}}))
    yield removed
    live.kill()
    live.wait()


def run(args, capsys):
    try:
        rc = main(args)
    except SystemExit as exc:
        rc = exc.code
    return rc, capsys.readouterr()


def test_down_all_keeps_testbeds_of_live_collectors(states, capsys):
    rc, out = run(["testbed", "down", "--all"], capsys)
    assert sorted(states) == ["t-dead", "t-detached"]
    assert rc == 1 and "t-live kept" in out.err and "--force" in out.err


def test_down_force_removes_them_too(states, capsys):
    rc, _ = run(["testbed", "down", "--all", "--force"], capsys)
    assert rc == 0 and sorted(states) == ["t-dead", "t-detached", "t-live"]


def test_down_by_name_respects_the_owner(states, capsys):
    rc, out = run(["testbed", "down", "t-live"], capsys)
    assert rc == 1 and states == []
    rc, out = run(["testbed", "down", "t-dead"], capsys)
    assert rc == 0 and states == ["t-dead"]


def test_reap_stale_takes_only_testbeds_whose_collector_died(states):
    reaped = tbmod.reap_stale()
    assert "t-dead" in reaped and not {"t-live", "t-detached"} & set(reaped)
    assert states == ["t-dead"]


def test_damaged_state_files_are_ignored(states, tmp_path, capsys):
    (tmp_path / "junk.json").write_text("[1, 2]")
    (tmp_path / "torn.json").write_text('{"name": "to')
    (tmp_path / "evil.json").write_text(json.dumps({"name": "../../etc/passwd", "owner_pid": 1}))
    assert sorted(s["name"] for s in tbmod.saved_testbeds()) == ["t-dead", "t-detached", "t-live"]
    rc, out = run(["testbed", "status"], capsys)
    assert rc == 0 and "Traceback" not in out.err
