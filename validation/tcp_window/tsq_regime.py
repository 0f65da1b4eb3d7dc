"""Diagnostic (not the report): how a CUBIC flow's window grows behind HTB on the sender's own veth, Linux against the
model -- per ACK the cwnd and the segments in flight before it, srtt, and the size of each skb the receiver got.

Linux's side is a ``trace_probe.py`` run of the sender placement (``tcp:tcp_probe``: the sender's event on each
ACK shows snd_nxt - snd_una and cwnd before it is processed, the receiver's event on each data skb its length;
data/local/tcp_window/2026-11-28-tsq/).  The model's is ``tcp_window.scenario`` of the same arguments, with the
same quantities taken at the same points (``TcpSender.on_ack`` entry, each skb it sends).  ``--stalls`` replays
this host's measured read delays at the receiver (reader_stalls.py's input, a machine-state diagnostic, not a
model of the load).

    .venv/bin/python validation/tcp_window/tsq_regime.py data/local/tcp_window/2026-11-28-tsq/sender_htb_100mbit_P1_cubic_trace.json.gz
    .venv/bin/python validation/tcp_window/tsq_regime.py --config htb 100mbit 1 cubic --stalls --seeds 3
    .venv/bin/python validation/tcp_window/tsq_regime.py RUN --writer-late 0.002

(``--writer-late D``: an ACK's push before the writer it wakes, as ``tcp_data_snd_check`` orders them
(``TcpSender.ack_order``), and the bulk writer, once woken at 2/3 of its buffer, writing D seconds later -- a
diagnostic of the write queue's depth at the ACKs, not a model of the writer's scheduling.)

(``--config``: the model alone, the report's 8-s run of that sender-placement configuration, per seed.)
"""
from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
EVENT = re.compile(r"(\d+\.\d+): tcp_probe: family=\S+ src=(\S+) dest=(\S+) mark=\S+ data_len=(\d+) "
                   r"snd_nxt=0x(\w+) snd_una=0x(\w+) snd_cwnd=(\d+) ssthresh=\d+ snd_wnd=\d+ srtt=(\d+)")
MSS = 1448


def linux(run: dict) -> tuple[list[tuple], list[tuple]]:
    """(t, cwnd, in flight, srtt s) per ACK of the data connection and (t, segments) per skb its receiver got;
    t from the first ACK of the data connection."""
    ev = [m.groups() for m in map(EVENT.search, run["trace"].splitlines()) if m]
    acks = Counter((src, dst) for _, src, dst, dl, *_ in ev if dl == "0" and dst.endswith(":5201"))
    src, dst = acks.most_common(1)[0][0]
    port = ":" + src.rsplit(":", 1)[1]
    out, rcv, t0 = [], [], None
    for t, s, d, dl, nxt, una, cwnd, srtt in ev:
        t = float(t)
        if (s, d) == (src, dst):
            t0 = t if t0 is None else t0
            out.append((t - t0, int(cwnd), ((int(nxt, 16) - int(una, 16)) % (1 << 32)) // MSS, int(srtt) * 1e-6))
        elif t0 is not None and (d.endswith(port) or d.endswith(port + "]")) and int(dl) > 0:
            rcv.append((t - t0, int(dl) // MSS))
    return out, rcv


def late_writer(sender_mod, late: float):
    """Patch ``TcpSender`` for ``--writer-late``: returns the patched (name, original) pairs to restore."""
    from ovssim.sched import call_at
    cls = sender_mod.TcpSender
    wake, init = cls._wake_writer, cls.__init__

    def init_(self, *a, **k):
        init(self, *a, **k)
        self.ack_order = True

    def wake_(self, now):
        if late <= 0 or self.bulk_until is None or now >= self.bulk_until:
            return wake(self, now)
        if self.sndbuf_auto is not None and self.cwnd > self._sndbuf_cwnd:
            self._grow_sndbuf()
        at = getattr(self, "_late_at", None)
        if at is None:      # woken now (2/3 of the buffer), writes at now + late
            if self.snd_una + self.sndbuf > self.write_end and 3 * (self.write_end - self.snd_una) <= 2 * self.sndbuf:
                self._late_at = now + late
                call_at(self.env, now + late, lambda _=None: self.push())
        elif now >= at:
            self._late_at = None
            self.write_end = max(self.write_end, self.snd_una + self.sndbuf)
    cls.__init__, cls._wake_writer = init_, wake_
    return [("__init__", init), ("_wake_writer", wake)]


def model(args: dict, stalls: bool, seed: int, late: float | None = None) -> tuple[list[tuple], list[tuple], float, float]:
    """The same per-ACK and per-skb records from the model, and its ping mean/max (ms) over probe.py's window."""
    sys.path.insert(0, str(ROOT))
    from ovssim.runner import run_scenario
    from ovssim.tcp import sender as sender_mod
    from ovssim.validate import tcp_window
    from ovssim.validate.base import CALIBRATION
    from ovssim.workloads import iperf_tcp
    acks, skbs, streams = {}, {}, []
    on_ack, transmit, opened = (sender_mod.TcpSender.on_ack, sender_mod.TcpSender._transmit,
                                iperf_tcp.IperfTcp._open_stream)
    delays = None
    if stalls:
        import reader_stalls
        delays = np.clip(np.concatenate([reader_stalls.ack_delays(f) for f in
                                         sorted(reader_stalls.TRACES.glob("*.tcp_probe.txt.gz"))]) - 25e-6, 0, None)
    rng = np.random.default_rng(seed)

    def ack(self, pkt, now):
        acks.setdefault(self, []).append((now, self.cwnd, self.in_flight, self.rtt.srtt))
        return on_ack(self, pkt, now)

    def tx(self, seq, n, now, new, segs=1):
        if new:
            skbs.setdefault(self, []).append((now, segs))
        return transmit(self, seq, n, now, new, segs)

    def open_stream(self, measured_from, until):
        c, s = opened(self, measured_from, until)
        streams.append(c)
        if delays is not None:
            s.receiver.read_delay = lambda: float(delays[rng.integers(len(delays))])
        return c, s
    sender_mod.TcpSender.on_ack, sender_mod.TcpSender._transmit = ack, tx
    iperf_tcp.IperfTcp._open_stream = open_stream
    restore = late_writer(sender_mod, late) if late is not None else []
    try:
        res = run_scenario(tcp_window.scenario(args), reps=1, seed=seed,
                           profile=str(CALIBRATION / f"{tcp_window.PROFILE}.toml"))
    finally:
        sender_mod.TcpSender.on_ack, sender_mod.TcpSender._transmit = on_ack, transmit
        iperf_tcp.IperfTcp._open_stream = opened
        for name, f in restore:
            setattr(sender_mod.TcpSender, name, f)
    data = max(streams, key=lambda c: c.sender.bytes_sent).sender
    a = [e for e in acks[data] if e[2] > 0]
    t0 = a[0][0]
    rtt = tcp_window.window(res.samples["ping:rtt"], float(args["time"])) * 1e3
    return ([(t - t0, c, f, s) for t, c, f, s in a], [(t - t0, n) for t, n in skbs[data]],
            float(rtt.mean()), float(rtt.max()))


def describe(name: str, acks: list[tuple], skbs: list[tuple]) -> None:
    """When the flow first reached each cwnd, and the skbs and srtt there; gaps in its skbs."""
    print(f"{name}: final cwnd {acks[-1][1]}, max in flight before an ACK {max(f for _, _, f, _ in acks)}")
    marks = [16, 20, 30, 40, 50, 55, 60, 70, 90, 110, 135]
    st = np.array([t for t, _ in skbs])
    for m in marks:
        hit = next((e for e in acks if e[1] >= m), None)
        if hit is None:
            print(f"  cwnd {m:3d}: never")
            continue
        t = hit[0]
        near = [n for ts, n in skbs if t - 0.02 <= ts <= t + 0.02]
        print(f"  cwnd {m:3d} at {1e3 * t:7.1f} ms: srtt {1e3 * hit[3]:5.2f} ms, skbs +-20 ms {near[:8]}")
    gaps = np.diff(st)
    big = np.nonzero(gaps > 0.006)[0]
    for i in big[:5]:
        print(f"  no skb for {1e3 * gaps[i]:.1f} ms after {1e3 * st[i]:.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run", nargs="?", help="a trace_probe.py JSON (sender placement)")
    ap.add_argument("--config", nargs=4, metavar=("SHAPER", "RATE", "FLOWS", "CC"),
                    help="no Linux run: the model's 8-s run of this sender-placement configuration")
    ap.add_argument("--seeds", type=int, default=1, help="with --config: seeds 1..N")
    ap.add_argument("--stalls", action="store_true", help="the model's receiver reads as this host's did")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--writer-late", type=float, default=None, metavar="D",
                    help="ACK push before the writer it wakes, the writer D s late (a diagnostic)")
    a = ap.parse_args()
    if a.config:
        kind, rate, flows, cc = a.config
        args = {"shaper": kind, "rate": rate, "flows": int(flows), "cc": cc, "time": 8}
        for seed in range(1, a.seeds + 1):
            ma, _, mean, mx = model(args, a.stalls, seed)
            print(f"{' '.join(a.config)} seed {seed}{' (replayed read delays)' if a.stalls else ''}: "
                  f"ping mean {mean:.2f} max {mx:.2f} ms, final cwnd {ma[-1][1]}")
        return
    with gzip.open(a.run, "rt") as fh:
        run = json.load(fh)
    la, lr = linux(run)
    print(f"Linux: ping mean {run['summary']['ping_mean_ms']} max {run['summary']['ping_max_ms']} ms")
    describe("Linux", la, lr)
    ma, mr, mean, mx = model(run["args"], a.stalls, a.seed, a.writer_late)
    how = (" (replayed read delays)" if a.stalls else "") + (
        f" (ACK push first, writer {1e3 * a.writer_late:.2f} ms late)" if a.writer_late is not None else "")
    print(f"model{how}: ping mean {mean:.2f} max {mx:.2f} ms")
    describe("model", ma, mr)


if __name__ == "__main__":
    main()
