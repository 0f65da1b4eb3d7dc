"""A core's cold start after an idle exit (``host.cold_factor``), measured by the chain-ping probe.

``validation/chain_ping/probe.sh`` pings through 1, 2 and 4 veth-chained Linux bridges with the pings 0.2 ms
apart (the core never idles) and 10 ms apart (it halts between pings; data/local/2026-11-28-chainping).  The
slope of the mean RTT over the number of bridges is what one bridge + veth hop costs a lone ping, both
directions; its ratio between the two spacings is how much slower a packet's work runs on a core just out of
a long idle than on a warm one -- the idle exit's fixed latency cancels in the slope.

The collector's idle exit (:func:`ovssim.collect.state.idle_exit_us`: a spaced veth ping's RTT less the hot
ping-pong's time per exchange) holds that slowdown of the spaced ping's own work too; :func:`warm_exit` takes it
out, so that ``host.idle_exit`` plus the cold work gives the measured spaced ping back.  The spaced ping's warm
work is the probe's warm RTT at zero bridges (the intercept of its line): one veth pair between two namespaces,
the collector's own set-up.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
PROBE = ROOT / "data" / "local" / "2026-11-28-chainping" / "ping.txt"
WARM, COLD = 0.0002, 0.01            # the probe's spacings (s): a core that never idles, one that halts
_LINE = re.compile(r"N=(\d+) interval=([\d.]+) rtt min/avg/max/mdev = [\d.]+/([\d.]+)/")


@dataclass(frozen=True)
class ColdStart:
    factor: float          # host.cold_factor: cold hop cost / warm hop cost
    warm_hop_us: float     # one bridge + veth hop, one direction, pings 0.2 ms apart
    veth_rtt_us: float     # a ping over one veth pair, pings 0.2 ms apart (the warm line at zero bridges)
    cold_hop_us: float     # the same, pings 10 ms apart
    runs: int              # ping runs used (chain lengths x spacings x rounds)

    def describe(self) -> str:
        return (f"host.cold_factor {self.factor:.2f}: a bridge + veth hop costs a lone ping {self.cold_hop_us:.1f} us "
                f"per direction 10 ms apart against {self.warm_hop_us:.1f} us 0.2 ms apart "
                f"({self.runs} ping runs of validation/chain_ping/probe.sh, 1/2/4 bridges at both spacings, means to "
                f"1 us; {PROBE.parent.relative_to(ROOT)})")


def probe_rtts(path: Path = PROBE) -> dict[tuple[int, float], list[float]]:
    """(bridges, spacing in s) -> mean RTTs (us) of the probe's runs, from ping's summary lines."""
    out: dict[tuple[int, float], list[float]] = {}
    for line in path.read_text().splitlines():
        m = _LINE.match(line.strip())
        if m:
            out.setdefault((int(m[1]), float(m[2])), []).append(float(m[3]) * 1e3)
    return out


def warm_line(rtts: dict[tuple[int, float], list[float]], spacing: float) -> tuple[float, float]:
    """(RTT at zero bridges, one bridge + veth hop one direction), us: the least-squares line of the mean RTT
    over the number of bridges at ``spacing``."""
    pts = [(n, np.mean(v)) for (n, s), v in rtts.items() if s == spacing]
    if len({n for n, _ in pts}) < 2:
        raise ValueError(f"the probe has fewer than two chain lengths at {spacing * 1e3:g} ms")
    n, y = np.array(pts, dtype=float).T
    slope, intercept = np.polyfit(n, y, 1)
    return float(intercept), float(slope) / 2.0


def hop_us(rtts: dict[tuple[int, float], list[float]], spacing: float) -> float:
    """One bridge + veth hop, one direction (us): half the slope of the mean RTT over bridges."""
    return warm_line(rtts, spacing)[1]


@lru_cache(maxsize=1)
def cold_start(path: Path = PROBE) -> ColdStart:
    """The cold-start factor of this machine from the chain-ping probe's runs at :data:`WARM` and :data:`COLD`."""
    rtts = probe_rtts(path)
    (veth_rtt, warm), cold = warm_line(rtts, WARM), hop_us(rtts, COLD)
    if not warm > 0:
        raise ValueError(f"{path}: the warm per-hop cost is {warm:.2f} us, not above zero")
    runs = sum(len(v) for (_, s), v in rtts.items() if s in (WARM, COLD))
    return ColdStart(round(max(1.0, cold / warm), 3), warm, veth_rtt, cold, runs)


def warm_exit(step: float, exchange: float | None, cold: ColdStart, work: float | None = None) -> float:
    """``host.idle_exit`` (s) from the collector's measured step (s; the spaced veth ping's RTT less the hot
    ping-pong's time per ``exchange``, s): the spaced ping is the exit plus its warm ``work`` (s: the hot
    ping-pong's RTT where the collector measured it, else the probe's ``cold.veth_rtt_us``) run ``cold.factor``
    times slower, so exit = step + exchange - factor x work (exchange None: not measured, taken as the work)."""
    if work is None:
        work = cold.veth_rtt_us * 1e-6
    if exchange is None:
        exchange = work
    return max(0.0, step + exchange - cold.factor * work)
