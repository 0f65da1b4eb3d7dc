"""The workload interface: what a traffic tool does in one simulated run.

A workload is built from its scenario table, then ``start(ctx)`` is called
once per replication with a :class:`RunContext` holding the environment, the
two endpoints, the run's duration and a random-stream factory.  After
``env.run``, ``metrics()`` returns the tool's results as :class:`Metric`
rows and ``samples()`` any per-packet samples (RTT, delay) for ECDFs.

Metric names are the ones users compare: ``throughput`` (Mbit/s, as the tool
reports it), ``rtt_mean``/``rtt_p50``/``rtt_p99`` (ms), ``jitter`` (ms, RFC
3550 as iperf), ``loss`` (%), ``transactions`` (per second), ``retransmits``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..errors import ConfigError


@dataclass
class Metric:
    name: str
    value: float
    unit: str


@dataclass
class RunContext:
    env: object
    src: object                 # Endpoint the tool's client runs on
    dst: object                 # Endpoint the tool's server runs on
    duration: float             # seconds of traffic
    rng: Callable[[str], np.random.Generator]   # named independent streams
    start_at: float = 0.0
    extra: dict = field(default_factory=dict)


class Workload:
    """Base class; subclasses set ``kind`` and implement start/metrics."""

    kind = "workload"

    def __init__(self, name: str | None = None):
        self.name = name or self.kind

    def start(self, ctx: RunContext) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def pinned(self, cpus: tuple[int, ...] | None, ctx: RunContext, key: str = "cpus") -> tuple[int, ...] | None:
        """``cpus`` (``taskset -c``: the tool's client and server on these cores; the tool's key ``key``),
        checked against the cores of both endpoints' hosts.  A pinned tool's threads stay on them (where the host schedules
        threads), and so does the work keyed to its connections -- its sends' softirq work, its reads."""
        if cpus is None:
            return None
        for ep in (ctx.src, ctx.dst):
            cpu = getattr(ep, "cpu", None)
            if cpu is not None and max(cpus) >= cpu.cores:
                raise ConfigError(f"workload {self.name}: {key} {list(cpus)} names a core that host "
                                  f"{cpu.name} does not have (cores 0..{cpu.cores - 1})",
                                  key=f"workload.{self.name}.{key}",
                                  fix=f'pin to cores 0..{cpu.cores - 1}, e.g. {key} = "0"')
        return cpus

    def metrics(self) -> list[Metric]:  # pragma: no cover - abstract
        raise NotImplementedError

    def samples(self) -> dict[str, np.ndarray]:
        return {}
