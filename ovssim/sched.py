"""Cheap timed callbacks on a SimPy environment.

``call_at(env, t, fn, arg)`` runs ``fn(arg)`` at simulated time ``t`` using one
heap entry and no generator process.  It is what elements use for pure delays
and for a transmitter's completion, so that only contention costs events.
"""
from __future__ import annotations

from heapq import heappush

from simpy.events import NORMAL


def _fire(ev: "Call") -> None:
    ev.fn(ev.arg)


_FIRE = (_fire,)


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
