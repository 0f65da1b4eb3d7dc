"""SIGTERM and SIGHUP end an ovssim command (a run, a sweep, a collector) the way Ctrl-C does.

``kill``, ``timeout``, batch schedulers and ``docker stop`` send SIGTERM; a closed terminal
sends SIGHUP.  Their default action ends Python without unwinding, so no ``finally`` runs and
the testbed (OVS daemons, namespaces, work folder) or a sweep's worker processes stay behind.  Inside
:func:`signals_interrupt` both raise :class:`KeyboardInterrupt` instead, so every clean-up
path written for Ctrl-C runs for them too.
"""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """A SIGTERM or SIGHUP, raised where the main thread was."""


def _raise(signum, frame):
    raise Interrupted(f"signal {signal.Signals(signum).name}")


@contextmanager
def signals_interrupt():
    """SIGTERM/SIGHUP raise :class:`Interrupted` (a KeyboardInterrupt) while inside."""
    if threading.current_thread() is not threading.main_thread():
        yield                      # only the main thread may set handlers
        return
    old = {s: signal.signal(s, _raise) for s in SIGNALS}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
