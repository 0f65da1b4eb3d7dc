"""Run many scenario variants for validation, and calibrate over several of them at once.

A validation *configuration* is a scenario (a dict in the ``ovssim.scenario``
format) plus a label.  :func:`run_configs` runs a batch of them under one
profile -- in worker processes when ``workers > 1`` -- and returns, per label,
the per-replication table and the samples.  Every run of a configuration uses
the same seed (common random numbers), so two profiles or two configurations
are compared on the same random draws.

:class:`MultiConfigModel` is the glue ``ovssim.fit.calibrate`` needs to fit one
set of parameters against targets measured in *several* configurations (e.g.
the OVS and the Linux-bridge runs of the thesis's FIFO row): the fit library's
``SimulationModel`` wraps one scenario only.  Its metric keys are
``("<label>/<workload>", metric)``.
"""
from __future__ import annotations

import math
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..fit.calibrate import Param, overrides_for
from ..precedence import resolve
from ..profile import Profile
from ..scenario import from_dict
from ..runner import shutdown_pool


@dataclass
class Config:
    """One simulated configuration: a label, a scenario dict, and what it stands for."""
    label: str
    scenario: dict
    facts: dict = field(default_factory=dict)     # e.g. {"bridge": "ovs", "chain": 2}


@dataclass
class ConfigResult:
    label: str
    per_rep: pd.DataFrame
    samples: dict

    def values(self, workload: str, metric: str) -> np.ndarray:
        sel = self.per_rep[(self.per_rep["workload"] == workload) & (self.per_rep["metric"] == metric)]
        return sel["value"].to_numpy(float)


def _run_one(args) -> tuple[str, pd.DataFrame, dict]:
    label, scenario, profile_ref, overrides, reps, seed, sample_keys = args
    from ..runner import run_scenario
    profile = Profile.load(profile_ref) if isinstance(profile_ref, str) else profile_ref
    sc = from_dict(scenario, file=f"<validation:{label}>")
    # the documented order (ovssim.precedence): the fitted profile is the caller's (its values beat the
    # scenario's modelling defaults in [params]); a calibration's trial values are this run's --set
    res = run_scenario(sc, reps=reps, seed=seed, profile=profile, sets=overrides)
    keep = {k: v for k, v in res.samples.items() if sample_keys is None or k in sample_keys}
    return label, res.per_rep, keep


class Runner:
    """Runs configurations, serially or in a small process pool (closed with :meth:`close`)."""

    def __init__(self, workers: int = 1):
        self.workers = max(1, int(workers))
        self._pool = ProcessPoolExecutor(self.workers) if self.workers > 1 else None
        self.simulations = 0

    def close(self, *, kill: bool = False) -> None:
        if self._pool is not None:
            shutdown_pool(self._pool, kill=kill)
            self._pool = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        self.close(kill=exc_type is not None)     # interrupted (Ctrl-C, SIGTERM, SIGHUP): no worker left

    def run(self, configs: list[Config], profile_ref, *, overrides: dict | None = None, reps: int = 2,
            seed: int = 1, sample_keys: set | None = None) -> dict[str, ConfigResult]:
        jobs = [(c.label, c.scenario, profile_ref, overrides or {}, reps, seed, sample_keys) for c in configs]
        self.simulations += len(jobs) * reps
        if self._pool is None or len(jobs) == 1:
            outs = [_run_one(j) for j in jobs]
        else:
            outs = list(self._pool.map(_run_one, jobs))
        return {label: ConfigResult(label, per_rep, samples) for label, per_rep, samples in outs}


class MultiConfigModel:
    """``values -> {("label/workload", metric): (mean, se)}`` over several configurations.

    All evaluations use the same ``seed`` (common random numbers).
    """

    def __init__(self, runner: Runner, configs: list[Config], params: list[Param], profile_ref="default",
                 *, reps: int = 1, seed: int = 1, tied: dict | None = None, fixed: dict | None = None):
        self.runner, self.configs, self.params = runner, configs, params
        self.tied = tied or {}     # parameter -> the fitted parameter whose value it takes
        self.fixed = fixed or {}   # parameter -> a value set beside the fitted ones (measured, not fitted)
        self.profile_ref, self.reps, self.seed = profile_ref, reps, seed
        base = Profile.load(profile_ref) if isinstance(profile_ref, str) else profile_ref
        self.base_specs = {}
        for c in configs:      # what each configuration runs with, before the trial values
            self.base_specs.update(resolve(from_dict(c.scenario), profile=base).profile.params)
        self.evaluations = 0

    def overrides(self, values: dict) -> dict:
        # a fitted field of a fixed distribution (e.g. its scale) takes the fixed spec as its base
        out = {**self.fixed, **overrides_for(self.params, values, {**self.base_specs, **self.fixed})}
        for name, source in self.tied.items():
            out[name] = out[source]
        return out

    def __call__(self, values: dict) -> dict:
        res = self.runner.run(self.configs, self.profile_ref, overrides=self.overrides(values),
                              reps=self.reps, seed=self.seed, sample_keys=set())
        self.evaluations += 1
        out = {}
        for label, r in res.items():
            for (wl, metric), grp in r.per_rep.groupby(["workload", "metric"]):
                v = grp["value"].to_numpy(float)
                se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else 0.0
                out[(f"{label}/{wl}", metric)] = (float(np.nanmean(v)), se)
        return out
