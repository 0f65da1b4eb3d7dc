"""qperf: ``qperf HOST tcp_lat | udp_lat | tcp_bw | udp_bw`` (``-m SIZE -t TIME``).

* ``tcp_lat``/``udp_lat``: a ``-m`` byte message (default 1) goes back and forth, one at a
  time (:class:`~ovssim.workloads.rr.Exchange`, closed loop); qperf's ``latency`` is half
  the round trip (total time / 2 / messages), reported here as ``latency`` (ms) with the
  round trip ``rtt_mean`` and ``transactions`` per second.  A lost UDP message ends the
  exchange (qperf waits for it).
* ``tcp_bw``: one stream of ``-m`` byte writes (default 64 KiB), reported as ``bw``
  (Mbit/s of data read by the server, as qperf's ``bw``).

* ``udp_bw``: the client sends ``-m`` byte datagrams (default 32 KiB, 23 IP fragments at MTU 1500,
  reassembled by the server: :func:`~ovssim.workloads.ipfrag.ip_fragments`; the campaigns use 1400)
  back to back for the whole test, one ``send()`` after another with no pacing (qperf's
  socket.c udp_bw client loop); the server counts what it reads.  qperf reports
  ``send_bw`` (bytes the client sent over the test time), ``recv_bw`` (bytes the server
  read over the same time) and, with ``-v``, ``msg_rate`` (datagrams read per second):
  here ``send_bw`` and ``recv_bw`` in Mbit/s, ``msg_rate`` in 1/s.  The sender goes as fast
  as its ``send()`` (profile ``app.send_per_packet``) and, for a sender sharing the host's
  kernel (a container), the softirq work its own datagram takes on its CPU allow -- up to the
  first queue another task drains (:meth:`~ovssim.workloads.udp.IperfUdp._carry`): it never
  waits for the path, whose excess is dropped where the kernel drops it.  The
  server's socket receive buffer (``net.core.rmem_default``, see :mod:`ovssim.workloads.udp`)
  drops what a slower reader (``app.recv_per_packet``) leaves queued beyond it, so ``recv_bw``
  falls below ``send_bw`` there and where the path drops.  Not modelled: the UDP socket's
  send buffer (a blocking ``send()`` waits for skbs to be freed).
"""
from __future__ import annotations

from ..errors import ConfigError
from ..tcp.spec import Option, as_cc, as_port, as_positive_time, as_size, as_time, parse_table
from .base import Metric, RunContext, Workload
from .netperf import NetperfTcpStream
from .rr import Exchange
from .udp import IperfUdp

QPERF_MSG_BW = 64 * 1024        # qperf's default message size for *_bw tests
QPERF_MSG_LAT = 1               # and for *_lat tests
QPERF_MSG_UDP_BW = 32 * 1024    # udp_bw's default (qperf caps a UDP message below 64 KiB)
QPERF_PORT = 19765

_OPTS = [
    Option("size", ("m", "msg_size"), as_size, "message size in bytes (-m)"),
    Option("length", ("t", "time"), as_positive_time, "test time (-t), e.g. \"10s\""),
    Option("name", ("name",), str, "a name for the results"),
    Option("start", ("start",), as_time, "start offset"),
    Option("port", ("port",), as_port, "the data port"),
    Option("cc", ("C", "congestion"), as_cc, "TCP congestion control (default: the host's)"),
]


class QperfLat(Workload):
    """``qperf tcp_lat`` / ``udp_lat``."""

    kind = "qperf_lat"
    OPTIONS = _OPTS

    def __init__(self, test: str, *, size: int = QPERF_MSG_LAT, length: float | None = None,
                 name: str | None = None, start: float = 0.0, port: int = QPERF_PORT, cc: str | None = None):
        super().__init__(name or test)
        self.test = test
        self.ex = Exchange(proto=test.split("_")[0], request=size, response=size, loop="closed",
                           length=length, start=start, port=port, cc=cc)

    @classmethod
    def from_spec(cls, t: dict) -> "QperfLat":
        test = t.get("test")
        return cls(test, **parse_table(t, _OPTS, tool=f"qperf {test}", fixed={"tool": ("qperf",),
                                                                            "test": (test,)}))

    def start(self, ctx: RunContext) -> None:
        self.ex.start(ctx)

    def metrics(self) -> list[Metric]:
        m = {x.name: x for x in self.ex.metrics()}
        rtt = m["rtt_mean"].value
        return [Metric("latency", rtt / 2, "ms"), m["rtt_mean"], m["transactions"], m["lost"]]

    def samples(self):
        return self.ex.samples()


class QperfTcpBw(NetperfTcpStream):
    """``qperf tcp_bw``: a bulk TCP stream of ``-m`` byte writes; ``bw`` in Mbit/s."""

    kind = "qperf_tcp_bw"
    test = "tcp_bw"
    OPTIONS = _OPTS

    def __init__(self, *, size: int = QPERF_MSG_BW, length: float | None = None, name: str | None = None,
                 start: float = 0.0, port: int = QPERF_PORT, cc: str | None = None):
        super().__init__(message=size, length=length, name=name or "tcp_bw", start=start, port=port, cc=cc)

    @classmethod
    def from_spec(cls, t: dict) -> "QperfTcpBw":
        return cls(**parse_table(t, _OPTS, tool="qperf tcp_bw", fixed={"tool": ("qperf",), "test": ("tcp_bw",)}))

    def metrics(self) -> list[Metric]:
        m = super().metrics()
        return [Metric("bw", m[0].value, "Mbit/s")] + m[1:]


class QperfUdpBw(IperfUdp):
    """``qperf udp_bw``: datagrams of ``-m`` bytes blasted for ``-t``; ``send_bw``, ``recv_bw``, ``msg_rate``."""

    kind = "qperf_udp_bw"
    OPTIONS = [o for o in _OPTS if o.name != "cc"]
    LENGTH_FLAG = ("qperf udp_bw -m", "m")

    def __init__(self, *, size: int = QPERF_MSG_UDP_BW, length: float | None = None, name: str | None = None,
                 start: float = 0.0, port: int = QPERF_PORT):
        # a nominal -b for IperfUdp's checks; the sender is not paced (gap 0, below)
        super().__init__(rate_bps=size * 8.0, length=size, duration=length, start=start, port=port,
                         name=name or "udp_bw")
        self.rate_bps = float("inf")

    @classmethod
    def from_spec(cls, t: dict) -> "QperfUdpBw":
        return cls(**parse_table(t, cls.OPTIONS, tool="qperf udp_bw",
                                 fixed={"tool": ("qperf",), "test": ("udp_bw",)}))

    def start(self, ctx: RunContext) -> None:
        if not ctx.extra.get("app", {}).get("send_per_packet", 0.0) > 0.0:
            raise ConfigError("qperf udp_bw sends as fast as send() returns: it needs a send cost",
                              key="params.app.send_per_packet", fix='set "app.send_per_packet" above 0, e.g. "2us"')
        super().start(ctx)
        self.test_time = self.t_end - self.t0

    def metrics(self) -> list[Metric]:
        t = self.test_time
        return [Metric("send_bw", self.sent * self.length * 8 / t / 1e6, "Mbit/s"),
                Metric("recv_bw", self.rx_bytes * 8 / t / 1e6, "Mbit/s"),
                Metric("msg_rate", self.rx / t, "1/s"),
                Metric("loss", 100.0 * max(0, self.sent - self.rx) / self.sent if self.sent else 0.0, "%")]


def qperf_from_spec(table: dict) -> Workload:
    test = str(table.get("test", "")).lower()
    if test in ("tcp_lat", "udp_lat"):
        return QperfLat.from_spec(dict(table, test=test))
    if test == "tcp_bw":
        return QperfTcpBw.from_spec(dict(table, test=test))
    if test == "udp_bw":
        return QperfUdpBw.from_spec(dict(table, test=test))
    raise ConfigError(f"qperf test {table.get('test')!r} is not simulated", key=f"workload.{table.get('name')}.test",
                      fix='use test = "tcp_lat", "udp_lat", "tcp_bw" or "udp_bw"')
