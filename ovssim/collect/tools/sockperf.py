"""sockperf ping-pong: latency percentiles and per-message round trips (``--full-log``).

sockperf's "latency" is half the round trip (``avg-latency``, percentiles in
usec).  The full log has ``txTime(sec), rxTime(sec)`` per message after the
warm-up; ``rxTime - txTime`` is the round trip.
"""
from __future__ import annotations

import os
import re
import tempfile

from .base import Server, Target, ToolFailed, ToolResult, client

PORT = 11111


def _plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def parse_summary(text: str) -> ToolResult:
    text = _plain(text)
    r = ToolResult(raw=text)
    m = re.search(r"avg-latency=([0-9.]+) \(std-dev=([0-9.]+)\)", text)
    if not m:
        raise ToolFailed(f"cannot read sockperf output: {text.strip()[-200:]}")
    r.add("half_rtt_mean", float(m.group(1)) * 1e-6, "s")
    r.add("half_rtt_std", float(m.group(2)) * 1e-6, "s")
    for m in re.finditer(r"percentile\s+([0-9.]+)\s*=\s*([0-9.]+)", text):
        r.add(f"half_rtt_p{m.group(1).rstrip('0').rstrip('.')}", float(m.group(2)) * 1e-6, "s")
    m = re.search(r"<MIN> observation\s*=\s*([0-9.]+)", text)
    if m:
        r.add("half_rtt_min", float(m.group(1)) * 1e-6, "s")
    m = re.search(r"<MAX> observation\s*=\s*([0-9.]+)", text)
    if m:
        r.add("half_rtt_max", float(m.group(1)) * 1e-6, "s")
    m = re.search(r"# dropped messages = (\d+); # duplicated messages = (\d+); "
                  r"# out-of-order messages = (\d+)", text)
    if m:
        r.add("dropped_messages", int(m.group(1)), "messages")
    m = re.search(r"\[Valid Duration\] RunTime=([0-9.]+) sec; SentMessages=(\d+); "
                  r"ReceivedMessages=(\d+)", text)
    if m:
        r.add("transactions_per_s", int(m.group(3)) / float(m.group(1)), "1/s")
    return r


def parse_full_log(text: str) -> list[float]:
    """Round trips (s) from ``--full-log``: rxTime - txTime of each message."""
    out = []
    started = False
    for line in text.splitlines():
        if line.startswith("packet, txTime"):
            started = True
            continue
        if started:
            parts = line.split(",")
            if len(parts) >= 3:
                try:
                    out.append(round(float(parts[2]) - float(parts[1]), 9))
                except ValueError:
                    continue
    return out


def run(target: Target, *, duration: float, size: int = 64, proto: str = "udp",
        port: int = PORT, max_samples: int = 20000) -> ToolResult:
    fd, log = tempfile.mkstemp(prefix="sockperf-", suffix=".csv", dir=target.workdir)
    os.close(fd)
    tcp = ["--tcp"] if proto == "tcp" else []
    argv = ["sockperf", "ping-pong", "-i", target.server_ip, "-p", str(port), "-t",
            f"{int(max(1, round(duration)))}", "-m", str(int(max(14, size))), *tcp,
            "--full-log", log]
    try:
        with Server(target.server, ["sockperf", "server", "-i", target.server_ip, "-p", str(port),
                                    *tcp], port=port, proto=proto):
            res = client(target, argv, duration)
        if res.returncode != 0:
            raise ToolFailed(f"sockperf exit {res.returncode}: {_plain(res.stdout)[-200:]}")
        r = parse_summary(res.stdout)
        with open(log) as fh:
            rtts = parse_full_log(fh.read())
    finally:
        os.unlink(log)
    if rtts:
        r.samples["rtt"] = (rtts[:max_samples], "s")
    return r
