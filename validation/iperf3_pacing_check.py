"""iperf3's UDP send pattern and its jitter behind tc HTB: the real tool and kernel vs ovssim.

Builds a veth pair between two network namespaces of its own, runs ``iperf3 -u -b 40M -l 1400``
across it (unshaped, then with ``tc htb`` rate = ceil = 50 Mbit/s on the sender's veth), records
every datagram's arrival with a kernel timestamp (an AF_PACKET socket with SO_TIMESTAMPNS in the
receiver's namespace) and iperf3's own sender timestamp, and compares with ovssim's
``tool = "iperf3"`` sender (``ovssim.workloads.udp.Iperf3Udp``) through the same qdisc:
burst sizes, burst spacing, the transit of the datagrams of a burst, and iperf3's jitter.
Writes validation/iperf3_pacing_check.md.  Needs root and iperf3 (./setup.sh installs it).

    sudo .venv/bin/python validation/iperf3_pacing_check.py [--secs 2]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

NS_A, NS_B = "ovssim-i3a", "ovssim-i3b"
ADDR_A, ADDR_B = "10.213.0.1", "10.213.0.2"
SO_TIMESTAMPNS = 35
RATE, LENGTH = 40e6, 1400


def sh(*cmd: str, check: bool = True) -> str:
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode:
        raise SystemExit(f"iperf3_pacing_check: `{' '.join(cmd)}` failed: {r.stderr.strip()}")
    return r.stdout


def setup() -> None:
    teardown()
    sh("ip", "netns", "add", NS_A)
    sh("ip", "netns", "add", NS_B)
    sh("ip", "link", "add", "i3a", "netns", NS_A, "type", "veth", "peer", "name", "i3b", "netns", NS_B)
    for ns, dev, addr in ((NS_A, "i3a", ADDR_A), (NS_B, "i3b", ADDR_B)):
        sh("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
        sh("ip", "-n", ns, "link", "set", dev, "up")
        sh("ip", "-n", ns, "link", "set", "lo", "up")


def teardown() -> None:
    for ns in (NS_A, NS_B):
        sh("ip", "netns", "del", ns, check=False)


def capture(secs: float, out: str) -> None:
    """Runs inside NS_B (``--capture``): every iperf3 datagram's arrival time and send stamp."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    s.bind(("i3b", 0))
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.settimeout(0.2)
    rec = []
    t_end = time.time() + secs
    while time.time() < t_end:
        try:
            data, anc, _, addr = s.recvmsg(2048, 1024)
        except socket.timeout:
            continue
        if addr[2] == socket.PACKET_OUTGOING or len(data) < 54 or data[23] != 17:
            continue
        udp = 14 + (data[14] & 15) * 4
        if struct.unpack("!H", data[udp + 2:udp + 4])[0] != 5201:
            continue
        ts = next(struct.unpack("qq", d[:16]) for lvl, typ, d in anc if typ == SO_TIMESTAMPNS)
        sec, usec, seq = struct.unpack("!III", data[udp + 8:udp + 20])
        rec.append((ts[0] + ts[1] * 1e-9, sec + usec * 1e-6, seq))
    Path(out).write_text(json.dumps(rec))


def measure(secs: float, htb: bool, tmp: Path) -> dict:
    sh("ip", "netns", "exec", NS_A, "tc", "qdisc", "del", "dev", "i3a", "root", check=False)
    if htb:
        sh("ip", "netns", "exec", NS_A, "tc", "qdisc", "add", "dev", "i3a", "root", "handle", "1:", "htb", "default", "1")
        sh("ip", "netns", "exec", NS_A, "tc", "class", "add", "dev", "i3a", "parent", "1:", "classid", "1:1",
           "htb", "rate", "50mbit", "ceil", "50mbit")
    cap = tmp / f"cap{int(htb)}.json"
    srv = subprocess.Popen(["ip", "netns", "exec", NS_B, "iperf3", "-s", "-1", "-J"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
    time.sleep(0.5)
    cp = subprocess.Popen(["ip", "netns", "exec", NS_B, sys.executable, __file__, "--capture", str(secs + 1.5),
                           str(cap)])
    time.sleep(0.3)
    sh("ip", "netns", "exec", NS_A, "iperf3", "-c", ADDR_B, "-u", "-b", "40M", "-l", str(LENGTH), "-t", str(secs))
    cp.wait()
    out, _ = srv.communicate(timeout=30)
    rec = np.array(json.loads(cap.read_text()))
    return {"arrive": rec[:, 0], "sent": rec[:, 1], "jitter_ms": json.loads(out)["end"]["sum"]["jitter_ms"]}


def simulate(secs: float, htb: bool, send_cost: float) -> dict:
    import simpy

    from ovssim.path.cpu import CpuPool
    from ovssim.path.endpoint import Endpoint
    from ovssim.path.port import EgressPort
    from ovssim.runner import rng_factory
    from ovssim.sched import run_until
    from ovssim.workloads.base import RunContext
    from ovssim.workloads.registry import make_workload

    env = simpy.Environment()
    dst = Endpoint(env, "b", None)
    seen = []

    class Tap:
        def put(self, pkt):
            seen.append((pkt.t, pkt.created))
            dst.put(pkt)

    q = ({"kind": "htb", "default": "1", "classes": [{"classid": "1:1", "parent": "1:", "rate": "50mbit",
                                                       "ceil": "50mbit"}]} if htb else {"kind": "pfifo"})
    port = EgressPort(env, 10e9, q, Tap(), name="i3a", lookahead=True)
    src = Endpoint(env, "a", port, cpu=CpuPool(env, 1, "a.cpu"))
    wl = make_workload({"tool": "iperf3", "proto": "udp", "b": "40mbit", "l": f"{LENGTH}b", "t": f"{secs}s"})
    wl.start(RunContext(env, src, dst, secs, rng_factory(1, 0), extra={"app": {"send_per_packet": send_cost}}))
    run_until(env, secs + 0.5)
    a = np.array(seen)
    return {"arrive": a[:, 0], "sent": a[:, 1], "jitter_ms": {m.name: m.value for m in wl.metrics()}["jitter"]}


def pattern(r: dict) -> dict:
    sent = r["sent"]                  # bursts are found on the send times (iperf3's own stamps)
    gaps = np.diff(sent)
    cut = np.where(gaps > 150e-6)[0]
    first = np.r_[0, cut + 1]         # each burst's first datagram
    sizes = np.diff(np.r_[-1, cut, len(sent) - 1])[1:-1]     # whole bursts only
    inner = gaps[gaps <= 150e-6]
    tr = r["arrive"] - sent
    rel = [tr[b:b + 4] - tr[b] for b, n in zip(first[1:-1], sizes) if n >= 4]
    starts = sent[first]
    return {"datagrams": len(sent), "burst_mean": float(sizes.mean()),
            "burst_3_4": float(np.mean((sizes == 3) | (sizes == 4))),
            "interval_median_us": float(np.median(np.diff(starts)) * 1e6),
            "inner_gap_median_us": float(np.median(inner) * 1e6) if inner.size else float("nan"),
            "rel_transit_us": (np.median(np.array(rel), axis=0) * 1e6).round(0).tolist() if rel else [],
            "jitter_ms": r["jitter_ms"]}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--capture":
        capture(float(sys.argv[2]), sys.argv[3])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--secs", type=float, default=2.0)
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("iperf3_pacing_check: needs root (network namespaces, tc); run it with sudo")
    for tool in ("iperf3", "tc", "ip"):
        if shutil.which(tool) is None:
            raise SystemExit(f"iperf3_pacing_check: {tool} is not installed; run ./setup.sh (as root)")
    rows = []
    with tempfile.TemporaryDirectory() as d:
        try:
            setup()
            real = {htb: measure(args.secs, htb, Path(d)) for htb in (False, True)}
        finally:
            teardown()
    # the sendto() cost the model is given: the measured median gap inside a burst, unshaped
    cost = pattern(real[False])["inner_gap_median_us"] * 1e-6
    for htb in (False, True):
        rows.append(("tc htb 50mbit" if htb else "unshaped", pattern(real[htb]), pattern(simulate(args.secs, htb, cost))))
    lines = ["# iperf3 UDP pacing: the real tool and kernel vs ovssim (generated by validation/iperf3_pacing_check.py)",
             "", f"`iperf3 -u -b 40M -l {LENGTH} -t {args.secs:g}` over a veth pair between two namespaces, "
             f"iperf3 {sh('iperf3', '--version').split()[1]}, kernel {os.uname().release}; ovssim's "
             f"`tool = \"iperf3\"` with the measured sendto() spacing ({cost * 1e6:.1f} us) as its send cost.",
             "Bursts are runs of datagrams less than 150 us apart; *transit of a 4-burst* is each datagram's "
             "transit minus the burst's first one (medians).", "",
             "| qdisc | | datagrams | mean burst | bursts of 3-4 | burst interval (median, us) | "
             "gap inside a burst (median, us) | transit of a 4-burst (us) | iperf3 jitter (ms) |",
             "|---|---|---:|---:|---:|---:|---:|---|---:|"]
    for name, m, s in rows:
        for who, r in (("measured", m), ("ovssim", s)):
            lines.append(f"| {name} | {who} | {r['datagrams']} | {r['burst_mean']:.2f} | {r['burst_3_4']:.0%} | "
                         f"{r['interval_median_us']:.1f} | {r['inner_gap_median_us']:.1f} | "
                         f"{', '.join(f'{x:g}' for x in r['rel_transit_us'])} | {r['jitter_ms']:.4f} |")
    out = ROOT / "validation" / "iperf3_pacing_check.md"
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
