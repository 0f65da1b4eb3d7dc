"""Scenario files: every malformed input is one clear error; the CLI prints no traceback."""
import subprocess
import sys
from pathlib import Path

import pytest

from ovssim.errors import ConfigError
from ovssim.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "thesis_kvm_ovs.toml"


def _edit(tmp_path, old, new):
    text = EXAMPLE.read_text()
    assert old in text
    p = tmp_path / "s.toml"
    p.write_text(text.replace(old, new, 1))
    return p


@pytest.mark.parametrize("old,new,key", [
    ('rate = "100mbit"', 'rate = "100 parsecs"', "nic.eth0.rate"),
    ('rate = "100mbit"', 'rate = "0mbit"', "nic.eth0.rate"),
    ('rate = "100mbit"', 'rate = "900gbit"', "nic.eth0.rate"),
    ('cores = 4 ', 'cores = 0 ', "host.host1.cores"),
    ('vif = "kvm-tap"', 'vif = "vmware"', "vm.vm1.vif"),
    ('bridge = "br0"\nqdisc', 'bridge = "br9"\nqdisc', "vm.vm1.bridge"),
    ('kind = "ovs"', 'kind = "ovs"\ncolour = "red"', "colour"),
    ('duration = "10s"', 'duration = "-3s"', "scenario.duration"),
    ('from = "vm1"', 'from = "vm7"', "from"),
])
def test_bad_scenarios_name_the_key(tmp_path, old, new, key):
    with pytest.raises(ConfigError) as exc:
        load_scenario(_edit(tmp_path, old, new))
    assert key in str(exc.value)
    assert "fix:" in str(exc.value)


def test_bad_qdisc_and_workload_options_fail_at_run(tmp_path):
    from ovssim.runner import run_scenario
    p = _edit(tmp_path, 'qdisc = { kind = "pfifo_fast" }', 'qdisc = { kind = "wfq" }')
    with pytest.raises(ConfigError, match="unknown qdisc kind"):
        run_scenario(p, reps=1)
    p = _edit(tmp_path, 'b = "95mbit"', 'b = "95mbit"\nzz = 1')
    with pytest.raises(ConfigError, match="zz"):
        run_scenario(p, reps=1)


def test_profile_errors(tmp_path):
    from ovssim.profile import Profile
    bad = tmp_path / "p.toml"
    bad.write_text('[profile]\nname = "x"\n[params]\n"ovs.lookupp" = "1us"\n')
    with pytest.raises(ConfigError, match="did you mean 'ovs.lookup'"):
        Profile.load(str(bad))
    bad.write_text('[profile]\nname = "x"\n[params]\n"ovs.lookup" = { dist = "nosuch" }\n')
    with pytest.raises(ConfigError, match="ovs.lookup"):
        Profile.load(str(bad))
    bad.write_text('[params]\n')
    with pytest.raises(ConfigError, match="profile.name"):
        Profile.load(str(bad))
    with pytest.raises(ConfigError, match="not found"):
        Profile.load("no-such-profile")


@pytest.mark.parametrize("args,needle", [
    (["run", "/nonexistent/x.toml"], "scenario file not found"),
    (["run", "BAD"], "not valid TOML"),
])
def test_cli_one_line_no_traceback(tmp_path, args, needle):
    if "BAD" in args:
        bad = tmp_path / "bad.toml"
        bad.write_text("[scenario\n")
        args = [a if a != "BAD" else str(bad) for a in args]
    r = subprocess.run([sys.executable, "-m", "ovssim", *args], capture_output=True, text=True)
    assert r.returncode == 2
    assert needle in r.stderr
    assert "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
