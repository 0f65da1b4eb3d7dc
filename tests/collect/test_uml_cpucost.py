"""The UML CPU-cost probe's parsers (ovssim/collect/uml/cpucost.py) and the figure validate takes from its data.

Checked: a step's busy share is elapsed minus the measured idle time (CONFIG_NO_HZ_IDLE: a short busy
spell after idle gets no tick, so the busy ticks under-count), not the busy ticks' share; strace -c's
table keeps its first row (the busiest call) and drops the total; the wake-up cost is the busy share a
woken process adds to the idle instance's, per wake-up.
"""
import json

import pytest

from ovssim.collect.uml import cpucost
from ovssim.validate import uml

OUT = """== kernel 6.1.176
== cpu sys1.0 10.00 cpu  100 0 10 500 0 0 0 0 0 0
== step sys1 sys_us 49.6
== cpu sys1.1 10.50 cpu  150 0 10 500 0 0 0 0 0 0
== cpu fwd-read-20.0 20.00 cpu  200 0 20 1000 0 0 0 0 0 0
== cpu fwd-read-20.1 25.00 cpu  208 0 21 1427 0 0 1 0 0 0
== step fwd-read-20 sent 10000 received 10000
== step idle1
== end
"""


def test_busy_share_is_elapsed_less_idle_not_the_ticks():
    steps = cpucost.parse(OUT)["steps"]
    assert steps["sys1"]["sys_us"] == 49.6
    assert steps["sys1"]["busy_share"] == pytest.approx(1.0)
    fwd = steps["fwd-read-20"]
    # 5 s = 500 jiffies elapsed, 427 of them idle: busy 14.6 %, where the 10 busy ticks counted say 2.3 %
    assert fwd["busy_share"] == pytest.approx(1 - 427 / 500)
    assert fwd["busy_ticks"] / fwd["ticks"] == pytest.approx(10 / 437)
    assert fwd["sent"] == 10000
    assert "idle1" in steps              # a step with no figures of its own


STRACE = """== iperf
bytes 9524944 seconds 4.152533
== strace server
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 58.10    0.030000          10      2775           clock_gettime
 22.53    0.011636           2      4254      1403 read
------ ----------- ----------- --------- --------- ----------------
100.00    0.051636           6      7029      1403 total
== strace client
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
100.00    0.010000           9      1091       895 write
  0.00    0.000000           0       221           pselect6
------ ----------- ----------- --------- --------- ----------------
100.00    0.010000           7      1312       895 total
== end
"""


def test_strace_table_keeps_the_first_row_and_drops_the_total():
    r = cpucost.parse_strace(STRACE)
    assert r["bytes"] == 9524944
    assert r["server"] == {"clock_gettime": 2775, "read": 4254}
    assert r["client"] == {"write": 1091, "pselect6": 221}


def test_idle_busy_is_the_woken_process_share_per_wake_up(tmp_path):
    steps = {"idle1": {"seconds": 5.0, "busy_share": 0.01},
             "wake1000-1": {"seconds": 5.0, "busy_share": 0.05},     # +4 % at 1000 wake-ups/s: 40 us each
             "idle2": {"seconds": 5.0, "busy_share": 0.02},
             "wake1000-2": {"seconds": 4.0, "busy_share": 0.05},     # +3 %: 30 us each
             "wake10000-1": {"seconds": 5.0, "busy_share": 0.035}}   # another period: not taken
    (tmp_path / "results-cpucost-run9.json").write_text(json.dumps({"steps": steps}))
    assert uml.idle_busy(tmp_path) == pytest.approx(35e-6)
    assert uml.idle_busy(tmp_path, 10000) == pytest.approx(250e-6)
    assert uml.idle_busy(tmp_path / "none") is None


def test_idle_busy_leaves_out_the_woken_process_own_call(tmp_path):
    # the probe's process makes one clock_nanosleep per wake-up, which app.syscall counts: less the run's getppid
    steps = {"sys1": {"sys_us": 10.0}, "sys2": {"sys_us": 20.0},
             "idle1": {"seconds": 5.0, "busy_share": 0.01},
             "wake1000-1": {"seconds": 5.0, "busy_share": 0.05}}      # 40 us a wake-up, 15 us of it the call
    (tmp_path / "results-cpucost-run9.json").write_text(json.dumps({"steps": steps}))
    assert uml.idle_busy(tmp_path) == pytest.approx(25e-6)


def test_syscall_cost_is_the_mean_of_each_runs_mean_getppid(tmp_path):
    (tmp_path / "results-cpucost-run1.json").write_text(json.dumps(
        {"steps": {"sys1": {"sys_us": 40.0}, "sys2": {"sys_us": 60.0}, "idle1": {"seconds": 5.0}}}))
    (tmp_path / "results-calls.json").write_text(json.dumps({"getppid_us": {"sysbefore1": 10.0, "sysafter1": 20.0}}))
    (tmp_path / "results-strace.json").write_text(json.dumps({"server": {"read": 4}}))    # no timing: not a run
    assert uml.syscall_cost(tmp_path) == pytest.approx((50 + 15) / 2 * 1e-6)
    assert uml.syscall_cost(tmp_path / "none") is None


def mark(tag, uptime, cpu, vol, nonvol, syscr, sh_syscr):
    """A mark of the calls probe: /proc/stat's cpu line, the iperf3 server's and a shell's task counters."""
    t = "/proc/855/task/855"
    return (f"== mark {tag} {uptime} cpu  {cpu}\n"
            f"== task {tag} {t}/status:Name:\tiperf3\n== task {tag} {t}/status:voluntary_ctxt_switches:\t{vol}\n"
            f"== task {tag} {t}/status:nonvoluntary_ctxt_switches:\t{nonvol}\n"
            f"== task {tag} {t}/io:syscr: {syscr}\n== task {tag} {t}/io:syscw: 0\n"
            f"== task {tag} /proc/9/task/9/status:Name:\tsh\n== task {tag} /proc/9/task/9/io:syscr: {sh_syscr}\n")


CALLS = ("== kernel 6.1.176\n== step sysbefore1 sys_us 18.9\n"
         + mark("load0", 17.84, "803 0 51 913 0 0 2 0 0 0", 100, 3, 1000, 5)
         + mark("load1", 23.84, "1003 0 51 1273 0 0 2 0 0 0", 7972, 200, 16788, 9) + """== iperf
throughput 17619846.9 segments 12417.0 seconds 8.16
== ping rtt min/avg/max/mdev = 49.582/96.722/136.933/19.014 ms, pipe 10
== strace ping.txt
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 50.00    0.020000          66       300           sendto
 25.00    0.010000          15       637       337 recvmsg
------ ----------- ----------- --------- --------- ----------------
100.00    0.030000          32       937       337 total
== ping-strace rtt min/avg/max/mdev = 51.219/111.502/233.278/30.219 ms, pipe 10
== end""")


def test_calls_probe_counts_each_load_task_between_the_marks():
    r = cpucost.parse_calls(CALLS)
    assert r["getppid_us"] == {"sysbefore1": 18.9}
    assert r["seconds"] == pytest.approx(6.0)
    assert r["busy_share"] == pytest.approx(1 - 360 / 600)
    # only the load's tools, the differences between the marks
    assert r["tasks"] == {"855/855 iperf3": {"voluntary": 7872, "nonvoluntary": 197, "syscr": 15788, "syscw": 0}}
    assert r["strace"] == {"ping.txt": {"sendto": 300, "recvmsg": 637}}
    assert r["segments"] == 12417.0
    assert r["ping"].startswith("rtt min/avg")


def test_pingpong_probe_gives_echoes_per_second_beside_getppid():
    r = cpucost.parse_pingpong("== step sys1 sys_us 19.7\n== pingpong 1 20000 received, 0% packet loss, time 2108ms\n"
                               "== end\n")
    assert r["steps"]["sys1"]["sys_us"] == 19.7
    assert r["pingpong_per_s"] == [pytest.approx(20000 / 2.108)]


def test_sockperf_ping_pong_makes_one_send_and_one_recv_per_end_and_transaction():
    """The collected probe (data/uml/2026-11-29/uml-rr, UML 6.1): parsed from its raw output, each end's
    strace -c table holds sendto and recvfrom in equal numbers, one each per traced transaction (plus the
    warm-up messages sockperf sends before its timed window), and nothing else per message -- the four
    calls the model puts on every round trip (ovssim/workloads/rr.py)."""
    from pathlib import Path
    from ovssim.collect.uml.collect import read_raw
    raw = Path(__file__).resolve().parents[2] / "data" / "uml" / "2026-11-29" / "uml-rr" / "raw-rr.txt"
    r = cpucost.parse_rr(read_raw(raw))
    for proto in ("tcp", "udp"):
        n = r["rr"][f"rrstrace {proto}"]["received"]
        for end in ("client", "server"):
            calls = r["strace"][f"{end}-{proto}.txt"]
            assert abs(calls["sendto"] - calls["recvfrom"]) <= 1
            assert n <= calls["sendto"] <= 1.25 * n
            others = sum(v for k, v in calls.items() if k not in ("sendto", "recvfrom"))
            assert others < 0.1 * n             # start-up calls only: no poll or clock call per message
        assert r["rr"][f"rr {proto}"]["half_rtt_us"] > 0
