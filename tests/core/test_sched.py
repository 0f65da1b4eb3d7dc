"""run_until processes the same events in the same order as simpy's env.run(until=...)."""
import pytest
import simpy

from ovssim.sched import call_at, run_until


def _model(env, log):
    def proc(env, name, gap):
        while True:
            yield env.timeout(gap)
            log.append((env.now, name))

    env.process(proc(env, "a", 0.3))
    env.process(proc(env, "b", 0.5))
    for i in range(10):
        call_at(env, i * 0.25, lambda x: log.append((env.now, f"call{x}")), i)


def test_same_trace_as_env_run():
    e1, l1 = simpy.Environment(), []
    _model(e1, l1)
    e1.run(until=2.0)
    e2, l2 = simpy.Environment(), []
    _model(e2, l2)
    run_until(e2, 2.0)
    assert l1 == l2 and e1.now == e2.now == 2.0


def test_failed_event_raises():
    env = simpy.Environment()

    def bad(env):
        yield env.timeout(1)
        raise RuntimeError("boom")
    env.process(bad(env))
    with pytest.raises(RuntimeError, match="boom"):
        run_until(env, 5)
