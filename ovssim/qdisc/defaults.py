"""Kernel defaults for every qdisc, in one place, each with its source.

Values are those of Linux ``net/sched/sch_*.c`` and ``tc`` (iproute2) when a
parameter is not given, and of Open vSwitch ``lib/netdev-linux.c`` when a
port's QoS row leaves a key out.  Units: bytes, packets, seconds, bit/s.
"""

# -- device -------------------------------------------------------------------
# Device queue length: ``dev->tx_queue_len`` defaults to DEFAULT_TX_QUEUE_LEN = 1000
# (include/linux/netdevice.h); pfifo/bfifo/pfifo_fast take their limit from it.
TXQUEUELEN = 1000

# Ethernet MTU and header (psched_mtu() = mtu + hard_header_len = 1514).
ETH_MTU = 1500
ETH_HARD_HEADER_LEN = 14
PSCHED_MTU = ETH_MTU + ETH_HARD_HEADER_LEN

# bfifo: limit defaults to txqueuelen * psched_mtu bytes (sch_fifo.c: fifo_init).
# pfifo: limit defaults to txqueuelen packets.

# The qdisc a device gets when nobody configures one: pfifo_fast
# (net/sched/sch_generic.c: default_qdisc_ops = &pfifo_fast_ops).  Note that
# many distributions set net.core.default_qdisc = fq_codel (systemd's
# sysctl.d/50-default.conf); give the port a qdisc to model that.
DEFAULT_QDISC = "pfifo_fast"

# -- pfifo_fast (net/sched/sch_generic.c) -------------------------------------
PFIFO_FAST_BANDS = 3
# prio2band: band of skb->priority & TC_PRIO_MAX (sch_generic.c: sch_default_prio2band).
PFIFO_FAST_PRIOMAP = (1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1)
TC_PRIO_MAX = 15
# ip_tos2prio[]: skb->priority a socket with IP_TOS gets, index IPTOS_TOS(tos) >> 1
# (net/ipv4/route.c; TC_PRIO_BESTEFFORT 0, BULK 2, INTERACTIVE_BULK 4, INTERACTIVE 6).
IP_TOS2PRIO = (0, 0, 0, 0, 2, 2, 2, 2, 6, 6, 6, 6, 4, 4, 4, 4)

# -- SFQ (net/sched/sch_sfq.c) ------------------------------------------------
SFQ_MAX_DEPTH = 127           # per-flow packets, and the default limit (SFQ_MAX_DEPTH)
SFQ_DEFAULT_FLOWS = 128       # active flow slots (SFQ_DEFAULT_FLOWS)
SFQ_MAX_FLOWS = 65408         # SFQ_MAX_FLOWS = 0x10000 - SFQ_MAX_DEPTH - 1
SFQ_DEFAULT_DIVISOR = 1024    # hash buckets (SFQ_DEFAULT_HASH_DIVISOR)
SFQ_LIMIT = SFQ_MAX_DEPTH     # total packets (sfq_init: q->limit = SFQ_MAX_DEPTH)
SFQ_PERTURB = 0.0             # no re-hashing unless asked (sfq_init: perturb_period = 0)
# quantum: psched_mtu(dev) (sfq_init).

# -- CoDel (include/net/codel_impl.h: codel_params_init; sch_codel.c) ------------
CODEL_TARGET = 5e-3           # MS2TIME(5)
CODEL_INTERVAL = 100e-3       # MS2TIME(100)
CODEL_LIMIT = 1000            # DEFAULT_CODEL_LIMIT
CODEL_ECN = False             # params->ecn = false
CODEL_REC_INV_SQRT_BITS = 16  # REC_INV_SQRT_BITS (include/net/codel.h)
CODEL_REARM_INTERVALS = 16    # count carry-over window: 16 * interval (codel_dequeue)

# -- FQ-CoDel (net/sched/sch_fq_codel.c: fq_codel_init) ------------------------
FQ_CODEL_FLOWS = 1024
FQ_CODEL_LIMIT = 10 * 1024
FQ_CODEL_MEMORY_LIMIT = 32 << 20      # 32 MBytes
FQ_CODEL_DROP_BATCH = 64
FQ_CODEL_ECN = True
FQ_CODEL_QUANTUM_MIN = 256            # fq_codel_change: max(256U, quantum)
FQ_CODEL_MAX_FLOWS = 65536
# quantum: psched_mtu(dev) = 1514 on Ethernet.
# skb->truesize, charged against memory_limit: SKB_TRUESIZE(len) adds the
# aligned struct sk_buff + skb_shared_info (~256 + 320 bytes on x86_64).
SKB_TRUESIZE_OVERHEAD = 576

# -- TBF (net/sched/sch_tbf.c; tc/q_tbf.c) -------------------------------------
# tc requires rate, burst and one of limit/latency; peakrate requires mtu
# ("minburst"); the inner qdisc is a bfifo of ``limit`` bytes.

# -- HTB (net/sched/sch_htb.c; tc/q_htb.c) -------------------------------------
HTB_R2Q = 10                  # tc: rate2quantum default 10
HTB_QUANTUM_MIN = 1000        # htb_change_class clamps a computed quantum to 1000..200000
HTB_QUANTUM_MAX = 200000
HTB_MTU = 1600                # tc/q_htb.c: mtu = 1600 for the default burst
HTB_HZ = 1e9                  # get_hz() with high-resolution timers (/proc/net/psched)
HTB_MAX_BUFFER = 60.0         # mbuffer = 60 s in ns (htb_change_class)
HTB_MAXDEPTH = 8              # TC_HTB_MAXDEPTH: root class level = 7, leaves 0
HTB_NUMPRIO = 8               # TC_HTB_NUMPRIO: prio 0..7
HTB_DEFAULT_PRIO = 0
# A leaf's qdisc: pfifo with limit = txqueuelen (qdisc_create_dflt(pfifo_qdisc_ops)).
# direct_qlen (packets sent unshaped when no class matches): txqueuelen.

# -- HFSC (net/sched/sch_hfsc.c) -----------------------------------------------
# A leaf's qdisc: pfifo with limit = txqueuelen (hfsc_change_class).

# -- Open vSwitch QoS (lib/netdev-linux.c, vswitchd/vswitch.xml) ----------------
# linux-htb / linux-hfsc: "tc qdisc add dev D root handle 1: htb|hfsc default 1",
# root class 1:fffe at max-rate (or link speed), queue N is class 1:(N+1).
OVS_ROOT_MINOR = 0xFFFE
OVS_DEFAULT_CLASS = 1          # defcls = 1: unclassified traffic goes to queue 0
OVS_N_QUEUES = 0xF000          # HTB_N_QUEUES / HFSC_N_QUEUES
OVS_HTB_R2Q = 10               # HTB_RATE2QUANTUM
OVS_HTB_BURST_EXTRA = 64       # burst = max(burst, mtu + 64) bytes
OVS_DEFAULT_BPS = 10e9         # NETDEV_DEFAULT_BPS when the device reports no speed
# linux-sfq: perturb 10 s, quantum = MTU (sfq_parse_qdisc_details__).
OVS_SFQ_PERTURB = 10.0
# linux-codel: target 5000 us, limit 10240, interval 100000 us (codel_parse_qdisc_details__).
OVS_CODEL_TARGET = 5e-3
OVS_CODEL_LIMIT = 10240
OVS_CODEL_INTERVAL = 100e-3
# linux-fq_codel: target 5000 us, limit 10240, flows 1024, quantum 1514 and --
# as fqcodel_parse_qdisc_details__ writes it -- interval 1000000 us (1 s) when
# other-config leaves it out.
OVS_FQ_CODEL_TARGET = 5e-3
OVS_FQ_CODEL_LIMIT = 10240
OVS_FQ_CODEL_INTERVAL = 1.0
OVS_FQ_CODEL_FLOWS = 1024
OVS_FQ_CODEL_QUANTUM = 1514

# -- FQ (net/sched/sch_fq.c: fq_init) ---------------------------------------------
FQ_LIMIT = 10000              # q->limit: packets in the qdisc
FQ_FLOW_LIMIT = 100           # q->flow_plimit: packets per flow
FQ_REFILL_DELAY = 0.040       # q->flow_refill_delay = msecs_to_jiffies(40)
FQ_HORIZON = 10.0             # q->horizon = 10 * NSEC_PER_SEC; horizon_drop = 1
FQ_LOW_RATE_THRESHOLD = 550e3  # q->low_rate_threshold = 550000 / 8 bytes/s
# quantum = 2 * psched_mtu(dev), initial_quantum = 10 * psched_mtu(dev); maxrate unlimited.
