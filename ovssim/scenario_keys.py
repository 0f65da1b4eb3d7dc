"""Every key a scenario file takes, with what it means: the validator's table and the docs' reference.

``ovssim.scenario`` accepts exactly the keys listed here (an unknown key is an
error naming the ones it takes), and the documentation's scenario-file reference
is generated from this module, so the two cannot drift apart.  A workload's keys
are its tool's own: :data:`WORKLOAD_KEYS` describes the ones the UDP and ping
tools take; the TCP tools describe theirs in their ``OPTIONS``.
"""
from __future__ import annotations

SECTION_HELP = {
    "scenario": "The run: its name, length, replications and random seed (required).",
    "params": 'Profile overrides: `"dotted.profile.name" = value`, e.g. `"ovs.upcall" = "80us"`.',
    "host": "A physical machine and its cores (at least one).",
    "bridge": "An Open vSwitch or Linux bridge on a host, optionally a chain of bridges.",
    "vm": "A guest, container or bare-metal endpoint and its virtual interface (VIF).",
    "nic": "A physical NIC: the uplink of a bridge, its rate and egress qdisc.",
    "switch": "A physical switch joining NICs.",
    "workload": "A traffic tool run between two `[[vm]]`s (at least one).",
}

SECTION_KEYS: dict[str, dict[str, str]] = {
    "scenario": {
        "name": "Name printed with the results (default: the file's name).",
        "description": "Free text.",
        "duration": 'Simulated seconds of traffic per replication, e.g. `"10s"`.',
        "reps": "Independent replications (default 10); results print their mean and 95 % CI.",
        "seed": "Base random seed (default 1); replication *r* uses `SeedSequence([seed, r])`.",
        "profile": "Calibration profile: a name in `calibration/`, a path, or `default`.",
        "warmup": "Simulated time before measurement starts (default 0).",
        "trace_every": "Stamp every N-th packet at each stage for per-stage delays (default 0: off).",
        "precision": "Sequential replications: add them until every metric's 95 % CI half-width is within "
                     "this fraction of its mean (e.g. `0.01`), or `{ METRIC = REL }` per metric.",
        "abs_precision": "Absolute half-width bounds per metric, e.g. `{ jitter = 0.001 }` (its unit).",
        "min_reps": "Sequential replications: the first batch (default 3).",
        "max_reps": "Sequential replications: the most it may take (default 100).",
        "speed_index": "The simulated host's speed index (as `ovssim collect` measures it): CPU costs are "
                       "scaled from the profile's `[state]` index to this one.",
    },
    "host": {
        "name": "Host name (referenced by bridges, VMs and NICs).",
        "cores": "CPU cores serving the host's packet-processing work, 1..1024 (default 1).",
        "schedule_threads": "Model the tools' processes, vhost/netback and vCPUs as threads scheduled on the "
                            "cores (EEVDF slices, context switches; `ovssim.cpu`). Default false (work-conserving "
                            "pool, as the calibrated profiles were fitted); background load or vCPUs on the host "
                            "turn it on.",
        "background_threads": "CPU-bound background threads on the host's cores (`stress -c N`), 0..4096 "
                              "(default 0); they delay threads and ksoftirqd by the scheduler's slice, and their share of "
                              "the cores replaces the profile's `[state] cpu_busy` for the netdev datapath's "
                              "wake-up after idling (its tick stall is then the scheduler's wait).",
        "background_period": 'Bursty background load: each background thread is busy `background_on` in every '
                             '`background_period`, e.g. `"200ms"` (default: always busy).',
        "background_on": 'CPU-bound time per `background_period`, e.g. `"4ms"` (a dom0 / housekeeping burst).',
        "guest_of": 'The host is a virtual machine on this other `[[host]]` (e.g. OVS inside a VM, seed 001\'s '
                    'VOI): its `cores` are vCPUs, threads on that host\'s cores (two-level scheduling), and its '
                    'CPU work takes profile `guest.cpu_factor` times the bare-metal figures.',
        "vcpu_pin": "With `guest_of`: the other host's cores each vCPU may run on, a list per vCPU, e.g. `[[0]]`.",
        "pmd_core_threads": "Other CPU-bound threads pinned to the core of the host's AF_XDP PMD thread, 0..64 "
                            "(default 0): e.g. the PMDs of other OVS instances, which without pmd-cpu-mask take the "
                            "same core. The PMD then holds its core in turns of whole scheduler ticks "
                            "(`ovssim.path.core_turns`), and frames wait in its rings while the others run. "
                            "No effect on a host without an AF_XDP bridge.",
        "sched_slice": 'The time a CPU-bound thread keeps a core before the next runnable one gets it, e.g. '
                       '`"3ms"` (default: EEVDF\'s base slice for the host\'s cores, kernel/sched/fair.c); for '
                       'a Xen host, how long the hypervisor runs dom0 before a guest\'s vCPU gets its core back.',
    },
    "bridge": {
        "name": "Bridge name; chain members are named `NAME-2`, `NAME-3`, ...",
        "host": "The host it runs on.",
        "kind": '`"ovs"` (default) or `"linux"` (the Linux bridge).',
        "chain": "Number of bridges chained in series, 1..9 (seeds 003/004).",
        "link": 'How chained bridges join: `"patch"` (OVS patch ports) or `"veth"` (veth pairs).',
        "uplink": "The `[[nic]]` attached as the bridge's physical port.",
        "flows": "OpenFlow rules `{ match = {...}, set_queue = N }` selecting an OVS QoS queue.",
        "datapath_type": 'OVS datapath: `"system"` (kernel, default) or `"netdev"` (userspace).',
        "port_type": 'OVS interface type of its VIFs: `"system"` (AF_PACKET, default) or `"afxdp"` '
                     '(AF_XDP; needs `datapath_type = "netdev"`): a PMD thread busy-polls them on a core of '
                     'its own, taken from the host\'s `cores`, in batches of up to 32 (profile `ovs.afxdp.*`).',
    },
    "vm": {
        "name": "Endpoint name (workloads run `from`/`to` it).",
        "host": "The host it runs on.",
        "vif": "Virtual interface: `kvm-tap`, `xen-vif`, `xen-hvm-tap`, `container-veth` or `bare-metal`.",
        "vcpus": "Guest vCPUs (default 1).",
        "vcpus_on_host": "Run the guest's vCPUs as threads on the host's cores (two-level scheduling: the "
                         "guest's work competes with host threads; default false: a separate pool).",
        "vcpu_pin": "Host cores each vCPU may run on (`virsh vcpupin`), a list per vCPU, e.g. `[[0], [1]]`; "
                    "implies vcpus_on_host.",
        "bridge": "The bridge (or chain member) its VIF is attached to.",
        "vlan": "Access-port VLAN tag, 1..4094.",
        "trunks": "Trunk-port VLAN tags, a list of 1..4094.",
        "qdisc": "Egress qdisc of the VIF's port: tc form `{ kind = ... }` or OVS QoS form `{ type = ... }`.",
        "egress_qdisc": "Egress qdisc of the guest's own interface (tc form), where TCP Small Queues holds "
                        "each flow to two skbs.",
        "mtu": "Guest interface MTU, 68..9216 (TCP's MSS follows it).",
        "features": "Offloads of the guest's interface by their `ethtool -K` names, e.g. "
                    "`{ tso = false, gro = true }` (default: what Linux sets for the VIF kind).",
        "veth_orphans": "container-veth: whether crossing the veth orphans a sent skb (default true, as "
                        "measured on this machine's 6.18). false: the skb stays charged to its TCP socket "
                        "through the bridge and the port's qdisc until the receiver's IP layer "
                        "(ip_rcv_core), so TCP Small Queues bind at a bridge's qdisc, as measured with "
                        "ss -tinm on Linux 6.1 under user-mode Linux (data/uml/2026-11-25/uml-window).",
        "kernel": "The guest's Linux version, e.g. `\"6.1\"` (default: this machine's 6.18), for TCP "
                  "behaviours that changed: before 6.10 no tcp_grow_skb (the remainder of an skb cut to the "
                  "congestion window's quota leaves as a small skb of its own, and TCP Small Queues size "
                  "their limit by it); before 6.3 an skb head's truesize is 1280 B, not 832 (no small-head "
                  "cache: 2728 B charged per 1448-byte segment, as measured in UML's 6.1).",
        "sysctl": "The guest kernel's TCP settings, e.g. `{ \"net.ipv4.tcp_congestion_control\" = \"bbr\", "
                  "\"net.ipv4.tcp_wmem\" = \"4096 16384 4194304\" }` (default: this Linux's).",
    },
    "nic": {
        "name": "NIC name.",
        "host": "The host it belongs to.",
        "rate": 'Line rate, e.g. `"100mbit"` (default 1gbit).',
        "qdisc": "Egress qdisc: tc form or OVS QoS form (default pfifo_fast).",
        "switch": "The `[[switch]]` its cable goes to.",
        "prop_delay": 'Propagation delay of its cable (default `"25ns"`).',
        "vlan": "Access VLAN tag of its bridge port.",
        "trunks": "Trunk VLAN tags of its bridge port.",
        "mtu": "MTU, 68..9216.",
        "txqueuelen": "Device queue length in packets (`ip link ... txqueuelen`, default 1000).",
        "features": "Offloads by their `ethtool -K` names (`tso`, `gso`, `gro`, `sg`, `tx-checksumming`); "
                    "default: a physical NIC's.",
        "rx_frames": "Interrupt coalescing, `ethtool -C rx-frames` (default 0: by rx-usecs alone).",
    },
    "switch": {
        "name": "Switch name.",
        "latency": 'Forwarding latency (default `"3us"`).',
        "buffer": "Per-port buffer size, e.g. `\"512kb\"`.",
    },
}

# keys of the UDP (iperf, iperf3) and ping tools; the TCP tools document theirs in OPTIONS
WORKLOAD_KEYS: dict[str, str] = {
    "tool": "The tool: `iperf`, `iperf2`, `iperf3`, `netperf` or `ping`.",
    "proto": 'iperf: `"udp"` or `"tcp"` (default tcp).',
    "test": 'netperf: `"TCP_STREAM"` or `"TCP_RR"`.',
    "name": "Name in the results (default: tool and index).",
    "from": "The `[[vm]]` the client (sender) runs on.",
    "to": "The `[[vm]]` the server runs on.",
    "b": 'iperf -b: target rate, e.g. `"95mbit"`.',
    "l": "iperf -l: datagram payload in bytes (default 1470).",
    "t": "Seconds to run (default: the scenario's duration).",
    "start": "Start offset within the run.",
    "tos": "IP TOS byte (ping -Q, iperf -S).",
    "port": "Server port.",
    "trace_every": "Stamp every N-th datagram at each stage.",
    "pacing_timer": "iperf3 --pacing-timer (default 1000 us).",
    "timer_slack": "Timer slack of the sending thread (default 50 us, Linux's).",
    "c": "ping -c: count (default: until the run ends).",
    "i": 'ping -i: interval (default `"1s"`).',
    "s": "ping -s: ICMP data bytes (default 56).",
}
