"""Diagnostic (not the report): which ACK BBR's 5/4 phase falls on behind the bridge port's HTB 100 Mbit/s, in Linux's
tcp_probe trace and in the model (issue 18, the single BBR flow's queue at 100 Mbit/s).

Behind HTB each skb is ACKed whole and each ACK is one gain-cycle phase (min_rtt ~10 us, ACKs ms apart:
``bbr_is_next_cycle_phase``), so the cwnd follows tcp_bbr.c's target phase by phase -- ``bbr_bdp`` (1 segment) +
``bbr_ack_aggregation_cwnd`` (the largest ACK of the last 5-10 rounds, ``bbr_update_ack_aggregation``) + 3 x
``bbr_tso_segs_goal`` at the phase's pacing rate (9 / 11 / 6-7 segments at gain 1 / 5/4 / 3/4), rounded up to
even, +2 in the 5/4 phase -- and the largest skb is half the cwnd the ACK before it left (``tcp_cwnd_test``).
Which skb's ACK the 5/4 phase lands on therefore sets the aggregation term: Linux (2026-11-28-bbr, 3.0 s) sends
four skbs a window, 31-35 / 8 / 12 / 11, with the 5/4 phase on the largest (cwnd 62 -> 70 -> 56 -> 62); the
noise-free model settles into three, 26-28 / 10-12 / 18-20, with the 5/4 phase on the 18-20 (cwnd 56 -> 64 -> 48).
``--shift K --at T`` moves the model's gain cycle by K phases at T s (a diagnostic perturbation, not Linux).

    .venv/bin/python validation/tcp_window/bbr_alignment.py \
        data/local/tcp_window/2026-11-27-quiet/bridge_htb_100mbit_P1_bbr_1795811142.json.gz \
        --trace data/local/tcp_window/2026-11-28-bbr/bridge_htb_100mbit_P1_bbr_tcpprobe_1795869571.tcp_probe.txt.gz \
        [--shift 3 --at 1.0] [--from 5.0] [--acks 16]
"""
from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bbr_rounds import sender_acks  # noqa: E402


def linux_acks(trace: Path, t_from: float, n: int) -> list[tuple]:
    """(t s from the trace's start, segments ACKed, cwnd after) of the data stream's ACKs from ``t_from``: tcp_probe
    logs snd_una and snd_cwnd before each ACK, so each ACK's size and resulting cwnd are read at the next one."""
    ports = sender_acks(trace)
    acks = max(ports.values(), key=len)
    t0 = acks[0][0]
    out = []
    for (t, _, una, _), (_, _, una2, cwnd2) in zip(acks, acks[1:]):
        if t - t0 >= t_from and len(out) < n:
            out.append((t - t0, ((una2 - una) % (1 << 32)) // 1448, cwnd2))
    return out


def model_acks(run: dict, t_from: float, n: int, shift: int, at: float, seed: int) -> tuple[list[tuple], list]:
    """The model's run of ``run``'s configuration: (t s, segments ACKed, cwnd after, cycle index, extra_acked) of the
    BBR data stream's ACKs in PROBE_BW from ``t_from``, and the ping's mean RTT (ms) per second."""
    from ovssim.runner import run_scenario
    from ovssim.tcp import bbr
    from ovssim.validate import tcp_window
    from ovssim.validate.base import CALIBRATION
    main = bbr.Bbr.cong_control
    log, shifted = [], set()

    def cong_control(self, acked, delivered, now):
        if shift and now >= at and self.mode == bbr.PROBE_BW and id(self) not in shifted:
            shifted.add(id(self))
            for _ in range(shift):
                self._advance_cycle(now)
        main(self, acked, delivered, now)
        if self.mode == bbr.PROBE_BW and now >= t_from and len(log) < n:
            log.append((now, acked, self.s.cwnd, self.cycle_idx, max(self.extra_acked)))
    bbr.Bbr.cong_control = cong_control
    try:
        res = run_scenario(tcp_window.scenario(run["args"]), reps=1, seed=seed,
                           profile=str(CALIBRATION / f"{tcp_window.PROFILE}.toml"))
    finally:
        bbr.Bbr.cong_control = main
    rtt = res.samples["ping:rtt"] * 1e3
    return log, [round(float(np.mean(rtt[i * 20:(i + 1) * 20])), 2) for i in range(len(rtt) // 20)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run", type=Path, help="a probe.py JSON (its configuration and ping)")
    ap.add_argument("--trace", type=Path, help="Linux's tcp_probe trace (bbr_trace.py) of the same configuration")
    ap.add_argument("--from", dest="t_from", type=float, default=3.0, help="first ACK shown, s (default 3)")
    ap.add_argument("--acks", type=int, default=16)
    ap.add_argument("--shift", type=int, default=0, help="move the model's gain cycle by this many phases")
    ap.add_argument("--at", type=float, default=1.0, help="... at the first PROBE_BW ACK after this time, s")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    with gzip.open(a.run, "rt") as fh:
        run = json.load(fh)
    pings = [p[1] for p in run["pings"]]
    per_s = [round(float(np.mean(pings[i * 20:(i + 1) * 20])), 2) for i in range(len(pings) // 20)]
    print(f"{a.run.name}: Linux ping per second {per_s} ms")
    if a.trace:
        print(f" Linux ({a.trace.name}), ACKed segments / cwnd after:")
        print("  " + " ".join(f"{k}/{c}" for _, k, c in linux_acks(a.trace, a.t_from, a.acks)))
    log, per_s = model_acks(run, a.t_from, a.acks, a.shift, a.at, a.seed)
    print(f" model{f' (gain cycle moved by {a.shift} at {a.at} s)' if a.shift else ''}: ping per second {per_s} ms;"
          " ACKed segments / cwnd after (cycle index, extra_acked):")
    print("  " + " ".join(f"{k}/{c}(i{i},xa{x})" for _, k, c, i, x in log))


if __name__ == "__main__":
    main()
