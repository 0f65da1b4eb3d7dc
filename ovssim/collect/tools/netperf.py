"""netperf TCP_STREAM / TCP_RR, used when a netperf binary is present (Debian main has none).

Output selectors (``-- -k THROUGHPUT,THROUGHPUT_UNITS,MEAN_LATENCY,...``) print
``KEY=value`` lines, which are parsed here.  Untested against a real netperf on
this machine (none installed); the parser follows netperf's documented keyval format.
"""
from __future__ import annotations

import re

from ..shell import which
from .base import Server, Target, ToolFailed, ToolResult, client

PORT = 12865


def available() -> bool:
    return bool(which("netperf") and which("netserver"))


def parse_keyval(text: str, test: str) -> ToolResult:
    kv = dict(re.findall(r"^([A-Z_0-9]+)=(.*)$", text, re.M))
    r = ToolResult(raw=text)
    if test == "TCP_STREAM":
        if "THROUGHPUT" not in kv:
            raise ToolFailed("netperf printed no THROUGHPUT")
        scale = {"10^6bits/s": 1e6, "10^3bits/s": 1e3, "10^9bits/s": 1e9}.get(
            kv.get("THROUGHPUT_UNITS", "10^6bits/s"), 1e6)
        r.add("throughput", float(kv["THROUGHPUT"]) * scale, "bit/s")
    else:
        if "THROUGHPUT" not in kv:
            raise ToolFailed("netperf printed no THROUGHPUT")
        r.add("tcp_rr_transactions_per_s", float(kv["THROUGHPUT"]), "1/s")
        if "MEAN_LATENCY" in kv:
            r.add("tcp_rr_rtt", float(kv["MEAN_LATENCY"]) * 1e-6, "s")
        for k, name in (("P50_LATENCY", "p50"), ("P99_LATENCY", "p99")):
            if k in kv:
                r.add(f"tcp_rr_rtt_{name}", float(kv[k]) * 1e-6, "s")
    return r


def run(target: Target, *, duration: float, test: str = "TCP_STREAM", size: int | None = None,
        port: int = PORT) -> ToolResult:
    if not available():
        raise ToolFailed("netperf/netserver not installed (not in Debian main)")
    sel = ("THROUGHPUT,THROUGHPUT_UNITS" if test == "TCP_STREAM"
           else "THROUGHPUT,MEAN_LATENCY,P50_LATENCY,P99_LATENCY")
    argv = ["netperf", "-H", target.server_ip, "-p", str(port), "-t", test, "-l",
            f"{int(max(1, round(duration)))}", "-P", "0", "--", "-k", sel]
    if size:
        argv += ["-r", f"{size},{size}"] if test == "TCP_RR" else ["-m", str(size)]
    with Server(target.server, ["netserver", "-D", "-p", str(port)], port=port):
        res = client(target, argv, duration)
    return parse_keyval(res.stdout, test)
