"""How many segments one GSO skb carries: ``tcp_tso_autosize`` (net/ipv4/tcp_output.c, Linux >= 5.18).

``sk_pacing_rate >> sk_pacing_shift`` bytes (about 1 ms of the pacing rate), plus ``sk_gso_max_size >>
(tcp_min_rtt_us >> tcp_tso_rtt_log)`` -- a whole 64 KB skb below 512 us of minimum RTT, half of it below
1 ms, nothing once the shift reaches the field's width or before any RTT sample (``tcp_min_rtt`` = ~0U) --
at most ``sk_gso_max_size`` (the device's gso_max_size less ``MAX_TCP_HEADER + 1``, ``sk_setup_caps``), at
least ``min_segs`` (``tcp_min_tso_segs``, or the congestion control's ``min_tso_segs``).
"""
from __future__ import annotations

from .defaults import MAX_TCP_HEADER, PACING_SHIFT, TSO_RTT_LOG

INF = float("inf")
#: sk_gso_max_size of a device with gso_max_size 65536 (a veth, GSO_LEGACY_MAX_SIZE)
SK_GSO_MAX_SIZE = 65536 - (MAX_TCP_HEADER + 1)


def tso_autosize(pacing_rate: float, min_rtt: float, mss: int, min_segs: int,
                 gso_max_bytes: int = SK_GSO_MAX_SIZE) -> int:
    """Segments per skb for this pacing rate (bytes/s; ``inf`` when unset) and minimum RTT (s; ``inf`` before
    a sample)."""
    nbytes = pacing_rate / (1 << PACING_SHIFT)
    r = int(min_rtt * 1e6) >> TSO_RTT_LOG if min_rtt < INF else 64
    if r < 32:
        nbytes += gso_max_bytes >> r
    if nbytes > gso_max_bytes:
        nbytes = gso_max_bytes
    segs = int(nbytes // mss)
    return segs if segs > min_segs else min_segs
