"""A shaping port whose watchdog fires late (profile ``qdisc.watchdog_latency`` as a distribution).

Under user-mode Linux the qdisc watchdog's hrtimer is a host timer signal to the instance's process; when
the loaded host does not run that process, nothing in the instance runs: not the watchdog, and not the
``qdisc_run`` an arriving packet would start in its sender's context.  So a packet that arrives after the
time the watchdog was set for, but before it fires, waits for it (ovssim/path/port.py, ``_lateness``), and
the lateness is drawn once per time the watchdog is set for: the arrivals whose ``qdisc_run`` sets the same
time again neither draw again nor cancel a late watchdog.

What the UML data show (data/uml/2026-11-24/uml-schedulers, validate/uml.py): a punctual shaper almost always
-- the FQ-CoDel ping waits 0-0.6 ms (one 1514-byte frame's tokens at 20 Mbit/s), SFQ's 3-4 frames, and tc
counts an HTB change to CANT_SEND for 96-99 % of the packets -- with now and then a dequeue late by
milliseconds, which costs the throughput and makes the pings' tails.
"""
import simpy

from ovssim.packet import FlowKey, Packet
from ovssim.path.port import EgressPort

SPEC = {"kind": "htb", "default": 1,
        "classes": [{"classid": "1:1", "rate": "20mbit", "qdisc": {"kind": "fq_codel"}}]}
FRAME = 1514 * 8 / 20e6


class Draws:
    """A stub sampler: the given lateness for the first draw, then on time; counts the draws."""

    def __init__(self, first: float):
        self.first, self.n = first, 0

    def __call__(self) -> float:
        self.n += 1
        return self.first if self.n == 1 else 0.0


def _run(lookahead: bool, late: float):
    env = simpy.Environment()
    got = {}

    class Out:
        def put(self, p):
            got.setdefault(p.seq, max(p.t, env.now))

    port = EgressPort(env, None, SPEC, Out(), lookahead=lookahead)
    draws = port.watchdog_late = Draws(late)
    bulk = FlowKey("a", "b", 1000, 5001, "tcp")
    for i in range(20):
        port.put(Packet(bulk, 1514, 0.0, seq=i))

    def later(t, pkt):
        yield env.timeout(t)
        port.put(pkt)
    env.process(later(0.3e-3, Packet(bulk, 1514, 0.3e-3, seq=20)))                 # before the token time
    env.process(later(1.0e-3, Packet(FlowKey("a", "b", 0, 0, "icmp"), 98, 1.0e-3, seq=99)))  # in the late window
    env.run(until=0.1)
    return got, draws


def test_an_arrival_in_a_late_watchdogs_window_waits_for_it():
    for lookahead in (True, False):
        got, draws = _run(lookahead, 2e-3)
        # the first two frames leave at once (a 1600-byte bucket), the class is then a frame's tokens
        # short until w = 2 x FRAME - 1600 B of tokens; the watchdog set for w fires 2 ms late
        w = 2 * FRAME - 1600 * 8 / 20e6
        assert got[0] == got[1] == 0.0
        assert abs(got[99] - (w + 2e-3)) < 1e-9, lookahead      # not at its arrival (1 ms)
        assert got[2] > got[99] - 1e-12                          # FQ-CoDel's new flow goes first
        # one draw per time set: the arrival at 0.3 ms (before w) set the same time and drew nothing
        # then one per watchdog of the 18 frames left after the late one (its full bucket sent the ping
        # and frame 2)
        assert draws.n == 1 + 18
        # with a punctual watchdog the ping waits for the next frame's tokens, at most a frame time
        got0, _ = _run(lookahead, 0.0)
        assert 1.0e-3 < got0[99] <= 1.0e-3 + FRAME
