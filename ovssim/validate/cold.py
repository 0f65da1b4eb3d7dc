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

:func:`idle_states` reads the probe at 13 spacings (``ping_gaps.txt``): the 1-bridge ping's mean RTT over the
spacing is a staircase, one step per idle state the core reaches (cpuidle picks the deepest state whose target
residency the expected idle covers).  Three levels -- hot, shallow, deep -- fitted by least squares over the
sorted spacings give the two residencies (geometric means of the spacings either side of each step) and the
shallow state's exit latency (its level less the hot ping's RTT).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..fit.idle_states import IdleLevels, idle_levels

ROOT = Path(__file__).resolve().parents[2]
PROBE = ROOT / "data" / "local" / "2026-11-28-chainping" / "ping.txt"
GAPS = PROBE.parent / "ping_gaps.txt"   # the same probe at 13 spacings, 0.2-40 ms
WARM, COLD = 0.0002, 0.01            # the probe's spacings (s): a core that never idles, one that halts
_LINE = re.compile(r"N=(\d+) interval=([\d.]+) rtt min/avg/max/mdev = [\d.]+/([\d.]+)/")


# the spread of a long-idle core's exit: spaced veth pings (every 10 ms, 28 Nov) had a mean deviation of 10 us
# around a mean of 55 us, min 29 and max 89 us -- a lognormal of shape 0.25 over the ~46 us exit
IDLE_EXIT_SHAPE = 0.25


def idle_exit_spec(mean: float) -> dict:
    """``host.idle_exit`` as a profile value: lognormal of shape :data:`IDLE_EXIT_SHAPE` with mean ``mean`` (s)."""
    return {"dist": "lognorm", "s": IDLE_EXIT_SHAPE,
            "scale": f"{mean / np.exp(IDLE_EXIT_SHAPE ** 2 / 2) * 1e6:.4g}us"}


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


def warm_ping_runs() -> np.ndarray:
    """The probe's 1-bridge ping runs with the pings :data:`WARM` apart (a core that never idles): each run's mean
    RTT, ms, from both of its files -- the path's own work and the receiver stack's latency, without idle exits."""
    runs = [r for path in (PROBE, GAPS) for r in probe_rtts(path).get((1, WARM), [])]
    return np.array(runs) * 1e-3


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


class IdleStates(IdleLevels):
    """This machine's idle states from the chain-ping probe (:func:`idle_states`)."""

    def describe(self) -> str:
        hot, shallow, deep = self.levels_us
        return (f"idle states from {self.runs} ping runs of the chain-ping probe at {self.spacings} spacings "
                f"({GAPS.relative_to(ROOT)}): a 1-bridge ping {hot:.1f} us below {self.shallow_after * 1e3:.2f} ms "
                f"apart, {shallow:.1f} us up to {self.deep_after * 1e3:.2f} ms, {deep:.1f} us beyond: "
                f"host.shallow_after {self.shallow_after * 1e3:.2f} ms, host.shallow_exit "
                f"{self.shallow_exit * 1e6:.1f} us, host.idle_exit_after {self.deep_after * 1e3:.2f} ms")


@lru_cache(maxsize=1)
def idle_states(path: Path = GAPS) -> IdleStates:
    """The shallow and deep idle states of this machine from the probe's 1-bridge pings at many spacings."""
    one = [(s, float(np.mean(v)), len(v)) for (n, s), v in probe_rtts(path).items() if n == 1]
    return IdleStates(**vars(idle_levels(one, str(path))))


def day_idle_states(state: dict | None = None) -> tuple[float, float, float, str]:
    """(``host.shallow_after``, ``host.idle_exit_after``, ``host.shallow_exit``, all s, and where they come
    from) for a day of ``state``: its own idle states where its collector measured them (``state``'s
    ``shallow_after_ms``, ``idle_exit_after_ms``, ``shallow_exit_us``: the idle ladder,
    :mod:`ovssim.collect.state`), else this machine's from the chain-ping probe."""
    state = state or {}
    if state.get("idle_exit_after_ms") is not None:
        return (state["shallow_after_ms"] * 1e-3, state["idle_exit_after_ms"] * 1e-3, state["shallow_exit_us"] * 1e-6,
                f"idle states from the day's idle ladder (collector): host.shallow_after {state['shallow_after_ms']:.2f} "
                f"ms, host.shallow_exit {state['shallow_exit_us']:.1f} us, host.idle_exit_after "
                f"{state['idle_exit_after_ms']:.2f} ms")
    probe = idle_states()
    return probe.shallow_after, probe.deep_after, probe.shallow_exit, probe.describe()


def idle_params(idle_exit: float, state: dict | None = None) -> dict:
    """The profile values the local fits fix for the idle states (:func:`day_idle_states`) and the cold start,
    with the deep state's exit ``idle_exit`` (s, the day's measurement)."""
    shallow_after, deep_after, shallow_exit, _ = day_idle_states(state)
    return {"host.idle_exit": idle_exit_spec(idle_exit), "host.cold_factor": cold_start().factor,
            "host.idle_exit_after": f"{deep_after * 1e3:.4g}ms", "host.shallow_after": f"{shallow_after * 1e3:.4g}ms",
            "host.shallow_exit": idle_exit_spec(shallow_exit)}
