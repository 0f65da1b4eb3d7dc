"""How many segments one skb and one ACK carry behind a shaper on this host (issue 18).

The sender placement of ``probe.py`` (two namespaces over one veth, HTB or TBF on the sender's
veth; ``--bridge``: the shaper on a Linux bridge's port) with ``iperf3 -C CC -P 1``, and in the sender's
namespace an AF_PACKET socket on its veth that records every data skb leaving it (a GSO skb whole:
the veth passes it unsegmented) and every ACK coming back.  Prints the segments per data skb, the
segments newly acknowledged per ACK and the segments in flight beyond the veth when an ACK arrives,
and writes the raw records (``t``, ``dir`` out/in, payload bytes, ``seq``, ``ack``, client port) and
the machine state as one gzipped JSON under data/local/tcp_window/ack_train/.

    sudo .venv/bin/python validation/tcp_window/ack_train.py --rate 20mbit --cc bbr --time 6
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import socket
import struct
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import probe  # noqa: E402  (same folder: the namespaces and shaper it sets up)

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
PORT = 5201


def sniff(dev: str, seconds: float, out: str) -> None:
    """Run inside the sender's namespace: record iperf3's skbs and ACKs (port 5201) on ``dev``."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((dev, 0))
    s.settimeout(0.2)
    recs = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            frame, addr = s.recvfrom(262144)
        except socket.timeout:
            continue
        t = time.monotonic()
        if len(frame) < 54 or frame[12:14] != b"\x08\x00" or frame[23] != 6:
            continue
        ihl = (frame[14] & 0x0F) * 4
        tot = struct.unpack("!H", frame[16:18])[0]
        tcp = 14 + ihl
        sport, dport, seq, ack = struct.unpack("!HHII", frame[tcp:tcp + 12])
        doff = (frame[tcp + 12] >> 4) * 4
        payload = tot - ihl - doff
        out_dir = addr[2] == PACKET_OUTGOING
        if PORT not in (sport, dport):
            continue
        recs.append((round(t, 6), "out" if out_dir else "in", payload, seq, ack, dport if sport == PORT else sport))
    with open(out, "w") as fh:
        json.dump(recs, fh)


def analyse(recs: list, mss: int) -> dict:
    """Segments per data skb leaving the sender, segments newly acknowledged per ACK, and segments in
    flight (highest sequence sent less the highest ACK) when each ACK arrives -- for iperf3's data
    connection, the client port that sent the most bytes (its control connection shares port 5201)."""
    sent = Counter()
    for r in recs:
        if r[1] == "out":
            sent[r[5]] += r[2]
    if not sent:
        return {}
    port = sent.most_common(1)[0][0]
    skb_segs, acked, flight = Counter(), Counter(), []
    high = nxt = None
    for _, d, length, seq, ack, p in recs:
        if p != port:
            continue
        if d == "out":
            if length:
                skb_segs[-(-length // mss)] += 1
                end = (seq + length) % (1 << 32)
                if nxt is None or 0 < (end - nxt) % (1 << 32) < 1 << 30:
                    nxt = end
            continue
        step = (ack - high) % (1 << 32) if high is not None else 0
        if high is None or 0 < step < 1 << 24:          # forward, by less than 16 MB
            if step:
                acked[-(-step // mss)] += 1
            high = ack
            if nxt is not None:
                flight.append(((nxt - ack) % (1 << 32)) / mss)
    flight.sort()
    return {"skb_segs": dict(sorted(skb_segs.items())), "acked_segs": dict(sorted(acked.items())),
            "flight_segs_quartiles": [round(flight[int(q * (len(flight) - 1))], 1) for q in (0.25, 0.5, 0.75)]
            if flight else []}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shaper", default="htb", choices=["htb", "tbf"])
    ap.add_argument("--rate", default="20mbit")
    ap.add_argument("--cc", default="bbr")
    ap.add_argument("--time", type=int, default=6)
    ap.add_argument("--mss", type=int, default=1448)
    ap.add_argument("--bridge", action="store_true", help="the shaper on a Linux bridge's port (probe.py --bridge)")
    ap.add_argument("--receiver", action="store_true",
                    help="also record on the receiver's veth (vb, in its namespace): data skbs in, ACKs out")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[2] / "data/local/tcp_window/ack_train"))
    ap.add_argument("--sniff", nargs=3, metavar=("DEV", "SECONDS", "FILE"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.sniff:
        sniff(a.sniff[0], float(a.sniff[1]), a.sniff[2])
        return
    if os.geteuid() != 0:
        sys.exit("ack_train.py: error: needs root (it creates network namespaces); run it with sudo")
    from ovssim.collect.state import measure
    machine = measure(repeats=1)
    probe.setup(a.shaper, a.rate, {}, None, True, False, a.bridge)
    raw = f"/tmp/ack_train_{os.getpid()}.json"
    try:
        srv = subprocess.Popen(f"ip netns exec {probe.B} iperf3 -s -1", shell=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        sn = subprocess.Popen([f"ip netns exec {probe.A} {sys.executable} {__file__} --sniff va {a.time + 1} {raw}"],
                              shell=True)
        raw_rx = f"/tmp/ack_train_rx_{os.getpid()}.json"
        sn_rx = (subprocess.Popen([f"ip netns exec {probe.B} {sys.executable} {__file__} --sniff vb {a.time + 1} {raw_rx}"],
                                  shell=True) if a.receiver else None)
        time.sleep(0.3)
        ip = subprocess.run(f"ip netns exec {probe.A} iperf3 -c {probe.IP_B} -C {a.cc} -t {a.time} -J",
                            shell=True, capture_output=True, text=True)
        sn.wait(timeout=a.time + 10)
        srv.wait(timeout=10)
        recs = json.loads(Path(raw).read_text())
        rx_recs = None
        if sn_rx is not None:
            sn_rx.wait(timeout=a.time + 10)
            rx_recs = json.loads(Path(raw_rx).read_text())
            Path(raw_rx).unlink(missing_ok=True)
    finally:
        probe.teardown()
        Path(raw).unlink(missing_ok=True)
    js = json.loads(ip.stdout)
    t0 = recs[0][0] if recs else 0.0
    steady = [r for r in recs if r[0] - t0 > 1.5]          # past startup and drain
    res = {"args": vars(a), "machine": machine, "bps": js["end"]["sum_received"]["bits_per_second"],
           "records": recs, "steady": analyse(steady, a.mss)}
    if rx_recs is not None:
        res["rx_records"] = rx_recs                        # on vb: "in" data skbs, "out" ACKs (same clock)
    Path(a.out).mkdir(parents=True, exist_ok=True)
    name = Path(a.out) / f"{'bridge' if a.bridge else 'sender'}_{a.shaper}_{a.rate}_{a.cc}_{int(time.time())}.json.gz"
    with gzip.open(name, "wt") as fh:
        json.dump(res, fh)
    st = res["steady"]
    print(f"{name.name}: {res['bps'] / 1e6:.2f} Mbit/s, speed index {machine.get('speed_index')}")
    print(f"  segments in flight at an ACK, quartiles: {st.get('flight_segs_quartiles')}")
    for k in ("skb_segs", "acked_segs"):
        c = st.get(k, {})
        n = sum(c.values()) or 1
        mean = sum(int(s) * v for s, v in c.items()) / n
        print(f"  {k}: mean {mean:.1f} over {n}; " + " ".join(f"{s}:{v}" for s, v in c.items()))


if __name__ == "__main__":
    main()
