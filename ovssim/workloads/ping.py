"""ping: ICMP echo request/reply RTT, ``ping -c COUNT -i INTERVAL -s SIZE``.

The destination's kernel answers each echo request (no application
involved); the source records the round-trip time of each reply and reports
what ping's summary line does: min/avg/max/mdev and packet loss, plus
percentiles.  Seed 002 sent 5000 probes at 0.2 s intervals (Table V).

``tos`` (``ping -Q``) sets the socket's ``IP_TOS``, so its packets carry
``skb->priority = rt_tos2priority(tos)`` (net/ipv4/route.c): 0x10 (low delay)
gives TC_PRIO_INTERACTIVE, pfifo_fast's band 0.  That priority reaches only
qdiscs on the sender's own devices (``bare-metal``): a container's veth zeroes
it (``____dev_forward_skb`` sets ``skb->priority = 0``; measured here in
``data/local/local-prio``: a marked ping waits behind the flow like an unmarked
one) and a VM's host-side packet is a new skb (tap / netback) with priority 0.
"""
from __future__ import annotations

import numpy as np

from .. import units
from ..errors import ConfigError
from ..metrics import percentile
from ..packet import FlowKey, Packet, icmp_frame_size
from ..qdisc.classify import tos_to_priority
from ..path.cpu import conn_key
from ..sched import call_at
from .base import Metric, RunContext, Workload

# iputils ping's system calls per probe at -i 0.01 (-n -D, a reply line each): sendto, recvmsg twice (the reply,
# then EAGAIN), poll now and then, write (the line), gettimeofday twice, clock_gettime -- 2,310 calls for 300
# probes, strace -c inside UML under the uml-schedulers campaign's load (data/uml/2026-11-28/uml-cpucost,
# results-calls.json): what profile app.syscall charges per probe
PING_CALLS = 7.7


class IcmpStack:
    """One host's ICMP echo handling: the kernel's responder and its ping sockets by identifier.

    The kernel answers every echo request itself, to the request's source, whoever sent it
    (``icmp_echo`` in net/ipv4/icmp.c), and hands an echo reply to the ping socket whose
    identifier it carries (``ping_lookup`` in net/ipv4/ping.c; each socket gets its own
    identifier from ``ping_get_port``).  So two pings never share replies, even when two hosts
    pick the same identifier or two pings cross in opposite directions.
    """

    def __init__(self, endpoint):
        self.endpoint = endpoint
        self.sockets: dict[int, "Ping"] = {}
        self.unclaimed = 0

    @classmethod
    def of(cls, endpoint) -> "IcmpStack":
        stack = getattr(endpoint, "_icmp_stack", None)
        if stack is None:
            stack = endpoint._icmp_stack = cls(endpoint)
        return stack

    def listen(self, ident: int) -> None:
        """Receive ICMP with this identifier (requests to answer, or replies for a local socket)."""
        self.endpoint.bind("icmp", ident, self)

    def open(self, ping: "Ping") -> int:
        """A new ping socket: an identifier no other ping socket on this host holds."""
        ident = self.endpoint.ephemeral_port()
        while ident in self.sockets:
            ident = self.endpoint.ephemeral_port()
        self.sockets[ident] = ping
        self.listen(ident)
        return ident

    def put(self, pkt) -> None:
        if pkt.kind == "echo-request":
            ep = self.endpoint
            now = ep.env._now
            f = pkt.flow
            reply = Packet(FlowKey(f.dst, f.src, f.dport, f.sport, "icmp"), pkt.size, pkt.created,
                           payload=pkt.payload, seq=pkt.seq, tos=pkt.tos, kind="echo-reply")
            t = pkt.t if pkt.t > now else now
            work = getattr(ep, "icmp_echo", 0.0)       # an endpoint of the user's own may not price it
            if work > 0.0 and getattr(ep, "cpu", None) is not None:
                # icmp_echo -> icmp_reply builds the reply and transmits it (ip_push_pending_frames) in the
                # softirq that received the request, on the connection's core (net/ipv4/icmp.c)
                t = ep.cpu.serve(t, work, conn_key(f))
                if t is None:             # the core's backlog is full: the request is dropped
                    self.unclaimed += 1
                    return
            reply.t = t
            ep.send(reply)
            return
        sock = self.sockets.get(pkt.flow.dport)
        if sock is None:
            self.unclaimed += 1
            return
        sock._reply(pkt)


class Ping(Workload):
    kind = "ping"
    KEYS = {"tool", "name", "from", "to", "c", "i", "s", "start", "tos", "t"}

    def __init__(self, count: int | None = None, interval: float = 1.0, size: int = 56,
                 start: float = 0.0, tos: int = 0, name: str | None = None):
        super().__init__(name)
        if count is not None and count < 1:
            raise ConfigError(f"ping -c must be >= 1, got {count}", key=f"workload.{self.name}.c", fix="e.g. c = 100")
        if not interval > 0:
            raise ConfigError(f"ping -i must be > 0, got {interval}", key=f"workload.{self.name}.i", fix='e.g. i = "0.2s"')
        if not 0 <= size <= 65507:
            raise ConfigError(f"ping -s {size} is outside 0..65507", key=f"workload.{self.name}.s", fix="e.g. s = 56")
        self.count, self.interval, self.size_payload, self.start_at, self.tos = count, interval, size, start, tos

    @classmethod
    def from_spec(cls, t: dict) -> "Ping":
        bad = set(t) - cls.KEYS
        if bad:
            raise ConfigError(f"unknown ping option {sorted(bad)[0]!r}", key=f"workload.{t.get('name')}.{sorted(bad)[0]}",
                              fix="ping takes: c (count), i (interval), s (size), start, tos")
        try:
            return cls(count=units.whole(t["c"], "ping -c", 1) if "c" in t else None,
                       interval=units.interval(t.get("i", "1s"), "ping -i"),
                       size=int(units.size(t.get("s", 56))), start=units.time(t.get("start", 0)),
                       tos=units.whole(t.get("tos", 0), "ping -Q (tos)", 0, 255), name=t.get("name"))
        except ConfigError:
            raise
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"bad ping option: {exc}", key=f"workload.{t.get('name')}",
                              fix='e.g. c = 5000, i = "0.2s", s = 56') from None

    def start(self, ctx: RunContext) -> None:
        self.env, self.src, self.dst = ctx.env, ctx.src, ctx.dst
        self.ident = IcmpStack.of(ctx.src).open(self)
        self.flow = FlowKey(ctx.src.name, ctx.dst.name, self.ident, self.ident, "icmp")
        IcmpStack.of(ctx.dst).listen(self.ident)
        self.t_end = ctx.start_at + ctx.duration
        self.frame = icmp_frame_size(self.size_payload)
        kind = getattr(ctx.src, "vif_kind", None) or getattr(ctx.src.out, "kind", "bare-metal")
        keeps = kind == "bare-metal"
        self.priority = tos_to_priority(self.tos) if keeps else 0
        self.sent = 0
        self.rtts: list[float] = []
        # its system calls' host CPU per probe (profile app.syscall: a UML instance's ptrace round trips)
        syscall = (ctx.extra or {}).get("app", {}).get("syscall", 0.0)
        self._calls = PING_CALLS * syscall
        self._stamp_to_send = syscall
        call_at(self.env, ctx.start_at + self.start_at, self._send)

    def _send(self, _=None) -> None:
        now = self.env._now
        if now >= self.t_end or (self.count is not None and self.sent >= self.count):
            return
        pkt = Packet(self.flow, self.frame, now, payload=self.size_payload, seq=self.sent, tos=self.tos,
                     priority=self.priority, kind="echo-request")
        self.sent += 1
        if self._calls and self.src.cpu is not None:
            self.src.cpu.account(self._calls)
        if self._stamp_to_send:
            # iputils stamps the probe (gettimeofday) before its sendmsg(): the stamp's return and the send's
            # entry -- one system call's round trip, a ptrace stop each way in UML -- pass before the kernel
            # has the packet; the reply is stamped by the kernel (SO_TIMESTAMP), so nothing on that side
            pkt.t = now + self._stamp_to_send
            call_at(self.env, pkt.t, self.src.send, pkt)
        else:
            self.src.send(pkt)
        call_at(self.env, now + self.interval, self._send)

    def _reply(self, pkt) -> None:
        now = self.env._now
        t = pkt.t if pkt.t > now else now
        if t <= self.t_end + 1.0:        # ping waits ~1 s for the last reply
            self.rtts.append(t - pkt.created)

    def metrics(self) -> list[Metric]:
        r = np.asarray(self.rtts) * 1e3
        loss = 100.0 * (self.sent - r.size) / self.sent if self.sent else float("nan")
        mdev = float(np.std(r)) if r.size else float("nan")    # ping: sqrt(mean(r^2) - mean(r)^2)
        return [Metric("rtt_mean", float(r.mean()) if r.size else float("nan"), "ms"),
                Metric("rtt_min", float(r.min()) if r.size else float("nan"), "ms"),
                Metric("rtt_max", float(r.max()) if r.size else float("nan"), "ms"),
                Metric("rtt_mdev", mdev, "ms"),
                Metric("rtt_p50", percentile(r, 50), "ms"),
                Metric("rtt_p99", percentile(r, 99), "ms"),
                Metric("loss", loss, "%")]

    def samples(self) -> dict[str, np.ndarray]:
        return {"rtt": np.asarray(self.rtts)}
