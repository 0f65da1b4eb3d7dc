"""The sequential rule: stops where the analytic CI says, never earlier for a tighter precision, and its
decisions depend on the replications' values alone (not on the order runs finish)."""
import math
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

from ovssim.errors import ConfigError
from ovssim.sequential import Precision, checkpoints, parse_precision
from ovssim.sweep.schedule import SequentialTasks
from ovssim.sweep.spec import Point, run_id

MU = 100.0


def _fake_sweep(precision, sigmas):
    points = [Point({"x": i}) for i in range(len(sigmas))]
    sweep = SimpleNamespace(points=points, precision=precision,
                            task=lambda p, rep: SimpleNamespace(run=run_id(p.id, rep), point=p.id, rep=rep))
    return sweep, dict(zip((p.id for p in points), sigmas))


def _value(seed, pid, rep, sigma):
    """Replication ``rep`` of a quantity with known mean MU and standard deviation ``sigma``: a pure
    function of (seed, point, rep), as a simulation replication is."""
    z = np.random.default_rng([seed, int(pid[:8], 16), rep]).standard_normal()
    return MU + sigma * z


def _run(precision, sigmas, seed, order=None):
    """Drive :class:`SequentialTasks` as an executor would; ``order`` shuffles completion order."""
    sweep, sig = _fake_sweep(precision, sigmas)
    sched = SequentialTasks(sweep)
    rng = np.random.default_rng(order) if order is not None else None
    inflight = []
    while True:
        inflight += list(sched)                        # take everything released so far
        if not inflight:
            break
        i = int(rng.integers(len(inflight))) if rng is not None else 0
        t = inflight.pop(i)
        sched.record({"run": t.run, "point": t.point, "rep": t.rep, "status": "ok",
                      "rows": [["w", "m", "ms", _value(seed, t.point, t.rep, sig[t.point])]]})
    return {pid: st.reps for pid, st in sched.point_stopping().items()}, sched


def _first_checkpoint_where_t_ci_is_narrow(xs, rel, grid):
    for n in grid:
        x = xs[:n]
        half = stats.t.ppf(0.975, n - 1) * np.std(x, ddof=1) / math.sqrt(n)
        if half <= rel * abs(x.mean()):
            return n
    return grid[-1]


def test_stops_at_the_first_look_where_the_t_interval_is_within_precision():
    prec = Precision({"*": 0.01}, {}, 3, 200)
    grid = checkpoints(3, 200)
    sigma = 3.0
    for seed in range(8):
        stops, _ = _run(prec, [sigma], seed)
        (pid, n), = stops.items()
        xs = np.array([_value(seed, pid, r, sigma) for r in range(200)])
        assert n == _first_checkpoint_where_t_ci_is_narrow(xs, 0.01, grid)


def test_the_stopping_count_matches_the_known_variance_analytic_count():
    # sigma known: the CI half-width 1.96 sigma / sqrt(n) reaches rel * MU at n* = (1.96 sigma / (rel MU))^2
    sigma, rel = 4.0, 0.01
    n_star = (stats.norm.ppf(0.975) * sigma / (rel * MU)) ** 2           # 61.5
    stops = [next(iter(_run(Precision({"*": rel}, {}, 3, 1000), [sigma], seed)[0].values())) for seed in range(40)]
    # the grid looks every ~25 %, so a stop lands up to 25 % past the crossing; s fluctuates around sigma
    assert n_star * 0.9 <= np.median(stops) <= n_star * 1.35, (n_star, sorted(stops))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.002, 0.05), st.floats(1.1, 5.0))
def test_a_higher_precision_never_uses_fewer_replications(seed, rel, factor):
    sigmas = [0.5, 2.0, 6.0]
    loose, _ = _run(Precision({"*": rel * factor}, {}, 3, 300), sigmas, seed)
    tight, _ = _run(Precision({"*": rel}, {}, 3, 300), sigmas, seed)
    assert all(tight[p] >= loose[p] for p in loose)


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 1000), st.integers(0, 1000))
def test_the_outcome_does_not_depend_on_the_order_runs_finish(seed, order):
    prec = Precision({"*": 0.01}, {}, 3, 120)
    assert _run(prec, [1.0, 3.0, 5.0], seed)[0] == _run(prec, [1.0, 3.0, 5.0], seed, order=order)[0]


def test_max_reps_stops_and_names_the_metrics_short_of_precision():
    stops, sched = _run(Precision({"*": 1e-5}, {}, 3, 10), [5.0], 1)
    st_ = next(iter(sched.point_stopping().values()))
    assert st_.reps == 10 and st_.reason == "max-reps" and st_.unmet == ["w:m"]


def test_an_absolute_bound_also_stops():
    stops, sched = _run(Precision({"*": 1e-6}, {"m": 5.0}, 3, 500), [5.0], 2)
    st_ = next(iter(sched.point_stopping().values()))
    assert st_.reason == "precision reached" and st_.reps < 500


def test_precision_bounds_pick_the_most_specific_pattern():
    p = parse_precision(["0.01", "jitter=0.05", "udp:jitter=0.1"], ["loss=0.2"])
    assert p.bounds("udp", "throughput") == (0.01, None)
    assert p.bounds("ping", "jitter") == (0.05, None)
    assert p.bounds("udp", "jitter") == (0.1, None)
    assert p.bounds("udp", "loss") == (0.01, 0.2)
    assert not p.watches("system", "cpu_util.h1")


@pytest.mark.parametrize("rel,abs_,lo,hi", [("0", None, None, None), ("1.5", None, None, None),
                                            ("x", None, None, None), (None, ["0.1"], None, None),
                                            ("0.01", None, 10, 5), (None, None, 3, None)])
def test_bad_precision_is_one_clear_error(rel, abs_, lo, hi):
    with pytest.raises(ConfigError):
        parse_precision(rel, abs_, lo, hi)
