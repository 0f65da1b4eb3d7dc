"""The hot path's shortcuts compute exactly what the plain code computes.

* :class:`Sampler` draws through a C-level iterator: the same values, in the same
  order, as drawing batches into a list and indexing it -- also when samplers share
  a generator (the datapath's hit sampler and its slow-path samplers do) and are
  drawn from in any interleaving.
* :meth:`Distribution.rvs` skips scipy's per-call argument parsing: bit-for-bit the
  draws of ``frozen.rvs``.
* :class:`OvsDatapath` runs admit, flow-cache hit (with a per-flow memo and a
  most-recently-used shortcut for the LRU order) and unicast delivery inline: the
  same deliveries, times, tags, counters and cache order as admit -> lookup ->
  :meth:`Bridge.deliver`, for random packets over flows, VLANs, idle expiry,
  evictions and floods.
"""
import numpy as np
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from ovssim.distributions import _BATCH, Distribution, Sampler, SumSampler
from ovssim.packet import FlowKey, Packet
from ovssim.path.cpu import CpuPool, conn_key
from ovssim.path.datapath import OvsDatapath


# -- samplers ------------------------------------------------------------------------
class ListSampler:
    """The previous implementation: a list of ``_BATCH`` draws and an index."""

    def __init__(self, dist, rng):
        self.dist, self.rng, self.const = dist, rng, dist.const
        self._buf, self._i = [], 0

    def _refill(self):
        return self.dist.rvs(_BATCH, self.rng).tolist()

    def next(self):
        if self.const is not None:
            return self.const
        if self._i >= len(self._buf):
            self._buf, self._i = self._refill(), 0
        self._i += 1
        return self._buf[self._i - 1]


class ListSumSampler(ListSampler):
    def __init__(self, *parts):
        self.parts, self.const = parts, None
        self._buf, self._i = [], 0

    def _refill(self):
        total = 0.0
        for p in self.parts:
            total = total + (p.dist.rvs(_BATCH, p.rng) if p.const is None else p.const)
        return np.asarray(total).tolist()


SPECS = [{"dist": "lognorm", "s": 0.4, "scale": "2us"}, {"dist": "gamma", "a": 2.0, "scale": "1us"},
         "3us", {"dist": "empirical", "values": [1, 2, 5, 9], "unit": "us", "smooth": True},
         {"dist": "lognorm_mixture", "weights": [0.9, 0.1], "s": [0.5, 0.8], "scale": ["20us", "1ms"]}]


def _samplers(kind, seed):
    rngs = [np.random.default_rng(seed + i) for i in range(3)]
    dists = [Distribution(SPECS[(seed + i) % len(SPECS)]) for i in range(3)]
    cls, sum_cls = (Sampler, SumSampler) if kind == "new" else (ListSampler, ListSumSampler)
    parts = [cls(d, r) for d, r in zip(dists, rngs)]
    return parts + [sum_cls(*parts)]          # the sum shares its parts' generators


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 50), st.lists(st.tuples(st.integers(0, 3), st.integers(1, 3000)), min_size=1, max_size=12))
def test_sampler_draws_as_batched_list(seed, schedule):
    new, old = _samplers("new", seed), _samplers("old", seed)
    for which, n in schedule:
        a = [new[which].next() for _ in range(n)]
        b = [old[which].next() for _ in range(n)]
        assert a == b
    assert new[3]() == old[3].next() and next(new[0].it) == old[0].next()


FAMILIES = [{"dist": "lognorm", "s": 0.5, "scale": "6us"}, {"dist": "lognorm", "s": 0.4, "scale": "2us", "loc": "1us"},
            {"dist": "gamma", "a": 2.0, "scale": "8us"}, {"dist": "expon", "loc": "10us", "scale": "5us"},
            {"dist": "weibull_min", "c": 1.5, "scale": "3us"}, {"dist": "pareto", "b": 2.5, "scale": "1us"},
            {"dist": "norm", "loc": "5us", "scale": "2us"}, {"dist": "uniform", "loc": "1us", "scale": "1us"}]


def test_distribution_rvs_is_scipys():
    for spec in FAMILIES:
        d = Distribution(spec)
        for n in (_BATCH, 7, 1):
            fast = d.rvs(n, np.random.default_rng(11))
            ref = np.maximum(d.frozen.rvs(size=n, random_state=np.random.default_rng(11)), 0.0)
            assert fast.shape == ref.shape and fast.tobytes() == ref.tobytes(), spec


# -- the datapath ----------------------------------------------------------------------
class RefDatapath(OvsDatapath):
    """The datapath as written before the shortcuts: admit -> cache lookup -> deliver."""

    def receive(self, port, pkt):
        admitted = self.admit(port, pkt)
        if admitted is not None:
            self.process(port, pkt, admitted[1], admitted[0])

    def process(self, port, pkt, vlan, t):
        mask_cost = self.lookup_per_mask * self.masks
        key = self._megaflow(port, pkt, vlan)
        entry = self.cache.get(key)
        if entry is not None and t - entry[1] > self.max_idle:
            del self.cache[key]
            self.expired += 1
            entry = None
        if entry is not None and entry[0] <= t:
            self.hit += 1
            entry[1] = t
            self.cache.move_to_end(key)
            if entry[2] is not None:
                pkt.queue_id = entry[2]
            done = self.cpu.serve(t, next(self._hit_it) + mask_cost, conn_key(pkt.flow))
            if done is None:
                self.cpu_drops += 1
                return
            self.deliver(port, pkt, vlan, self._after_latency(done))
            return
        self.missed += 1
        t_miss = self.cpu.serve(t, self.stats_s.next() + self.lookup_s.next() + mask_cost, conn_key(pkt.flow))
        if t_miss is None:
            self.cpu_drops += 1
            return
        done = self.handlers.serve(t_miss, self.upcall_s.next())
        if done is None:
            self.lost += 1
            return
        queue = next((r.queue for r in self.rules if r.matches(pkt)), None)
        if queue is not None:
            pkt.queue_id = queue
        if entry is None:
            if len(self.cache) >= self.flow_limit:
                self.cache.popitem(last=False)
                self.evicted += 1
            self.cache[key] = [done, done, queue, conn_key(pkt.flow)]
        self.deliver(port, pkt, vlan, self._after_latency(done + self.actions_s.next()))


class Rec:
    def __init__(self, name, log):
        self.name, self.log = name, log

    def put(self, pkt):
        self.log.append((self.name, pkt.seq, pkt.t, pkt.size, pkt.vlan, pkt.queue_id))


# ports: (vlan, trunks) -- access ports on VLANs 10/20, a trunk for both, an all-VLAN trunk
PORTS = [(10, None), (20, None), (10, None), (None, (10, 20)), (None, None)]
MACS = ["m0", "m1", "m2", "m3", "m4", "m9"]        # m9 never sends: frames to it are flooded


def _run_dp(cls, items, flow_limit, latency):
    env = simpy.Environment()
    rng = lambda i: np.random.default_rng(i)           # noqa: E731
    samp = lambda spec, i: Sampler(spec, rng(i))       # noqa: E731
    dp = cls(env, "br0", CpuPool(env, 2, backlog_limit=3), stats=samp({"dist": "lognorm", "s": 0.4, "scale": "2us"}, 1),
             lookup=samp({"dist": "lognorm", "s": 0.4, "scale": "1us"}, 2), actions=samp("1us", 3),
             upcall=samp({"dist": "expon", "scale": "50us"}, 4), handlers=1, upcall_queue=4, max_idle=0.01,
             flow_limit=flow_limit, lookup_per_mask=5e-8, masks=3,
             latency=samp({"dist": "expon", "scale": "3us"}, 5) if latency else None)
    log = []
    ports = [dp.add_port(f"p{i}", Rec(f"p{i}", log), vlan=v, trunks=tr) for i, (v, tr) in enumerate(PORTS)]
    flows = {}
    for seq, (t, port, src, dst, sport, vlan) in enumerate(items):
        # one FlowKey object per 5-tuple, as a traffic source keeps (the memo keys on identity)
        f = flows.setdefault((src, dst, sport), FlowKey(MACS[src], MACS[dst], sport, 5001))
        pkt = Packet(f, 1000, t, seq=seq, vlan=vlan)
        if t > env.now and seq % 3 == 0:
            env.run(until=t)          # some packets handed in time, the others ahead (lookahead)
        ports[port].put(pkt)
    env.run()
    cache = [(tuple(k), tuple(v)) for k, v in dp.cache.items()]
    return (log, dp.counters(), dp.expired, cache,
            sorted(((k, v[0].no, v[1]) for k, v in dp.fdb.items()), key=repr), [p.rx for p in ports], [p.tx for p in ports])


ITEM = st.tuples(st.floats(0, 0.05), st.integers(0, len(PORTS) - 1), st.integers(0, 4), st.integers(0, 5),
                 st.integers(1, 4), st.sampled_from([None, None, 10, 20]))


@settings(max_examples=80, deadline=None)
@given(st.lists(ITEM, min_size=1, max_size=120), st.sampled_from([2, 5, 1000]), st.booleans(), st.booleans())
def test_datapath_shortcuts_equal_plain_path(items, flow_limit, latency, in_order):
    if in_order:
        items = sorted(items, key=lambda it: it[0])
    assert _run_dp(OvsDatapath, items, flow_limit, latency) == _run_dp(RefDatapath, items, flow_limit, latency)


def test_reference_datapath_is_exercised():
    """Cases like the random ones above reach hits, misses, expiry, eviction, upcall loss,
    floods and VLAN drops -- and agree there too."""
    rnd = np.random.default_rng(5)
    items = []
    for k in range(600):          # three bursts from three senders, 70 ms idle before the last
        src = int(rnd.integers(0, 3))
        dst = int(rnd.choice([0, 1, 2, 3, 5], p=[.3, .3, .2, .15, .05]))
        t = [0.0, 0.03, 0.1][k * 3 // 600] + float(rnd.uniform(0, 0.005))
        port = src if k % 2 else int(rnd.integers(3, 5))       # its access port, or a trunk
        items.append((t, port, src, dst, 1, [None, 10, 20][int(rnd.integers(0, 3))]))
    items.sort(key=lambda it: it[0])
    got = _run_dp(OvsDatapath, items, 6, True)
    _log, c, expired, *_ = got
    assert c["hit"] > 10 and c["missed"] > 50 and c["evicted"] > 0 and expired > 0 and c["lost"] > 0
    assert c["flooded"] > 0 and c["vlan_drops"] > 0
    assert got == _run_dp(RefDatapath, items, 6, True)
