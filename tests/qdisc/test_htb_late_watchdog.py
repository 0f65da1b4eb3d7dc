"""A qdisc watchdog late every time (UML's timer path, data/uml/2026-11-28/uml-latency) behind HTB's default
bucket (tc: rate / HZ + 1600 B, one frame): a class may send once its tokens reach 0 (htb_class_mode's
hiwater) and goes negative by the frame, and the tokens that pile up while the watchdog is late are kept up
to the bucket (htb_accnt_tokens caps them at cl->buffer), so the next dequeue is due that much earlier.  A
lateness L costs the class only what it exceeds the bucket's time B: a frame every T + E[max(0, L - B)] --
a constant lateness of ~100 us (UML's, measured) costs nothing at 20 Mbit/s (B = 640 us)."""
import numpy as np
import pytest

from ovssim.qdisc import defaults, make_qdisc

from qdisc_testlib import pkt

RATE = 20e6
FRAME = 1514 * 8 / RATE
# tc's default HTB burst (rate / HZ + mtu, HZ = 1e9): 1600 B, 640 us at 20 Mbit/s
SLACK = (RATE / 8 / defaults.HTB_HZ + defaults.HTB_MTU) * 8 / RATE


def _gaps(lookahead: bool, late=None, constant: float = 0.0, frames: int = 2000):
    import simpy
    from ovssim.path.port import EgressPort
    from qdisc_testlib import Recorder
    env = simpy.Environment()
    rec = Recorder(env)
    q = make_qdisc({"kind": "htb", "default": "1", "classes": [
        {"classid": "1:1", "parent": "1:", "rate": "20mbit", "ceil": "20mbit", "qdisc": {"kind": "pfifo", "limit": 100000}}]})
    port = EgressPort(env, rate_bps=None, qdisc=q, out=rec, lookahead=lookahead)
    port.watchdog_latency = constant
    port.watchdog_late = late
    for k in range(frames):
        port.put(pkt(0, 1514, 0.0, seq=k))
    env.run(until=frames * 4 * FRAME)
    times = [t for t, _ in rec.got]
    assert len(times) == frames
    return np.diff(times)[20:], q


def _tokens(lates):
    """HTB's token rule for one class with a backlog of frames, as a recurrence (net/sched/sch_htb.c): a frame
    leaves when the tokens are >= 0 and charges T; while they are negative the watchdog is due when they
    reach 0 and fires ``late`` after it; tokens accrue with time up to the bucket B.  Returns the departure
    times and how many departures left the class short (tokens < 0 after the charge: a change to CANT_SEND)."""
    t, tok, out, cant = 0.0, SLACK, [], 0
    for late in lates:
        if tok < 0:                       # wait for the watchdog
            d = t - tok + late
            tok = min(tok + (d - t), SLACK)
            t = d
        out.append(t)
        tok -= FRAME
        cant += tok < 0
    return np.asarray(out), cant


@pytest.mark.parametrize("lookahead", [False, True])
def test_a_lateness_within_the_bucket_costs_nothing_beyond_it_the_class_loses_the_excess(lookahead):
    assert SLACK == pytest.approx(640e-6, rel=0.01)
    for late in (100e-6, 500e-6):             # the tokens carry over: frames keep their times, only later
        gaps, q = _gaps(lookahead, constant=late)
        assert np.allclose(gaps, FRAME, rtol=1e-6)
        assert q.stats.overlimits == q.stats.packets - 1       # every dequeue leaves the class short
    gaps, _ = _gaps(lookahead, constant=800e-6)
    # late beyond the bucket: B of tokens at each dequeue, two frames (B > T), then B - 2T short of the next
    assert gaps.mean() == pytest.approx((2 * FRAME - SLACK + 800e-6) / 2, rel=1e-3)
    assert gaps.mean() == pytest.approx(np.diff(_tokens([800e-6] * 2000)[0])[20:].mean(), rel=1e-3)


@pytest.mark.parametrize("lookahead", [False, True])
def test_a_lognormal_lateness_costs_what_htbs_token_rule_says(lookahead):
    """UML's lateness (every watchdog late, lognormally): the model's HTB port sends at the mean rate and
    with the overlimits per packet that HTB's token rule gives for the same draws' distribution; its
    median (~140 us) alone costs nothing, only the draws beyond the bucket do."""
    from ovssim.distributions import Distribution, Sampler
    from ovssim.validate.uml import watchdog_every
    spec = watchdog_every(140e-6, 0.8)
    draws = Distribution(spec).rvs(200000, np.random.default_rng(8))
    assert np.median(draws) == pytest.approx(140e-6, rel=0.02)
    gaps, q = _gaps(lookahead, late=Sampler(spec, np.random.default_rng(7)), frames=6000)
    ref, cant = _tokens(draws)
    assert gaps.mean() == pytest.approx(np.diff(ref).mean(), rel=0.01)
    assert gaps.mean() > FRAME * 1.01                                # the tail beyond B costs the rate
    assert q.stats.overlimits / q.stats.packets == pytest.approx(cant / draws.size, abs=0.01)
    # the same lognormal without the draws beyond the bucket: no cost at all
    capped, _ = _tokens(np.minimum(draws, SLACK))
    assert np.diff(capped).mean() == pytest.approx(FRAME, rel=1e-4)


@pytest.mark.parametrize("lookahead", [False, True])
def test_a_watchdog_runs_frames_go_on_after_its_handoff_and_the_shaper_keeps_its_times(lookahead):
    """qdisc.watchdog_handoff H (the NET_RX that a watchdog's NET_TX pass raised, deferred to ksoftirqd):
    every frame a watchdog run dequeues reaches the next hop H after its dequeue -- the qdisc's dequeue
    times, and so the class's rate, do not change -- while a frame an arrival's own qdisc_run dequeues
    (the first, with the bucket full) goes on at once."""
    import simpy
    from ovssim.path.port import EgressPort
    from qdisc_testlib import Recorder

    def run(handoff):
        env = simpy.Environment()
        rec = Recorder(env)
        q = make_qdisc({"kind": "htb", "default": "1", "classes": [
            {"classid": "1:1", "parent": "1:", "rate": "20mbit", "ceil": "20mbit", "qdisc": {"kind": "pfifo"}}]})
        port = EgressPort(env, rate_bps=None, qdisc=q, out=rec, lookahead=lookahead)
        port.watchdog_handoff = handoff
        for k in range(200):
            port.put(pkt(0, 1514, 0.0, seq=k))
        env.run(until=1.0)
        return np.array([t for t, _ in rec.got])

    plain = run(None)
    late = run(lambda: 150e-6)
    assert late.size == plain.size == 200
    assert np.allclose(np.diff(plain)[5:], FRAME, rtol=1e-6)           # the class's rate
    on_time = plain[:2]                                               # the bucket's first two frames: no watchdog
    assert np.allclose(late[:2], on_time)
    assert np.allclose(late[2:] - plain[2:], 150e-6, rtol=1e-6, atol=1e-12)
    assert np.allclose(np.diff(late)[5:], FRAME, rtol=1e-6)


@pytest.mark.parametrize("lookahead", [False, True])
def test_a_backends_work_on_a_watchdog_runs_frames_starts_after_the_handoff(lookahead):
    """A port with a backend (a vif's veth work on the host CPU, ``service``): the deferred hand-off delays
    the work's start, so a frame a watchdog run dequeues comes out H + its service time after the
    dequeue; the shaper still sends a frame per frame time (H < the frame time)."""
    import simpy
    from ovssim.path.port import EgressPort
    from qdisc_testlib import Recorder
    svc = 20e-6

    def run(handoff):
        env = simpy.Environment()
        rec = Recorder(env)
        q = make_qdisc({"kind": "htb", "default": "1", "classes": [
            {"classid": "1:1", "parent": "1:", "rate": "20mbit", "ceil": "20mbit", "qdisc": {"kind": "pfifo"}}]})
        port = EgressPort(env, rate_bps=None, qdisc=q, out=rec, lookahead=lookahead,
                          service=lambda p, t: t + svc)
        port.watchdog_handoff = handoff
        for k in range(100):
            port.put(pkt(0, 1514, 0.0, seq=k))
        env.run(until=1.0)
        return np.array([t for t, _ in rec.got])

    plain, late = run(None), run(lambda: 150e-6)
    assert late.size == plain.size == 100
    assert np.allclose(late[5:] - plain[5:], 150e-6, rtol=1e-6, atol=1e-12)
    assert np.allclose(np.diff(late)[5:], FRAME, rtol=1e-6)
