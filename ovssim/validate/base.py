"""Shared pieces of the per-testbed validations: paths, settings, results, fitting glue, figures."""
from __future__ import annotations

import copy
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..data import root as data_root
from ..fit.calibrate import CalibrationResult, Param, Target, calibrate
from ..fit.profile_writer import build_profile, data_entry, write_profile
from ..profile import STATE_KEYS, Profile
from .compare import Comparison, mean_ci
from .simulate import Config, MultiConfigModel, Runner

ROOT = data_root()     # the source checkout, or the copy inside an installed package
SCENARIOS = ROOT / "validation" / "scenarios"
CALIBRATION = ROOT / "calibration"


def shown(path: Path) -> str:
    """``path`` relative to the source tree when inside it (``calibration/x.toml``), else as given."""
    try:
        return str(Path(path).resolve().relative_to(ROOT.resolve()))
    except ValueError:
        return str(path)


@dataclass
class Settings:
    """Budget knobs: the full run and the test's fast subset use the same simulation settings,
    so their error figures are directly comparable (deterministic seeds)."""
    reps: int = 2              # replications per predicted configuration
    fit_reps: int = 1          # replications per calibration evaluation (common random numbers)
    max_evals: int = 24        # Nelder-Mead evaluations per fit
    workers: int = 2
    fit: bool = True           # False: use the committed calibration/*.toml (fast subset)
    fast: bool = False         # only the fast subset of configurations
    figures_dir: Path = ROOT / "validation" / "figures"
    calibration_dir: Path = CALIBRATION
    command: str = "ovssim validate"


@dataclass
class TestbedResult:
    name: str
    title: str
    rows: list[Comparison] = field(default_factory=list)
    figures: list[tuple[str, str]] = field(default_factory=list)   # (file name, caption)
    notes: list[str] = field(default_factory=list)                  # markdown paragraphs
    split: str = ""                                                 # what was fitted, what predicted
    fit: dict = field(default_factory=dict)
    profile: str = ""
    tables: list[str] = field(default_factory=list)                 # extra markdown tables
    section: str = ""                                               # optional report section name
    extra: dict = field(default_factory=dict)


def load_scenario_dict(name: str) -> dict:
    with open(SCENARIOS / name, "rb") as fh:
        return tomllib.load(fh)


def variant(base: dict, *, name: str | None = None, workloads: list[dict] | None = None, **edits) -> dict:
    """A copy of scenario dict ``base`` with ``edits`` applied: ``{"bridge.br": {"kind": "linux"}}``
    updates the element named ``br`` of section ``bridge``; ``scenario`` / ``params`` keys update tables."""
    d = copy.deepcopy(base)
    for key, upd in edits.items():
        sec, _, elem = key.partition(".")
        if not elem:
            d.setdefault(sec, {}).update(upd)
            continue
        for item in d.get(sec, []):
            if item.get("name") == elem:
                item.update(upd)
                break
        else:
            raise KeyError(f"no {sec} named {elem}")
    if workloads is not None:
        d["workload"] = workloads
    if name:
        d["scenario"]["name"] = name
    return d


def fit_profile(runner: Runner, settings: Settings, *, name: str, configs: list[Config], params: list[Param],
                targets: list[Target], data_files: list[Path], description: str, method_note: str,
                base_profile: str = "default", x0: dict | None = None,
                extra_data: list[dict] | None = None, max_evals: int | None = None, state: dict | None = None,
                tied: dict | None = None, fixed: dict | None = None) -> tuple[Path, CalibrationResult | None]:
    """Calibrate ``params`` against ``targets`` over ``configs`` and write ``calibration/<name>.toml``.

    ``state``: the profile's ``[state]``: keys the data's collector machine state lacks (``cpu_busy``), or all
    of it where the data carry none.
    ``tied``: parameters set to a fitted one's value (``{"app.recv_per_byte": "app.send_per_byte"}``);
    ``fixed``: parameters set to given values (measured directly) beside the fitted ones, written with them.

    With ``settings.fit`` False the committed profile is returned unchanged.
    """
    path = settings.calibration_dir / f"{name}.toml"
    if not settings.fit:
        return path, None
    # the fit evaluates the profile it writes: with the state it will carry (its busy share decides which
    # wake-ups the runs pay; without it a fit from "default" would not pay app.idle_wake at all)
    base = Profile.load(base_profile) if isinstance(base_profile, (str, Path)) else base_profile
    if state:
        base = base.with_state({k: v for k, v in state.items() if k in STATE_KEYS})
    model = MultiConfigModel(runner, configs, params, base, reps=settings.fit_reps, seed=4242, tied=tied,
                             fixed=fixed)
    max_evals = max_evals or settings.max_evals
    res = calibrate(model, params, targets, x0=x0, max_evals=max_evals)
    overrides = model.overrides(res.values)
    fit = {"objective": res.objective, "evaluations": res.evaluations, "success": res.success,
           "optimizer": f"bounded Nelder-Mead on log-scaled parameters, max {max_evals} evaluations",
           "uncertainty_method": res.uncertainty_method,
           "simulation": f"{settings.fit_reps} replication(s) per evaluation, seed 4242 (common random numbers), "
                         "short simulated durations (see validation/report.md)",
           "at_bound": list(res.at_bound),
           "targets": [{"target": f"{k[0]}:{k[1]}", "simulated": s, "measured": y, "sigma": sg}
                       for k, (s, y, sg) in res.fitted.items()]}
    unc = {}
    for p in params:
        lo, hi = res.ci95[p.label]
        if math.isfinite(res.std[p.label]) and math.isfinite(lo) and math.isfinite(hi):
            unc[p.label] = {"std": p.fmt(res.std[p.label]) if p.is_time else res.std[p.label],
                            "ci95": [p.fmt(lo), p.fmt(hi)]}
    doc = build_profile(name=name, params=overrides, data_files=data_files, command=settings.command,
                        method="simulation-based calibration (ovssim.fit.calibrate) over several "
                               f"configurations via ovssim.validate.simulate.MultiConfigModel; {method_note}",
                        description=description, fit=fit, uncertainty=unc or None, extra_data=extra_data)
    if state:                      # the data's collector state wins; ``state`` adds what it lacks (cpu_busy)
        doc["state"] = {**state, **doc.get("state", {})}
    doc["profile"]["base"] = base_profile if not Path(str(base_profile)).is_absolute() else Path(base_profile).stem
    write_profile(path, doc)
    return path, res


def fit_summary(res: CalibrationResult | None, path: Path) -> dict:
    """A small dict for the report: fitted values with their CIs, or what the committed profile holds."""
    if res is None:
        doc = tomllib.loads(path.read_text())
        return {"params": doc.get("params", {}), "fit": doc.get("fit", {}), "uncertainty": doc.get("uncertainty", {}),
                "provenance": doc.get("provenance", {})}
    return {"params": {p.label: p.fmt(res.values[p.label]) for p in res.params},
            "ci95": {p.label: [p.fmt(v) if math.isfinite(v) else str(v) for v in res.ci95[p.label]]
                     for p in res.params},
            "objective": res.objective, "evaluations": res.evaluations, "at_bound": res.at_bound}


def sim_stats(values) -> tuple[float, float, float]:
    return mean_ci(values)


def data_sha(path: Path) -> dict:
    return data_entry(path)


def quantile_band(value: float, resolution: float) -> tuple[float, float]:
    return value - resolution / 2, value + resolution / 2


def finite(x) -> bool:
    return x is not None and isinstance(x, (int, float)) and math.isfinite(x)


def nanmean(v) -> float:
    v = np.asarray(v, float)
    return float(np.nanmean(v)) if v.size else float("nan")
