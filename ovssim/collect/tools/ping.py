"""ping: per-packet round trips (``icmp_seq=N ... time=T ms``) and the summary line.

After the datapath flows are purged, packet 1 misses the flow cache and goes
through the upcall (slow path) in both directions; later packets hit the fast
path.  ``rtt_first`` minus the median of the rest isolates that slow-path cost.
"""
from __future__ import annotations

import re
import statistics

from .base import Target, ToolFailed, ToolResult, client


def parse(text: str) -> ToolResult:
    r = ToolResult(raw=text)
    seq_rtt = [(int(m.group(1)), float(m.group(2)) * 1e-3)
               for m in re.finditer(r"icmp_seq=(\d+) .*?time=([0-9.]+) ms", text)]
    m = re.search(r"(\d+) packets transmitted, (\d+) received", text)
    if not m:
        raise ToolFailed(f"cannot read ping output: {text.strip()[-200:]}")
    sent, recv = int(m.group(1)), int(m.group(2))
    r.add("sent", sent, "packets")
    r.add("loss", (sent - recv) / sent if sent else 0.0, "ratio")
    if seq_rtt:
        rtts = [t for _, t in sorted(seq_rtt)]
        r.samples["rtt"] = (rtts, "s")
        r.samples["seq"] = ([s for s, _ in sorted(seq_rtt)], "count")
        r.add("rtt_min", min(rtts), "s")
        r.add("rtt_mean", statistics.fmean(rtts), "s")
        r.add("rtt_median", statistics.median(rtts), "s")
        r.add("rtt_max", max(rtts), "s")
        first_seq, first = sorted(seq_rtt)[0]
        if first_seq == 1 and len(rtts) > 1:
            rest = statistics.median(rtts[1:])
            r.add("rtt_first", first, "s")
            r.add("rtt_rest_median", rest, "s")
            r.add("rtt_first_excess", first - rest, "s")
    m = re.search(r"min/avg/max/mdev = ([0-9.]+)/([0-9.]+)/([0-9.]+)/([0-9.]+) ms", text)
    if m:   # ping's own summary has more digits than the per-packet lines
        for name, g in (("rtt_min", 1), ("rtt_mean", 2), ("rtt_max", 3), ("rtt_mdev", 4)):
            r.add(name, float(m.group(g)) * 1e-3, "s")
    return r


def run(target: Target, *, count: int = 100, interval: float = 0.01, size: int = 56) -> ToolResult:
    argv = ["ping", "-n", "-c", str(int(count)), "-i", f"{interval:g}", "-s", str(int(size)),
            "-W", "1", target.server_ip]
    res = client(target, argv, count * interval + 1)
    return parse(res.stdout)
