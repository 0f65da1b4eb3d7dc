"""AF_XDP ports in a scenario (``[[bridge]] port_type = "afxdp"``) and qperf ``udp_bw``.

Checked: the PMD's core is taken from the host and shows 100 % busy whatever the load
(busy-polling, pmd-cpu-mask); rx batches never exceed NETDEV_MAX_BURST = 32; a full XSK rx
ring drops and the drop is counted; datagrams are conserved (received + ring drops = sent);
a replication is a pure function of its seed; udp_bw's sender goes as fast as its send()
allows and reports qperf's send_bw / recv_bw / msg_rate."""
import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ovssim.errors import ConfigError
from ovssim.runner import run_replication, run_scenario
from ovssim.scenario import load_scenario

BASE = {
    "scenario": {"name": "afxdp", "duration": "0.05s", "reps": 1, "seed": 3, "profile": "default"},
    "host": [{"name": "h", "cores": 2}],
    "bridge": [{"name": "br", "host": "h", "kind": "ovs", "datapath_type": "netdev", "port_type": "afxdp"}],
    "vm": [{"name": "a", "host": "h", "vif": "container-veth", "bridge": "br"},
           {"name": "b", "host": "h", "vif": "container-veth", "bridge": "br"}],
    "workload": [{"name": "ping", "tool": "ping", "from": "a", "to": "b", "i": "10ms"}],
}


def scenario(workloads=None, params=None, **bridge):
    d = copy.deepcopy(BASE)
    d["bridge"][0].update(bridge)
    if workloads is not None:
        d["workload"] = workloads
    if params:
        d["params"] = params
    return d


def blast(rate="400mbit", size="1400b", t="0.02s"):
    return [{"name": "udp", "tool": "iperf", "proto": "udp", "b": rate, "l": size, "t": t, "from": "a", "to": "b"}]


# the PMD made slow (50 us a frame) and its ring small: a 400 Mbit/s stream of 1400-byte datagrams (~36 kpps)
# outruns it.  The receiver's recv() costs nothing here: CpuPool books work at the (later) time a datagram
# arrives, and on the host's one remaining core that booking would hold the sender back instead.
SLOW_PMD = {"ovs.afxdp.per_packet": "50us", "ovs.afxdp.ring_size": 64, "app.recv_per_packet": "0us"}


def values(res):
    pr = res.per_rep
    return {(w, m): v for w, m, v in zip(pr.workload, pr.metric, pr.value)}


def test_the_pmd_core_is_busy_whatever_the_load():
    idle = values(run_scenario(scenario()))
    loaded = values(run_scenario(scenario(blast())))
    for v in (idle, loaded):
        # core0: the host's own work; core1: the PMD, pinned there, always polling
        assert v[("system", "cpu_util.h.core1")] == 100.0
        assert v[("system", "cpu_util.h")] == pytest.approx((v[("system", "cpu_util.h.core0")] + 100.0) / 2)
    assert idle[("system", "cpu_util.h.core0")] < loaded[("system", "cpu_util.h.core0")]
    # the PMD's own accounting: idle polling dominates an idle run, not a loaded one
    assert idle[("system", "pmd.h.idle_cycles_pct")] > loaded[("system", "pmd.h.idle_cycles_pct")]
    assert idle[("system", "pmd.h.used_tsc_cycles")] == pytest.approx(
        loaded[("system", "pmd.h.used_tsc_cycles")], rel=1e-3)


def test_the_system_ports_have_no_pmd_and_keep_both_cores():
    v = values(run_scenario(scenario(port_type="system")))
    assert ("system", "cpu_util.h.core1") in v and v[("system", "cpu_util.h.core1")] < 100.0
    assert not any(m.startswith("pmd.") for _, m in v)


def test_batches_never_exceed_32_and_a_full_ring_drops():
    v = values(run_scenario(scenario(blast(), SLOW_PMD)))
    assert v[("system", "pmd.h.max_rx_batch")] == 32
    assert v[("system", "pmd.h.packets_per_rx_batch")] <= 32
    assert v[("system", "pmd.h.rx_dropped")] > 0
    assert v[("udp", "loss")] > 0
    assert v[("system", "pmd.h.rx_packets")] == v[("system", "pmd.h.tx_packets")]   # unicast: one out per one in


def test_datagrams_are_conserved_through_the_rings():
    from ovssim.precedence import resolve
    sc = load_scenario(scenario(blast(), SLOW_PMD))
    rows, _s, counters = run_replication(sc, resolve(sc).profile, 0)
    got = {(r["workload"], r["metric"]): r["value"] for r in rows}
    sent_pkts = 0.02 * 400e6 / (1400 * 8)               # iperf 2 paces exactly: b / (8 l) per second
    lost = got[("udp", "loss")] / 100.0 * sent_pkts
    pmd = counters["pmd:h"]
    # the only loss on this path is the full rx ring (ARP frames, 2, are not datagrams)
    assert lost == pytest.approx(pmd["rx_dropped"], abs=1.0)
    assert pmd["rx_packets"] + pmd["rx_dropped"] == pytest.approx(sent_pkts + 2, abs=1.0)


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1))
def test_a_replication_is_a_function_of_its_seed(seed):
    d = scenario(blast(rate="100mbit", t="0.01s") + [{"name": "ping", "tool": "ping", "from": "b", "to": "a",
                                                     "i": "1ms"}])
    d["scenario"]["seed"] = seed
    a = run_scenario(d).per_rep
    b = run_scenario(d).per_rep
    assert a.equals(b)


@pytest.mark.parametrize("edit, key", [
    ({"datapath_type": "system"}, "bridge.br.port_type"),
    ({"port_type": "dpdk"}, "bridge.br.port_type"),
])
def test_bad_port_types_are_one_clear_error(edit, key):
    with pytest.raises(ConfigError) as e:
        load_scenario(scenario(**edit))
    assert e.value.key == key


def test_a_one_core_host_has_no_core_for_the_pmd():
    d = scenario()
    d["host"][0]["cores"] = 1
    with pytest.raises(ConfigError, match="core of its own"):
        load_scenario(d)


def test_an_afxdp_port_has_no_qdisc():
    d = scenario()
    d["vm"][1]["qdisc"] = {"kind": "pfifo", "limit": 10}
    with pytest.raises(ConfigError, match="bypasses the qdisc"):
        run_scenario(d)


# -- qperf udp_bw ------------------------------------------------------------------------------------
def udp_bw(send_cost, vif="kvm-tap", size="1400b"):
    d = scenario([{"name": "bw", "tool": "qperf", "test": "udp_bw", "m": size, "t": "0.02s",
                   "from": "a", "to": "b"}], {"app.send_per_packet": send_cost}, port_type="system",
                 datapath_type="system")
    for vm in d["vm"]:
        vm["vif"] = vif
    return values(run_scenario(d))


def test_udp_bw_sends_back_to_back_at_the_send_cost():
    # a guest's sender: nothing but its own send() (20 us) spaces the datagrams, on an idle path
    v = udp_bw("20us")
    assert v[("bw", "msg_rate")] == pytest.approx(1 / 20e-6, rel=0.01)
    assert v[("bw", "send_bw")] == pytest.approx(1400 * 8 / 20e-6 / 1e6, rel=0.01)
    # qperf's recv_bw and msg_rate are the same bytes and messages seen by the server
    assert v[("bw", "recv_bw")] == pytest.approx(v[("bw", "msg_rate")] * 1400 * 8 / 1e6)
    assert v[("bw", "recv_bw")] <= v[("bw", "send_bw")]
    # twice the send cost, half the rate
    assert udp_bw("40us")[("bw", "msg_rate")] == pytest.approx(v[("bw", "msg_rate")] / 2, rel=0.01)


def test_udp_bw_needs_a_send_cost():
    with pytest.raises(ConfigError, match="send cost"):
        udp_bw("0us")


def test_a_chain_of_patch_ports_runs_inside_the_pmds_pass():
    """OVS resolves patch ports within one datapath pass: on an AF_XDP bridge chain every crossing is PMD
    work (3 crossings per frame for 4 bridges), and none of it lands on the host's other core.  (Upcalls
    cost nothing here: each bridge of the model's chain misses a new flow once, and the PMD waits for it.)"""
    costs = {"patch.cpu_per_packet": "1us", "ovs.afxdp.per_batch": "0us", "ovs.upcall": "0us"}
    one = values(run_scenario(scenario(params=costs)))
    d = scenario(params=costs, chain=4)
    d["vm"][1]["bridge"] = "br-4"
    four = values(run_scenario(d))
    tsc = 2596e6                               # ovs.afxdp.tsc_mhz of the default profile
    per_pkt = "pmd.h.processing_cycles_per_packet"
    extra = four[("system", per_pkt)] - one[("system", per_pkt)]
    assert extra == pytest.approx(3 * 1e-6 * tsc, rel=1e-3)
    assert four[("system", "cpu_util.h.core0")] == pytest.approx(one[("system", "cpu_util.h.core0")], rel=1e-6)


def _shared(n, workloads=None):
    d = scenario(workloads)
    d["scenario"]["duration"] = "0.4s"
    d["host"][0]["pmd_core_threads"] = n
    return d


def test_a_pmd_sharing_its_core_holds_frames_until_its_next_turn():
    """Two other CPU-bound threads on the PMD's core (other OVS instances' PMDs): the PMD runs one tick
    (4 ms) in three, so a ping that reaches its ring in another's turn waits up to two ticks; alone, none does."""
    ping = [{"name": "ping", "tool": "ping", "from": "a", "to": "b", "i": "10ms", "c": 30}]
    alone = values(run_scenario(_shared(0, ping)))
    shared = values(run_scenario(_shared(2, ping)))
    # (ms, as ping prints them)
    assert alone[("ping", "rtt_max")] < 0.5
    assert 1.0 < shared[("ping", "rtt_max")] <= 8.0 + 0.5
    # ~2/3 of the pings wait, on average half of the 8 ms the others hold the core
    assert 1.5 < shared[("ping", "rtt_mean")] < 4.5


def test_pmd_core_threads_is_bounded():
    d = _shared(65)
    with pytest.raises(ConfigError):
        load_scenario(d)
