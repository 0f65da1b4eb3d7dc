"""taskset for the traffic tools (issue 16): a workload's ``cpus`` keeps its threads and the work keyed to
its connections on those cores, and nothing else moves."""
from __future__ import annotations

import subprocess
import sys

import pytest
import simpy
from hypothesis import given, settings, strategies as st

from ovssim.cpu import CpuPool, conn_key
from ovssim.packet import FlowKey
from ovssim.tcp.spec import as_cpu_list


def test_cpu_lists_read_as_taskset_reads_them():
    assert as_cpu_list("0") == (0,)
    assert as_cpu_list("0-2") == (0, 1, 2)
    assert as_cpu_list("3, 0-1") == (0, 1, 3)
    assert as_cpu_list([2, 0, 2]) == (0, 2)
    for bad in ("", "a", "2-1", "-1", [], [-1], [True], 0, 1.5):
        with pytest.raises(ValueError):
            as_cpu_list(bad)


flows = st.builds(lambda a, b, p, q: FlowKey(f"h{a}", f"h{b}", p, q, "tcp"),
                  st.integers(0, 9), st.integers(0, 9), st.integers(1, 65535), st.integers(1, 65535))


@settings(max_examples=200, deadline=None)
@given(flows, st.integers(1, 8), st.data())
def test_a_pinned_key_lands_on_an_allowed_core_and_an_unpinned_one_is_unchanged(flow, cores, data):
    pool = CpuPool(simpy.Environment(), cores)
    allowed = tuple(sorted(data.draw(st.sets(st.integers(0, cores - 1), min_size=1))))
    key = conn_key(flow)
    assert pool.pin(key, allowed) % cores in allowed
    assert pool.pin(key, None) == key
    if key % cores in allowed:
        assert pool.pin(key, allowed) == key      # an allowed core is kept, not re-hashed


def test_pinning_to_a_core_the_host_lacks_is_refused():
    with pytest.raises(ValueError, match="cores 0..1"):
        CpuPool(simpy.Environment(), 2).pin(7, (2,))


def test_netperf_T_reads_as_netperf_reads_it():
    from ovssim.workloads.netperf import _cpu_pair
    assert _cpu_pair("0,1") == ((0,), (1,))
    assert _cpu_pair("2") == ((2,), (2,))          # break_args: no comma binds both
    assert _cpu_pair(",1") == (None, (1,))
    assert _cpu_pair("3,") == ((3,), None)
    for bad in ("", ",", "a", "1,2,3", -1):
        with pytest.raises(ValueError):
            _cpu_pair(bad)


def _run(cpus, schedule=True, wl=None):
    from ovssim.profile import Profile
    from ovssim.runner import run_replication
    from ovssim.scenario import from_dict
    if wl is None:
        wl = {"name": "iperf", "tool": "iperf", "proto": "tcp", "from": "a", "to": "b", "P": 3}
        if cpus is not None:
            wl["cpus"] = cpus
    d = {"scenario": {"name": "pin", "duration": "0.05s", "reps": 1},
         "host": [{"name": "h", "cores": 4, "schedule_threads": schedule}],
         "bridge": [{"name": "br", "host": "h"}],
         "vm": [{"name": n, "host": "h", "vif": "container-veth", "bridge": "br"} for n in ("a", "b")],
         "workload": [wl]}
    sc = from_dict(d)
    rows, _, _ = run_replication(sc, Profile.load(sc.profile), 0)
    return {r["metric"]: r["value"] for r in rows}


@pytest.mark.parametrize("schedule", [True, False])
def test_a_pinned_iperf_works_only_on_its_cores(schedule):
    """Containers on the OVS kernel datapath: every fast-path packet's work runs in the sending task's context
    or the reader's, so with client and server under taskset -c 2-3 cores 0 and 1 see only the flows' few
    upcalls (ovs-vswitchd's handler threads are not pinned)."""
    res = _run("2-3", schedule)
    assert res["throughput"] > 0
    pinned = res["cpu_util.h.core2"] + res["cpu_util.h.core3"]
    assert pinned > 10.0
    assert res["cpu_util.h.core0"] + res["cpu_util.h.core1"] < 0.01 * pinned
    free = _run(None, schedule)
    # unpinned, the three connections' keys spread their work beyond cores 2-3
    assert free["cpu_util.h.core0"] + free["cpu_util.h.core1"] > 0.0


def test_a_bound_netperf_works_only_on_its_core():
    """netperf -T 3 (netperf and netserver on CPU 3): the stream's fast-path work, both directions, on core 3."""
    res = _run(None, wl={"name": "np", "tool": "netperf", "test": "TCP_STREAM", "from": "a", "to": "b", "T": "3"})
    assert res["throughput"] > 0
    other = sum(res[f"cpu_util.h.core{c}"] for c in range(3))
    assert res["cpu_util.h.core3"] > 10.0
    assert other < 0.01 * res["cpu_util.h.core3"]


@pytest.mark.parametrize("tool, key", [('tool = "iperf"\nproto = "tcp"\ncpus = "1-2"', "workload.t.cpus"),
                                       ('tool = "netperf"\ntest = "TCP_STREAM"\nT = "0,2"', "workload.t.T")])
def test_cpus_beyond_the_host_is_one_clear_error(tmp_path, tool, key):
    sc = tmp_path / "s.toml"
    sc.write_text('[scenario]\nname = "pin"\nduration = "0.01s"\nreps = 1\n'
                  '[[host]]\nname = "h"\ncores = 2\n[[bridge]]\nname = "br"\nhost = "h"\n'
                  '[[vm]]\nname = "a"\nhost = "h"\nvif = "container-veth"\nbridge = "br"\n'
                  '[[vm]]\nname = "b"\nhost = "h"\nvif = "container-veth"\nbridge = "br"\n'
                  f'[[workload]]\nname = "t"\nfrom = "a"\nto = "b"\n{tool}\n')
    out = subprocess.run([sys.executable, "-m", "ovssim", "run", str(sc), "--workers", "1"],
                         capture_output=True, text=True)
    assert out.returncode != 0
    assert "Traceback" not in out.stderr
    err = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(err) == 1 and f"[{key}]" in err[0] and "cores 0..1" in err[0], out.stderr
