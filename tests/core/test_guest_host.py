"""A ``[[host]]`` that is a virtual machine on another host (``guest_of``): OVS inside a VM (issue 16, seed 001).

Its cores are vCPUs, threads on the hypervisor host's cores (:class:`ovssim.cpu.GuestCpus`), and its CPU work
takes ``guest.cpu_factor`` times the profile's bare-metal figures.
"""
from __future__ import annotations

import tomllib

import numpy as np
import pytest

from ovssim.cpu import base_slice
from ovssim.errors import ConfigError
from ovssim.precedence import resolve
from ovssim.profile import Profile
from ovssim.runner import run_replication
from ovssim.scenario import from_dict
from ovssim.validate.seed001 import pass_times


def _scenario(guest: bool, factor: float = 1.0, phys_extra: str = "", guest_extra: str = "") -> dict:
    host = "vm" if guest else "phys"
    guest_host = f'[[host]]\nname = "vm"\ncores = 1\nguest_of = "phys"\n{guest_extra}\n' if guest else ""
    text = f"""
[scenario]
name = "voi"
duration = "1s"
reps = 1
[[host]]
name = "phys"
cores = 2
{phys_extra}
{guest_host}
[[bridge]]
name = "br"
host = "{host}"
[[vm]]
name = "a"
host = "{host}"
vif = "container-veth"
bridge = "br"
[[vm]]
name = "b"
host = "{host}"
vif = "container-veth"
bridge = "br"
[[workload]]
name = "ping"
tool = "ping"
from = "a"
to = "b"
i = "10ms"
c = 80
[params]
"guest.cpu_factor" = {factor}
"""
    return tomllib.loads(text)


def _rows(doc: dict) -> dict:
    sc = from_dict(doc)
    rows, _, _ = run_replication(sc, resolve(sc).profile, 0)
    return {r["metric"]: r["value"] for r in rows}


def test_a_guest_alone_on_its_core_runs_as_bare_metal():
    """Nothing else on the hypervisor's cores and factor 1: two-level scheduling costs nothing."""
    bare, guest = _rows(_scenario(False)), _rows(_scenario(True))
    assert guest["rtt_mean"] == pytest.approx(bare["rtt_mean"], rel=1e-12)
    assert guest["rtt_max"] == pytest.approx(bare["rtt_max"], rel=1e-12)


def test_the_guests_work_is_the_hypervisors_cpu_time():
    """Utilisation sums to the work done: the VM's work shows on the hypervisor host's cores, times the factor."""
    one, four = _rows(_scenario(True, 1.0)), _rows(_scenario(True, 4.0))
    assert one["cpu_util.phys"] > 0
    assert four["cpu_util.phys"] == pytest.approx(4 * one["cpu_util.phys"], rel=0.02)
    assert four["rtt_mean"] > one["rtt_mean"]


def test_the_factor_scales_a_datapath_pass_exactly():
    """Seed 001's pass timed from when the vCPU runs: the bare-metal pass times ``guest.cpu_factor``."""
    prof = Profile.default()
    bare = pass_times(prof, 750e3, 576, packets=200)
    vm = pass_times(prof, 750e3, 576, packets=200, guest_factor=3.5)
    np.testing.assert_allclose(vm, 3.5 * bare, rtol=1e-9)


def test_a_cpu_bound_host_thread_delays_the_guests_packets_by_its_slice():
    """Two-level scheduling: the vCPU waits for the hypervisor's CPU-bound thread on its (pinned) core."""
    quiet = _rows(_scenario(True, guest_extra="vcpu_pin = [[0]]"))
    loaded = _rows(_scenario(True, phys_extra="background_threads = 2", guest_extra="vcpu_pin = [[0]]"))
    assert loaded["rtt_mean"] - quiet["rtt_mean"] > base_slice(2) * 1e3


@pytest.mark.parametrize("extra, match", [
    ('[[host]]\nname = "x"\ncores = 1\nguest_of = "nowhere"', "guest_of"),
    ('[[host]]\nname = "x"\ncores = 1\nguest_of = "x"', "guest_of"),
    ('[[host]]\nname = "x"\ncores = 1\nguest_of = "vm"', "nested"),
    ('[[host]]\nname = "x"\ncores = 1\nvcpu_pin = [[0]]', "needs guest_of"),
    ('[[host]]\nname = "x"\ncores = 2\nguest_of = "phys"\nvcpu_pin = [[0]]', "vcpu_pin"),
    ('[[host]]\nname = "x"\ncores = 1\nguest_of = "phys"\nvcpu_pin = [[5]]', "vcpu_pin"),
])
def test_bad_guest_hosts_are_one_clear_error(extra, match):
    doc = _scenario(True)
    doc["host"].append(tomllib.loads(extra)["host"][0])
    with pytest.raises(ConfigError, match=match):
        from_dict(doc)
