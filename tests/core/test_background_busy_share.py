"""A scenario's background load sets what the netdev thread's wake-up after idling finds (issue 17 + 16)."""
import simpy

from ovssim.profile import Profile
from ovssim.scenario import from_dict
from ovssim.topology import build


def _stall_state(host_extra: dict, profile_name: str = "local_netns_busy"):
    from ovssim.runner import rng_factory
    d = {"scenario": {"name": "s", "duration": "0.1s", "reps": 1},
         "host": [{"name": "h", "cores": 2, **host_extra}],
         "bridge": [{"name": "br", "host": "h", "datapath_type": "netdev"}],
         "vm": [{"name": n, "host": "h", "vif": "container-veth", "bridge": "br"} for n in ("a", "b")],
         "workload": [{"name": "p", "tool": "ping", "from": "a", "to": "b", "c": 2}]}
    sc = from_dict(d)
    profile = Profile.load(profile_name)
    topo = build(simpy.Environment(), sc, profile, rng_factory(1, 0))
    return profile, topo.bridges["br"]._stall


def test_the_profile_state_decides_without_background_load():
    profile, st = _stall_state({})                  # idle_stall_prob fitted, [state] cpu_busy 1.0
    assert st[0] == profile.prob("ovs.idle_stall_prob") * profile.busy_share() > 0


def test_background_threads_set_the_busy_share_and_leave_the_wait_to_the_scheduler():
    """local_netns: fitted on a quiet machine (ovs.idle_wake > 0).  With background threads stated, the
    idle wake-up is paid on the idle share of the cores only, and there is no tick stall."""
    _, st = _stall_state({"background_threads": 1}, "local_netns")
    assert st[0] == 0.0 and st[6] == 0.5            # one of two cores busy
    _, st = _stall_state({"background_threads": 2, "background_period": "10ms", "background_on": "2ms"},
                         "local_netns")
    assert st[0] == 0.0 and abs(st[6] - 0.2) < 1e-12    # 2 threads x 20 % duty on 2 cores
    _, st = _stall_state({"background_threads": 2})   # both cores busy: no stall, no idle wake-up
    assert st is None
