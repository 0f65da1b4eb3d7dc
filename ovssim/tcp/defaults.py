"""Linux TCP defaults, in one place, each with its source.

Units: bytes, segments, seconds.  Values are those of a current Linux kernel
(``include/net/tcp.h``, ``net/ipv4/tcp_*.c``) and its sysctls
(``Documentation/networking/ip-sysctl.rst``) when nothing is configured.
"""
from ..packet import IPV4_HEADER, TCP_HEADER, TCP_TIMESTAMPS

# Initial congestion window: TCP_INIT_CWND = 10 segments (RFC 6928).
INIT_CWND = 10
# "Infinite" ssthresh before the first loss: TCP_INFINITE_SSTHRESH.
INFINITE_SSTHRESH = 0x7FFFFFFF

# Retransmission timer (RFC 6298, Linux include/net/tcp.h):
# TCP_RTO_MIN = HZ/5 = 200 ms, TCP_TIMEOUT_INIT = 1 s, TCP_RTO_MAX = 120 s.
RTO_MIN = 0.200
RTO_INITIAL = 1.0
RTO_MAX = 120.0

# Delayed ACK: TCP_DELACK_MIN = HZ/25 = 40 ms (the timer Linux arms for a
# lone segment in a bulk transfer); TCP_MAX_QUICKACKS = 16 ACKs sent at once
# at the start of a connection and after out-of-order data (tcp_input.c).
DELACK = 0.040
MAX_QUICKACKS = 16

# Duplicate-ACK threshold for fast retransmit: sysctl tcp_reordering = 3 (RFC 5681).
DUPTHRESH = 3
# Upper bound of the adaptive reordering threshold: sysctl tcp_max_reordering = 300.
MAX_REORDERING = 300

# Socket buffers when the application sets none: the sysctls tcp_rmem and tcp_wmem
# (min, default, max; bytes of skb truesize, not payload) as a current kernel sets
# them (tcp_rmem[2] = 32 MiB since 6.16, net/ipv4/tcp.c tcp_init; tcp_wmem =
# 4096 16384 4194304), and tcp_moderate_rcvbuf = 1.  ovssim/tcp/buffers.py grows
# the buffers from the default towards the maximum as Linux's autotuning does.
TCP_RMEM = (4096, 131072, 33554432)
TCP_WMEM = (4096, 16384, 4194304)
MODERATE_RCVBUF = True
# TSQ's cap on a flow's bytes in its host's qdiscs/devices (sysctl tcp_limit_output_bytes,
# 4 MiB since 6.7); the floor of two skbs (tcp_small_queue_check) binds first on a veth.
LIMIT_OUTPUT_BYTES = 4194304
# The host's default congestion control (net.ipv4.tcp_congestion_control): the
# kernel's built-in default; a host may set another (this machine's is bbr).
DEFAULT_CONGESTION_CONTROL = "cubic"
# Receive window per byte of buffer: tp->scaling_ratio = skb->len / skb->truesize in
# 1/256 units (tcp_measure_rcv_mss, 6.5+), TCP_DEFAULT_SCALING_RATIO = 128 until the
# first data skb.  On a veth GRO hands TCP 64 KB skbs whose ratio is ~228/256: with
# tcp_rmem[2] = 1 MB this host advertised at most 936064 B (data/local/tcp_window, router
# runs), 0.893 of the buffer.
DEFAULT_SCALING_RATIO = 128 / 256
GRO_SCALING_RATIO = 228 / 256
# Payload share of the send buffer's truesize when the writer fills it with 64 KB skbs
# (payload + sk_buff + skb_shared_info + header room ~ 1.6 kB per skb): 0.976; measured
# here (router runs) unacked + notsent = 0.976 x sk_wmem_queued.
SND_PAYLOAD_SHARE = 65160 / (65160 + 1600)

# Kept for callers that size a buffer at its tuned maximum (window = half the truesize
# with the old tcp_adv_win_scale = 1; payload share for the send side).
AUTOTUNED_RCV_WINDOW = 6291456 // 2
AUTOTUNED_SND_BYTES = 4194304 // 2

# SACK (RFC 2018) and timestamps (RFC 7323) are on by default
# (sysctls tcp_sack = 1, tcp_timestamps = 1).
SACK = True
TIMESTAMPS = True
# With timestamps, at most 3 SACK blocks fit the 40 bytes of TCP options.
MAX_SACK_BLOCKS = 3


def mss_for_mtu(mtu: int = 1500, timestamps: bool = TIMESTAMPS) -> int:
    """Payload bytes per segment: MTU - IP - TCP headers - timestamps option (1448 on 1500)."""
    return mtu - IPV4_HEADER - TCP_HEADER - (TCP_TIMESTAMPS if timestamps else 0)


def socket_buffer_payload(requested: float) -> int:
    """Payload bytes a socket buffer set with ``setsockopt(SO_SNDBUF/SO_RCVBUF, requested)`` holds.

    The kernel doubles the requested value to leave room for bookkeeping
    (``sock_setsockopt`` in net/core/sock.c) and, with ``tcp_adv_win_scale = 1``,
    half of the doubled buffer carries data: about the requested number of
    bytes.  This is the window a netperf ``-s``/``-S`` or iperf ``-w`` gives.
    """
    return int(requested)

# GSO sizing and TCP Small Queues (tcp_output.c tcp_tso_autosize / tcp_small_queue_check,
# include/net/tcp.h, Documentation/networking/ip-sysctl.rst; values read with sysctl on this
# machine's kernel 6.18): tcp_min_tso_segs = 2, tcp_tso_rtt_log = 9, sk_pacing_shift = 10
# (about 1 ms of data per skb), tcp_pacing_ss_ratio = 200 %, tcp_pacing_ca_ratio = 120 %,
# tcp_limit_output_bytes = 4 MiB.
MIN_TSO_SEGS = 2
TSO_RTT_LOG = 9
PACING_SHIFT = 10
PACING_SS_RATIO = 2.0
PACING_CA_RATIO = 1.2
TCP_LIMIT_OUTPUT_BYTES = 4194304
# The headroom TCP reserves in each skb it builds (include/net/tcp.h): MAX_TCP_HEADER =
# L1_CACHE_ALIGN(128 + MAX_HEADER), MAX_HEADER = LL_MAX_HEADER (+ 48 with IP tunnels), LL_MAX_HEADER =
# 32 (128 with Hyper-V netvsc or 802.11 mesh, 96 with WLAN; include/linux/netdevice.h).  This host's
# kernel (/proc/config.gz: no HYPERV_NET, WLAN, AX25, IPIP, GRE, SIT or IPv6 tunnels) has 128 + 32 =
# 160 -> 192; a distribution kernel (WLAN + mesh + tunnels) 128 + 176 = 304 -> 320.  Its uses:
# sk_gso_max_size = gso_max_size - (MAX_TCP_HEADER + 1) (sk_setup_caps: 45 segments of 1448 either way),
# bbr_tso_segs_goal's cap GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER, tcp_sndbuf_expand's per_mss
# (roundup_pow_of_two(1460 + 192 + 320) = 2048 + 256 = 2304, as measured here) and the head of each
# TCP skb (tcp_stream_alloc_skb: alloc_skb_fclone(MAX_TCP_HEADER)), see buffers.tcp_skb_truesize.
MAX_TCP_HEADER = 192
# tcp_tso_should_defer: sysctl tcp_tso_win_divisor = 3; it defers only when the last send was
# within NSEC_PER_MSEC and the next ACK is expected within min(srtt / 2, 1 ms).
TSO_WIN_DIVISOR = 3
TSO_DEFER_RECENT = 0.001
# net.core.rmem_default = 212992: sk_rcvbuf of a socket that sets no SO_RCVBUF (a UDP receiver's; this host's
# sysctl, the kernel's SK_RMEM_MAX default).
RMEM_DEFAULT = 212992
# net.core.wmem_default = 212992: sk_sndbuf of a socket that sets no SO_SNDBUF (a UDP sender's).
WMEM_DEFAULT = 212992
# sysctl tcp_frto = 2: F-RTO (RFC 5682, SACK-enhanced) after a retransmission timeout (tcp_enter_loss).
FRTO = 2
# CONFIG_HZ = 250 (/proc/config.gz on this machine)
HZ = 250
# A bulk writer's write() when the caller names none (sock.bulk(until)): iperf3's default
# -l for TCP, 128 KiB (src/iperf.h DEFAULT_TCP_BLKSIZE); the write queue builds skbs from it.
BULK_WRITE_SIZE = 128 * 1024
