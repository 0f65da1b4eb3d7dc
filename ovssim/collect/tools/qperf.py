"""qperf ``tcp_lat`` / ``udp_lat``: 1-byte ping-pong, one transaction in flight; ``udp_bw``.

The closest stand-in for netperf TCP_RR that Debian main ships.  qperf reports
``latency`` as half the round trip; the round trip is twice that.  ``udp_bw`` (run with
``-v``) reports ``send_bw`` and ``recv_bw`` (bytes of payload per second, SI prefixes) and
``msg_rate`` (messages received per second).
"""
from __future__ import annotations

import re

from .base import Server, Target, ToolFailed, ToolResult, client

PORT = 19765
_T = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "sec": 1.0, "s": 1.0}
_SI = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def _udp_bw(text: str, r: ToolResult) -> None:
    m = re.search(r"^udp_bw:\s*\n((?:\s+\S.*\n?)*)", text, re.M)
    if not m:
        return
    for name, val, prefix in re.findall(r"(send_bw|recv_bw|msg_rate)\s*=\s*([0-9.]+)\s*([KMGT]?)", m.group(1)):
        v = float(val) * _SI[prefix]
        if name == "msg_rate":
            r.add("udp_bw_msg_rate", v, "1/s")
        else:
            r.add(f"udp_bw_{name}", 8 * v, "bit/s")


def parse(text: str) -> ToolResult:
    r = ToolResult(raw=text)
    for m in re.finditer(r"^(tcp_lat|udp_lat):\s*\n\s*latency\s*=\s*([0-9.]+)\s*(ns|us|ms|sec)",
                         text, re.M):
        half = float(m.group(2)) * _T[m.group(3)]
        p = m.group(1).split("_")[0]
        r.add(f"{p}_rr_half_rtt", half, "s")
        r.add(f"{p}_rr_rtt", 2 * half, "s")
        r.add(f"{p}_rr_transactions_per_s", 1.0 / (2 * half), "1/s")
    _udp_bw(text, r)
    if not r.metrics:
        raise ToolFailed(f"cannot read qperf output: {text.strip()[:200]}")
    return r


def run(target: Target, *, duration: float, tests=("tcp_lat",), size: int = 1,
        port: int = PORT) -> ToolResult:
    verbose = ["-v"] if "udp_bw" in tests else []        # msg_rate is printed with -v only
    argv = ["qperf", "-lp", str(port), "-t", f"{int(max(1, round(duration)))}", "-m", str(size),
            *verbose, target.server_ip, *tests]
    with Server(target.server, ["qperf", "-lp", str(port)], port=port):
        res = client(target, argv, duration * len(tests))
    if res.returncode != 0:
        raise ToolFailed(f"qperf exit {res.returncode}: {res.stderr.strip()[:200]}")
    return parse(res.stdout)
