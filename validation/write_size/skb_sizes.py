"""The skbs the model's iperf3 client builds on the batching section's Linux-bridge offloads-on runs.

Prints, for iperf3 -l 128 KiB and -l 16 KiB (ovssim.validate.batching's configurations, one rep, seed
2026), the throughput and the mean payload per new-data skb, to set against the sender veth's
tx_bytes / tx_packets measured on a bare veth pair here (25 Nov): 55.0 KB and 25.2 KB per skb.

    .venv/bin/python validation/write_size/skb_sizes.py [PROFILE]    (default calibration/local_batching.toml)
"""
from __future__ import annotations

import statistics
import sys
from collections import Counter

import ovssim.tcp.sender as sender_mod
from ovssim.validate.batching import IPERF3_LENGTH, _cfg
from ovssim.validate.simulate import Runner


def main() -> None:
    profile = sys.argv[1] if len(sys.argv) > 1 else "calibration/local_batching.toml"
    sizes: list[int] = []
    windows: list[tuple[int, int, int]] = []     # (cwnd, packets in flight, unsent skbs) as each skb leaves
    orig = sender_mod.TcpSender._transmit

    def record(self, seq, n, now, new, segs=1):
        if new and self.bulk_until is not None:
            sizes.append(n)
            windows.append((self.cwnd, self.in_flight, len(self.wq)))
        return orig(self, seq, n, now, new, segs)
    sender_mod.TcpSender._transmit = record
    for length in (IPERF3_LENGTH, 16384):
        sizes.clear()
        windows.clear()
        c = _cfg("linux", 1, "-", True, ["tcp"], None if length == IPERF3_LENGTH else length)
        res = Runner(1).run([c], profile, reps=1, seed=2026)
        pr = next(iter(res.values())).per_rep
        thr = pr[pr.metric == "throughput"]["value"].mean()
        common = ", ".join(f"{n} B x{k}" for n, k in Counter(sizes).most_common(3))
        print(f"iperf3 -l {length}: {thr:.0f} Mbit/s, {len(sizes)} skbs, mean {sum(sizes) / len(sizes) / 1000:.1f} KB "
              f"per skb (most common: {common}); "
              f"as they left: median cwnd {statistics.median(w[0] for w in windows)}, in flight "
              f"{statistics.median(w[1] for w in windows)} segments, unsent skbs {statistics.mean(w[2] for w in windows):.2f}")


if __name__ == "__main__":
    main()
