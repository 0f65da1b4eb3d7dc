"""sockperf: ``sockperf ping-pong`` and ``sockperf under-load`` (``-m SIZE --mps RATE [--tcp]``).

* ``ping-pong``: one message in flight at a time, at most ``mps`` per second (sockperf's
  default 10000; ``"max"`` = no limit); every message is answered.
* ``under-load``: messages leave at ``mps`` per second whatever comes back; every
  ``reply_every``-th (default 100) is answered and timed.

Both run on :class:`~ovssim.workloads.rr.Exchange`.  Reported as sockperf reports: its
latency is half the round trip -- ``half_rtt_mean``, ``half_rtt_std``, ``half_rtt_min``,
``half_rtt_max`` and the percentiles it prints (25, 50, 75, 90, 99, 99.9, 99.99, 99.999),
in ms -- plus the full round trip ``rtt_mean`` and ``rtt_p99``, ``transactions`` (answered
messages per second) and ``dropped_messages``; the ``rtt`` samples are full round trips
(``--full-log``: rxTime - txTime), as the collector records them.
"""
from __future__ import annotations

import numpy as np

from ..errors import ConfigError
from ..tcp.spec import Option, as_cc, as_count, as_port, as_positive_time, as_size, as_time, parse_table
from .base import Metric, RunContext, Workload
from .rr import Exchange

SOCKPERF_PORT = 11111
SOCKPERF_MPS = 10000            # --mps default
SOCKPERF_REPLY_EVERY = 100      # --reply-every default (under-load)
SOCKPERF_MSG = 64               # -m default (bytes)
PERCENTILES = (25, 50, 75, 90, 99, 99.9, 99.99, 99.999)


def as_mps(v):
    if isinstance(v, str) and v.lower() == "max":
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
        raise ValueError(f"{v!r} is not a message rate > 0 or \"max\"")
    return float(v)


def as_proto(v) -> str:
    if str(v).lower() not in ("udp", "tcp"):
        raise ValueError(f"{v!r} is not udp or tcp")
    return str(v).lower()


_OPTS = [
    Option("size", ("m", "msg_size"), as_size, "message size in bytes (-m, at least 14)"),
    Option("mps", ("mps",), as_mps, "messages per second (--mps), or \"max\""),
    Option("reply_every", ("reply_every",), as_count, "under-load: answer every N-th message"),
    Option("proto", ("proto",), as_proto, "udp (default) or tcp (--tcp)"),
    Option("length", ("t", "time"), as_positive_time, "test time (-t), e.g. \"10s\""),
    Option("name", ("name",), str, "a name for the results"),
    Option("start", ("start",), as_time, "start offset"),
    Option("port", ("port",), as_port, "the server port (-p)"),
    Option("cc", ("C", "congestion"), as_cc, "TCP congestion control (default: the host's)"),
]


class Sockperf(Workload):
    kind = "sockperf"
    OPTIONS = _OPTS

    def __init__(self, mode: str, *, size: int = SOCKPERF_MSG, mps: float | None = SOCKPERF_MPS,
                 reply_every: int = SOCKPERF_REPLY_EVERY, proto: str = "udp", length: float | None = None,
                 name: str | None = None, start: float = 0.0, port: int = SOCKPERF_PORT, cc: str | None = None):
        super().__init__(name or f"sockperf-{mode}")
        if size < 14:
            raise ConfigError(f"sockperf -m {size} is below its 14-byte header", key="m", fix="use m = 14 or more")
        if mode == "under-load" and mps is None:
            raise ConfigError("sockperf under-load needs a message rate", key="mps", fix="e.g. mps = 10000")
        self.mode = mode
        self.ex = Exchange(proto=proto, request=size, response=size,
                           loop="closed" if mode == "ping-pong" else "open", mps=mps,
                           reply_every=1 if mode == "ping-pong" else reply_every,
                           length=length, start=start, port=port, cc=cc)

    @classmethod
    def from_spec(cls, t: dict) -> "Sockperf":
        mode = str(t.get("mode", "ping-pong")).lower()
        if mode not in ("ping-pong", "under-load"):
            raise ConfigError(f"sockperf mode {t.get('mode')!r} is not simulated",
                              key=f"workload.{t.get('name')}.mode", fix='use mode = "ping-pong" or "under-load"')
        return cls(mode, **parse_table(t, _OPTS, tool=f"sockperf {mode}",
                                       fixed={"tool": ("sockperf",), "mode": (mode,)}))

    def start(self, ctx: RunContext) -> None:
        self.ex.start(ctx)

    def metrics(self) -> list[Metric]:
        full = self.ex.rtt_ms()
        half = full / 2
        nan = float("nan")
        out = [Metric("half_rtt_mean", float(half.mean()) if half.size else nan, "ms"),
               Metric("half_rtt_std", float(half.std()) if half.size else nan, "ms"),
               Metric("half_rtt_min", float(half.min()) if half.size else nan, "ms"),
               Metric("half_rtt_max", float(half.max()) if half.size else nan, "ms")]
        for p in PERCENTILES:
            out.append(Metric(f"half_rtt_p{p:g}", float(np.percentile(half, p)) if half.size else nan, "ms"))
        out += [Metric("rtt_mean", float(full.mean()) if full.size else nan, "ms"),
                Metric("rtt_p99", float(np.percentile(full, 99)) if full.size else nan, "ms"),
                Metric("transactions", self.ex.transactions_per_s(), "1/s"),
                Metric("dropped_messages", float(self.ex.lost_messages()), "messages")]
        return out

    def samples(self):
        return self.ex.samples()
