"""Profiles scale with the speed index: exactly the CPU costs change, by the ratio of indices."""
import numpy as np
import pytest
from click.testing import CliRunner

from ovssim import precedence
from ovssim.cli import main
from ovssim.errors import ConfigError
from ovssim.profile import CPU_COSTS, SCHEMA, Profile
from ovssim.runner import run_scenario
from ovssim.scenario import from_dict


def fitted(index=0.5, **params):
    """The default profile's values, stated as fitted on a host of speed ``index``."""
    return Profile({"profile": {"name": "fitted"}, "state": {"speed_index": index}, "params": params},
                   base=Profile.default())


def value(prof, key):
    kind = SCHEMA[key]
    if kind == "dist":
        return prof.dist(key).mean()
    return {"time": prof.time, "size": prof.size, "int": prof.int, "prob": prof.prob, "factor": prof.factor}[kind](key)


def test_scaling_changes_the_cpu_costs_and_nothing_else():
    slow = fitted(0.5)
    fast = slow.scaled(2.0)                   # a host 4x faster: every CPU cost / 4
    assert CPU_COSTS <= set(SCHEMA)
    moved = 0
    for key in SCHEMA:
        before, after = value(slow, key), value(fast, key)
        if key in CPU_COSTS:
            assert after == pytest.approx(before / 4, rel=1e-9, abs=0), key
            moved += before > 0
        else:
            assert after == before, key
    assert moved >= 20                         # the list is not a list of zeros
    assert fast.params == slow.params          # the values stay those of the profile's own state
    assert fast.state["speed_index"] == 2.0 and slow.state["speed_index"] == 0.5


def test_a_busy_share_moves_the_state_and_no_parameter():
    """Profile.scaled(index, cpu_busy=...) sets the state the netdev thread's wake-ups find; every value
    stays; a profile stating no busy share is taken as fully busy (its stall probability as fitted)."""
    slow = fitted(0.5)
    assert slow.busy_share() == 1.0
    quiet = slow.scaled(0.5, cpu_busy=0.02)
    assert quiet.busy_share() == 0.02 and slow.busy_share() == 1.0
    assert all(value(quiet, k) == value(slow, k) for k in SCHEMA)
    with pytest.raises(ConfigError, match="cpu_busy"):
        Profile({"profile": {"name": "x"}, "state": {"cpu_busy": 1.5}}, base=Profile.default())
    for bad in (1.5, -0.1, float("nan"), "quiet", True):
        with pytest.raises(ConfigError, match="cpu_busy"):
            slow.scaled(0.5, cpu_busy=bad)


def test_draws_scale_draw_for_draw_and_scalings_compose():
    slow = fitted(0.5)
    a = slow.scaled(1.0).dist("ovs.lookup").rvs(1000, np.random.default_rng(3))
    b = slow.dist("ovs.lookup").rvs(1000, np.random.default_rng(3))
    assert np.allclose(a, b / 2)
    assert slow.scaled(1.0).scaled(0.25).time("patch.translate") == pytest.approx(
        slow.scaled(0.25).time("patch.translate"))
    assert slow.scaled(0.5).time("patch.translate") == slow.time("patch.translate")


def test_a_profile_without_a_speed_index_cannot_be_scaled():
    with pytest.raises(Exception, match="states no speed index"):
        Profile.default().scaled(1.0)


SCEN = {
    "scenario": {"name": "s", "duration": "0.5s", "reps": 1, "seed": 4},
    "host": [{"name": "h", "cores": 2}],
    "bridge": [{"name": "br0", "host": "h"}],
    "vm": [{"name": "vm1", "host": "h", "bridge": "br0"}, {"name": "vm2", "host": "h", "bridge": "br0"}],
    "workload": [{"name": "ping", "tool": "ping", "from": "vm1", "to": "vm2", "c": 40, "i": "0.01s"}],
}


def rtts(index):
    d = {**SCEN, "scenario": {**SCEN["scenario"], "speed_index": index}}
    return run_scenario(from_dict(d), profile=fitted(1.0)).samples["ping:rtt"]


def test_an_unloaded_ping_rtt_is_affine_in_the_cpu_factor():
    """With common random numbers and no queueing, each ping's RTT is its fixed latencies plus its CPU
    work times (profile index / host index): halving the factor twice moves it by b/2 then b/4."""
    r1, r05, r025 = rtts(1.0), rtts(2.0), rtts(4.0)
    assert len(r1) == 40
    assert np.all(r05 < r1)
    assert np.allclose(r1 - r05, 2 * (r05 - r025), rtol=1e-6, atol=1e-12)


def test_speed_index_is_reported_and_bad_values_are_one_error_line(tmp_path, capsys):
    sc = from_dict({**SCEN, "scenario": {**SCEN["scenario"], "speed_index": 2.0}})
    notes = precedence.resolve(sc, profile=fitted(1.0)).notes()
    assert any("scenario.speed_index overrides fitted's state (x0.5): CPU costs" in n for n in notes)
    bad = tmp_path / "bad.toml"
    bad.write_text('[scenario]\nspeed_index = -1\n[[host]]\nname = "h"\n')
    assert main(["run", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ovssim: error:") and "speed_index" in err[0]
    nostate = tmp_path / "nostate.toml"          # the default profile states no machine state
    nostate.write_text('[scenario]\nspeed_index = 2.0\n[[host]]\nname = "h"\n[[bridge]]\nname = "br0"\n'
                       'host = "h"\n[[vm]]\nname = "a"\nhost = "h"\nbridge = "br0"\n[[vm]]\nname = "b"\n'
                       'host = "h"\nbridge = "br0"\n[[workload]]\ntool = "ping"\nfrom = "a"\nto = "b"\nc = 2\n')
    assert main(["run", str(nostate), "--workers", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "states no speed index" in err[0]


def test_sweep_points_differing_only_in_speed_index_get_their_own_profiles(tmp_path):
    from ovssim.sweep.worker import _profile_for
    (tmp_path / "fitted.toml").write_text('[profile]\nname = "fitted"\n[state]\nspeed_index = 1.0\n'
                                          '[params]\n"patch.translate" = "8us"\n')
    base = {**SCEN, "scenario": {**SCEN["scenario"], "profile": str(tmp_path / "fitted.toml")}}
    sc = from_dict(base, base_dir=tmp_path)
    one, two = (_profile_for(sc.replace(**{"scenario.speed_index": i})) for i in (1.0, 2.0))
    assert (one.time("patch.translate"), two.time("patch.translate")) == pytest.approx((8e-6, 4e-6))


def test_cpu_costs_are_every_cpu_work_key_and_no_latency():
    """Every parameter of CPU work per packet, byte, segment or poll scales (segmentation, NAPI polls, qdiscs,
    patch ports included); latencies that leave the core idle -- the receive stack's, hardware's, wake-ups,
    timers -- do not."""
    work = {k for k in SCHEMA if ".cpu_per_" in k or k.startswith(("app.send_per", "app.recv_per"))}
    assert work and work <= CPU_COSTS
    latencies = {"host.stack_delay", "nic.rx_delay", "app.wakeup", "ovs.idle_wake", "ovs.idle_stall",
                 "ovs.upcall_wakeup", "qdisc.watchdog_latency", "switch.latency",
                 *(k for k in SCHEMA if k.endswith(".backend_delay"))}
    assert latencies <= set(SCHEMA) and not latencies & CPU_COSTS


def test_a_latency_index_moves_the_wake_up_latencies_and_nothing_else():
    """Profile.scaled(..., latency_index=) multiplies exactly the wake-up latencies (LATENCIES) by the ratio of
    latency indices; the CPU costs follow the speed index alone; a profile without a latency index refuses."""
    from ovssim.profile import LATENCIES
    slow = Profile({"profile": {"name": "fitted"}, "state": {"speed_index": 1.0, "latency_index": 1.0},
                    "params": {"app.idle_wake": "10us", "app.wakeup": "2us", "ovs.idle_wake": "90us"}},
                   base=Profile.default())
    fast = slow.scaled(1.0, latency_index=2.5)
    assert LATENCIES <= set(SCHEMA) and not LATENCIES & CPU_COSTS
    for key in SCHEMA:
        before, after = value(slow, key), value(fast, key)
        if key in LATENCIES:
            assert after == pytest.approx(before / 2.5, rel=1e-9, abs=0), key
        else:
            assert after == before, key
    assert fast.time("ovs.idle_wake") == pytest.approx(36e-6)
    assert fast.state["latency_index"] == 2.5
    with pytest.raises(ConfigError, match="states no latency index"):
        fitted(1.0).scaled(1.0, latency_index=2.0)
    with pytest.raises(ConfigError, match="latency index"):
        slow.scaled(1.0, latency_index=0)
