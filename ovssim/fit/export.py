"""Export a fitted delay distribution to other simulators.

* ns-3: an ``EmpiricalRandomVariable`` CDF table -- one ``CDF(value, prob)`` call
  per point, values increasing and the last probability 1.0, with
  ``SetInterpolate(true)`` for a continuous draw (ns-3 random-variable-stream.h);
  written as a two-column text table and as a C++ snippet.
* OMNeT++ / INET: a NED/ini parameter expression built from OMNeT++'s
  distribution functions -- ``exponential(mean)``, ``lognormal(m, w)`` (m, w: mean
  and standard deviation of the underlying normal), ``gamma_d(alpha, theta)``,
  ``weibull(a, b)`` (a scale, b shape); a log-normal mixture becomes a chain of
  ``uniform(0,1) < p ? ... : ...`` choices.  OMNeT++ has no empirical
  distribution function, so empirical fits export as a ``value,cdf`` table only.
* JSON: the spec plus a CDF table in seconds.

All inputs are ``ovssim.distributions`` specs (what profiles store).
"""
from __future__ import annotations

import json

import numpy as np

from .. import units
from ..distributions import Distribution
from ..errors import DataError

_DEFAULT_POINTS = 201


def _time(v, unit: float) -> float:
    return units.time(v) if isinstance(v, str) else float(v) * unit


def _spec_unit(spec: dict) -> float:
    if not (isinstance(spec, dict) and "unit" in spec):
        return 1.0
    u = str(spec["unit"]).strip()
    return units.time("1" + u if u[:1].isalpha() else u)


def cdf_table(spec, n_points: int = _DEFAULT_POINTS, *, p_lo: float = 1e-4,
              p_hi: float = 1 - 1e-4) -> tuple[np.ndarray, np.ndarray]:
    """(values in seconds, cumulative probabilities) tabulating the distribution.

    Parametric families are tabulated at ``n_points`` probabilities between
    ``p_lo`` and ``p_hi`` (their ppf); the table starts at probability 0 at the
    ``p_lo`` quantile's left neighbour and ends at exactly 1.0, as ns-3 needs.
    Empirical specs are exported as their own points.
    """
    dist = Distribution(spec, where="export")
    if dist.const is not None:
        raise DataError("a constant delay has no CDF table -- fix: export it as the number itself")
    if isinstance(spec, dict) and spec.get("dist") == "empirical":
        u = _spec_unit(spec)
        if "values" in spec:
            vals = np.sort([_time(v, u) for v in spec["values"]])
            probs = np.arange(1, vals.size + 1) / vals.size
            vals = np.concatenate([[vals[0]], vals])
            probs = np.concatenate([[0.0], probs])
        else:
            vals = np.array([_time(v, u) for v in spec["quantiles"]])
            probs = np.array(spec["probs"], float)
            if probs[0] > 0:
                vals, probs = np.concatenate([[vals[0]], vals]), np.concatenate([[0.0], probs])
            if probs[-1] < 1:
                vals, probs = np.concatenate([vals, [vals[-1]]]), np.concatenate([probs, [1.0]])
        return vals, probs
    grid = np.concatenate([[0.0], np.linspace(p_lo, p_hi, n_points - 2), [1.0]])
    inner = grid[1:-1]
    if dist.frozen is not None:
        q = dist.frozen.ppf(inner)
    else:   # the mixture: invert its CDF on a dense grid
        xs = _dense_support(spec)
        q = np.interp(inner, dist.cdf(xs), xs)
    q = np.maximum(q, 0.0)
    lo = q[0] - (q[1] - q[0]) * p_lo / max(inner[1] - inner[0], 1e-12)
    hi = q[-1] + (q[-1] - q[-2]) * (1 - p_hi) / max(inner[-1] - inner[-2], 1e-12)
    vals = np.concatenate([[max(lo, 0.0)], q, [hi]])
    return np.maximum.accumulate(vals), grid


def _dense_support(spec: dict) -> np.ndarray:
    u = _spec_unit(spec)
    loc = _time(spec.get("loc", 0.0), u)
    sc = np.array([_time(v, u) for v in spec["scale"]])
    s = np.array(spec["s"], float)
    lo = float(np.min(sc * np.exp(-7 * s)))
    hi = float(np.max(sc * np.exp(7 * s)))
    return loc + np.geomspace(lo, hi, 20001)


# -- ns-3 -----------------------------------------------------------------------
def to_ns3_table(spec, *, unit: str = "us", n_points: int = _DEFAULT_POINTS) -> str:
    """Two columns ``value cdf`` (value in ``unit``), one CDF point per line."""
    vals, probs = cdf_table(spec, n_points)
    f = units.time("1" + unit)
    lines = [f"# ns-3 EmpiricalRandomVariable CDF points: value[{unit}] cumulative_probability"]
    lines += [f"{v / f:.9g} {p:.9g}" for v, p in zip(vals, probs)]
    return "\n".join(lines) + "\n"


def to_ns3_cpp(spec, *, name: str = "delay", unit: str = "us", n_points: int = _DEFAULT_POINTS) -> str:
    """A C++ snippet building the ``EmpiricalRandomVariable`` (draws in ``unit``)."""
    vals, probs = cdf_table(spec, n_points)
    f = units.time("1" + unit)
    ident = "".join(ch if ch.isalnum() else "_" for ch in name)
    out = [f"// {name}: fitted by ovssim; draws are in {unit} "
           f"(e.g. MicroSeconds({ident}->GetValue()))",
           f"Ptr<EmpiricalRandomVariable> {ident} = CreateObject<EmpiricalRandomVariable>();",
           f"{ident}->SetInterpolate(true);"]
    out += [f"{ident}->CDF({v / f:.9g}, {p:.9g});" for v, p in zip(vals, probs)]
    return "\n".join(out) + "\n"


# -- OMNeT++ --------------------------------------------------------------------
def _q(v: float, unit: str, f: float) -> str:
    return f"{v / f:.6g}{unit}"


def to_omnetpp(spec, *, unit: str = "us") -> str:
    """An OMNeT++ NED/ini expression drawing from the distribution (a ``volatile`` parameter)."""
    if isinstance(spec, (int, float, str)):
        return _q(units.time(spec), unit, units.time("1" + unit))
    name = spec.get("dist")
    u = _spec_unit(spec)
    f = units.time("1" + unit)
    loc = _time(spec.get("loc", 0.0), u)
    shift = f"{_q(loc, unit, f)} + " if loc > 0 else ""
    if name == "expon":
        return f"{shift}exponential({_q(_time(spec.get('scale', 1.0), u), unit, f)})"
    if name == "lognorm":
        sc = _time(spec.get("scale", 1.0), u)
        return f"{shift}{_q(sc, unit, f)} * lognormal(0, {float(spec['s']):.6g})"
    if name == "gamma":
        sc = _time(spec.get("scale", 1.0), u)
        return f"{shift}{_q(sc, unit, f)} * gamma_d({float(spec['a']):.6g}, 1)"
    if name == "weibull_min":
        sc = _time(spec.get("scale", 1.0), u)
        return f"{shift}{_q(sc, unit, f)} * weibull(1, {float(spec['c']):.6g})"
    if name == "lognorm_mixture":
        w = np.asarray(spec["weights"], float)
        comps = [f"{_q(_time(c, u), unit, f)} * lognormal(0, {float(s):.6g})"
                 for s, c in zip(spec["s"], spec["scale"])]
        expr = comps[-1]
        # walk backwards: choose component j with probability w_j / (remaining mass)
        for j in range(len(comps) - 2, -1, -1):
            rest = float(w[j:].sum())
            p = float(w[j] / rest) if rest > 0 else 1.0
            expr = f"(uniform(0, 1) < {p:.6g} ? {comps[j]} : {expr})"
        return f"{shift}{expr}" if shift else expr
    if name == "empirical":
        raise DataError("OMNeT++ has no empirical-distribution function -- fix: export the "
                        "table (--format omnetpp-table) and read it in your module")
    raise DataError(f"no OMNeT++ equivalent for {name!r} -- fix: export a CDF table instead")


def to_omnetpp_table(spec, *, unit: str = "us", n_points: int = _DEFAULT_POINTS) -> str:
    """CSV ``value,cdf`` (value in ``unit``) for a user module's inverse-CDF lookup."""
    vals, probs = cdf_table(spec, n_points)
    f = units.time("1" + unit)
    return f"value_{unit},cdf\n" + "".join(f"{v / f:.9g},{p:.9g}\n" for v, p in zip(vals, probs))


# -- JSON ----------------------------------------------------------------------
def to_json(spec, *, name: str = "delay", figures: dict | None = None,
            n_points: int = _DEFAULT_POINTS) -> str:
    """The spec, its mean and a CDF table in seconds, as JSON."""
    dist = Distribution(spec, where=name)
    doc = {"name": name, "spec": spec, "mean_s": dist.mean()}
    if dist.const is None:
        vals, probs = cdf_table(spec, n_points)
        doc["cdf"] = {"value_s": [float(f"{v:.9g}") for v in vals], "prob": [float(p) for p in probs]}
    if figures:
        doc["fit"] = figures
    return json.dumps(doc, indent=2, default=_json_default) + "\n"


def _json_default(o):
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(type(o).__name__)


FORMATS = {"ns3-table": to_ns3_table, "ns3-cpp": to_ns3_cpp, "omnetpp": to_omnetpp,
           "omnetpp-table": to_omnetpp_table, "json": to_json}


def export(spec, fmt: str, *, name: str = "delay", unit: str = "us") -> str:
    if fmt not in FORMATS:
        raise DataError(f"unknown export format {fmt!r} -- fix: use one of {', '.join(FORMATS)}")
    if fmt == "json":
        return to_json(spec, name=name)
    if fmt == "ns3-cpp":
        return to_ns3_cpp(spec, name=name, unit=unit)
    return FORMATS[fmt](spec, unit=unit)


__all__ = ["cdf_table", "to_ns3_table", "to_ns3_cpp", "to_omnetpp", "to_omnetpp_table", "to_json",
           "export", "FORMATS"]
