"""iperf 2 (the thesis's jitter tool): UDP with the server report, enhanced output (``-e``).

The client prints the server's report: ``Jitter Lost/Total Latency avg/min/max/stdev``
(one-way latency; both ends share this machine's clock).
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
