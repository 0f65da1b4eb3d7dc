"""The OVS QoS table -> the tc configuration lib/netdev-linux.c installs, and its behaviour."""
import pytest

from ovssim.errors import ConfigError
from ovssim.qdisc import make_qdisc

from qdisc_testlib import conserved, greedy, pkt, run_port

# seed 000 section 2.3.3 / Figure 9: linux-htb on a VM's tap port with queue q0
FIG9 = {"type": "linux-htb", "other-config": {"max-rate": "95000000"},
        "queues": {"0": {"other-config": {"min-rate": "10000000", "max-rate": "95000000"}}}}


def test_linux_htb_classes_are_what_ovs_installs():
    q = make_qdisc(FIG9)
    assert q.kind == "htb" and q.defcls == 1 and q.r2q == 10
    root, q0 = q.classes[0x1FFFE], q.classes[0x10001]
    assert root.rate * 8 == root.ceil * 8 == 95e6 and root.parent is None
    assert q0.parent is root and q0.rate * 8 == 10e6 and q0.ceil * 8 == 95e6
    assert q0.buffer * q0.rate == pytest.approx(1500 + 64)      # burst = mtu + 64 bytes
    assert q0.quantum == int(10e6 / 8 / 10)                      # rate / r2q when >= mtu
    slow = make_qdisc({"type": "linux-htb", "other-config": {"max-rate": "95000000"},
                       "queues": {0: {"min-rate": "100000", "priority": 3}}})
    c = slow.classes[0x10001]
    assert c.quantum == 1500 and c.prio == 3                     # min-rate / 10 < mtu -> quantum = mtu
    assert c.rate * 8 == 100000 and c.ceil * 8 == 95e6           # max-rate defaults to the QoS max-rate


def test_min_rate_is_at_least_one_mtu_per_second_and_clamped():
    q = make_qdisc({"type": "linux-htb", "other-config": {"max-rate": "1000000"},
                    "queues": {0: {"min-rate": "1", "max-rate": "5000000"}}})
    c = q.classes[0x10001]
    assert c.rate == 1500 and c.ceil * 8 == 1000000              # max-rate clamped to the root's


def test_set_queue_selects_class_and_shapes():
    spec = {"type": "linux-htb", "other-config": {"max-rate": "20000000"},
            "queues": {0: {"min-rate": "5000000", "max-rate": "5000000"},
                       1: {"min-rate": "12000000", "max-rate": "12000000"}}}
    packets = greedy([(0, {"queue_id": 0}), (1, {"queue_id": 1})], 30e6, 2.0)
    port, rec, _ = run_port(spec, packets, 1e9, until=2.0)
    got = rec.bytes_by(lambda p: p.queue_id, 0.5, 2.0)
    assert abs(got[0] * 8 / 1.5 / 5e6 - 1) < 0.01
    assert abs(got[1] * 8 / 1.5 / 12e6 - 1) < 0.01
    assert conserved(port.qdisc)


def test_max_rate_defaults_to_the_link_speed():
    spec = {"type": "linux-htb", "queues": {0: {}}}
    port, rec, _ = run_port(spec, greedy([0], 200e6, 0.5), 100e6, until=0.5)
    assert port.qdisc.classes[0x1FFFE].rate * 8 == 100e6
    assert make_qdisc(spec).classes[0x1FFFE].rate * 8 == 10e9     # unknown speed: NETDEV_DEFAULT_BPS


@pytest.mark.parametrize("typ", ["linux-htb", "linux-hfsc"])
def test_without_queue_0_ovs_configures_an_empty_one(typ):
    """vswitchd/bridge.c iface_configure_qos: no queue 0 in the row -> netdev_set_queue(0, {}):
    default traffic goes to class 1:1 and is shaped at the QoS's max-rate (not dropped, not unshaped)."""
    q = make_qdisc({"type": typ, "other-config": {"max-rate": "1000000"}})
    c = q.classes[0x10001]
    assert q.classify(pkt()) is c
    if typ == "linux-htb":
        assert c.rate == 1500 and c.ceil * 8 == 1e6              # min-rate one MTU per second, ceil max-rate
    port, rec, _ = run_port(q, greedy([0], 50e6, 2.0), 100e6, until=2.0)
    got = rec.bytes_by(lambda p: 0, 0.5, 2.0)[0] * 8 / 1.5
    assert abs(got / 1e6 - 1) < 0.02                              # shaped at max-rate
    assert conserved(port.qdisc)
    # the same row with an explicit empty queue 0 is the same configuration
    same = make_qdisc({"type": typ, "other-config": {"max-rate": "1000000"}, "queues": {0: {}}})
    assert sorted(same.classes) == sorted(q.classes)


def test_tc_form_without_default_class_keeps_kernel_rules():
    """tc's own HTB/HFSC (not through OVS): unclassified traffic takes HTB's direct queue, HFSC drops it."""
    htb = make_qdisc({"kind": "htb", "classes": [{"classid": "1:1", "parent": "1:", "rate": "1mbit"}]})
    assert htb.classify(pkt()) is None
    hfsc = make_qdisc({"kind": "hfsc", "classes": [{"classid": "1:1", "parent": "1:", "sc": "1mbit",
                                                    "ul": "1mbit"}]})
    assert not hfsc.enqueue(pkt(), 0.0)


def test_linux_hfsc_shares_by_min_rate_and_caps_by_max_rate():
    spec = {"type": "linux-hfsc", "other-config": {"max-rate": "10000000"},
            "queues": {0: {"min-rate": "2000000"}, 1: {"min-rate": "6000000", "max-rate": "7000000"}}}
    packets = greedy([(0, {"queue_id": 0}), (1, {"queue_id": 1})], 20e6, 3.0)
    _, rec, _ = run_port(spec, packets, 1e9, until=3.0)
    got = rec.bytes_by(lambda p: p.queue_id, 0.5, 3.0)
    q0, q1 = got[0] * 8 / 2.5, got[1] * 8 / 2.5
    assert abs(q0 + q1 - 10e6) < 0.15e6
    assert q0 >= 2e6 * 0.99 and q1 <= 7e6 * 1.01 and q1 >= 6e6 * 0.99


def test_classless_types_take_ovs_defaults():
    fq = make_qdisc({"type": "linux-fq_codel"})
    assert (fq.kind, fq.params.target, fq.params.interval, fq.limit, fq.flows_cnt, fq.quantum) == \
        ("fq_codel", 0.005, 1.0, 10240, 1024, 1514)                  # OVS writes interval 1 s
    fq2 = make_qdisc({"type": "linux-fq_codel", "other-config": {"interval": "100000", "target": "2000"}})
    assert (fq2.params.interval, fq2.params.target) == pytest.approx((0.1, 0.002))  # microseconds, as OVS
    cd = make_qdisc({"type": "linux-codel"})
    assert (cd.kind, cd.limit, cd.params.interval) == ("codel", 10240, 0.1)
    sfq = make_qdisc({"type": "linux-sfq", "other-config": {"quantum": "3000"}})
    assert (sfq.kind, sfq.perturb_period, sfq.quantum) == ("sfq", 10.0, 3000)
    assert make_qdisc({"type": "linux-default"}).kind == "pfifo_fast"
    assert make_qdisc({"type": ""}).kind == "pfifo_fast"
    assert make_qdisc({"type": "linux-noop", "qdisc": {"kind": "tbf", "rate": "1mbit", "burst": 2000,
                                                      "limit": 5000}}).kind == "tbf"


@pytest.mark.parametrize("spec, msg", [
    ({"type": "linux-htbx"}, "unknown OVS QoS type"),
    ({"type": "linux-sfq", "queues": {0: {}}}, "has no queues"),
    ({"type": "linux-htb", "other-config": {"max-rate": "fast"}}, "bad max-rate"),
    ({"type": "linux-htb", "queues": {0: {"min-rate": "1000", "priority": 9}}}, "priority 9"),
    ({"type": "linux-htb", "queues": {0: {"min_rate": "1000", "mxa-rate": "1"}}}, "unknown key"),
    ({"type": "linux-hfsc", "queues": {0: {"burst": "1000"}}}, "unknown key"),
    ({"type": "linux-codel", "other-config": {"target": "soon"}}, "bad target"),
    ({"type": "linux-htb", "queues": {70000: {}}}, "outside"),
])
def test_ovs_errors_are_clear(spec, msg):
    with pytest.raises(ConfigError, match=msg):
        make_qdisc(spec)
