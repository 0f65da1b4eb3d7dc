"""Cheap timed callbacks on a SimPy environment.

``call_at(env, t, fn, arg)`` runs ``fn(arg)`` at simulated time ``t`` using one
heap entry and no generator process.  It is what elements use for pure delays
and for a transmitter's completion, so that only contention costs events.
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
