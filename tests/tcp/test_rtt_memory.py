"""A long TCP run keeps its RTT figures in bounded memory: past RTT_KEEP samples they fold into
exact moments and 0.1 %-accurate quantiles, and the figures are those of every sample."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ovssim.metrics import DelayStats
from ovssim.sched import call_later
from ovssim.tcp import sender as sender_mod
from ovssim.tcp.stats import rtt_array_ms, rtt_summary
from ovssim.workloads.iperf_tcp import IperfTcp


def _run(make_path, keep: int, monkeypatch):
    monkeypatch.setattr(sender_mod, "RTT_KEEP", keep)
    path = make_path(rate=50e6, delay=0.002, limit=200)
    wl = IperfTcp.from_spec({"tool": "iperf3", "proto": "tcp", "P": 2, "O": 0.5})
    wl.start(path.ctx(3.0))
    longest = 0

    def watch(_=None):
        nonlocal longest
        longest = max([longest, *(len(c.sender.rtt_samples) for c, _ in wl.streams)])   # none before CREATE_STREAMS
        if path.env.now < 3.4:
            call_later(path.env, 0.01, watch)
    watch()
    path.env.run(until=3.6)
    return wl, longest


def test_folded_rtts_give_the_figures_of_every_sample(make_path, monkeypatch):
    exact, _ = _run(make_path, 10 ** 9, monkeypatch)          # nothing folds
    folded, longest = _run(make_path, 500, monkeypatch)       # folds every 500 samples
    assert longest <= 500                                     # the raw lists stay bounded
    senders_e = [c.sender for c, _ in exact.streams]
    senders_f = [c.sender for c, _ in folded.streams]
    assert all(s.rtt_folded is not None and s.rtt_folded.count > 500 for s in senders_f)
    start = exact.t0 + exact.omit
    a, b = rtt_summary(senders_e, start), rtt_summary(senders_f, start)
    assert b["rtt_mean"] == pytest.approx(a["rtt_mean"], rel=1e-9)          # moments: exact
    # quantiles: within the histogram's 0.1 % of the samples at that rank (where samples are sparse, as in
    # a tail, the exact figure interpolates between two order statistics that may lie percents apart)
    x = np.sort(np.concatenate([[r for r, t in zip(s.rtt_samples, s.rtt_times) if t >= start]
                                for s in senders_e])) * 1e3
    for q, p in (("rtt_p50", 50), ("rtt_p99", 99)):
        rank = p / 100 * (x.size - 1)
        lo, hi = x[int(np.floor(rank))], x[int(np.ceil(rank))]
        assert lo * (1 - 2e-3) <= b[q] <= hi * (1 + 2e-3)
    # samples before the measured window are not kept once folded; the ECDF sample is a systematic one
    assert 0 < rtt_array_ms(senders_f).size <= rtt_array_ms(senders_e).size


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(1e-6, 1.0), min_size=1, max_size=400), st.lists(st.floats(1e-6, 1.0), max_size=400),
       st.integers(8, 64))
def test_merge_equals_one_accumulation(xs, ys, cap):
    one = DelayStats(cap)
    one.values.extend(xs + ys)
    one.fold()
    a, b = DelayStats(cap), DelayStats(cap)
    a.values.extend(xs)
    b.values.extend(ys)
    a.merge(b)
    assert a.count == one.count == len(xs) + len(ys)
    assert a.mean() == pytest.approx(one.mean(), rel=1e-12)
    assert a.std() == pytest.approx(one.std(), rel=1e-9, abs=1e-15)
    assert a.percentile(50) == one.percentile(50) and a.percentile(99) == one.percentile(99)
    assert a.min == min(xs + ys) and a.max == max(xs + ys)
    assert a.sample().size <= cap
