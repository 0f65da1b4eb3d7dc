"""Build a workload from its scenario table by ``tool`` (and ``proto`` / ``test``)."""
from __future__ import annotations

import importlib

from ..errors import ConfigError

# (tool, selector) -> "module:Class"; selector is proto for iperf, test for netperf
WORKLOADS = {
    ("iperf", "udp"): "udp:IperfUdp",           # iperf 2: evenly spaced datagrams
    ("iperf2", "udp"): "udp:IperfUdp",
    ("iperf3", "udp"): "udp:Iperf3Udp",         # iperf3: throttled bursts on a pacing timer
    ("iperf", "tcp"): "iperf_tcp:IperfTcp",
    ("iperf2", "tcp"): "iperf_tcp:IperfTcp",
    ("iperf3", "tcp"): "iperf_tcp:IperfTcp",
    ("ping", None): "ping:Ping",
    ("netperf", "TCP_STREAM"): "netperf:NetperfTcpStream",
    ("netperf", "TCP_RR"): "netperf:NetperfTcpRR",
    ("netperf", "UDP_RR"): "netperf:NetperfUdpRR",
    ("qperf", "tcp_lat"): "qperf:QperfLat",
    ("qperf", "udp_lat"): "qperf:QperfLat",
    ("qperf", "tcp_bw"): "qperf:QperfTcpBw",
    ("qperf", "udp_bw"): "qperf:QperfUdpBw",
    ("sockperf", "ping-pong"): "sockperf:Sockperf",
    ("sockperf", "under-load"): "sockperf:Sockperf",
}


def make_workload(table: dict):
    tool = table.get("tool")
    name = table.get("name", tool)
    if tool in ("iperf", "iperf2", "iperf3"):
        sel = str(table.get("proto", "tcp")).lower()
    elif tool == "netperf":
        sel = str(table.get("test", "TCP_STREAM")).upper()
    elif tool == "qperf":
        sel = str(table.get("test", "")).lower()
    elif tool == "sockperf":
        sel = str(table.get("mode", "ping-pong")).lower()
    else:
        sel = None
    target = WORKLOADS.get((tool, sel))
    if target is None:
        known = ", ".join(f"{t}{' ' + s if s else ''}" for t, s in WORKLOADS)
        raise ConfigError(f"unknown workload tool={tool!r}{' ' + repr(sel) if sel else ''}",
                          key=f"workload.{name}.tool", fix=f"use one of: {known}")
    mod, cls = target.split(":")
    try:
        klass = getattr(importlib.import_module(f"{__package__}.{mod}"), cls)
    except (ImportError, AttributeError):
        raise ConfigError(f"workload {tool} {sel} is not available in this build", key=f"workload.{name}.tool",
                          fix="use iperf UDP or ping, or update ovssim") from None
    spec = dict(table)
    for k in ("from", "to"):
        spec.pop(k, None)
    return klass.from_spec(spec)
