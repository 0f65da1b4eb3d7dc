"""ping: per-packet round trips (``icmp_seq=N ... time=T ms``) and the summary line.

After the datapath flows are purged, packet 1 misses the flow cache and goes
through the upcall (slow path) in both directions; later packets hit the fast
path.  ``rtt_first`` minus the median of the rest isolates that slow-path cost.

``-D`` prefixes every reply with its arrival time (Unix seconds), so a probe's send time is that
time minus its RTT: ``send_time`` (seconds after the first probe was sent) and ``interval_mean``
record when the probes really left.  They matter: iputils ping asked for ``-i 0.01`` sends every
~15 ms on this machine (its loop wakes late), so probe index times 10 ms is not the probe's time.
"""
from __future__ import annotations

import re
import statistics

from .base import Target, ToolFailed, ToolResult, client


def parse(text: str) -> ToolResult:
    r = ToolResult(raw=text)
    lines = [(int(m.group(2)), float(m.group(3)) * 1e-3, m.group(1))
             for m in re.finditer(r"^(?:\[([0-9.]+)\] )?.*?icmp_seq=(\d+) .*?time=([0-9.]+) ms", text, re.M)]
    seq_rtt = [(q, t) for q, t, _ in lines]
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
        stamped = sorted((q, float(ts) - t) for q, t, ts in lines if ts)
        if len(stamped) == len(lines):
            t0 = stamped[0][1]
            r.samples["send_time"] = ([s - t0 for _, s in stamped], "s")
            if len(stamped) > 1 and stamped[-1][0] > stamped[0][0]:
                r.add("interval_mean", (stamped[-1][1] - t0) / (stamped[-1][0] - stamped[0][0]), "s")
            r.info["first_send_epoch"] = t0
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


def run(target: Target, *, count: int = 100, interval: float = 0.01, size: int = 56,
        tos: int = 0) -> ToolResult:
    argv = ["ping", "-n", "-D", "-c", str(int(count)), "-i", f"{interval:g}", "-s", str(int(size)),
            "-W", "1", *(["-Q", str(int(tos))] if tos else []), target.server_ip]
    # the real spacing exceeds -i (see above): allow twice the nominal time
    res = client(target, argv, 2 * count * interval + 1)
    return parse(res.stdout)
