"""HFSC on random 3-level class trees with rt / ls / ul curves: exact per-packet reference and guarantees.

Random trees (real-time, link-sharing and upper-limit curves, linear, concave
and convex) and random bursty traffic go through an EgressPort (10 Mbit/s,
no framing so the curves and the link count the same bytes).  Checked:

* exactness: the dequeue order and every dequeue time, drops, counters and
  ``next_wakeup`` answers equal, float for float, those of the unoptimised
  model (``hfsc_reference.py``) and the traces recorded from it
  (``data/hfsc_traces.json``, regenerate with ``python
  tests/qdisc/test_hfsc_exact.py --record`` only for a deliberate change);
* the guarantees ``tc-hfsc(7)`` and the HFSC paper (Stoica, Zhang, Ng,
  SIGCOMM 1997) state, computed from the trace alone: a leaf's real-time
  curve is met -- each packet leaves by the deadline its curve gives
  (restarted at each backlog period without forgiving what was owed, the
  ``rtsc_min`` rule) plus one maximum packet time, when the real-time curves
  fit in the link; a class whose subtree has no real-time curve is never
  served beyond its upper-limit curve; with neither upper limits nor
  real-time-only leaves the qdisc is work-conserving; per-class FIFO order
  and conservation.
"""
from __future__ import annotations

import json
import pathlib
import random

from hypothesis import given, settings, strategies as st

from ovssim.qdisc.base import Device
from ovssim.qdisc.hfsc import Hfsc

import hfsc_reference
from qdisc_testlib import pkt, run_port

LINK = 10e6
CB = LINK / 8                                  # link, bytes/s (framing 0)
LMAX = 1514
TRACES = pathlib.Path(__file__).parent / "data" / "hfsc_traces.json"
N_RECORDED = 16
EPS_T = 1e-9


# -- scenarios ------------------------------------------------------------------------------
def _two_piece(rng, peak_bps, shapes=("linear", "concave", "convex")):
    """A curve spec with largest slope ``peak_bps`` and its (m1, d, m2) in bytes/s."""
    shape = rng.choice(shapes)
    if shape == "linear":
        return int(peak_bps), (0.0, 0.0, int(peak_bps) / 8)
    d = rng.choice([0.001, 0.004, 0.01, 0.03])
    if shape == "concave":
        m1, m2 = int(peak_bps), int(peak_bps * rng.uniform(0.1, 0.8))
    else:
        m1, m2 = int(peak_bps * rng.choice([0.0, rng.uniform(0.05, 0.6)])), int(peak_bps)
    return {"m1": m1, "d": d, "m2": m2}, (m1 / 8, d, m2 / 8)


def make_scenario(rng, exotic: bool, linear: bool = False) -> dict:
    """A random 3-level tree under the root and bursty traffic to its leaves.

    ``exotic``: also leaf qdiscs other than pfifo (sfq, codel, fq_codel,
    bfifo) and two-piece upper limits; the guarantee checks then stand aside.
    ``linear``: every curve linear, as OVS's linux-hfsc installs them (Hfsc's
    linear-path shortcuts then carry every packet).
    """
    any_shape = ("linear",) if linear else ("linear", "concave", "convex")
    classes, info, leaves = [], {}, []
    minor = [0]

    def add(parent, depth):
        minor[0] += 1
        cid = 0x10000 | minor[0]
        name = f"1:{minor[0]:x}"
        c = {"classid": name, "parent": parent}
        n_kids = 0
        if depth < 3:
            n_kids = rng.randint(1, 3) if depth == 1 else rng.choice([0, 0, 1, 2])
            if depth == 2 and not any(i["depth"] == 3 for i in info.values()) and minor[0] > 1:
                n_kids = max(n_kids, 1)             # at least one leaf three levels down
        leaf = n_kids == 0
        kind = rng.choice(["rt", "ls", "rt+ls", "sc"]) if leaf else "ls"
        entry = {"depth": depth, "leaf": leaf, "kind": kind, "parent": parent, "rt": None, "ul": None}
        info[cid] = entry
        if kind in ("ls", "rt+ls"):
            c["ls"], _ = _two_piece(rng, rng.uniform(0.5e6, 8e6), any_shape)
        if kind != "rt" and rng.random() < 0.35:
            if exotic and not linear and rng.random() < 0.5:
                c["ul"], entry["ul"] = _two_piece(rng, rng.uniform(1e6, 8e6), ("concave", "convex"))
            else:
                c["ul"], entry["ul"] = _two_piece(rng, rng.uniform(1e6, 8e6), ("linear",))
        if leaf:
            leaves.append(cid)
            if exotic:
                c["qdisc"] = rng.choice([None, {"kind": "pfifo", "limit": rng.randint(2, 20)},
                                         {"kind": "bfifo", "limit": rng.randint(1600, 20000)},
                                         {"kind": "sfq", "limit": rng.randint(3, 20), "depth": 4},
                                         {"kind": "codel", "limit": 30, "target": "1ms", "interval": "5ms"},
                                         {"kind": "fq_codel", "limit": 20, "flows": 4, "target": "1ms",
                                          "interval": "5ms"}])
            else:
                c["qdisc"] = rng.choice([None, None, {"kind": "pfifo", "limit": rng.randint(2, 40)}])
            if c["qdisc"] is None:
                del c["qdisc"]
        classes.append(c)
        for _ in range(n_kids):
            add(name, depth + 1)

    for _ in range(rng.randint(1, 2)):
        add("1:", 1)
    # real-time curves on the rt leaves, together within 90 % of the link (admission control)
    rt_leaves = [cid for cid in leaves if info[cid]["kind"] != "ls"]
    weights = [rng.uniform(0.2, 1.0) for _ in rt_leaves]
    budget = LINK * rng.uniform(0.3, 0.9)
    by_id = {0x10000 | int(c["classid"][2:], 16): c for c in classes}
    for cid, w in zip(rt_leaves, weights):
        spec, curve = _two_piece(rng, budget * w / sum(weights), any_shape)
        info[cid]["rt"] = curve
        by_id[cid]["sc" if info[cid]["kind"] == "sc" else "rt"] = spec
    default = rng.choice(leaves)
    # traffic: a few bursts per leaf; some packets unclassified (they go to the default class)
    packets = []
    horizon = rng.uniform(0.05, 0.4)
    for cid in leaves:
        for _ in range(rng.randint(1, 3)):
            t = rng.uniform(0.0, horizon)
            gap = rng.choice([0.0, rng.uniform(0.0, 0.002), rng.uniform(0.0, 0.01)])
            fixed = rng.choice([None, 1514, rng.randint(64, 1514)])
            for _ in range(rng.randint(1, 25)):
                size = fixed or rng.randint(64, 1514)
                prio = cid if cid != default or rng.random() < 0.5 else 0
                packets.append((t, rng.randint(0, 5), size, prio))
                t += gap * rng.uniform(0.5, 1.5)
    packets = [(*p, seq) for seq, p in enumerate(sorted(packets))]     # seq: arrival order
    return {"spec": {"kind": "hfsc", "default": f"{default & 0xFFFF:x}", "classes": classes},
            "info": info, "default": default, "packets": packets}


def _packets(sc):
    out = []
    for t, fid, size, prio, seq in sc["packets"]:
        p = pkt(fid, size, t, priority=prio, seq=seq)
        p.stamps = {}
        out.append(p)
    return out


def run(sc, impl=Hfsc):
    """Through an EgressPort: per delivered packet (seq, dequeue time), per drop (seq, time, why)."""
    spec = dict(sc["spec"])
    q = impl(classes=spec["classes"], default=spec["default"])
    _, rec, drops = run_port(q, _packets(sc), LINK, until=200.0, framing=0)
    return {"deq": [[p.seq, p.stamps["port.deq"]] for _, p in rec.got],
            "drops": sorted([p.seq, now, why] for now, p, why in drops),
            "stats": q.stats.as_dict(), "classes": q.class_stats()}


# -- guarantees -----------------------------------------------------------------------------
def _inv(curve, y):
    """Smallest u >= 0 with S(u) >= y for S = (m1, d, m2) in bytes/s."""
    m1, d, m2 = curve
    if y <= 0:
        return 0.0
    if m1 > 0 and y <= m1 * d:
        return y / m1
    return d + (y - m1 * d) / m2


def _curve_at(curve, u):
    m1, d, m2 = curve
    return m1 * u if u <= d else m1 * d + m2 * (u - d)


def check_guarantees(sc, res):
    info, default = sc["info"], sc["default"]
    sizes = {seq: size for _, _, size, _, seq in sc["packets"]}
    enq = {seq: t for t, _, _, _, seq in sc["packets"]}
    leaf_of = {seq: (prio or default) for _, _, _, prio, seq in sc["packets"]}
    deq = dict(res["deq"])
    dropped = {s for s, _, _ in res["drops"]}
    # conservation: each packet leaves exactly once, or is dropped (pfifo: on arrival)
    assert len(deq) == len(res["deq"]) and not dropped & set(deq)
    assert set(deq) | dropped == set(sizes)
    assert all(why == "limit" for _, _, why in res["drops"])
    order = [s for s, _ in res["deq"]]
    assert all(deq[a] <= deq[b] for a, b in zip(order, order[1:]))
    # the link: one packet at a time
    for a, b in zip(order, order[1:]):
        assert deq[b] >= deq[a] + sizes[a] / CB - EPS_T
    per_leaf: dict = {}
    for s in order:
        per_leaf.setdefault(leaf_of[s], []).append(s)
    for cid, seqs in per_leaf.items():             # FIFO within a leaf
        assert [enq[s] for s in seqs] == sorted(enq[s] for s in seqs)
        assert seqs == sorted(seqs)

    # real-time: deadline from the curve restarted at each backlog period (rtsc_min keeps what was owed)
    for cid, seqs in per_leaf.items():
        rt = info[cid]["rt"]
        if rt is None:
            continue
        anchors, done, last_deq = [], 0, -1.0
        for s in seqs:
            if enq[s] >= last_deq:                 # the leaf was empty: a new backlog period
                anchors.append((enq[s], done))
            need = done + sizes[s]
            deadline = max(s0 + _inv(rt, need - w0) for s0, w0 in anchors)
            assert deq[s] <= deadline + LMAX / CB + 1e-7, (cid, s, deq[s], deadline)
            done += sizes[s]
            last_deq = deq[s]

    # upper limit of a class with no real-time curve below it: service never above the ul curve
    def subtree_leaves(cid):
        name = f"1:{cid & 0xFFFF:x}"
        kids = [k for k, v in info.items() if v["parent"] == name]
        return [cid] if info[cid]["leaf"] else [x for k in kids for x in subtree_leaves(k)]
    for cid, v in info.items():
        ul = v["ul"]
        if ul is None or ul[0] != 0 or ul[1] != 0:
            continue
        sub = set(subtree_leaves(cid))
        if any(info[x]["rt"] is not None for x in sub):
            continue
        seqs = [s for s in order if leaf_of[s] in sub]
        anchors = []
        events = sorted([(enq[s], 0, s) for s in seqs] + [(deq[s], 1, s) for s in seqs])
        backlog, served = 0, 0
        for t, kind, s in events:
            if kind == 0:                          # arrival (before a dequeue at the same time: fewer restarts)
                if backlog == 0:
                    anchors.append((t, served))
                backlog += 1
            else:
                limit = min(w0 + _curve_at(ul, t - s0) for s0, w0 in anchors)
                assert served <= limit + 1e-6, (cid, s, served, limit)
                served += sizes[s]
                backlog -= 1

    # work conservation when nothing may hold a packet back
    if all(v["ul"] is None for v in info.values()) and all(v["kind"] != "rt" for v in info.values()):
        for a, b in zip(order, order[1:]):
            free = deq[a] + sizes[a] / CB
            if deq[b] > free + EPS_T:              # the link idled: nothing can have been waiting
                assert not any(enq[s] < deq[b] - EPS_T and deq[s] >= deq[b] for s in deq), (a, b)


# -- tests ----------------------------------------------------------------------------------
def _recorded():
    return json.loads(TRACES.read_text())


def test_recorded_traces_are_reproduced_exactly():
    rec = _recorded()
    assert len(rec) == N_RECORDED
    for i, want in enumerate(rec):
        sc = make_scenario(random.Random(i), exotic=bool(i % 2))
        got = json.loads(json.dumps(run(sc)))
        assert got == want, f"scenario {i} differs from the recorded trace"


def test_recorded_traces_meet_the_guarantees():
    for i, want in enumerate(_recorded()):
        if i % 2 == 0:
            check_guarantees(make_scenario(random.Random(i), exotic=False), want)


@settings(max_examples=60, deadline=None)
@given(rng=st.randoms(use_true_random=False))
def test_random_trees_match_the_reference_and_meet_the_guarantees(rng):
    sc = make_scenario(rng, exotic=False)
    got = run(sc)
    assert got == run(sc, hfsc_reference.Hfsc)
    check_guarantees(sc, got)


@settings(max_examples=60, deadline=None)
@given(rng=st.randoms(use_true_random=False))
def test_random_trees_with_other_leaf_qdiscs_match_the_reference(rng):
    sc = make_scenario(rng, exotic=True)
    assert run(sc) == run(sc, hfsc_reference.Hfsc)


@settings(max_examples=80, deadline=None)
@given(rng=st.randoms(use_true_random=False), exotic=st.booleans())
def test_linear_trees_as_ovs_installs_them_match_the_reference(rng, exotic):
    """Linear curves only (OVS's min-rate/max-rate): the linear-path enqueue/dequeue shortcuts."""
    sc = make_scenario(rng, exotic, linear=True)
    got = run(sc)
    assert got == run(sc, hfsc_reference.Hfsc)
    if not exotic:
        check_guarantees(sc, got)


op = st.one_of(st.tuples(st.just("enq"), st.integers(0, 40), st.integers(64, 1514), st.integers(0, 5)),
               st.tuples(st.just("deq")), st.tuples(st.just("adv"), st.floats(1e-7, 0.01)))


@settings(max_examples=60, deadline=None)
@given(rng=st.randoms(use_true_random=False), ops=st.lists(op, max_size=150), exotic=st.booleans())
def test_every_call_matches_the_reference(rng, ops, exotic):
    """Dequeue at arbitrary times (not only when a port asks): every answer and counter agrees."""
    sc = make_scenario(rng, exotic)
    qs = [impl(classes=sc["spec"]["classes"], default=sc["spec"]["default"]) for impl in (Hfsc, hfsc_reference.Hfsc)]
    traces = []
    for q in qs:
        q.attach(Device(name="d", mtu=1500, rate_bps=LINK, txqueuelen=1000))
        leaves = sorted(c.classid for c in q.leaves)
        tr, now = [], 0.0
        q.on_drop = lambda p, t, why, tr=tr: tr.append(("drop", p.seq, t, why))
        for i, o in enumerate(ops):
            if o[0] == "enq":
                cid = leaves[o[1] % (len(leaves) + 1)] if o[1] % (len(leaves) + 1) < len(leaves) else 0
                tr.append(("enq", q.enqueue(pkt(o[3], o[2], now, priority=cid, seq=i), now)))
            elif o[0] == "deq":
                p = q.dequeue(now)
                tr.append(("deq", None if p is None else p.seq, q.next_wakeup(now)))
            else:
                now += o[1]
        for _ in range(20000):                     # drain, following the watchdog
            if not q.stats.qlen:
                break
            p = q.dequeue(now)
            w = q.next_wakeup(now)
            tr.append(("drain", None if p is None else p.seq, w))
            if p is None:
                now = max(now + 1e-9, w)
        tr.append(q.stats.as_dict())
        tr.append(q.class_stats())
        traces.append(tr)
    assert traces[0] == traces[1]


def record() -> None:
    out = [run(make_scenario(random.Random(i), exotic=bool(i % 2)), hfsc_reference.Hfsc) for i in range(N_RECORDED)]
    TRACES.parent.mkdir(exist_ok=True)
    TRACES.write_text(json.dumps(out, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    import sys
    if "--record" in sys.argv:
        record()
    else:
        print(__doc__)
