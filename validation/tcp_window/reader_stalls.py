"""Diagnostic (not the report): the tcp_window rows with the iperf3 server's reads delayed as this host's were.

The model's receiver reads at once by default.  ``TcpReceiver.read_delay`` makes the application read
queued data later; ACKs that ``__tcp_ack_snd_check`` cannot send (the window would not advance) then
wait for the read (``tcp_cleanup_rbuf``).  Here each read's delay is drawn from what ``tcp:tcp_probe``
recorded on this host (``bbr_trace.py``; data/local/tcp_window/2026-11-28-bbr/*.tcp_probe.txt.gz): the
time from the receiver processing a data skb to the sender processing the ACK that covers it, less the
model's own softirq path (``--base``, 25 us).  Those delays include the ms-long stalls of a reader
that is not scheduled (0.3-0.7 % of ACKs later than 1 ms, up to 42 ms, with other jobs on both cores),
so this is a machine-state input measured on other runs, not a fitted parameter -- and not a model of
the load: it replays one day's reader.

    .venv/bin/python validation/tcp_window/reader_stalls.py [--match quiet] [--reps 2]
"""
from __future__ import annotations

import argparse
import gzip
import re
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "data/local/tcp_window/2026-11-28-bbr"
EVENT = re.compile(r"^\s*(\S+)-\d+\s+\[\d+\]\s+\S+\s+([\d.]+): tcp_probe: family=(\S+) src=(\S+) dest=(\S+) "
                   r"mark=\S+ data_len=(\d+) snd_nxt=0x[0-9a-f]+ snd_una=(0x[0-9a-f]+)")


def ack_delays(trace: Path, skip: float = 1.5) -> np.ndarray:
    """Seconds from the receiver's tcp_probe on the data skb that completes a byte to the sender's tcp_probe
    on the ACK after the one that covers it (the sender's event shows snd_una before processing)."""
    snd, rcv = {}, {}
    for line in gzip.open(trace, "rt"):
        m = EVENT.match(line)
        if not m:
            continue
        _, t, fam, src, dst, dl, una = m.groups()
        if fam == "AF_INET" and dst.endswith(":5201"):
            snd.setdefault(src, []).append((float(t), int(una, 16)))
        elif src.endswith(":5201"):
            rcv.setdefault(dst.replace("[::ffff:", "").replace("]", ""), []).append((float(t), int(dl)))
    port = max(snd, key=lambda k: len(snd[k]))
    s, r = snd[port], rcv[port]
    st = np.array([t for t, _ in s])
    acked = np.array([(u - s[0][1]) % (1 << 32) for _, u in s])
    rt = np.array([t for t, _ in r])
    cum = np.cumsum([n for _, n in r])
    recv_at = cum[np.searchsorted(rt, st) - 1]
    off = int(np.min(recv_at[10:] - acked[10:]))
    out = []
    for i in range(1, len(s)):
        if st[i] - st[0] < skip:
            continue
        j = np.searchsorted(cum, acked[i] + off)
        if j < len(rt):
            out.append(st[i] - rt[j])
    return np.array(out)


def main():
    from ovssim.validate import tcp_window
    from ovssim.validate.base import CALIBRATION
    from ovssim.workloads import iperf_tcp

    ap = argparse.ArgumentParser()
    ap.add_argument("--match", default="", help="only rows whose label contains this")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--base", type=float, default=25e-6, help="the model's own ACK path (s), taken off")
    ap.add_argument("--constant", type=float, help="every read this long (s) after the data: no stalls")
    a = ap.parse_args()
    if a.constant is not None:
        delays = np.array([a.constant])
    else:
        delays = np.concatenate([ack_delays(f) for f in sorted(TRACES.glob("*.tcp_probe.txt.gz"))])
        delays = np.clip(delays - a.base, 0.0, None)
    print(f"{len(delays)} delays: median {1e6 * np.median(delays):.0f} us, p99 {1e6 * np.percentile(delays, 99):.0f} us, "
          f"> 1 ms {np.mean(delays > 1e-3):.4f}, max {1e3 * delays.max():.1f} ms")
    rng = np.random.default_rng(7)
    opened = iperf_tcp.IperfTcp._open_stream

    def open_stream(self, measured_from, until):
        c, s = opened(self, measured_from, until)
        s.receiver.read_delay = lambda: float(delays[rng.integers(len(delays))])
        return c, s
    iperf_tcp.IperfTcp._open_stream = open_stream
    profile = CALIBRATION / f"{tcp_window.PROFILE}.toml"
    meet = {}
    for prefix, data, _ in tcp_window.CAMPAIGNS:
        runs = tcp_window.measured(data)
        for key in sorted(runs):
            where, kind, rate, flows, cc, sysctl = key
            label = " ".join([*([prefix] if prefix else []), where, kind, rate, f"P{flows}", cc, *sysctl])
            if a.match not in label or where == "sender":
                continue            # the sender placement's shaper is on the sender's own device: not this path
            real = runs[key]
            sims = tcp_window.simulate(real[0]["args"], a.reps, profile=profile)
            line = []
            for field, _, _, _ in tcp_window.METRICS:
                y = float(np.mean([r["summary"][field] for r in real]))
                m = float(np.mean([x[field] for x in sims]))
                err = (m - y) / y
                ok = abs(err) <= (0.03 if field == "mbps" else 0.10)
                g = meet.setdefault((cc, field), [0, 0])
                g[0] += ok
                g[1] += 1
                line.append(f"{field} {y:8.2f} {m:8.2f} {100 * err:+6.1f}%{' ok' if ok else '   '}")
            print(f"{label:45s} " + " | ".join(line), flush=True)
    for (cc, field), (k, n) in sorted(meet.items()):
        print(f"{cc} {field}: {k}/{n} within target")


if __name__ == "__main__":
    main()
