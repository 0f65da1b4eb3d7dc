"""CoDel: no drop below target, the interval/sqrt(count) control law, count carry-over, ECN."""
import math

import pytest

from ovssim.errors import ConfigError
from ovssim.qdisc import make_qdisc
from ovssim.qdisc.codel import Codel
from ovssim.qdisc.codel_core import newton_step

from qdisc_testlib import conserved, pkt

TX = 1514 / 12.5e6          # 1514 bytes at 100 Mbit/s


def drive(q, arrivals_per_tx, t_end, start_backlog=0, stop_at=None, restart_at=None):
    """A 100 Mbit/s link serving one packet every TX; ``arrivals_per_tx`` packets arrive per TX.

    Returns a log of (time, count, lastcount, dropping) after every dequeue and the drop times."""
    drops = []
    q.on_drop = lambda p, now, why: drops.append((now, why))
    for i in range(start_backlog):
        q.enqueue(pkt(0, 1514, seq=i), 0.0)
    log = []
    t, acc = 0.0, 0.0
    while t < t_end:
        active = not (stop_at is not None and stop_at <= t < (restart_at or math.inf))
        if active:
            acc += arrivals_per_tx
            while acc >= 1:
                q.enqueue(pkt(0, 1514), t)
                acc -= 1
        q.dequeue(t)
        v = q.vars
        log.append((t, v.count, v.lastcount, v.dropping))
        t += TX
    return log, drops


def test_no_drop_while_sojourn_stays_below_target():
    # a standing queue of 33 packets = 4.0 ms at 100 Mbit/s, arrivals exactly at the link rate
    q = Codel()
    _, drops = drive(q, 1.0, 3.0, start_backlog=33)
    assert drops == []
    # the same with 45 packets (5.45 ms > target): CoDel starts dropping after one interval
    q2 = Codel()
    _, drops2 = drive(q2, 1.0, 3.0, start_backlog=45)
    assert drops2 and drops2[0][0] > 0.1 and all(w == "codel" for _, w in drops2)
    assert conserved(q) and conserved(q2)


def test_drop_gaps_follow_the_control_law():
    q = Codel(limit=100000)
    _, drops = drive(q, 1.05, 4.0)               # constant 5% overload: one long dropping episode
    times = [t for t, _ in drops]
    assert len(times) > 30
    rec = 0xFFFF                                 # the kernel's 1/sqrt(count), one Newton step per drop
    for k in range(1, 30):                       # gap after the k-th drop = interval * rec(k)
        if k > 1:
            rec = newton_step(k, rec)
        gap = times[k] - times[k - 1]
        assert abs(gap - 0.1 * rec / 65536) <= TX, (k, gap)
        if k >= 5:                               # ... which is interval / sqrt(count) within 1.5%
            assert abs(gap - 0.1 / math.sqrt(k)) <= 0.015 * 0.1 / math.sqrt(k) + TX, (k, gap)


def test_newton_step_tracks_one_over_sqrt_count():
    # from 1/sqrt(1) the first step lands on 0.5 for count 2 (as in the kernel), then converges
    rec = newton_step(2, 0xFFFF)
    assert abs(rec / 65536 - 0.5) < 1e-3
    for count in range(3, 400):
        rec = newton_step(count, rec)
        if count >= 8:
            assert abs(rec / 65536 * math.sqrt(count) - 1) < 0.006


def _entries(log):
    """(time, count, state-before) at every entry into the dropping state."""
    out = []
    for prev, cur in zip(log, log[1:]):
        if not prev[3] and cur[3]:
            out.append((cur[0], cur[1], prev))
    return out


@pytest.mark.parametrize("pause, carried", [(0.3, True), (2.5, False)])
def test_count_carries_over_when_dropping_restarts_within_16_intervals(pause, carried):
    q = Codel(limit=100000)
    log, _ = drive(q, 1.3, 1.0 + pause + 1.0, stop_at=1.0, restart_at=1.0 + pause)
    entries = _entries(log)
    assert len(entries) >= 2
    first, second = entries[0], entries[1]
    assert first[1] == 1
    _, count, before = second
    delta = before[1] - before[2]                 # count - lastcount when dropping stopped
    assert delta > 1
    assert count == (delta if carried else 1)


def test_ecn_marks_instead_of_dropping():
    q = Codel(limit=100000, ecn=True)
    t, n = 0.0, 0
    while t < 2.0:                               # ECN-capable traffic, 30% overload
        for _ in range(2 if n % 10 < 3 else 1):
            q.enqueue(pkt(0, 1514, ecn=1), t)
        q.dequeue(t)
        n += 1
        t += TX
    assert q.stats.ecn_marks > 0 and q.stats.drops == 0


def test_tail_drop_at_limit_and_errors():
    q = make_qdisc({"kind": "codel", "limit": 5})
    for i in range(7):
        q.enqueue(pkt(0, 100), 0.0)
    assert q.stats.drops == 2 and q.drop_overlimit == 2
    assert (Codel().params.target, Codel().params.interval, Codel().limit) == (0.005, 0.1, 1000)
    with pytest.raises(ConfigError, match="target"):
        make_qdisc({"kind": "codel", "target": "0ms"})
    with pytest.raises(ConfigError, match="bad value for codel interval"):
        make_qdisc({"kind": "codel", "interval": "5 parsecs"})
