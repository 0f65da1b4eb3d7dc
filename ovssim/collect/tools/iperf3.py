"""iperf3: TCP (``-P N``, ``-C cc``) and UDP (jitter, loss) with JSON output (``-J``).

Fields read (iperf3 3.x JSON): ``end.sum_sent`` / ``end.sum_received``
(bits_per_second, retransmits), ``end.sum`` for UDP (jitter_ms, lost_packets,
packets), ``end.sender_tcp_congestion``, ``end.cpu_utilization_percent``,
``intervals[].sum.bits_per_second``, ``start.version``.
"""
from __future__ import annotations

import json
import time

from ...tcp.stats import jain_index
from .base import Server, Target, ToolFailed, ToolResult, client

PORT = 5201


def parse(text: str) -> ToolResult:
    try:
        d = json.loads(text)
    except ValueError:
        raise ToolFailed(f"iperf3 printed no JSON: {text.strip()[:200]}") from None
    if d.get("error"):
        raise ToolFailed(f"iperf3: {d['error']}")
    r = ToolResult(raw=text)
    start, end = d.get("start", {}), d.get("end", {})
    r.info["version"] = start.get("version", "")
    proto = start.get("test_start", {}).get("protocol", "TCP")
    r.info["protocol"] = proto
    if proto == "UDP":
        s = end.get("sum", {})
        r.add("throughput", s.get("bits_per_second"), "bit/s")
        r.add("jitter", s["jitter_ms"] / 1e3 if "jitter_ms" in s else None, "s")
        r.add("lost_packets", s.get("lost_packets"), "packets")
        r.add("packets", s.get("packets"), "packets")
        r.add("loss", s.get("lost_percent", 0) / 100.0, "ratio")
        recv = end.get("sum_received")
        if recv:
            r.add("throughput_received", recv.get("bits_per_second"), "bit/s")
    else:
        sent, recv = end.get("sum_sent", {}), end.get("sum_received", {})
        r.add("throughput", recv.get("bits_per_second"), "bit/s")
        r.add("throughput_sender", sent.get("bits_per_second"), "bit/s")
        r.add("retransmits", sent.get("retransmits"), "segments")
        r.add("bytes_received", recv.get("bytes"), "bytes")
        r.info["congestion_control"] = end.get("sender_tcp_congestion", "")
        r.add("tcp_mss", start.get("tcp_mss_default"), "bytes")
        per = [st["receiver"]["bits_per_second"] for st in end.get("streams", []) if "receiver" in st]
        if len(per) > 1:    # -P N: each flow's share and Jain's index over them
            r.samples["stream_throughput"] = (per, "bit/s")
            r.add("fairness", jain_index(per), "Jain index")
    cpu = end.get("cpu_utilization_percent", {})
    r.add("cpu_client", cpu.get("host_total", 0) / 100.0 if cpu else None, "ratio")
    r.add("cpu_server", cpu.get("remote_total", 0) / 100.0 if cpu else None, "ratio")
    series = [iv["sum"]["bits_per_second"] for iv in d.get("intervals", []) if "sum" in iv]
    if series:
        r.samples["interval_throughput"] = (series, "bit/s")
    if "throughput" not in r.metrics:
        raise ToolFailed("iperf3 JSON has no end summary")
    return r


def run(target: Target, *, duration: float, proto: str = "tcp", streams: int = 1,
        cc: str | None = None, size: int | None = None, rate: float | None = None,
        interval: float = 0.5, omit: int | None = None, port: int = PORT) -> ToolResult:
    """Run the client in ``target.client`` against a one-off server in ``target.server``.

    TCP runs omit the first second (``-O 1``, slow start) from the result when
    ``duration`` is at least 2 s, unless ``omit`` says otherwise.
    """
    if omit is None:
        omit = 1 if proto == "tcp" and duration >= 2 else 0
    argv = ["iperf3", "-c", target.server_ip, "-p", str(port), "-t", f"{duration:g}", "-J",
            "-i", f"{interval:g}", "-P", str(int(streams))]
    if omit:
        argv += ["-O", str(int(omit))]
    if proto == "udp":
        argv += ["-u", "-b", f"{int(rate or 1e6)}"]
    elif rate:
        argv += ["-b", f"{int(rate)}"]
    if cc and proto == "tcp":
        argv += ["-C", cc]
    if size:
        argv += ["-l", str(int(size))]
    with Server(target.server, ["iperf3", "-s", "-1", "-p", str(port)], port=port):
        started = time.time()
        res = client(target, argv, duration + omit)
    r = parse(res.stdout)
    r.info["client_start_epoch"] = started   # when the load began: a probe run alongside is timed from it
    return r
