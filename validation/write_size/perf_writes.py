"""Where an iperf3 sender's CPU goes per write() on a bare veth pair, by write size (issue 15).

The batching section's 16 KiB rows say a 16 KiB write costs the client 34 us and a 128 KiB one 45 us
(data/local/2026-11-27-quiet/local-bytes): no split into per-call, per-byte and per-skb costs with a
positive per-skb cost fits both.  This measures the split itself.  Two namespaces of our own joined by one
veth pair (offloads as the kernel sets them, or ``--tx-off``), one iperf3 server, and for each write size
one client run under ``perf record`` (cpu-clock sampling of the client process, kernel included: the
softirq work a veth transmit runs in the sender's context -- the receiver's IP/TCP input, the ACKs --
is sampled there too).  Each sample's own function is put in one category; a category's CPU per write
is its samples x the sampling period / the writes (bytes sent / write size), and per skb the same over
the veth's tx_packets (a GSO skb counts once).

Root only; run it on an idle machine (the load is printed first), e.g.
    python3 validation/write_size/perf_writes.py --seconds 4 131072 16384
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter

NS_TX, NS_RX = "pw3tx", "pw3rx"
ADDR_TX, ADDR_RX = "172.31.98.1", "172.31.98.2"
FREQ = 4999                     # samples per second of CPU (cpu-clock): one sample = 1/FREQ s

# (category, regex on the sampled function's name), first match wins; what matches nothing is "other kernel"
CATEGORIES = [
    ("copy from user", r"copy_user|_copy_from_iter|copy_from_user|rep_movs|memcpy|skb_do_copy_data|csum_partial_copy"),
    ("memory (skb, pages)", r"alloc|kmem_cache|kfree|free_|__free|page_frag|slab|skb_release|consume_skb|"
                            r"sk_page_frag|get_page|put_page|folio|memcg|mem_cgroup|uncharge|charge"),
    ("tcp send", r"^tcp_(sendmsg|push|write_xmit|transmit|tso|send|skb_entail|stream|rate_skb_sent|event|"
                 r"small_queue|tsq|options|established_options|v4_send_check|chrono|mtu|current_mss|"
                 r"wfree|update_skb|pacing)|^__tcp_(transmit|push|send)|^sk_stream"),
    ("ip/dev/veth transmit", r"^ip_|^__ip_|^dev_|^__dev_|veth_xmit|^netif_rx|^__netif_rx|^enqueue_to_backlog|"
                             r"neigh|^sch_direct|^validate_xmit|^skb_(checksum|csum)|^eth_|^netdev_core"),
    ("receive + ACKs (softirq)", r"^tcp_(v4_rcv|rcv|ack|clean_rtx|data_queue|queue_rcv|event_data|"
                                 r"validate_incoming|check_space|new_space|sacktag|cong|cubic|ack_update|"
                                 r"rearm|schedule_loss|update_pacing|rack|add_backlog|filter|v4_do_rcv|"
                                 r"urg|fast_path|rtt|grow_window|measure_rcv|mstamp|stream_memory_free|"
                                 r"delack|send_ack|send_delayed_ack|rbtree|try_rmem|ofo)|^__tcp_ack|bictcp|"
                                 r"net_rx_action|process_backlog|__netif_receive|netif_receive|^ip_rcv|"
                                 r"^ip_local|^ip_sublist|^raw_local|^inet_ehash|^__inet_lookup|"
                                 r"^sock_def_readable|^tcp_v4_early|^__napi|^napi_|skb_gro|gro|"
                                 r"__do_softirq|do_softirq|handle_softirqs|__local_bh_enable|release_sock|"
                                 r"__release_sock"),
    ("scheduler, wake-ups", r"schedule|wake|try_to_wake|ttwu|enqueue_task|dequeue_task|update_curr|"
                            r"pick_next|__switch_to|finish_task|sched|select_task_rq|psi_|cpuacct|"
                            r"raw_spin|_raw_spin|native_queued_spin|irq|apic|ipi|sysvec"),
    ("system call entry, poll", r"entry_SYSCALL|do_syscall|syscall_exit|syscall_return|__x64_sys|ksys_|"
                                r"vfs_write|sock_write_iter|sock_sendmsg|__sys_|select|poll|fdget|fput|"
                                r"security_|apparmor|aa_|inet_sendmsg|rw_verify|__fsnotify|fsnotify"),
]
_COMPILED = [(name, re.compile(rx)) for name, rx in CATEGORIES]


def category(symbol: str, dso: str) -> str:
    if "kernel" not in dso:
        return "iperf3 + libc (user space)"
    for name, rx in _COMPILED:
        if rx.search(symbol):
            return name
    return "other kernel"


def sh(cmd: str, check: bool = True, **kw) -> str:
    return subprocess.run(cmd, shell=True, check=check, text=True, capture_output=True, **kw).stdout


def setup(tx_off: bool) -> None:
    teardown()
    sh(f"ip netns add {NS_TX}; ip netns add {NS_RX}")
    sh(f"ip link add pw3v0 netns {NS_TX} type veth peer name pw3v1 netns {NS_RX}")
    sh(f"ip -n {NS_TX} addr add {ADDR_TX}/24 dev pw3v0; ip -n {NS_RX} addr add {ADDR_RX}/24 dev pw3v1")
    sh(f"ip -n {NS_TX} link set pw3v0 up; ip -n {NS_RX} link set pw3v1 up; "
       f"ip -n {NS_TX} link set lo up; ip -n {NS_RX} link set lo up")
    if tx_off:
        sh(f"ip netns exec {NS_TX} ethtool -K pw3v0 tx off")


def teardown() -> None:
    sh(f"ip netns pids {NS_RX} 2>/dev/null | xargs -r kill", check=False)
    sh(f"ip netns del {NS_TX} 2>/dev/null; ip netns del {NS_RX} 2>/dev/null", check=False)


def tx_packets() -> int:
    return int(sh(f"ip netns exec {NS_TX} cat /sys/class/net/pw3v0/statistics/tx_packets"))


def run_size(size: int, seconds: float, tmp: str) -> dict:
    data = os.path.join(tmp, f"perf-{size}.data")
    out = os.path.join(tmp, f"iperf-{size}.json")
    p0 = tx_packets()
    sh(f"perf record -q -F {FREQ} -e cpu-clock -o {data} -- ip netns exec {NS_TX} "
       f"iperf3 -c {ADDR_RX} -t {seconds} -l {size} -J > {out}")
    skbs = tx_packets() - p0
    res = json.load(open(out))
    # a second run counts the client's context switches (blocked in select()/write(), woken by ACKs)
    stat = sh(f"perf stat -x, -e task-clock,context-switches -- ip netns exec {NS_TX} "
              f"iperf3 -c {ADDR_RX} -t {seconds} -l {size} -J 2>&1 >{out}.2")
    counts = {ln.split(",")[2]: float(ln.split(",")[0]) for ln in stat.splitlines()
              if ln.count(",") >= 3 and ln.split(",")[0].replace(".", "").isdigit()}
    sent2 = json.load(open(out + ".2"))["end"]["sum_sent"]["bytes"]
    sent = res["end"]["sum_sent"]["bytes"]
    report = sh(f"perf report -i {data} --stdio --no-children --sort dso,sym -F overhead,sample,dso,sym 2>/dev/null")
    samples: Counter = Counter()
    for line in report.splitlines():
        m = re.match(r"\s*[\d.]+%\s+(\d+)\s+(\S+)\s+\[[.k]\]\s+(.+?)\s*$", line)
        if m:
            samples[category(m.group(3), m.group(2))] += int(m.group(1))
    writes = sent / size
    total = sum(samples.values())
    rows = [ln.split() for ln in report.splitlines() if re.match(r"\s*[\d.]+%", ln)]
    top = [f"{r[0]:>7s} {r[-1]}" for r in sorted(rows, key=lambda r: -int(r[1]))[:15]]
    cpu = res["end"]["cpu_utilization_percent"]
    return {"size": size, "writes": writes, "skbs": skbs, "bytes": sent, "top": top,
            "switches_per_write": counts.get("context-switches", float("nan")) / (sent2 / size),
            "task_us_per_write": counts.get("task-clock", float("nan")) * 1e3 / (sent2 / size),
            "iperf3_cpu_s": cpu["host_total"] / 100 * seconds,
            "gbit_s": res["end"]["sum_received"]["bits_per_second"] / 1e9,
            "cpu_s": total / FREQ, "us_per_write": {k: v / FREQ / writes * 1e6 for k, v in samples.items()},
            "us_per_skb": {k: v / FREQ / skbs * 1e6 for k, v in samples.items()}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sizes", nargs="*", type=int, default=[131072, 16384])
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--tx-off", action="store_true", help="ethtool -K tx off on the sender's veth (no TSO)")
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--top", action="store_true", help="print the most sampled functions of each run")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("perf_writes: needs root (namespaces, perf of kernel code) -- run it with sudo", file=sys.stderr)
        return 2
    for tool in ("perf", "iperf3", "ip", "ethtool"):
        if shutil.which(tool) is None:
            print(f"perf_writes: {tool} not found -- run ./setup.sh (it installs the collector's tools)", file=sys.stderr)
            return 2
    print(f"load: {open('/proc/loadavg').read().strip()}; kernel {os.uname().release}; "
          f"tx {'off' if a.tx_off else 'on (TSO)'}")
    results = []
    try:
        setup(a.tx_off)
        sh(f"ip netns exec {NS_RX} iperf3 -s -D")
        sh("sleep 0.5")
        with tempfile.TemporaryDirectory() as tmp:
            for size in a.sizes:
                r = run_size(size, a.seconds, tmp)
                results.append(r)
                print(f"\n-l {size}: {r['gbit_s']:.2f} Gbit/s, {r['writes']:.0f} writes, {r['skbs']} skbs "
                      f"({r['bytes'] / r['skbs'] / 1e3:.1f} KB each), client CPU {r['cpu_s']:.2f} s of {a.seconds:g} "
                      f"sampled (iperf3's own getrusage: {r['iperf3_cpu_s']:.2f} s)")
                print(f"    context switches per write {r['switches_per_write']:.3f}, CPU per write "
                      f"{r['task_us_per_write']:.1f} us (a second run under perf stat)")
                if a.top:
                    print("    top functions: " + "\n                   ".join(r["top"]))
                print(f"    {'category':28s} {'us/write':>9s} {'us/skb':>8s}")
                for k, v in sorted(r["us_per_write"].items(), key=lambda kv: -kv[1]):
                    print(f"    {k:28s} {v:9.2f} {r['us_per_skb'][k]:8.2f}")
                print(f"    {'total':28s} {sum(r['us_per_write'].values()):9.2f} {sum(r['us_per_skb'].values()):8.2f}")
    finally:
        teardown()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
