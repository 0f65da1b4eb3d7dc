"""Measure what bounds Linux's in-flight data behind a shaper (issue 18).

Two namespaces over a veth this script creates; a shaper (HTB or TBF) on the
sender's veth; ``iperf3 -C CC -P N`` with ``ping -i 0.05`` beside it; ``ss -tin``
sampled every 50 ms on both ends and ``tc -s qdisc`` backlog on the shaper.
Writes one gzipped JSON file of raw samples per run under data/local/tcp_window/.

    sudo .venv/bin/python validation/tcp_window/probe.py --rate 20mbit --flows 2 --cc cubic
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import statistics
import subprocess
import threading
import time
from pathlib import Path

A, B, R = "tcpw-a", "tcpw-b", "tcpw-r"
IP_A, IP_B, IP_A_R = "10.231.0.1", "10.231.0.2", "10.231.1.1"
SHAPED = (A, "va")


def sh(cmd: str, check=True) -> str:
    return subprocess.run(cmd, shell=True, check=check, capture_output=True, text=True).stdout


def ns(n: str, cmd: str, check=True) -> str:
    return sh(f"ip netns exec {n} {cmd}", check)


def setup(shaper: str, rate: str, sysctls: dict[str, str], limit: int | None, gso: bool, router: bool,
          bridge: bool = False):
    """Sender A -- veth -- B; with ``router`` A -- R -- B, the shaper on R's port towards B;
    with ``bridge`` A -- (Linux bridge in R) -- B, the shaper on the bridge port towards B
    (ovssim's ``local_netns`` scenario with a Linux bridge and a qdisc on ns2's VIF port)."""
    teardown()
    sh(f"ip netns add {A}; ip netns add {B}")
    if bridge:
        sh(f"ip netns add {R}")
        sh(f"ip link add va type veth peer name ra; ip link set va netns {A}; ip link set ra netns {R}")
        sh(f"ip link add va2 type veth peer name vb; ip link set va2 netns {R}; ip link set vb netns {B}")
        ns(R, "ip link add br0 type bridge"); ns(R, "ip link set ra master br0"); ns(R, "ip link set va2 master br0")
        for d in ("ra", "va2", "br0"):
            ns(R, f"ip link set {d} up")
        ns(A, f"ip addr add {IP_A}/24 dev va"); ns(B, f"ip addr add {IP_B}/24 dev vb")
        for n, d in ((A, "va"), (B, "vb")):
            ns(n, f"ip link set {d} up"); ns(n, "ip link set lo up")
    elif router:
        sh(f"ip netns add {R}")
        sh(f"ip link add va type veth peer name ra; ip link set va netns {A}; ip link set ra netns {R}")
        sh(f"ip link add va2 type veth peer name vb; ip link set va2 netns {R}; ip link set vb netns {B}")
        ns(R, "ip addr add 10.231.1.254/24 dev ra"); ns(R, "ip addr add 10.231.0.254/24 dev va2")
        ns(R, "ip link set ra up"); ns(R, "ip link set va2 up"); ns(R, "sysctl -qw net.ipv4.ip_forward=1")
        ns(A, f"ip addr add {IP_A_R}/24 dev va"); ns(B, f"ip addr add {IP_B}/24 dev vb")
        ns(A, "ip link set va up"); ns(B, "ip link set vb up")
        ns(A, "ip route add default via 10.231.1.254"); ns(B, "ip route add default via 10.231.0.254")
        ns(A, "ip link set lo up"); ns(B, "ip link set lo up")
    else:
        sh(f"ip link add va type veth peer name vb; ip link set va netns {A}; ip link set vb netns {B}")
        ns(A, f"ip addr add {IP_A}/24 dev va"); ns(B, f"ip addr add {IP_B}/24 dev vb")
        for n, d in ((A, "va"), (B, "vb")):
            ns(n, f"ip link set {d} up"); ns(n, "ip link set lo up")
    if not gso:
        ns(A, "ethtool -K va tso off gso off")
    shaped, dev = (R, "va2") if (router or bridge) else (A, "va")
    global SHAPED
    SHAPED = (shaped, dev)
    for n in (A, B):
        for k, v in sysctls.items():
            ns(n, f"sysctl -qw {k}='{v.replace(',', ' ')}'")
    if shaper == "htb":
        ns(shaped, f"tc qdisc add dev {dev} root handle 1: htb default 10")
        ns(shaped, f"tc class add dev {dev} parent 1: classid 1:10 htb rate {rate} ceil {rate}")
        if limit:
            ns(shaped, f"tc qdisc add dev {dev} parent 1:10 handle 10: pfifo limit {limit}")
    elif shaper == "tbf":
        ns(shaped, f"tc qdisc add dev {dev} root handle 1: tbf rate {rate} burst 32kb latency 400ms")


def teardown():
    for n in (A, B, R):
        sh(f"ip netns del {n}", check=False)


SS_FIELDS = {
    "cwnd": r"\bcwnd:(\d+)", "ssthresh": r"ssthresh:(\d+)", "rtt": r"\brtt:([\d.]+)/",
    "unacked": r"unacked:(\d+)", "bytes_in_flight": r"\bbif:(\d+)|bytes_in_flight:(\d+)",
    "notsent": r"notsent:(\d+)", "pacing_rate": r"pacing_rate (\S+)",
    "snd_wnd": r"snd_wnd:(\d+)", "rcv_space": r"rcv_space:(\d+)", "rcv_ssthresh": r"rcv_ssthresh:(\d+)",
    "rcv_wnd": r"rcv_wnd:(\d+)", "rwnd_limited": r"rwnd_limited:(\d+)ms", "sndbuf_limited": r"sndbuf_limited:(\d+)ms",
    "busy": r"busy:(\d+)ms", "rb": r"\brb(\d+)", "tb": r"\btb(\d+)", "wmem_queued": r"\bw(\d+)", "rmem_alloc": r"\(r(\d+)",
    "mss": r"\bmss:(\d+)", "wscale": r"wscale:(\S+)",
    "skmem": r"skmem:\(([^)]*)\)", "delivery_rate": r"delivery_rate (\S+)",
    # BBR's state (tcp_bbr_info: bw, min_rtt, gains) and the rate sampler's (28 Nov)
    "bbr": r"bbr:\(([^)]*)\)", "minrtt": r"minrtt:([\d.]+)", "delivered": r"\bdelivered:(\d+)",
    "app_limited": r"\b(app_limited)\b", "lastack": r"lastack:(\d+)", "data_segs_out": r"data_segs_out:(\d+)",
}


PORT = 5201


def parse_ss(text: str, port: int | None = None) -> list[dict]:
    port = PORT if port is None else port
    out = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if f":{port}" in line and i + 1 < len(lines) and lines[i + 1][:1].isspace():
            info = lines[i + 1]
            addrs = re.findall(r"\d+\.\d+\.\d+\.\d+:\d+", line)
            rec = {"peer": addrs[-1] if addrs else line.split()[-1], "local": addrs[0] if addrs else line.split()[-2]}
            for k, rx in SS_FIELDS.items():
                m = re.search(rx, info)
                if m:
                    rec[k] = next(g for g in m.groups() if g is not None)
            out.append(rec)
    return out


def sampler(stop, records, period=0.05, snd_only=False):
    """Every ``period`` s: ss on both ends and the shaper's backlog; with ``snd_only`` the sender's ss alone
    (one fork a sample instead of three: the forks compete with the flows for the 2 cores)."""
    while not stop.is_set():
        t = time.time()
        snd = ns(A, "ss -tinme state established", check=False)
        rcv = "" if snd_only else ns(B, "ss -tinme state established", check=False)
        q = "" if snd_only else ns(SHAPED[0], f"tc -s qdisc show dev {SHAPED[1]}", check=False)
        backlog = [int(m) for m in re.findall(r"backlog (\d+)b", q)]
        pkts = [int(m) for m in re.findall(r"backlog \d+b (\d+)p", q)]
        drops = [int(m) for m in re.findall(r"dropped (\d+)", q)]
        records.append({"t": t, "snd": parse_ss(snd), "rcv": parse_ss(rcv), "backlog": backlog,
                        "backlog_pkts": pkts, "drops": drops})
        time.sleep(max(0.0, period - (time.time() - t)))


def run(args) -> dict:
    from ovssim.collect.state import measure
    machine = measure(repeats=1)                 # the collector's machine state (speed index, load, steal)
    sysctls = dict(kv.split("=", 1) for kv in args.sysctl)
    setup(args.shaper, args.rate, sysctls, args.limit, not args.no_gso, args.router, args.bridge)
    try:
        # --nice: both iperf3 processes at this nice value (e.g. -20: a writer and reader that other jobs on a
        # shared machine do not hold off the CPU)
        prio = f"nice -n {args.nice} " if getattr(args, "nice", None) is not None else ""
        srv = subprocess.Popen(f"ip netns exec {B} {prio}iperf3 -s -1 -p {PORT}", shell=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        stop = threading.Event(); recs: list = []
        th = threading.Thread(target=sampler, args=(stop, recs, args.period, args.snd_only)); th.start()
        ping = subprocess.Popen(f"ip netns exec {A} ping -i 0.05 -w {args.time + 1} {IP_B}", shell=True,
                                stdout=subprocess.PIPE, text=True)
        time.sleep(0.5)
        cc = f"-C {args.cc}" if args.cc else ""
        ip = subprocess.run(f"ip netns exec {A} {prio}iperf3 -c {IP_B} -p {PORT} {cc} -P {args.flows} -t {args.time} -J",
                            shell=True, capture_output=True, text=True)
        pout, _ = ping.communicate()
        stop.set(); th.join(); srv.wait(timeout=10)
    finally:
        teardown()
    js = json.loads(ip.stdout)
    t0 = js["start"]["timestamp"]["timesecs"]
    pings = [(float(m.group(1)), float(m.group(2)))
             for m in re.finditer(r"icmp_seq=(\d+) ttl=\d+ time=([\d.]+)", pout)]
    end = js["end"]
    streams = end["streams"]
    res = {
        "args": vars(args), "pings": pings, "samples": recs, "machine": machine,
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "iperf3": {"bps": end["sum_received"]["bits_per_second"],
                   "retransmits": end["sum_sent"].get("retransmits"),
                   "max_snd_cwnd": [s["sender"].get("max_snd_cwnd") for s in streams],
                   "max_rtt_us": [s["sender"].get("max_rtt") for s in streams],
                   "cc": end.get("sender_tcp_congestion"), "start": t0},
    }
    return res


def summary(res) -> dict:
    # pings during the transfer (skip the first 10 pings = 0.5 s before iperf3 starts, and 1 s of slow start)
    rtts = [r for s, r in res["pings"] if 30 <= s <= 30 + 20 * (res["args"]["time"] - 1)]
    def field_max(side, key):
        v = [int(x[key]) for r in res["samples"] for x in r[side] if key in x and x[key].isdigit()]
        return max(v) if v else None
    bl = [sum(r["backlog"][:1]) for r in res["samples"] if r["backlog"]]
    bp = [sum(r.get("backlog_pkts", [0])[:1]) for r in res["samples"] if r.get("backlog_pkts")]
    dr = [r.get("drops", [0])[0] for r in res["samples"] if r.get("drops")]
    return {"ping_mean_ms": round(statistics.mean(rtts), 1), "ping_max_ms": max(rtts), "n": len(rtts),
            "mbps": round(res["iperf3"]["bps"] / 1e6, 2), "retr": res["iperf3"]["retransmits"],
            "max_snd_cwnd_kB": [round((c or 0) / 1e3) for c in res["iperf3"]["max_snd_cwnd"]],
            "max_cwnd_seg": field_max("snd", "cwnd"), "max_unacked": field_max("snd", "unacked"),
            "max_notsent": field_max("snd", "notsent"), "max_snd_wnd": field_max("snd", "snd_wnd"),
            "max_rcv_space": field_max("rcv", "rcv_space"), "max_rcv_ssthresh": field_max("rcv", "rcv_ssthresh"),
            "max_rb": field_max("rcv", "rb"), "max_tb": field_max("snd", "tb"), "max_wq": field_max("snd", "wmem_queued"),
            "rwnd_limited_ms": [x.get("rwnd_limited") for x in res["samples"][-3]["snd"]] if len(res["samples"]) > 3 else None,
            "sndbuf_limited_ms": [x.get("sndbuf_limited") for x in res["samples"][-3]["snd"]] if len(res["samples"]) > 3 else None,
            "max_backlog_B": max(bl) if bl else None, "max_backlog_skbs": max(bp) if bp else None,
            "qdisc_drops": max(dr) if dr else None}


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--shaper", default="htb", choices=["htb", "tbf", "none"])
    p.add_argument("--rate", default="20mbit")
    p.add_argument("--flows", type=int, default=2)
    p.add_argument("--cc", default="cubic")
    p.add_argument("--time", type=int, default=8)
    p.add_argument("--limit", type=int, default=None, help="pfifo limit under the HTB class")
    p.add_argument("--sysctl", action="append", default=[], help="net.ipv4.x=value in both namespaces")
    p.add_argument("--no-gso", action="store_true", help="ethtool -K va tso off gso off on the sender")
    p.add_argument("--router", action="store_true", help="shaper on a router namespace's port, not the sender's")
    p.add_argument("--bridge", action="store_true", help="a Linux bridge in a third namespace; shaper on its port to B")
    p.add_argument("--period", type=float, default=0.05, help="ss sampling period (s)")
    p.add_argument("--snd-only", action="store_true", help="sample only the sender's ss (no receiver ss, no tc)")
    p.add_argument("--tag", default="")
    p.add_argument("--ns-prefix", default="tcpw", help="the namespaces' names: PREFIX-a, -b, -r (another job's "
                   "probe may hold tcpw-*)")
    p.add_argument("--port", type=int, default=5201, help="iperf3's port (-p)")
    p.add_argument("--nice", type=int, default=None, help="run both iperf3 processes at this nice value")
    p.add_argument("--out", default=str(Path(__file__).resolve().parents[2] / "data/local/tcp_window"))
    args = p.parse_args()
    A, B, R = (f"{args.ns_prefix}-{x}" for x in "abr")
    PORT = args.port
    res = run(args)
    s = summary(res)
    where = "bridge" if args.bridge else "router" if args.router else "sender"
    name = (f"{where}_{args.shaper}_{args.rate}_P{args.flows}_{args.cc}{('_' + args.tag) if args.tag else ''}"
            f"_{int(time.time())}")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    res["summary"] = s
    with gzip.open(Path(args.out, name + ".json.gz"), "wt") as fh:
        json.dump(res, fh)
    print(name, json.dumps(s))
