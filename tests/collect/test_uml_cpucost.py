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
