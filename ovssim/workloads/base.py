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

    def metrics(self) -> list[Metric]:  # pragma: no cover - abstract
        raise NotImplementedError

    def samples(self) -> dict[str, np.ndarray]:
        return {}
