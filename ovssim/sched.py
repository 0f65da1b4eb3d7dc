"""Cheap timed callbacks on a SimPy environment: ovssim's one adapter to SimPy's internals.

``call_at(env, t, fn, arg)`` runs ``fn(arg)`` at simulated time ``t`` using one
heap entry and no generator process.  It is what elements use for pure delays
and for a transmitter's completion, so that only contention costs events.

SimPy's public API schedules through ``Environment.schedule`` and reads the clock
through the ``now`` property; ovssim's hot paths instead push onto the event heap
(``env._queue`` entries ``(time, priority, eid, event)`` with ``eid`` from
``env._eid``) -- only here, in :func:`schedule` and :func:`call_at` -- and read
``env._now``.  These are private to SimPy, so the dependency is bounded to the
versions this was checked against (``simpy>=4.1,<4.2``), and :func:`check_simpy`
(run by the test suite) fails with one clear line if their shape changes.
"""
from __future__ import annotations

from heapq import heappop, heappush

from simpy.events import NORMAL


def _fire(ev: "Call") -> None:
    ev.fn(ev.arg)


_FIRE = (_fire,)
#: the ``callbacks`` of a pending :class:`Call`; set it again to re-schedule a Call that fired
FIRE = _FIRE


class Call:
    """A minimal SimPy-compatible event that calls ``fn(arg)`` when processed."""

    __slots__ = ("callbacks", "fn", "arg")
    _ok = True
    _value = None

    def __init__(self, fn, arg):
        self.callbacks = _FIRE
        self.fn = fn
        self.arg = arg

    def cancel(self) -> None:
        """Make the pending call a no-op (the heap entry stays, cheaply)."""
        self.fn = _noop


def _noop(_arg) -> None:
    return None


def schedule(env, t: float, ev) -> None:
    """Put the event ``ev`` (a :class:`Call` being re-armed, or any SimPy event) on the heap at ``t``."""
    heappush(env._queue, (t, NORMAL, next(env._eid), ev))


def check_simpy(env=None) -> None:
    """Raise :class:`RuntimeError` unless SimPy's private scheduling state has the shape this module uses."""
    import simpy
    env = env if env is not None else simpy.Environment(initial_time=1.5)
    problems = []
    if not isinstance(getattr(env, "_queue", None), list):
        problems.append("Environment._queue is not a list (the event heap)")
    eid = getattr(env, "_eid", None)
    if eid is None or not callable(getattr(eid, "__next__", None)):
        problems.append("Environment._eid is not an iterator of event ids")
    if getattr(env, "_now", None) != env.now:
        problems.append("Environment._now is not the clock that Environment.now returns")
    if not problems:                                  # an entry pushed here must be one SimPy processes
        probe = simpy.Environment()
        seen = []
        call_at(probe, 2.0, seen.append, "fired")
        probe.run()
        if seen != ["fired"] or probe.now != 2.0:
            problems.append("an event pushed onto Environment._queue is not processed at its time")
    if problems:
        raise RuntimeError(f"ovssim needs simpy>=4.1,<4.2 (installed: simpy {simpy.__version__}): "
                           + "; ".join(problems) + " -- fix: pip install 'simpy>=4.1,<4.2'")


def call_at(env, t: float, fn, arg=None) -> Call:
    """Schedule ``fn(arg)`` at absolute time ``t`` (not earlier than ``env.now``).

    Pushes straight onto SimPy's event heap -- what ``Environment.schedule``
    does, minus a method call on the hottest line of every simulation.
    """
    ev = Call(fn, arg)
    now = env._now
    heappush(env._queue, (t if t > now else now, NORMAL, next(env._eid), ev))
    return ev


def call_later(env, delay: float, fn, arg=None) -> Call:
    """Schedule ``fn(arg)`` after ``delay`` seconds."""
    ev = Call(fn, arg)
    env.schedule(ev, NORMAL, delay if delay > 0.0 else 0.0)
    return ev


def run_until(env, until: float) -> None:
    """``env.run(until=until)`` in a tighter loop (used by ovssim's own runner).

    Processes events strictly before ``until`` in SimPy's order (time, priority,
    insertion), with SimPy's semantics for every event type -- callbacks run, a
    failed event that nobody defused raises -- but without ``Environment.step``'s
    per-event method call, and calling a :class:`Call` directly.
    """
    queue = env._queue
    pop = heappop
    fire = _FIRE
    while queue and queue[0][0] < until:
        t, _prio, _eid, ev = pop(queue)
        env._now = t
        callbacks = ev.callbacks
        ev.callbacks = None
        if callbacks is fire:
            ev.fn(ev.arg)
            continue
        for cb in callbacks:
            cb(ev)
        if not ev._ok and not hasattr(ev, "_defused"):
            exc = type(ev._value)(*ev._value.args)
            exc.__cause__ = ev._value
            raise exc
    if env._now < until:
        env._now = until
