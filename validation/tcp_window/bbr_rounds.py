"""Diagnostic (not the report): BBR's packet-timed rounds of each stream in a tcp_probe trace (bbr_trace.py's
``.tcp_probe.txt.gz``), and the round at which its startup estimate went (issue 18).

tcp_probe logs snd_nxt / snd_una / snd_cwnd *before* each ACK the sender processes.  A round (``bbr_update_bw``:
a sample whose ``prior_delivered`` reaches ``next_rtt_delivered``) begins at an ACK and ends when an ACK covers the
first byte sent after it, i.e. when snd_una passes the snd_nxt logged at the round's first ACK; without losses this
is tcp_rate.c's count.  The estimate's end is taken where the cwnd falls below 45 % of its running maximum (once
above 100 segments): ``bbr_set_cwnd`` cuts cwnd to the target as soon as BtlBw falls.  The first ACK of a stream is
its iperf3 cookie's, whose sample is the startup estimate in the four-stream runs (bbr_flows.py); the estimate
goes at round start 12 counting that ACK's as 1, i.e. 11 rounds after it (lib/win_minmax.c: ``dt > win``).

    .venv/bin/python validation/tcp_window/bbr_rounds.py data/local/tcp_window/2026-11-28-bbr5/*.tcp_probe.txt.gz
"""
from __future__ import annotations

import gzip
import re
import sys

LINE = re.compile(r"\s([\d.]+): tcp_probe: family=AF_INET src=\S+:(\d+) dest=\S+ .*?snd_nxt=(0x[0-9a-f]+) "
                  r"snd_una=(0x[0-9a-f]+) snd_cwnd=(\d+)")


def sender_acks(path) -> dict[str, list[tuple]]:
    """Per sending port: (t s, snd_nxt, snd_una, cwnd) of each ACK the sender processed."""
    out: dict[str, list[tuple]] = {}
    with gzip.open(path, "rt") as fh:
        for line in fh:
            m = LINE.search(line)
            if m:
                t, port, nxt, una, cwnd = m.groups()
                out.setdefault(port, []).append((float(t), int(nxt, 16), int(una, 16), int(cwnd)))
    return out


def round_starts(acks: list[tuple]) -> list[float]:
    """Times of the ACKs that begin a round (the first ACK begins round 1)."""
    starts = [acks[0][0]]
    marker = acks[0][1]
    for i in range(1, len(acks)):
        una = acks[i][2]                       # what ACK i-1 acknowledged
        if una != marker and (una - marker) % (1 << 32) < (1 << 31):
            starts.append(acks[i - 1][0])      # ACK i-1 began the next round
            marker = acks[i - 1][1]
    return starts


def estimate_end(acks: list[tuple]) -> float | None:
    """The ACK that cut the cwnd (each line shows the cwnd the previous ACK left)."""
    top = 0
    for i, (t, _, _, cwnd) in enumerate(acks):
        top = max(top, cwnd)
        if top > 100 and cwnd < 0.45 * top:
            return acks[i - 1][0]
    return None


def main():
    for path in sys.argv[1:]:
        print(path)
        for port, acks in sender_acks(path).items():
            if len(acks) < 200:
                continue                       # iperf3's control connection
            starts = round_starts(acks)
            end = estimate_end(acks)
            t0 = acks[0][0]
            if end is None:
                print(f"  port {port}: cwnd never above 100 and cut")
                continue
            n = sum(1 for t in starts if t <= end + 1e-9)
            print(f"  port {port}: estimate gone {end - t0:.3f} s after the first ACK, at round start {n} "
                  f"(rounds: {' '.join(f'{t - t0:.2f}' for t in starts[:n + 1])})")


if __name__ == "__main__":
    main()
