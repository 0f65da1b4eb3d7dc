"""Diagnostic (not the report): CUBIC's slow-start rounds behind the bridge port's HTB, Linux against the model.

Why the single-flow HTB 10/20 Mbit/s rows' queue is short: after slow start both Linux and the model are
cwnd-limited (ss: unacked = cwnd, notsent 0.5-2 MB; the 4 MB send buffer never empties the write queue) and CUBIC
grows both at the same ~80 segments/s, so the queue differs by the cwnd HyStart left slow start at: Linux 1424
(two of three traced runs; 1004 in the third), the model 914.  HyStart's delay test needs 9 ACKs (one per 64 KB
skb) in one round, so the exit is decided by how each round's window is cut into skbs and whether the receive
window bounds a round.

For a ``trace_probe.py --bridge`` run (``tcp:tcp_probe``, ``tcp:tcp_rcvbuf_grow``;
data/local/tcp_window/2026-11-28-trace) this prints each round (HyStart's: from the ACK that passes the previous
round's snd_nxt): cwnd and segments in flight at its start, snd_wnd, and the segments each ACK acknowledged;
then the model's rounds for the same arguments.  ``--exit-at N`` (model only) suppresses HyStart's exit below
cwnd N and prints the ping RTT the report's window then gives -- the check that the exit cwnd alone accounts for
the rows' error.

    .venv/bin/python validation/tcp_window/hystart_rounds.py data/local/tcp_window/2026-11-28-trace/bridge_htb_20mbit_P1_cubic_1795852558.json.gz
    .venv/bin/python validation/tcp_window/hystart_rounds.py RUN --exit-at 1424
"""
from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MSS = 1448
PROBE = re.compile(r"\s(\d+\.\d+): tcp_probe: .*src=(\S+) dest=(\S+) .*data_len=(\d+) snd_nxt=(0x[0-9a-f]+) "
                   r"snd_una=(0x[0-9a-f]+) snd_cwnd=(\d+) ssthresh=(\d+) snd_wnd=(\d+)")
INF_SSTHRESH = 2**31 - 1


def linux(run: dict) -> list[tuple]:
    """(t, snd_una, snd_nxt, cwnd, ssthresh, snd_wnd) before each ACK of the data connection (tcp_probe)."""
    flows: dict = {}
    for line in run["trace"].splitlines():
        m = PROBE.search(line)
        if m and m.group(3).endswith(":5201"):
            flows.setdefault(m.group(2), []).append(m.groups())
    rows = max(flows.values(), key=len)
    base = int(rows[0][5], 16)
    return [(float(t), (int(una, 16) - base) % 2**32, (int(nxt, 16) - base) % 2**32, int(c), int(s), int(w))
            for t, _, _, _, nxt, una, c, s, w in rows]


def model(args: dict, exit_at: int = 0) -> tuple[list[tuple], list[int], float, float]:
    """The same rows from the model's data connection, its HyStart exits and ping mean/max (ms)."""
    sys.path.insert(0, str(ROOT))
    from ovssim.runner import run_scenario
    from ovssim.tcp import cubic, sender as sender_mod
    from ovssim.validate import tcp_window
    from ovssim.validate.base import CALIBRATION
    recs: dict = {}
    exits: list[int] = []
    on_ack, leave = sender_mod.TcpSender.on_ack, cubic.Cubic._exit_slow_start

    def ack(self, pkt, now):
        recs.setdefault(self, []).append((now, self.snd_una, self.snd_nxt, self.cwnd,
                                          min(self.ssthresh, INF_SSTHRESH), self.snd_wnd))
        return on_ack(self, pkt, now)

    def exit_(self):
        if self.s.cwnd < exit_at:
            return
        exits.append(self.s.cwnd)
        leave(self)
    sender_mod.TcpSender.on_ack, cubic.Cubic._exit_slow_start = ack, exit_
    try:
        res = run_scenario(tcp_window.scenario(args), reps=1, seed=1,
                           profile=str(CALIBRATION / f"{tcp_window.PROFILE}.toml"))
    finally:
        sender_mod.TcpSender.on_ack, cubic.Cubic._exit_slow_start = on_ack, leave
    rtt = tcp_window.window(res.samples["ping:rtt"], float(args["time"])) * 1e3
    return max(recs.values(), key=len), exits, float(rtt.mean()), float(rtt.max())


def rounds(rows: list[tuple], label: str) -> None:
    print(label)
    t0 = rows[0][0]
    end = rows[0][2]
    start, acks = None, []
    for i in range(1, len(rows) - 1):
        t, una, nxt, cwnd, ssth, wnd = rows[i]
        una_after = rows[i + 1][1]
        if una_after <= una:
            continue
        if una_after > end:
            if start is not None:
                print(f"  round at {start[0] - t0:7.4f} s: cwnd {start[1]:5d}, in flight {start[2]:5d}, snd_wnd "
                      f"{start[3]:8d} ({start[3] // MSS} segments); {len(acks)} ACKs of {acks[:10]} segments")
            start, end, acks = (t, cwnd, (nxt - una) // MSS, wnd), nxt, []
        acks.append((una_after - una) // MSS)
        if ssth < INF_SSTHRESH:
            print(f"  HyStart exit at {t - t0:.4f} s: ssthresh {ssth} ({len(acks)} ACKs into the round that began at "
                  f"cwnd {start[1]} with {start[2]} in flight)")
            return


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run", help="a trace_probe.py --bridge JSON (CUBIC)")
    ap.add_argument("--exit-at", type=int, default=0, help="model: no HyStart exit below this cwnd")
    a = ap.parse_args()
    with gzip.open(a.run, "rt") as fh:
        run = json.load(fh)
    print(f"Linux: ping mean {run['summary']['ping_mean_ms']} max {run['summary']['ping_max_ms']} ms")
    rounds(linux(run), "Linux (tcp_probe)")
    rows, exits, mean, mx = model(run["args"], a.exit_at)
    print(f"model: ping mean {mean:.1f} max {mx:.1f} ms, HyStart exits {exits}"
          + (f" (none below cwnd {a.exit_at})" if a.exit_at else ""))
    rounds(rows, "model")


if __name__ == "__main__":
    main()
