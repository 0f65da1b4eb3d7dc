"""iperf 2: UDP with the server report (the thesis's jitter tool), and TCP with ``-P`` threads.

UDP: the client prints the server's report, enhanced output (``-e``): ``Jitter
Lost/Total Latency avg/min/max/stdev`` (one-way latency; both ends share this
machine's clock).  TCP: iperf 2 runs each of ``-P`` streams in a thread of its
own (iperf 3.12 runs all streams in one), which is what seed 003's threads vs
cores claims are about; the client's ``[SUM]`` line (or its one stream's line) is
the throughput.  ``cpus`` runs client and server under ``taskset -c``.
"""
from __future__ import annotations

import re

from .base import Server, Target, ToolFailed, ToolResult, client

PORT = 5001
_SIZE = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}
_BW = {"bits/sec": 1, "Kbits/sec": 1e3, "Mbits/sec": 1e6, "Gbits/sec": 1e9}


def parse_udp_client(text: str) -> ToolResult:
    r = ToolResult(raw=text)
    rep = text.split("Server Report:", 1)
    if len(rep) != 2:
        raise ToolFailed("iperf 2 printed no server report (datagrams lost or server gone)")
    m = re.search(r"sec\s+[0-9.]+\s+\w*Bytes\s+([0-9.]+)\s+(\S+/sec)\s+([0-9.]+)\s+ms\s+"
                  r"(\d+)/\s*(\d+)\s+\(([0-9.e+-]+)%\)(?:\s+([0-9.]+)/([0-9.]+)/([0-9.]+)/([0-9.]+)\s+ms)?",
                  rep[1])
    if not m:
        raise ToolFailed("cannot read iperf 2's server report line")
    r.add("throughput", float(m.group(1)) * _BW[m.group(2)], "bit/s")
    r.add("jitter", float(m.group(3)) / 1e3, "s")
    lost, total = int(m.group(4)), int(m.group(5))
    r.add("lost_packets", lost, "packets")
    r.add("packets", total, "packets")
    r.add("loss", lost / total if total else 0.0, "ratio")
    if m.group(7):
        r.add("owd_mean", float(m.group(7)) / 1e3, "s")
        r.add("owd_min", float(m.group(8)) / 1e3, "s")
        r.add("owd_max", float(m.group(9)) / 1e3, "s")
        r.add("owd_stdev", float(m.group(10)) / 1e3, "s")
    return r


def run(target: Target, *, duration: float, rate: float, size: int = 1470,
        port: int = PORT) -> ToolResult:
    argv = ["iperf", "-c", target.server_ip, "-u", "-p", str(port), "-b", str(int(rate)),
            "-l", str(int(size)), "-t", f"{duration:g}", "-e"]
    with Server(target.server, ["iperf", "-s", "-u", "-p", str(port), "-e"], port=port,
                proto="udp"):
        res = client(target, argv, duration)
    return parse_udp_client(res.stdout)


def parse_tcp_client(text: str) -> ToolResult:
    """Throughput from the client's ``[SUM]`` line, or its only stream's line with one stream."""
    r = ToolResult(raw=text)
    lines = [ln for ln in text.splitlines() if re.search(r"\S+/sec", ln) and " sec " in ln]
    total = [ln for ln in lines if ln.startswith("[SUM]")] or lines[-1:]
    m = re.search(r"([0-9.]+)\s+(\S+/sec)", total[0]) if total else None
    if not m or m.group(2) not in _BW:
        raise ToolFailed("cannot read iperf 2's TCP throughput line")
    r.add("throughput", float(m.group(1)) * _BW[m.group(2)], "bit/s")
    return r


def run_tcp(target: Target, *, duration: float, streams: int = 1, cpus: str | None = None,
            port: int = PORT) -> ToolResult:
    pin = ["taskset", "-c", cpus] if cpus else []
    argv = pin + ["iperf", "-c", target.server_ip, "-p", str(port), "-P", str(int(streams)),
                  "-t", f"{duration:g}"]
    with Server(target.server, pin + ["iperf", "-s", "-p", str(port)], port=port, proto="tcp"):
        res = client(target, argv, duration)
    return parse_tcp_client(res.stdout)
