"""Socket buffers as Linux sizes them: send-buffer growth and receive-buffer autotuning.

When the application sets no ``SO_SNDBUF``/``SO_RCVBUF`` Linux starts each buffer at
``tcp_wmem[1]``/``tcp_rmem[1]`` and grows it with the connection (both in bytes of skb
truesize, not payload):

* :class:`SendBuffer` -- ``tcp_sndbuf_expand`` (net/ipv4/tcp_input.c), run from
  ``tcp_new_space`` when ACKs free space and the flow is not cwnd-limited... in fact whenever
  ``tcp_should_expand_sndbuf`` holds: ``sk_sndbuf = max(sk_sndbuf, min(tcp_wmem[2],
  factor x max(cwnd, 10, reordering + 1) x per_mss))``; factor 2 (``sndbuf_expand`` of the
  congestion control: BBR asks 3), per_mss = ``roundup_pow_of_two(mss + MAX_TCP_HEADER +
  shinfo) + sizeof(sk_buff)`` (2304 for a 1448-byte MSS).  It never shrinks here
  (``sk_stream_moderate_sndbuf`` only acts under TCP memory pressure).
* :class:`ReceiveBuffer` -- the advertised window is ``min(rcv_ssthresh, window_clamp,
  tcp_win_from_space(free buffer))`` (``__tcp_select_window``); ``rcv_ssthresh`` grows by
  2 x rcv_mss per in-order segment, or twice the skb's length, while it is below both ``window_clamp`` and
  ``tcp_space`` -- the buffer's window less what is queued unread, the skb being processed included
  (``tcp_grow_window``); once per receiver RTT
  (``rcv_rtt_est``, from the timestamp echo, ``tcp_rcv_rtt_measure_ts``)
  ``tcp_rcv_space_adjust`` measures the bytes copied to the application in that RTT and,
  when they grew, ``tcp_rcvbuf_grow`` (Linux >= 6.16, "DRS is always one RTT late") sets
  ``sk_rcvbuf = tcp_space_from_win(2 x copied, plus 2 x that x the growth ratio)`` capped at
  ``tcp_rmem[2]``, and ``window_clamp`` with it.  Before 6.16 the window had 16 x advmss more
  (``2 x copied + 16 x advmss``); this host's 6.18 has not: trace event ``tcp:tcp_rcvbuf_grow``
  behind a 10 Mbit/s HTB (copied 27549 / 60816 / 201272 / 456120 B after 14480 / 31856 / 63712 /
  260640) set window_clamp 154553 / 342779 / 2140801 / 2280599 B, each 2 x copied x (1 + 2 x
  growth) to the byte, where the older formula gives 219544 / 408046 / 2263936 / 2338520.
  ``tcp_win_from_space`` scales by ``scaling_ratio`` (len/truesize of received skbs).

Measured on this host (validation/tcp_window/probe.py, data/local/tcp_window): these
buffers bound in-flight data only when TCP Small Queues does not (the shaper is not on the
sender's own device): with ``tcp_wmem[2]`` = 1 MB two CUBIC flows behind a 20 Mbit/s
router keep 2.1 MB queued, with ``tcp_rmem[2]`` = 1 MB the window stops at 936064 B.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import floor

from .defaults import (DEFAULT_CONGESTION_CONTROL, DEFAULT_SCALING_RATIO, GRO_SCALING_RATIO,
                       INIT_CWND, LIMIT_OUTPUT_BYTES, MAX_TCP_HEADER, MODERATE_RCVBUF,
                       SND_PAYLOAD_SHARE, TCP_RMEM, TCP_WMEM)
from ..path.afpacket import SKB_SHINFO, SKB_STRUCT, _align, _head_size
from ..errors import ConfigError

TCP_TIMESTAMPS_OPTION = 12


@dataclass(frozen=True)
class TcpSysctls:
    """The per-namespace TCP sysctls that size windows (``net.ipv4.tcp_*``)."""
    rmem: tuple[int, int, int] = TCP_RMEM
    wmem: tuple[int, int, int] = TCP_WMEM
    moderate_rcvbuf: bool = MODERATE_RCVBUF
    limit_output_bytes: int = LIMIT_OUTPUT_BYTES
    congestion_control: str = DEFAULT_CONGESTION_CONTROL

    KEYS = {"net.ipv4.tcp_rmem": "rmem", "net.ipv4.tcp_wmem": "wmem",
            "net.ipv4.tcp_moderate_rcvbuf": "moderate_rcvbuf",
            "net.ipv4.tcp_limit_output_bytes": "limit_output_bytes",
            "net.ipv4.tcp_congestion_control": "congestion_control"}

    @classmethod
    def from_mapping(cls, values: dict) -> "TcpSysctls":
        """From ``{"net.ipv4.tcp_rmem": "4096 131072 6291456", ...}`` (sysctl's spelling) or short keys."""
        kw = {}
        for key, raw in values.items():
            field = cls.KEYS.get(key, key if key in cls.KEYS.values() else None)
            if field is None:
                raise ConfigError(f"unknown TCP sysctl {key!r}", key=f"sysctl.{key}",
                                  fix=f"use one of: {', '.join(cls.KEYS)}")
            try:
                if field in ("rmem", "wmem"):
                    parts = [int(x) for x in (raw.split() if isinstance(raw, str) else raw)]
                    if len(parts) != 3 or not 0 < parts[0] <= parts[1] <= parts[2]:
                        raise ValueError("three sizes min <= default <= max")
                    kw[field] = tuple(parts)
                elif field == "congestion_control":
                    kw[field] = str(raw).strip()
                elif field == "moderate_rcvbuf":
                    kw[field] = bool(int(raw))
                else:
                    kw[field] = int(raw)
            except (ValueError, TypeError) as exc:
                raise ConfigError(f"bad value {raw!r} for {key}: {exc}", key=f"sysctl.{key}",
                                  fix='e.g. "net.ipv4.tcp_rmem" = "4096 131072 6291456"') from None
        return cls(**kw)


def per_mss_truesize(mss: int) -> int:
    """Truesize tcp_sndbuf_expand reserves per segment (2304 for a 1448-byte MSS)."""
    need = mss + TCP_TIMESTAMPS_OPTION + MAX_TCP_HEADER + SKB_SHINFO      # max(mss_clamp, mss_cache) + ...
    return (1 << (need - 1).bit_length()) + SKB_STRUCT


#: MAX_TCP_HEADER of a distribution kernel (WLAN, mesh and tunnels configured: 128 + 176 -> 320)
DISTRO_MAX_TCP_HEADER = 320


def tcp_skb_head_truesize(kernel: tuple[int, int] | None = None) -> int:
    """The truesize of a TCP skb's head (``tcp_stream_alloc_skb``: ``alloc_skb_fclone(MAX_TCP_HEADER)``).

    Linux >= 6.3 (``kernel`` None: this machine's 6.18) takes it from the 576-byte small-head cache:
    192 + 320 -> 576, truesize 832.  Before 6.3 a head comes from kmalloc: a distribution kernel's
    320 + 320 -> the 1024-byte bucket, truesize 1280 -- 2728 B per 1448-byte segment, as ``ss -tinm``
    measured inside UML's Linux 6.1 (skmem t = unacked x 2728, data/uml/2026-11-25/uml-window)."""
    if kernel is None or kernel >= (6, 3):
        return _head_size(_align(MAX_TCP_HEADER) + SKB_SHINFO) + SKB_STRUCT
    return _head_size(_align(DISTRO_MAX_TCP_HEADER) + SKB_SHINFO, small_cache=False) + SKB_STRUCT


_HEAD = tcp_skb_head_truesize()         # this machine's kernel


def tcp_skb_truesize(payload: int, head: int | None = None) -> int:
    """``skb->truesize`` of a TCP skb carrying ``payload`` bytes: its head (``head``, default
    :func:`tcp_skb_head_truesize` of this machine's kernel: 832) and the payload ``tcp_sendmsg`` adds in
    page fragments, each copied byte to the truesize.  A 45-segment (65160-byte) GSO skb: 65992."""
    return (_HEAD if head is None else head) + payload


class SendBuffer:
    """``sk_sndbuf`` grown by ``tcp_sndbuf_expand``; :attr:`payload` is what it holds in data bytes."""

    def __init__(self, wmem=TCP_WMEM, *, mss: int, factor: int = 2):
        self.wmem = wmem
        self.per_mss = per_mss_truesize(mss)
        self.factor = factor
        # tcp_init_buffer_space -> tcp_sndbuf_expand at connect: the initial window's worth
        self.sk_sndbuf = wmem[1]
        self.expand(INIT_CWND, 3)

    def expand(self, cwnd: int, reordering: int = 3) -> bool:
        """Grow for this cwnd; True when the buffer grew."""
        segs = max(cwnd, INIT_CWND, reordering + 1)
        want = min(self.factor * segs * self.per_mss, self.wmem[2])
        if want > self.sk_sndbuf:
            self.sk_sndbuf = want
            return True
        return False

    @property
    def payload(self) -> int:
        return int(self.sk_sndbuf * SND_PAYLOAD_SHARE)


class ReceiveBuffer:
    """Receive-buffer autotuning and the window it lets the receiver advertise."""

    def __init__(self, rmem=TCP_RMEM, *, mss: int, moderate: bool = MODERATE_RCVBUF,
                 scaling_ratio: float = GRO_SCALING_RATIO):
        self.rmem = rmem
        self.mss = mss
        self.moderate = moderate
        self.sk_rcvbuf = rmem[1]
        self.ratio = DEFAULT_SCALING_RATIO        # until the first data skb is measured
        self.data_ratio = scaling_ratio
        # tcp_select_initial_window: the whole initial buffer, whole segments
        self.window_clamp = self.win_from_space(rmem[2]) if moderate else self.win_from_space(rmem[1])
        first = self.win_from_space(rmem[1])
        self.rcv_ssthresh = first - first % mss
        # tcp_init_buffer_space: rcvq_space.space = TCP_INIT_CWND x advmss
        self.space = INIT_CWND * mss
        self.space_seq = 0
        self.space_time = 0.0
        self.rtt = 0.0                            # rcv_rtt_est.rtt_us (s)
        self.last_tsecr = 0.0                     # rcv_rtt_last_tsecr
        self.log: list[tuple[float, int, int, int]] = []   # (t, sk_rcvbuf, rcv_space, rcv_ssthresh)

    def win_from_space(self, space: int) -> int:
        return int(space * self.ratio)

    def window(self) -> int:
        """The most the receiver may advertise now (the application reads at once)."""
        w = min(self.rcv_ssthresh, self.window_clamp, self.win_from_space(self.sk_rcvbuf))
        return max(w - w % self.mss, self.mss)

    def on_data(self, copied: int, seg_len: int, tsecr: float, now: float, rmem: int = 0,
                read: bool = True) -> bool:
        """In-order data: ``copied`` = bytes read so far.  True when the window may have grown.
        ``read`` False leaves ``tcp_rcv_space_adjust`` to :meth:`read` (the reader's).

        ``rmem`` is ``sk_rmem_alloc`` when ``tcp_grow_window`` runs: the truesize of the data queued and not
        yet read, this skb included (``tcp_event_data_recv`` runs after ``tcp_queue_rcv`` charged it with
        ``skb_set_owner_r``; the reader copies it later, from its own context).  ``tcp_grow_window``'s room is
        ``min(window_clamp, tcp_space(sk)) - rcv_ssthresh`` with ``tcp_space`` = ``tcp_win_from_space(sk_rcvbuf
        - sk_backlog.len - sk_rmem_alloc)`` (include/net/tcp.h), so ``rcv_ssthresh`` stops one skb's truesize
        below the buffer: 509243 = (635277 - 65992) x 229 >> 8 behind the bridge port's HTB 20 Mbit/s
        (tcp:tcp_rcvbuf_grow, data/local/tcp_window/2026-11-28-trace), 65992 the truesize of a 45-segment skb."""
        if self.ratio != self.data_ratio:
            self.ratio = self.data_ratio          # tcp_measure_rcv_mss
            if not self.moderate:
                self.window_clamp = self.win_from_space(self.sk_rcvbuf)
        if tsecr > 0.0 and tsecr != self.last_tsecr:
            # tcp_rcv_rtt_measure_ts: one sample per new echoed timestamp (rcv_rtt_last_tsecr), in the
            # timestamps' whole milliseconds (tcp_rtt_tsopt_us), zero samples left out (6.16+), EWMA of 1/8
            self.last_tsecr = tsecr
            m = (floor(now * 1000.0) - floor(tsecr * 1000.0)) / 1000.0
            if m > 0.0:
                # tcp_rcv_rtt_update: a sample below the estimate replaces it ("m < old_sample"), a larger one
                # moves it by 1/8
                self.rtt = m if self.rtt == 0.0 or m < self.rtt else self.rtt + (m - self.rtt) / 8
        grew = False
        space = self.win_from_space(self.sk_rcvbuf - rmem)        # tcp_space
        if seg_len >= 128 and self.rcv_ssthresh < self.window_clamp and self.rcv_ssthresh < space:
            # tcp_grow_window: 2 x advmss, or twice the skb's length when a GSO/GRO skb is larger
            self.rcv_ssthresh = min(self.rcv_ssthresh + max(2 * self.mss, 2 * seg_len), self.window_clamp, space)
            grew = True
        if read and self.rtt and now - self.space_time >= self.rtt:
            grew |= self._space_adjust(copied, now)
        return grew

    def read(self, copied: int, now: float) -> bool:
        """The reader's ``tcp_recvmsg``: ``tcp_rcv_space_adjust`` once per receiver RTT.  True if the buffer grew."""
        if self.rtt and now - self.space_time >= self.rtt:
            return self._space_adjust(copied, now)
        return False

    def offer(self, rmem: int) -> int:
        """``__tcp_select_window`` with ``rmem`` (truesize) queued unread: ``tcp_space`` at most ``rcv_ssthresh``
        and the clamp, in whole segments (before ``tcp_select_window`` keeps the right edge)."""
        w = min(self.rcv_ssthresh, self.window_clamp, self.win_from_space(self.sk_rcvbuf - rmem))
        return max(w - w % self.mss, 0)

    def _space_adjust(self, copied_seq: int, now: float) -> bool:
        """``tcp_rcv_space_adjust``: once per RTT, size the buffer for twice what was read."""
        copied = copied_seq - self.space_seq
        grew = False
        if copied > self.space:
            if self.moderate:
                rcvwin = 2 * copied                 # tcp_rcvbuf_grow: no 16 x advmss cushion since 6.16
                grow = rcvwin * (copied - self.space) // self.space
                rcvwin += 2 * grow
                rcvbuf = min(int(rcvwin / self.ratio), self.rmem[2])
                if rcvbuf > self.sk_rcvbuf:
                    self.sk_rcvbuf = rcvbuf
                    self.window_clamp = self.win_from_space(rcvbuf)
                    grew = True
            self.space = copied
        self.space_seq = copied_seq
        self.space_time = now
        self.log.append((now, self.sk_rcvbuf, self.space, self.rcv_ssthresh))
        return grew
