"""A core serves work in arrival order even when callers book it out of order (lookahead).

A lookahead element (a NIC delivering a train, a port computing departures ahead) reserves a core's
time when it runs, which can be before the event that brings earlier work to the same core.  That
earlier work must not wait for work that had not arrived yet: it runs in the idle time before it
when it fits there whole.
"""
from __future__ import annotations

import simpy
from hypothesis import given, settings, strategies as st

from ovssim.cpu.pool import CpuPool


def _pool(cores: int = 1) -> CpuPool:
    return CpuPool(simpy.Environment(), cores, backlog_limit=None)


def test_earlier_work_booked_later_runs_before_later_work():
    pool = _pool()
    assert pool.serve(100e-6, 10e-6, key=0) == 110e-6       # a lookahead caller books ahead
    # work arriving at 5 us, booked afterwards: the core is idle then
    assert abs(pool.serve(5e-6, 2e-6, key=0) - 7e-6) < 1e-15


def test_too_long_for_the_gap_runs_after_the_booked_work():
    pool = _pool()
    pool.serve(10e-6, 10e-6, key=0)                           # [10, 20) us
    # 8 us arriving at 5 us does not fit before it: it runs after it, whole (no split around it)
    assert abs(pool.serve(5e-6, 8e-6, key=0) - 28e-6) < 1e-15
    # 3 us arriving at 6 us, after the 8 us: served after it (arrival order), not in the gap before
    assert abs(pool.serve(6e-6, 3e-6, key=0) - 31e-6) < 1e-15


def test_too_long_for_a_gap_takes_the_first_later_gap_it_fits():
    """First fit: work that does not fit the gap before the next booked work runs in the first later gap it
    fits whole, not behind all the work booked for later arrivals (a sender's next sendto() on a core
    where the receiver's recvmsg() calls are booked ahead)."""
    pool = _pool()
    pool.serve(10e-6, 2e-6, key=0)                            # [10, 12) us
    pool.serve(13e-6, 2e-6, key=0)                            # [13, 15)
    pool.serve(40e-6, 2e-6, key=0)                            # [40, 42)
    # 4 us arriving at 8 us: not in [8, 10) nor [12, 13), but in [15, 40) -- not after 42 us
    assert abs(pool.serve(8e-6, 4e-6, key=0) - 19e-6) < 1e-15
    # the gaps are used up in arrival order: 2 us arriving at 9 us, after the 4 us (arrived at 8)
    assert abs(pool.serve(9e-6, 2e-6, key=0) - 21e-6) < 1e-15


def test_work_arriving_after_booked_work_waits_for_it():
    pool = _pool()
    pool.serve(10e-6, 10e-6, key=0)                           # arrived at 10 us, runs [10, 20)
    assert abs(pool.serve(15e-6, 2e-6, key=0) - 22e-6) < 1e-15   # FIFO behind it


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 200), st.integers(1, 30)), min_size=1, max_size=25))
def test_out_of_order_booking_conserves_the_core(jobs):
    """Whatever order the calls come in: no two pieces of work overlap on the core, each work's
    completion is at least its arrival plus its length, and the busy time is the work's sum."""
    jobs = [(t, w) for t, w in jobs]
    pool = _pool()
    done = [pool.serve(t * 1e-6, w * 1e-6, key=0) for t, w in jobs]
    for (t, w), d in zip(jobs, done):
        assert d >= (t + w) * 1e-6 - 1e-12
    pieces = sorted((d - w * 1e-6, d) for (_t, w), d in zip(jobs, done))
    for (a0, b0), (a1, _b1) in zip(pieces, pieces[1:]):
        assert a1 >= b0 - 1e-12
    assert abs(sum(b - a for a, b in pieces) - sum(w for _, w in jobs) * 1e-6) < 1e-9
    assert abs(pool.busy[0] - sum(w for _, w in jobs) * 1e-6) < 1e-12


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 200), st.integers(1, 30)), min_size=1, max_size=25))
def test_in_order_calls_are_a_fifo_queue(jobs):
    """Calls in arrival order give exactly the FIFO single-server recursion (Lindley)."""
    jobs = sorted(jobs)
    pool = _pool()
    free = 0.0
    for t, w in jobs:
        free = max(free, t * 1e-6) + w * 1e-6
        assert abs(pool.serve(t * 1e-6, w * 1e-6, key=0) - free) < 1e-12
