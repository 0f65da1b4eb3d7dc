"""Linux's buffer autotuning (ovssim/tcp/buffers.py) against the kernel's rules and this host's kernel.

Real values from this machine (kernel 6.18, data/local/tcp_window, ``ss -tinm``): a CUBIC sender's
sk_sndbuf (``tb``) was 847872 at cwnd 184 and 1198080 at cwnd 260 -- 2 x cwnd x 2304
(tcp_sndbuf_expand) -- and 4194304 (= tcp_wmem[2]) once cwnd passed ~910.
"""
import pytest

from ovssim.errors import ConfigError
from ovssim.tcp import connect
from ovssim.tcp.buffers import ReceiveBuffer, SendBuffer, TcpSysctls, per_mss_truesize


@pytest.mark.parametrize("cwnd, tb", [(184, 847872), (260, 1198080), (2000, 4194304)])
def test_send_buffer_grows_as_the_kernel_measured_here(cwnd, tb):
    sb = SendBuffer(mss=1448)
    sb.expand(cwnd)
    assert sb.sk_sndbuf == tb


def test_send_buffer_never_shrinks_and_starts_at_the_initial_window():
    sb = SendBuffer(mss=1448)
    assert sb.sk_sndbuf == 2 * 10 * per_mss_truesize(1448) == 46080
    sb.expand(500)
    before = sb.sk_sndbuf
    assert not sb.expand(100)
    assert sb.sk_sndbuf == before


def test_receive_buffer_sizes_for_twice_a_round_trip_of_data():
    rb = ReceiveBuffer(mss=1448)
    assert rb.window() == 65160            # tcp_rmem[1] x 1/2, whole segments, before any data
    rtt, gap = 0.010, 1448 * 8 / 100e6      # segments arriving at 100 Mbit/s, 10 ms round trips
    per_rtt = 100e6 / 8 * rtt
    copied = 0
    for k in range(1, 9000):                 # ~1 s
        copied += 1448
        t = k * gap
        rb.on_data(copied, 1448, t - rtt, t)
    # steady state: a round trip's worth of data copied per measurement (one segment of slack)
    assert per_rtt <= rb.space <= per_rtt + 2 * 1448
    assert rb.win_from_space(rb.sk_rcvbuf) >= 2 * per_rtt + 16 * 1448
    assert rb.sk_rcvbuf <= rb.rmem[2]


@pytest.mark.parametrize("rmax", [262144, 524288])
def test_a_small_tcp_rmem_max_caps_throughput_at_window_over_rtt(make_path, rmax):
    # 100 Mbit/s, 2 x 20 ms: the BDP (500 kB) is above the capped window, so the flow is window-limited
    p = make_path(rate=100e6, delay=0.020)
    sysctls = TcpSysctls.from_mapping({"net.ipv4.tcp_rmem": f"4096 131072 {rmax}"})
    c, s = connect(p.env, p.a, p.b, 5001, cc="cubic", sysctls=sysctls)
    c.bulk(6.0)
    got = []
    s.receiver.on_deliver = lambda n, now: got.append((now, n)) if now > 3.0 else None
    p.env.run(until=6.0)
    rate = sum(n for _, n in got) / 3.0
    window = s.receiver.window()
    assert window <= int(rmax * s.receiver.autotune.ratio)
    rtt = 0.040 + 1514 * 8 / 100e6
    assert rate == pytest.approx(window / rtt, rel=0.08)
    assert c.sender.snd_wnd == window


def test_small_tcp_wmem_max_bounds_data_in_flight(make_path):
    p = make_path(rate=100e6, delay=0.020)
    sysctls = TcpSysctls.from_mapping({"net.ipv4.tcp_wmem": "4096 16384 262144"})
    c, s = connect(p.env, p.a, p.b, 5001, cc="cubic", sysctls=sysctls)
    c.bulk(3.0)
    rows = c.sample_windows(0.05, 3.0)
    p.env.run(until=3.0)
    assert max(r["tb"] for r in rows) == 262144
    # tcp_sendmsg_locked tests sk_stream_memory_free only before it starts a new skb: the writer may pass the
    # buffer by at most the skb it is filling (size_goal)
    assert max(r["bytes_in_flight"] for r in rows) <= c.sender.sndbuf_auto.payload + c.sender.size_goal()
    assert max(r["bytes_in_flight"] for r in rows) > 0.9 * c.sender.sndbuf_auto.payload


def test_windows_grow_over_time_in_the_sampled_trace(make_path):
    p = make_path(rate=100e6, delay=0.010)
    c, s = connect(p.env, p.a, p.b, 5001, cc="cubic")
    c.bulk(2.0)
    rows = s.sample_windows(0.02, 2.0)
    snd = c.sample_windows(0.02, 2.0)
    p.env.run(until=2.0)
    rb = [r["rb"] for r in rows]
    assert rb == sorted(rb) and rb[-1] > 4 * rb[0]
    tb = [r["tb"] for r in snd]
    assert tb == sorted(tb) and tb[-1] > 4 * tb[0]


def test_bad_sysctl_is_one_clear_error():
    with pytest.raises(ConfigError, match="tcp_rmem"):
        TcpSysctls.from_mapping({"net.ipv4.tcp_rmem": "4096 131072"})
    with pytest.raises(ConfigError, match="unknown TCP sysctl"):
        TcpSysctls.from_mapping({"net.ipv4.tcp_foo": "1"})


def test_the_host_default_congestion_control_is_followed(make_path):
    p = make_path()
    p.a.tcp_sysctls = TcpSysctls(congestion_control="reno")
    c, _ = connect(p.env, p.a, p.b, 5001)
    assert c.sender.cc.name in ("reno", "newreno")


def test_a_vm_sysctl_table_sets_the_default_congestion_control_tools_follow():
    import copy
    from pathlib import Path

    import numpy as np
    import simpy

    from ovssim.profile import Profile
    from ovssim.scenario import load_scenario
    from ovssim.topology import build

    sc = Path(__file__).resolve().parents[2] / "validation" / "scenarios" / "local_netns.toml"
    d = copy.deepcopy({k: v for k, v in load_scenario(sc).data.items() if not k.startswith("_")})
    for vm in d["vm"]:
        if vm["name"] == "ns1":
            vm["sysctl"] = {"net.ipv4.tcp_congestion_control": "bbr", "net.ipv4.tcp_wmem": "4096 16384 1048576"}
        else:                                          # the scenario's own default is this host's, bbr
            vm["sysctl"] = {"net.ipv4.tcp_congestion_control": "cubic"}
    s = load_scenario(d)
    env = simpy.Environment()
    topo = build(env, s, Profile.load(s.profile, relative_to=s.base_dir),
                 lambda name: np.random.default_rng(0))
    ns1, ns2 = topo.endpoints["ns1"], topo.endpoints["ns2"]
    c, srv = connect(env, ns1, ns2, 5001)              # no -C: the host's default
    assert c.sender.cc.name == "bbr" and srv.sender.cc.name == "cubic"
    assert c.sender.sndbuf_auto.wmem[2] == 1048576


def test_iperf3_results_show_the_windows_over_time(make_path):
    from ovssim.workloads.registry import make_workload
    p = make_path(rate=50e6, delay=0.005)
    w = make_workload({"tool": "iperf3", "proto": "tcp", "P": 2, "t": "2s", "C": "cubic"})
    w.start(p.ctx(2.0))
    p.env.run(until=2.5)
    smp = w.samples()
    m = {x.name: x.value for x in w.metrics()}
    for key in ("in_flight", "rwnd", "sndbuf", "rcvbuf"):
        assert smp[key].size >= 2 * 150            # every 10 ms, two streams
    # buffers only grow, the sender never has more in flight than its buffer holds
    assert smp["sndbuf"].max() > smp["sndbuf"][0]
    assert smp["in_flight"].max() <= max(c.sender.sndbuf for c, _ in w.streams)
    assert m["max_snd_cwnd"] == max(max(c for _, c, _ in c.sender.cwnd_log) * c.sender.mss for c, _ in w.streams)


def test_a_bad_vm_sysctl_names_the_vm_and_the_key():
    import copy
    from pathlib import Path

    from ovssim.runner import run_scenario
    from ovssim.scenario import load_scenario

    sc = Path(__file__).resolve().parents[2] / "validation" / "scenarios" / "local_netns.toml"
    d = copy.deepcopy({k: v for k, v in load_scenario(sc).data.items() if not k.startswith("_")})
    d["vm"][0]["sysctl"] = {"net.ipv4.tcp_wmem": "4096 16384"}
    with pytest.raises(ConfigError, match=r"vm\.ns1\.sysctl\.net\.ipv4\.tcp_wmem"):
        run_scenario(d, reps=1)


@pytest.mark.parametrize("seg_len, step", [(1448, 2 * 1448), (65160, 2 * 65160), (100, 0)])
def test_the_window_grows_by_twice_each_skb_or_two_segments(seg_len, step):
    # tcp_grow_window (tcp_input.c): incr = max(2 x advmss, 2 x skb->len), for skbs of 128 bytes or more;
    # a GRO'd or whole GSO skb of 45 segments opens the window by 90 segments at once
    rb = ReceiveBuffer(mss=1448)
    rb.sk_rcvbuf = rb.window_clamp = 8 << 20          # room to grow: the cap is not what is tested
    before = rb.rcv_ssthresh
    rb.on_data(seg_len, seg_len, 0.0, 0.0)
    assert rb.rcv_ssthresh - before == step


@pytest.mark.parametrize("space, copied, clamp", [
    (14480, 27549, 154553), (31856, 60816, 342779), (63712, 201272, 2140801), (260640, 456120, 2280599),
    (456120, 781920, 3797895)])
def test_receive_buffer_grows_as_tcp_rcvbuf_grow_measured_here(space, copied, clamp):
    """Trace event tcp:tcp_rcvbuf_grow on this host (kernel 6.18, iperf3 -C cubic behind a 10 Mbit/s HTB,
    data/local/tcp_window/2026-11-28-trace): the bytes copied in a measurement after ``space`` the one before
    set window_clamp to 2 x copied x (1 + 2 x growth) -- 6.16's tcp_rcvbuf_grow, without the 16 x advmss
    the older tcp_rcv_space_adjust added (219544 B for the first row)."""
    rb = ReceiveBuffer(mss=1448, scaling_ratio=229 / 256)     # the trace's scaling_ratio
    rb.ratio = rb.data_ratio
    rb.space, rb.space_seq = space, 0
    assert rb._space_adjust(copied, 1.0)
    assert rb.window_clamp == pytest.approx(clamp, rel=2e-5)


def test_the_receiver_times_a_round_trip_once_per_echoed_timestamp_in_whole_ms():
    """tcp_rcv_rtt_measure_ts: a sample only when the echoed timestamp changes (rcv_rtt_last_tsecr), of
    the timestamps' whole milliseconds (tcp_rtt_tsopt_us), a zero one left out (6.16+)."""
    rb = ReceiveBuffer(mss=1448)
    rb.on_data(1448, 1448, 0.0101, 0.0225)       # 22 ms - 10 ms
    assert rb.rtt == pytest.approx(0.012)
    rb.on_data(2896, 1448, 0.0101, 0.0625)       # the same echo again: no sample
    assert rb.rtt == pytest.approx(0.012)
    rb.on_data(4344, 1448, 0.0702, 0.0706)       # same millisecond: left out
    assert rb.rtt == pytest.approx(0.012)
    rb.on_data(5792, 1448, 0.0703, 0.0903)       # 90 - 70 = 20 ms: EWMA of 1/8
    assert rb.rtt == pytest.approx(0.012 + (0.020 - 0.012) / 8)


def test_the_window_stops_one_unread_skb_below_the_buffer():
    """tcp_grow_window runs after tcp_queue_rcv charged the skb to sk_rmem_alloc, and its room is
    ``min(window_clamp, tcp_space) - rcv_ssthresh``, ``tcp_space`` = ``tcp_win_from_space(sk_rcvbuf -
    sk_rmem_alloc)``: rcv_ssthresh stops one skb's truesize below the buffer.  Trace event tcp:tcp_rcvbuf_grow
    on this host (bridge port's HTB 20 Mbit/s, data/local/tcp_window/2026-11-28-trace): with sk_rcvbuf 635277,
    window_clamp 568275 and 45-segment skbs (truesize 65992) rcv_ssthresh stayed at 509243 =
    (635277 - 65992) x 229 >> 8 for 0.27 s; a 37-segment skb (truesize 54408) then took it to 519605."""
    rb = ReceiveBuffer(mss=1448, scaling_ratio=229 / 256)
    rb.on_data(0, 1448, 0.0, 0.0)                  # the first data skb sets scaling_ratio
    rb.sk_rcvbuf, rb.window_clamp, rb.rcv_ssthresh = 635277, 568275, 421888
    for _ in range(5):
        rb.on_data(0, 65160, 0.0, 0.0, rmem=65992)
    assert rb.rcv_ssthresh == 509243
    rb.on_data(0, 53576, 0.0, 0.0, rmem=54408)
    assert abs(rb.rcv_ssthresh - 519605) <= 1
    rb.on_data(0, 65160, 0.0, 0.0, rmem=0)        # nothing unread: up to the clamp
    assert rb.rcv_ssthresh == 568275


def test_a_receiver_charges_the_skb_it_processes_to_the_free_space(make_path):
    """The receiver passes what is queued unread, this skb included (its truesize), to tcp_grow_window: a
    bulk flow's rcv_ssthresh never passes ``tcp_win_from_space(sk_rcvbuf - truesize)`` of the skb that
    grew it."""
    from ovssim.tcp.buffers import tcp_skb_truesize
    p = make_path(rate=100e6, delay=0.002, limit=1000)
    c, s = connect(p.env, p.a, p.b, 5001, cc="cubic")
    auto = s.receiver.autotune
    seen = []
    on_data = auto.on_data

    def record(copied, seg_len, tsecr, now, rmem=0, read=True):
        before = auto.rcv_ssthresh
        grew = on_data(copied, seg_len, tsecr, now, rmem, read)
        seen.append((rmem, seg_len))
        if auto.rcv_ssthresh > before:
            assert auto.rcv_ssthresh <= auto.win_from_space(auto.sk_rcvbuf - tcp_skb_truesize(seg_len))
        return grew
    auto.on_data = record
    c.bulk(1.0)
    p.env.run(until=1.0)
    assert seen and all(rmem == tcp_skb_truesize(n) for rmem, n in seen)


def test_a_softirq_ack_offers_the_space_less_the_unread_skb():
    """__tcp_select_window in the softirq's ACK (tcp_event_data_recv -> __tcp_ack_snd_check, before the reader
    copies the skb and before its tcp_rcv_space_adjust): tcp_space less the unread skb's truesize.  tcp_probe
    behind the bridge port's HTB 20 Mbit/s (data/local/tcp_window/2026-11-28-trace): the ACK of a 39-segment
    skb (truesize 57304) in slow start, sk_rcvbuf 303589, rcv_ssthresh 233262, advertised 221184 B
    ((303589 - 57304) x 229 >> 8 = 220313, aligned up to the window scale's 1024) -- 152 segments to the
    sender, where the buffer's whole window would have given 161."""
    rb = ReceiveBuffer(mss=1448, scaling_ratio=229 / 256)
    rb.on_data(0, 1448, 0.0, 0.0)
    rb.sk_rcvbuf, rb.window_clamp, rb.rcv_ssthresh = 303589, 271569, 233262
    assert rb.offer(57304) // 1448 == 152
    assert rb.offer(0) // 1448 == 161


def test_the_softirq_acks_in_slow_start_carry_the_window_less_the_unread_skb(make_path):
    """A bulk flow of GSO skbs: every ACK the softirq sends (the skb not yet read: quick-ACK mode, or a window
    at least the one advertised; __tcp_ack_snd_check) offers at most the buffer's window less that skb's truesize, and some of them
    less than rcv_ssthresh and the buffer's whole window would."""
    from ovssim.tcp.buffers import tcp_skb_truesize
    p = make_path(rate=20e6, delay=0.002, limit=1000)
    p.a.gso = True
    c, s = connect(p.env, p.a, p.b, 5001, cc="cubic")
    r = s.receiver
    auto = r.autotune
    checked = []
    send_ack = r.send_ack

    def record(now):
        unread, edge = r.rmem_alloc, r._right_edge - r.rcv_nxt
        whole = min(auto.rcv_ssthresh, auto.window_clamp, auto.win_from_space(auto.sk_rcvbuf))
        send_ack(now)
        if unread:
            less = auto.win_from_space(auto.sk_rcvbuf - unread)
            checked.append((r.rcv_wnd <= max(less, edge), r.rcv_wnd < whole - 1448))
    r.send_ack = record
    c.bulk(1.0)
    p.env.run(until=1.0)
    assert len(checked) > 10 and all(ok for ok, _ in checked)
    assert any(smaller for _, smaller in checked)     # the unread skb, not rcv_ssthresh, set some windows
