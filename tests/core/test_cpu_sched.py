"""The CPU package: threads on cores, the fair scheduler at contention points, vCPUs on host threads."""
import math

import pytest
import simpy
from hypothesis import given, settings, strategies as st

from ovssim.cpu import CpuPool, GuestCpus, Thread, base_slice
from ovssim.cpu.defaults import MAX_SOFTIRQ_TIME


def test_base_slice_is_fair_c_log_scaling():
    # fair.c: 0.75 ms * (1 + ilog2(min(ncpus, 8)))
    assert [base_slice(n) for n in (1, 2, 3, 4, 8, 64)] == pytest.approx(
        [0.75e-3, 1.5e-3, 1.5e-3, 2.25e-3, 3e-3, 3e-3])


jobs = st.lists(st.tuples(st.floats(0, 1e-3), st.floats(1e-7, 5e-5), st.integers(0, 3)), min_size=1, max_size=60)


@settings(max_examples=60, deadline=None)
@given(jobs)
def test_threads_up_to_cores_equal_the_work_conserving_pool(items):
    """One thread per core, nothing CPU-bound: run() gives serve()'s completion times exactly."""
    env = simpy.Environment()
    old, new = CpuPool(env, 4, "old"), CpuPool(env, 4, "new")
    threads = [new.add_thread(Thread(f"t{k}", "app"), key=k) for k in range(4)]
    assert [th.core for th in threads] == [0, 1, 2, 3]
    for t, w, k in sorted(items):
        assert new.run(threads[k], t, w) == old.serve(t, w, k)
    assert new.busy == old.busy


def test_cpu_bound_thread_sharing_a_core_gets_half_over_slices():
    env = simpy.Environment()
    pool = CpuPool(env, 1)
    pool.add_background(1)
    th = pool.add_thread(Thread("iperf", "app"))
    t, work = 0.0, 20e-6
    horizon = 40 * pool.slice
    while t < horizon:
        t = pool.run(th, t, work)          # always more to do: CPU-bound
    share = th.ran / t
    assert share == pytest.approx(0.5, rel=0.03)


def test_alone_a_cpu_bound_thread_gets_the_whole_core():
    env = simpy.Environment()
    pool = CpuPool(env, 1)
    th = pool.add_thread(Thread("iperf", "app"))
    t = 0.0
    while t < 0.05:
        t = pool.run(th, t, 20e-6)
    assert th.ran / t == pytest.approx(1.0)


def test_affinity_is_obeyed_and_checked():
    env = simpy.Environment()
    pool = CpuPool(env, 4)
    pinned = [pool.add_thread(Thread(f"p{i}", "vhost", affinity=[2])) for i in range(3)]
    assert {th.core for th in pinned} == {2}
    free = [pool.add_thread(Thread(f"f{i}", "app", affinity=[0, 1])) for i in range(4)]
    assert sorted(th.core for th in free) == [0, 0, 1, 1]          # balanced within the mask
    for th in pinned + free:
        pool.run(th, 0.0, 1e-5)
    assert pool.busy[3] == 0.0
    with pytest.raises(ValueError, match="core"):
        pool.add_thread(Thread("x", "app", affinity=[4]))


@pytest.mark.parametrize("cores", [1, 4])
def test_vcpu_preemption_delays_a_guest_packet_by_the_host_threads_slice(cores):
    env = simpy.Environment()
    host = CpuPool(env, cores, "host")
    host.add_background(1, affinity=[0])              # a CPU-bound host thread on the vCPU's core
    guest = GuestCpus(env, 1, "vm", host, pin=[[0]])
    S = host.slice
    work = 5e-6
    t = 0.1 * S                                       # the host thread's slice began at 0
    assert guest.serve(t, work) - t == pytest.approx(S - t + work)
    assert host.run_queue_delay()["vcpu"][0] == pytest.approx(S - t)
    # the same packet on a vCPU with a core to itself: no delay beyond its work
    quiet = GuestCpus(env, 1, "vm2", CpuPool(env, cores, "host2"))
    assert quiet.serve(t, work) - t == pytest.approx(work)


def test_utilisation_sums_to_the_work_done():
    env = simpy.Environment()
    pool = CpuPool(env, 2, context_switch=1e-6)
    a, b, c = (pool.add_thread(Thread(n, "app"), key=0) for n in "abc")   # three threads, two cores
    total, t = 0.0, 0.0
    for i in range(300):
        th = (a, b, c)[i % 3]
        w = 1e-6 * (1 + i % 7)
        pool.run(th, t, w)
        pool.serve(t, 2e-6, i)
        total += w + 2e-6
        t += 4e-6
    switches = sum(pool.busy) - total
    assert switches == pytest.approx(pool.context_switch * round(switches / pool.context_switch))
    assert sum(th.ran for th in (a, b, c)) + 300 * 2e-6 == pytest.approx(sum(pool.busy))
    duration = t + 1e-3
    assert sum(pool.utilisation(duration)) * duration == pytest.approx(sum(pool.busy))


def test_softirq_backlog_goes_to_ksoftirqd_behind_cpu_bound_threads():
    env = simpy.Environment()
    pool = CpuPool(env, 1, backlog_limit=None)
    pool.add_background(1)
    done = [pool.serve(0.0, 10e-6, 0) for _ in range(400)]        # 4 ms of softirq at once
    k = math.ceil(MAX_SOFTIRQ_TIME / 10e-6)
    # in irq context up to 2 ms of waiting, then ksoftirqd drains at half the core
    assert done[k] - done[k - 1] == pytest.approx(20e-6)
    assert done[k // 2] - done[k // 2 - 1] == pytest.approx(10e-6)
    assert pool.deferred == 400 - k - 1 or pool.deferred == 400 - k



def test_a_waiting_thread_hands_softirq_to_ksoftirqd_after_one_net_rx_round():
    """__do_softirq stops with work pending when a thread waits for the core (need_resched), so past one
    net_rx_action round (netdev_budget = 300 packets) the backlog is ksoftirqd's, well before 2 ms."""
    from ovssim.cpu.defaults import NETDEV_BUDGET
    env = simpy.Environment()
    pool = CpuPool(env, 1, backlog_limit=None)
    pool.add_background(1)
    done = [pool.serve(0.0, 1e-6, 0) for _ in range(NETDEV_BUDGET + 50)]   # 0.35 ms, under 2 ms
    assert pool.deferred == 50 - 1                     # item i waits behind i - 1 others
    assert done[100] - done[99] == pytest.approx(1e-6)               # inline, at the core's speed
    assert done[-1] - done[-2] == pytest.approx(2e-6)                # ksoftirqd beside the CPU-bound thread
    # nobody waits for the core (two sleeping threads): the softirq runs on, no hand-over
    quiet = CpuPool(env, 1, backlog_limit=None)
    for i in range(2):
        quiet.add_thread(Thread(f"idle{i}", "app"))
    assert quiet.contended
    done = [quiet.serve(0.0, 1e-6, 0) for _ in range(NETDEV_BUDGET + 50)]
    assert quiet.deferred == 0 and done[-1] == pytest.approx((NETDEV_BUDGET + 50) * 1e-6)



def test_a_starved_ksoftirqd_backlog_overflows_netdev_max_backlog():
    """Softirq work keeps arriving while ksoftirqd drains at half a core: the per-CPU backlog fills to
    netdev_max_backlog and the rest is dropped (enqueue_to_backlog), inline and deferred work counted alike."""
    from ovssim.cpu.defaults import NETDEV_BUDGET, NETDEV_MAX_BACKLOG
    env = simpy.Environment()
    pool = CpuPool(env, 1)
    pool.add_background(1)
    done = [pool.serve(0.0, 5e-6, 0) for _ in range(1500)]
    assert pool.refused == 1500 - NETDEV_MAX_BACKLOG - 1 == sum(d is None for d in done)
    assert pool.deferred == NETDEV_MAX_BACKLOG - NETDEV_BUDGET
    kept = [d for d in done if d is not None]
    assert kept == sorted(kept)                         # one backlog, drained in order

def test_ksoftirqd_draining_a_backlog_takes_its_share_from_the_threads():
    """ksoftirqd is a fair thread: while it drains, a CPU-bound thread beside one other gets a third."""
    def cpu_bound_run(flood: bool) -> float:
        env = simpy.Environment()
        pool = CpuPool(env, 1, backlog_limit=None)
        pool.add_background(1)
        th = pool.add_thread(Thread("iperf", "app"))
        if flood:
            for _ in range(400):
                pool.serve(0.0, 50e-6, 0)              # 20 ms of softirq: ksoftirqd busy throughout
        t0 = t = pool.free[0]                          # after the first 2 ms, run inline (irq context)
        while t < t0 + 10 * pool.slice:
            t = pool.run(th, t, 20e-6)
        return th.ran / (t - t0)
    assert cpu_bound_run(False) == pytest.approx(1 / 2, rel=0.05)
    assert cpu_bound_run(True) == pytest.approx(1 / 3, rel=0.1)


def test_scheduling_probe_in_a_guest_waits_for_the_host_threads_slice():
    """Seed 002's probe loop in a 1-vCPU guest: alone it reports every loop; beside a CPU-bound host
    thread on its vCPU's core it runs half the time and waits one host slice (plus a switch) at most."""
    from ovssim.cpu.probe import scheduling_gaps

    def gaps(load):
        env = simpy.Environment()
        host = CpuPool(env, 2, "xs")
        if load is not None:
            host.add_background(1, affinity=[0], **load)
        guest = GuestCpus(env, 1, "vm", host, pin=[[0]])
        return host, scheduling_gaps([(guest, guest.add_thread(Thread("probe", "app")))], 0.03, 2e-6)[0]
    host, alone = gaps(None)
    assert alone.min() == pytest.approx(2e-6) and alone.max() == pytest.approx(2e-6)
    host, shared = gaps({})
    assert shared.max() == pytest.approx(host.slice + 2e-6 + host.context_switch)
    assert shared.sum() / len(shared) == pytest.approx(2 * 2e-6, rel=0.02)          # half the core
    # a load that runs 3 ms in every 30: waits only inside its bursts, at most its slice
    host, bursty = gaps({"period": 30e-3, "on": 3e-3})
    assert bursty.max() <= host.slice + 2e-6 + host.context_switch
    assert 2e-6 < bursty.mean() < 2e-6 / (1 - 0.1) + 1e-9

def _scenario(host_extra="", vm_extra=""):
    from ovssim.scenario import from_dict
    import tomllib
    text = f"""
[scenario]
name = "t"
duration = "0.1s"
reps = 1
[[host]]
name = "h"
cores = 2
{host_extra}
[[bridge]]
name = "br"
host = "h"
[[vm]]
name = "a"
host = "h"
bridge = "br"
{vm_extra}
[[vm]]
name = "b"
host = "h"
bridge = "br"
{vm_extra}
[[workload]]
name = "ping"
tool = "ping"
from = "a"
to = "b"
i = "10ms"
"""
    return from_dict(tomllib.loads(text))


def _ping_rtt(sc):
    from ovssim.profile import Profile
    from ovssim.runner import run_replication
    rows, _, _ = run_replication(sc, Profile.load(sc.profile), 0)
    return {r["metric"]: r["value"] for r in rows}


def test_background_load_delays_guests_on_host_vcpus_by_slices():
    quiet = _ping_rtt(_scenario(vm_extra="vcpus_on_host = true"))
    loaded = _ping_rtt(_scenario("background_threads = 2", "vcpus_on_host = true"))
    separate = _ping_rtt(_scenario("background_threads = 2"))
    slice_ms = base_slice(2) * 1e3
    # each wake of a vCPU / vhost thread behind a CPU-bound thread waits up to its slice
    assert loaded["rtt_mean"] - quiet["rtt_mean"] > slice_ms
    assert 0 < loaded["runq_delay.h.vcpu"] <= slice_ms * 1e3
    assert loaded["cpu_util.h"] == 100.0
    # vCPUs in their own pool: only the vhost threads wait behind the load
    assert quiet["rtt_mean"] + slice_ms < separate["rtt_mean"] < loaded["rtt_mean"]
    # containers: all their work is softirq, which preempts CPU-bound threads
    veth = 'vif = "container-veth"'
    assert _ping_rtt(_scenario("background_threads = 2", veth))["rtt_mean"] == pytest.approx(
        _ping_rtt(_scenario("", veth))["rtt_mean"])



def test_host_sched_slice_sets_how_long_a_load_holds_a_vcpus_core():
    """A shorter slice on the host: a guest's vCPU waits less behind the CPU-bound load (RUN_TO_PARITY)."""
    default = _ping_rtt(_scenario("background_threads = 2", "vcpus_on_host = true"))
    short = _ping_rtt(_scenario('background_threads = 2\nsched_slice = "0.3ms"', "vcpus_on_host = true"))
    assert short["runq_delay.h.vcpu"] <= 0.3e3 < default["runq_delay.h.vcpu"]
    assert short["rtt_mean"] < default["rtt_mean"]
    from ovssim.errors import ConfigError
    with pytest.raises(ConfigError, match="sched_slice"):
        _scenario('sched_slice = "0s"')

@pytest.mark.parametrize("extra,match", [
    ("vcpu_pin = [[2]]", "vcpu_pin"),
    ("vcpu_pin = [[0], [1]]", "vcpu_pin"),
    ('vcpus_on_host = "yes"', "vcpus_on_host"),
])
def test_bad_vcpu_placement_is_one_clear_error(extra, match):
    from ovssim.errors import ConfigError
    with pytest.raises(ConfigError, match=match):
        _scenario(vm_extra=extra)


def test_bad_background_threads_is_one_clear_error():
    from ovssim.errors import ConfigError
    with pytest.raises(ConfigError, match="background_threads"):
        _scenario("background_threads = -1")


def _iperf(P: int, schedule: bool, metric: str = "throughput") -> float:
    from ovssim.scenario import from_dict
    from ovssim.profile import Profile
    from ovssim.runner import run_replication
    d = {"scenario": {"name": "p", "duration": "0.05s", "reps": 1},
         "host": [{"name": "h", "cores": 2, "schedule_threads": schedule}],
         "bridge": [{"name": "br", "host": "h"}],
         "vm": [{"name": n, "host": "h", "vif": "container-veth", "bridge": "br"} for n in ("a", "b")],
         "workload": [{"name": "iperf", "tool": "iperf", "proto": "tcp", "from": "a", "to": "b", "P": P}]}
    sc = from_dict(d)
    rows, _, _ = run_replication(sc, Profile.load(sc.profile), 0)
    return next(r["value"] for r in rows if r["metric"] == metric)


def test_more_tool_threads_than_cores_gain_less_when_threads_are_scheduled():
    """Seed 003: more iperf threads than cores must not keep helping; scheduled threads pay for sharing."""
    gain_sched = _iperf(8, True) / _iperf(2, True)
    gain_pool = _iperf(8, False) / _iperf(2, False)
    assert gain_sched < 1.0                       # 16 threads on 2 cores: no better than 4
    assert gain_sched < gain_pool


def test_container_senders_sharing_a_core_take_turns():
    """iperf -P 8 from a container on 2 cores: the fair class shares each core among its sending tasks,
    so every stream progresses (before turns, 6 of the 8 streams sent nothing: Jain 0.25)."""
    assert _iperf(8, True, "throughput_min") > 0.0
    assert _iperf(8, True, "fairness") > 0.9


ops = st.lists(st.tuples(st.floats(0, 5e-3), st.floats(1e-7, 3e-4), st.integers(0, 4), st.booleans()),
               min_size=1, max_size=80)


@settings(max_examples=60, deadline=None)
@given(ops, st.integers(0, 2))
def test_contended_cores_conserve_work_and_never_finish_early(items, hogs):
    """With CPU-bound threads and shared cores: every job ends no earlier than t + work, a thread's jobs end
    in order, and the cores' busy time is the work served plus whole context switches."""
    env = simpy.Environment()
    pool = CpuPool(env, 2, backlog_limit=None, context_switch=1e-6)
    pool.add_background(hogs)
    threads = [pool.add_thread(Thread(f"t{i}", "app")) for i in range(3)]
    work_done = 0.0
    last_done = {}
    for t, w, who, as_softirq in sorted(items):
        if as_softirq or who >= 3:
            done = pool.serve(t, w, who)
        else:
            th = threads[who]
            done = pool.run(th, t, w)
            assert done >= last_done.get(who, 0.0)
            last_done[who] = done
        assert done >= t + w - 1e-12
        work_done += w
    extra = sum(pool.busy) - work_done
    assert extra >= -1e-12
    assert extra / pool.context_switch == pytest.approx(round(extra / pool.context_switch), abs=1e-6)


def test_guest_threads_sharing_a_vcpu_also_wait_for_the_host():
    """Two guest threads on one vCPU (contended in the guest) whose host core runs a CPU-bound thread."""
    env = simpy.Environment()
    host = CpuPool(env, 1, "host")
    host.add_background(1)
    guest = GuestCpus(env, 1, "vm", host)
    a, b = guest.add_thread(Thread("a", "app")), guest.add_thread(Thread("b", "app"))
    t = 0.1 * host.slice
    done_a = guest.run(a, t, 5e-6)
    assert done_a - t == pytest.approx(host.slice - t + 5e-6)      # first run on the vCPU: no switch
    assert guest.run(b, done_a, 5e-6) >= done_a + 5e-6


def test_bursty_background_load_delays_only_wakeups_inside_its_bursts():
    env = simpy.Environment()
    pool = CpuPool(env, 1)
    pool.add_background(1, period=0.1, on=0.01)          # 10 ms of CPU-bound work every 100 ms
    th = pool.add_thread(Thread("vhost", "vhost"))
    S = pool.slice
    inside = 0.2 + 0.1 * S                               # a burst started at 0.2
    assert pool.run(th, inside, 5e-6) - inside == pytest.approx(S - 0.1 * S + 5e-6)
    outside = 0.25
    assert pool.run(th, outside, 5e-6) - outside == pytest.approx(5e-6)
    late = 0.3 + 0.01 - 1e-4                             # the burst ends before the slice would
    assert pool.run(th, late, 5e-6) - late == pytest.approx(1e-4 + 5e-6)
    assert pool.utilisation(1.0)[0] == pytest.approx(0.1 + th.ran, rel=1e-6)


def test_bursty_background_keys_are_checked():
    from ovssim.errors import ConfigError
    with pytest.raises(ConfigError, match="background_period"):
        _scenario('background_threads = 1\nbackground_period = "100ms"')
    with pytest.raises(ConfigError, match="background_on"):
        _scenario('background_threads = 1\nbackground_period = "10ms"\nbackground_on = "20ms"')


def test_a_thread_waking_to_a_busy_core_moves_to_an_idle_one_unless_pinned():
    env = simpy.Environment()
    pool = CpuPool(env, 2)
    free = pool.add_thread(Thread("vhost", "vhost"), key=0)
    pinned = pool.add_thread(Thread("vcpu", "vcpu", affinity=[0]))
    pool.add_background(1, affinity=[0])
    assert free.core == 0 and pinned.core == 0
    t = 0.1 * pool.slice
    assert pool.run(free, t, 5e-6) == pytest.approx(t + 5e-6)          # core 1 was idle: it went there
    assert free.core == 1 and pool.migrations == 1
    assert pool.run(pinned, t, 5e-6) == pytest.approx(pool.slice + 5e-6)  # taskset: waits on core 0
    assert pinned.core == 0



CONN = 3          # a connection's core key on core 1 (3 % 2), not the datapath thread's own (1)


def _held_core_pool():
    """2 cores, contended (two threads share core 0); an unpinned thread homed on core 1, where a
    run-to-completion sender runs its connection's packets as keyed work."""
    env = simpy.Environment()
    pool = CpuPool(env, 2)
    ovs = pool.add_thread(Thread("ovs-vswitchd", "ovs-vswitchd"), key=1)
    pool.add_thread(Thread("recv", "app"), key=0)
    pool.add_thread(Thread("ctl", "app", affinity=[0]))
    assert ovs.core == 1 and pool.contended
    return pool, ovs


def test_a_thread_woken_by_the_sender_running_on_its_core_runs_on_the_idle_core():
    """select_idle_sibling (kernel/sched/fair.c): the waker's core is not idle -- the sending task that
    queued the frame goes on running there -- so the woken thread takes the idle core, and the sender's
    next packet does not wait for its pass."""
    pool, ovs = _held_core_pool()
    pool.add_sender(1)
    t = pool.serve(0.0, 10e-6, key=CONN)               # the sender's packet, ending as it wakes the thread
    assert pool.run(ovs, t, 20e-6) == pytest.approx(t + 20e-6)
    assert ovs.core == 0 and pool.migrations == 1
    assert pool.serve(t, 10e-6, key=CONN) == pytest.approx(t + 10e-6)   # the sender's next: not behind it


def test_a_thread_woken_to_a_core_busy_with_softirq_work_moves_and_a_pinned_one_waits():
    pool, ovs = _held_core_pool()
    done = pool.serve(0.0, 50e-6, key=CONN)            # keyed work queued on core 1 past the wake-up
    t = 10e-6
    assert pool.run(ovs, t, 5e-6) == pytest.approx(t + 5e-6) and ovs.core == 0
    pool2, _ = _held_core_pool()
    pinned = pool2.add_thread(Thread("pinned", "app", affinity=[1]))
    pool2.serve(0.0, 50e-6, key=CONN)
    assert pool2.run(pinned, t, 5e-6) == pytest.approx(done + 5e-6) and pinned.core == 1


def test_a_thread_stays_on_its_core_when_that_is_idle_or_its_own_run_goes_on():
    pool, ovs = _held_core_pool()
    pool.add_sender(1)
    t = pool.serve(0.0, 10e-6, key=CONN)
    later = t + 1e-6                                    # the core went idle before the wake-up
    assert pool.run(ovs, later, 5e-6) == pytest.approx(later + 5e-6) and ovs.core == 1
    # not a wake-up: its own work goes on to later + 5 us, and more of it queues there, not on core 0
    assert pool.run(ovs, later + 1e-6, 5e-6) == pytest.approx(later + 10e-6)
    assert ovs.core == 1 and pool.migrations == 0


def test_a_sending_thread_stays_with_its_own_packets_and_a_woken_thread_avoids_other_senders_cores():
    pool, ovs = _held_core_pool()
    sender = pool.add_thread(Thread("tcp-send", "app"), key=CONN)
    assert sender.core == 1
    pool.add_sender(1)
    t = pool.serve(0.0, 10e-6, key=CONN)               # its own connection's packet ends as it runs again
    assert pool.run(sender, t, 5e-6) == pytest.approx(t + 5e-6) and sender.core == 1
    pool.add_sender(0)                                  # core 0 idle now, but a sender's: not a refuge
    t2 = pool.serve(t + 1e-3, 10e-6, key=CONN)
    assert pool.run(ovs, t2, 5e-6) >= t2 + 5e-6 and ovs.core == 1      # it waits where it is
    assert pool.migrations == 0
