"""Kernel defaults for every qdisc, in one place, each with its source.

Values are those of Linux ``net/sched/sch_*.c`` and ``tc`` (iproute2) when a
parameter is not given.  Units: bytes, packets, seconds, bit/s.
"""

# Device queue length: ``dev->tx_queue_len`` defaults to DEFAULT_TX_QUEUE_LEN = 1000
# (include/linux/netdevice.h); pfifo/bfifo/pfifo_fast take their limit from it.
TXQUEUELEN = 1000

# Ethernet MTU and header (psched_mtu() = mtu + hard_header_len = 1514).
ETH_MTU = 1500
ETH_HARD_HEADER_LEN = 14
PSCHED_MTU = ETH_MTU + ETH_HARD_HEADER_LEN

# bfifo: limit defaults to txqueuelen * psched_mtu bytes (sch_fifo.c: fifo_init).
# pfifo: limit defaults to txqueuelen packets.
