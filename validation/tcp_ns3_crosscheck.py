"""Cross-check ovssim's TCP against ns-3's on the same dumbbell.

One CUBIC bulk flow from A to B over a 100 Mbit/s, 10 ms link (20 ms base
RTT), first through a 1000-packet FIFO, then through FQ-CoDel (Linux
defaults), built the same way in both simulators:

* ns-3: two nodes, a point-to-point link (100 Mbps, 10 ms), a 1-packet device
  queue under the traffic-control layer's FifoQueueDisc (1000p) or
  FqCoDelQueueDisc, TcpCubic with Linux-like settings (1448-byte segments,
  initial window 10, SACK, timestamps, delayed ACK every 2 segments or 40 ms,
  200 ms minimum RTO, 2 MiB / 3 MiB send / receive buffers), BulkSend ->
  PacketSink.
* ovssim: two Endpoints joined by two EgressPorts (one per direction) with
  the same rate, delay and qdisc, and ``ovssim.tcp`` with its Linux defaults.
  The ports count PPP framing (IP packet + 2 bytes, as ns-3's point-to-point
  device) instead of Ethernet's, so both carry the same bits per segment.

Prints goodput, retransmissions and the RTT distribution side by side; the
goal is goodput within 2% of ns-3's.  ``--write`` saves the table to
``validation/tcp_ns3_crosscheck.md``.

ns-3 lives in its own virtual environment, because its package is called
``ns``::

    python3 -m venv /work/ns3-venv && /work/ns3-venv/bin/pip install ns3

Point ``--ns3-python`` (or ``OVSSIM_NS3_PYTHON``) at that interpreter; when
it is missing, only the ovssim side runs and the script says so.

Run: ``.venv/bin/python validation/tcp_ns3_crosscheck.py [--duration 10] [--write]``
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_NS3_PYTHON = "/work/ns3-venv/bin/python"
RATE = 100e6
DELAY = 0.010
FIFO_LIMIT = 1000
QDISCS = ("fifo", "fq_codel")
PPP_OVERHEAD = 2          # ns-3 PointToPointNetDevice: PPP header on the IP packet


def _percentile(sorted_vals, q: float) -> float:
    """Linear-interpolated percentile (numpy's default); pure Python, for the ns-3 venv."""
    pos = (len(sorted_vals) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def _summary(rtts_s, goodput, retx, wall, extra=None) -> dict:
    r = sorted(float(x) * 1e3 for x in rtts_s)
    out = {"goodput_mbps": goodput, "retransmits": int(retx), "wall_s": wall, "rtt_n": len(r)}
    if r:
        out.update({"rtt_mean_ms": sum(r) / len(r), "rtt_p10_ms": _percentile(r, 10),
                    "rtt_p50_ms": _percentile(r, 50), "rtt_p90_ms": _percentile(r, 90),
                    "rtt_p99_ms": _percentile(r, 99)})
    out.update(extra or {})
    return out


# -- ovssim ---------------------------------------------------------------------------
def run_ovssim(qdisc: str, duration: float) -> dict:
    import simpy  # noqa: PLC0415

    from ovssim.packet import ETH_HEADER  # noqa: PLC0415
    from ovssim.path.endpoint import Endpoint  # noqa: PLC0415
    from ovssim.path.port import EgressPort  # noqa: PLC0415
    from ovssim.tcp import connect  # noqa: PLC0415

    def q():
        return {"kind": "pfifo", "limit": FIFO_LIMIT} if qdisc == "fifo" else {"kind": "fq_codel"}

    env = simpy.Environment()
    a, b = Endpoint(env, "a"), Endpoint(env, "b")
    framing = PPP_OVERHEAD - ETH_HEADER     # Packet.size counts an Ethernet header
    fwd = EgressPort(env, RATE, q(), out=b, prop_delay=DELAY, framing=framing, name="a-b")
    rev = EgressPort(env, RATE, q(), out=a, prop_delay=DELAY, framing=framing, name="b-a")
    a.out, b.out = fwd, rev
    c, s = connect(env, a, b, 5001, cc="cubic")
    c.bulk(duration)
    t0 = time.perf_counter()
    env.run(until=duration)
    wall = time.perf_counter() - t0
    snd = c.sender
    return _summary(snd.rtt_samples, s.receiver.bytes_received * 8 / duration / 1e6, snd.retransmits,
                    wall, {"qdisc_drops": int(fwd.dropped), "timeouts": snd.timeouts})


# -- ns-3 (runs in the ns-3 interpreter) ----------------------------------------------------
_NS3_HOOKS = r'''
#include <vector>
namespace ovxc {
  std::vector<double> rtt;
  uint64_t highest = 0, retx = 0, data_tx = 0;
  void Reset() { rtt.clear(); highest = 0; retx = 0; data_tx = 0; }
  void OnRtt(ns3::Time, ns3::Time now) { rtt.push_back(now.GetSeconds()); }
  void OnTx(ns3::Ptr<const ns3::Packet> p, const ns3::TcpHeader& h, ns3::Ptr<const ns3::TcpSocketBase>) {
    uint32_t n = p->GetSize();
    if (n == 0) return;
    data_tx++;
    uint64_t seq = h.GetSequenceNumber().GetValue();
    if (seq + n <= highest) retx++; else highest = seq + n;
  }
  void Hook() {
    ns3::Config::ConnectWithoutContext("/NodeList/0/$ns3::TcpL4Protocol/SocketList/0/RTT", ns3::MakeCallback(&OnRtt));
    ns3::Config::ConnectWithoutContext("/NodeList/0/$ns3::TcpL4Protocol/SocketList/0/Tx", ns3::MakeCallback(&OnTx));
  }
  void ScheduleHook(double t) { ns3::Simulator::Schedule(ns3::Seconds(t), &Hook); }
}
'''


def ns3_worker(qdiscs, duration: float) -> None:
    """Run the dumbbell in ns-3 for each qdisc; print one JSON object per line."""
    import cppyy  # noqa: PLC0415
    from ns import ns  # noqa: PLC0415

    cppyy.cppdef(_NS3_HOOKS)
    hooks = cppyy.gbl.ovxc
    cfg = ns.Config.SetDefault
    cfg("ns3::TcpL4Protocol::SocketType", ns.StringValue("ns3::TcpCubic"))
    cfg("ns3::TcpSocket::SegmentSize", ns.UintegerValue(1448))
    cfg("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(10))
    cfg("ns3::TcpSocket::DelAckCount", ns.UintegerValue(2))
    cfg("ns3::TcpSocket::DelAckTimeout", ns.TimeValue(ns.MilliSeconds(40)))
    cfg("ns3::TcpSocket::SndBufSize", ns.UintegerValue(2 * 1024 * 1024))
    cfg("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(3 * 1024 * 1024))
    cfg("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.MilliSeconds(200)))
    cfg("ns3::TcpSocketBase::Sack", ns.BooleanValue(True))
    cfg("ns3::TcpSocketBase::Timestamp", ns.BooleanValue(True))
    for qd in qdiscs:
        hooks.Reset()
        nodes = ns.NodeContainer()
        nodes.Create(2)
        p2p = ns.PointToPointHelper()
        p2p.SetDeviceAttribute("DataRate", ns.StringValue("100Mbps"))
        p2p.SetChannelAttribute("Delay", ns.StringValue("10ms"))
        p2p.SetQueue("ns3::DropTailQueue", "MaxSize", ns.StringValue("1p"))
        devs = p2p.Install(nodes)
        ns.InternetStackHelper().Install(nodes)
        tch = ns.TrafficControlHelper()
        if qd == "fifo":
            tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", ns.StringValue(f"{FIFO_LIMIT}p"))
        else:
            tch.SetRootQueueDisc("ns3::FqCoDelQueueDisc")
        qdiscs_installed = tch.Install(devs)
        addr = ns.Ipv4AddressHelper()
        addr.SetBase(ns.Ipv4Address("10.1.1.0"), ns.Ipv4Mask("255.255.255.0"))
        ifs = addr.Assign(devs)
        port = 5001
        sink = ns.PacketSinkHelper("ns3::TcpSocketFactory",
                                   ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo())
        sapps = sink.Install(nodes.Get(1))
        sapps.Start(ns.Seconds(0))
        bulk = ns.BulkSendHelper("ns3::TcpSocketFactory",
                                 ns.InetSocketAddress(ifs.GetAddress(1), port).ConvertTo())
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(0))
        capps = bulk.Install(nodes.Get(0))
        capps.Start(ns.Seconds(0.0))
        hooks.ScheduleHook(1e-4)
        ns.Simulator.Stop(ns.Seconds(duration))
        t0 = time.perf_counter()
        ns.Simulator.Run()
        wall = time.perf_counter() - t0
        rx = sapps.Get(0).GetObject[ns.PacketSink]().GetTotalRx()
        drops = int(qdiscs_installed.Get(0).GetStats().nTotalDroppedPackets)
        res = _summary(list(hooks.rtt), rx * 8 / duration / 1e6, hooks.retx, wall,
                       {"qdisc_drops": drops, "qdisc": qd})
        ns.Simulator.Destroy()
        print("OVXC " + json.dumps(res), flush=True)


def run_ns3(qdiscs, duration: float, python: str) -> dict | None:
    if not Path(python).exists():
        return None
    cmd = [python, os.path.abspath(__file__), "--ns3-worker", "--duration", str(duration),
           "--qdisc", *qdiscs]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    out = {}
    for line in proc.stdout.splitlines():
        if line.startswith("OVXC "):
            d = json.loads(line[5:])
            out[d["qdisc"]] = d
    if not out:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-15:])
        print(f"ns-3 run failed ({python}):\n{tail}", file=sys.stderr)
        return None
    return out


# -- report -----------------------------------------------------------------------------------
ROWS = [("goodput (Mbit/s)", "goodput_mbps", "{:.2f}"), ("retransmissions", "retransmits", "{:d}"),
        ("qdisc drops", "qdisc_drops", "{:d}"), ("RTT mean (ms)", "rtt_mean_ms", "{:.2f}"),
        ("RTT p10 (ms)", "rtt_p10_ms", "{:.2f}"), ("RTT p50 (ms)", "rtt_p50_ms", "{:.2f}"),
        ("RTT p90 (ms)", "rtt_p90_ms", "{:.2f}"), ("RTT p99 (ms)", "rtt_p99_ms", "{:.2f}"),
        ("RTT samples", "rtt_n", "{:d}"), ("wall time (s)", "wall_s", "{:.2f}")]


def table(qd: str, ov: dict, n3: dict | None, duration: float) -> str:
    name = {"fifo": f"FIFO ({FIFO_LIMIT} packets)", "fq_codel": "FQ-CoDel (defaults)"}[qd]
    lines = [f"### {name}: one CUBIC flow, 100 Mbit/s, 10 ms one way, {duration:g} s", "",
             "| | ovssim | ns-3 | ovssim / ns-3 |", "|---|---:|---:|---:|"]
    for label, key, fmt in ROWS:
        a = ov.get(key)
        b = n3.get(key) if n3 else None
        fa = fmt.format(a) if a is not None else "-"
        fb = fmt.format(b) if b is not None else "-"
        ratio = f"{a / b:.3f}" if (a is not None and b) else "-"
        lines.append(f"| {label} | {fa} | {fb} | {ratio} |")
    if n3:
        gap = (ov["goodput_mbps"] / n3["goodput_mbps"] - 1) * 100
        lines += ["", f"Goodput gap: {gap:+.2f}% (goal: within 2%) -> "
                      f"{'PASS' if abs(gap) <= 2 else 'FAIL'}"]
    return "\n".join(lines)


NOTES = """\
Same dumbbell in both simulators: one CUBIC bulk flow A -> B over a 100 Mbit/s,
10 ms point-to-point link (20 ms base RTT), a 1000-packet FIFO or FQ-CoDel with
its defaults on each direction, Linux-like TCP settings in ns-3 (1448-byte
segments, IW 10, SACK, timestamps, delayed ACK every 2 segments or 40 ms, 200 ms
minimum RTO, 2 MiB / 3 MiB buffers).  ovssim's ports count the same bits per
frame as ns-3's PPP device.  Goodput is the bytes the receiver got in the 10 s,
over 10 s; RTT is every sample the sender's estimator took (ns-3: the `RTT`
trace).  Wall times come from a shared 2-core machine and are indicative only
(see benchmarks/bench_tcp.py for the speed figures).

Where they differ (not yet investigated): the low end of the FIFO RTT
distribution (p10), i.e. the time before the standing queue builds -- likely
where slow start ends (HyStart) and how far each recovery drains the queue --
and the FQ-CoDel p99, where ns-3's tail is longer."""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--qdisc", nargs="+", default=list(QDISCS), choices=QDISCS)
    ap.add_argument("--ns3-python", default=os.environ.get("OVSSIM_NS3_PYTHON", DEFAULT_NS3_PYTHON))
    ap.add_argument("--ns3-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--write", action="store_true", help="save the tables to tcp_ns3_crosscheck.md")
    args = ap.parse_args(argv)
    if args.ns3_worker:
        ns3_worker(args.qdisc, args.duration)
        return 0
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    ov = {qd: run_ovssim(qd, args.duration) for qd in args.qdisc}
    n3 = run_ns3(args.qdisc, args.duration, args.ns3_python)
    if n3 is None:
        print(f"ns-3 not available at {args.ns3_python}: showing ovssim only.  Install it with\n"
              f"  python3 -m venv /work/ns3-venv && /work/ns3-venv/bin/pip install ns3\n")
    parts = [table(qd, ov[qd], (n3 or {}).get(qd), args.duration) for qd in args.qdisc]
    text = "\n\n".join(parts)
    print(text)
    if args.write:
        out = Path(__file__).with_name("tcp_ns3_crosscheck.md")
        out.write_text("# ovssim TCP vs ns-3 (generated by validation/tcp_ns3_crosscheck.py)\n\n"
                       + NOTES + "\n\n" + text + "\n")
        print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
