"""Delay distributions as data: the form profiles store and the simulator samples.

A distribution spec is TOML-friendly:

* a number or unit string (``"25us"``): a constant;
* ``{dist = "empirical", values = [...], unit = "us"}``: inverse-CDF sampling of
  the ECDF (seed 001's eq. 1), linear between order statistics; or
  ``{dist = "empirical", quantiles = [...], probs = [...]}`` for a tabulated CDF;
* ``{dist = "lognorm_mixture", weights = [...], s = [...], scale = [...], loc = 0}``
  (Javed et al.'s log-normal mixture for transit latency);
* any ``scipy.stats`` continuous family by name with its own parameter names,
  e.g. ``{dist = "lognorm", s = 0.4, scale = "20us", loc = "5us"}``,
  ``{dist = "gamma", a = 2.0, scale = "8us"}``, ``{dist = "expon", loc = "10us",
  scale = "5us"}`` (shifted exponential), ``{dist = "weibull_min", c = 1.5, ...}``,
  ``{dist = "pareto", b = 2.5, scale = ...}`` for heavy tails.

``loc``/``scale``/``values``/``quantiles`` accept unit strings; other shape
parameters are plain numbers.  ``unit`` (default seconds) applies to bare numbers
in ``values``/``quantiles``/``loc``/``scale``.  Negative draws are clipped to 0.

:class:`Sampler` draws in batches from a ``numpy.random.Generator`` so that a
per-packet draw costs one C-level iterator step, not a scipy call.
"""
from __future__ import annotations

import math
from itertools import chain, repeat

import numpy as np
from scipy import stats

from . import units
from .errors import ConfigError

_BATCH = 4096
_TIME_KEYS = ("loc", "scale")


def _time_value(v, unit: float) -> float:
    if isinstance(v, str):
        return units.time(v)
    return float(v) * unit


def _unit_of(u) -> float:
    """Seconds per ``unit``: a bare unit name (``"us"``) or a time (``"1us"``)."""
    if isinstance(u, str) and u.strip()[:1].isalpha():
        u = "1" + u.strip()
    return units.time(u)


class Distribution:
    """A frozen delay distribution built from a spec (see module doc)."""

    def __init__(self, spec, *, where: str = "distribution"):
        self.spec = spec
        self.where = where
        self.kind = "const"
        self.const: float | None = None
        self.frozen = None
        self._values = None
        self._probs = None
        self._mix = None
        try:
            self._build(spec)
        except ConfigError:
            raise
        except (ValueError, TypeError, KeyError) as exc:
            raise ConfigError(f"bad delay distribution: {exc}", key=where,
                              fix='write e.g. { dist = "lognorm", s = 0.5, scale = "20us" } '
                                  'or a constant like "25us"') from None

    # -- construction ---------------------------------------------------------
    def _build(self, spec) -> None:
        if isinstance(spec, (int, float, str)) and not isinstance(spec, bool):
            self.const = units.time(spec)
            return
        if not isinstance(spec, dict):
            raise ValueError(f"expected a number, a unit string or a table, got {type(spec).__name__}")
        spec = dict(spec)
        name = spec.pop("dist", None)
        if name is None:
            raise ValueError("the table has no 'dist' key")
        unit = _unit_of(spec.pop("unit")) if "unit" in spec else 1.0
        if name in ("const", "constant", "deterministic"):
            self.const = _time_value(spec.pop("value"), unit)
        elif name == "empirical":
            self.kind = "empirical"
            if "values" in spec:
                vals = np.sort(np.asarray([_time_value(v, unit) for v in spec.pop("values")], float))
                if vals.size == 0:
                    raise ValueError("empirical 'values' is empty")
                self._values = vals
                self._probs = (np.arange(1, vals.size + 1) - 0.5) / vals.size if vals.size > 1 else np.array([0.5])
            else:
                q = np.asarray([_time_value(v, unit) for v in spec.pop("quantiles")], float)
                p = np.asarray(spec.pop("probs"), float)
                if q.size != p.size or q.size < 2:
                    raise ValueError("'quantiles' and 'probs' need the same length (>= 2)")
                if np.any(np.diff(q) < 0) or np.any(np.diff(p) <= 0) or p[0] < 0 or p[-1] > 1:
                    raise ValueError("'quantiles' must be non-decreasing and 'probs' increasing in [0, 1]")
                self._values, self._probs = q, p
            self.smooth = bool(spec.pop("smooth", False))
        elif name == "lognorm_mixture":
            self.kind = "mixture"
            w = np.asarray(spec.pop("weights"), float)
            s = np.asarray(spec.pop("s"), float)
            sc = np.asarray([_time_value(v, unit) for v in spec.pop("scale")], float)
            loc = _time_value(spec.pop("loc", 0.0), unit)
            if not (w.size == s.size == sc.size) or w.size == 0:
                raise ValueError("weights, s and scale need the same non-zero length")
            if np.any(w < 0) or not math.isclose(w.sum(), 1.0, rel_tol=1e-6):
                raise ValueError("mixture weights must be >= 0 and sum to 1")
            if np.any(s <= 0) or np.any(sc <= 0):
                raise ValueError("mixture s and scale must be > 0")
            self._mix = (w, s, sc, loc)
        else:
            family = getattr(stats, name, None)
            if not isinstance(family, stats.rv_continuous):
                raise ValueError(f"unknown distribution family {name!r} (use a scipy.stats "
                                 "continuous family, 'empirical' or 'lognorm_mixture')")
            self.kind = "scipy"
            params = {}
            for k, v in spec.items():
                params[k] = _time_value(v, unit) if k in _TIME_KEYS else float(v)
            try:
                self.frozen = family(**params)
                lo, _hi = self.frozen.support()
            except TypeError as exc:
                raise ValueError(f"{name}: {exc}") from None
            if not np.isfinite(lo) and not (lo == -np.inf):
                raise ValueError(f"{name} parameters {params} are outside the family's domain "
                                 "(e.g. a negative shape or scale)")
            # heavy tails without a mean are allowed (pareto b <= 1)
        if spec and self.kind in ("empirical", "mixture"):
            raise ValueError(f"unknown keys {sorted(spec)}")

    # -- queries ----------------------------------------------------------------
    def rvs(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` draws in seconds, clipped at 0."""
        if self.const is not None:
            return np.full(n, self.const)
        if self.kind == "empirical":
            u = rng.random(n)
            out = np.interp(u, self._probs, self._values)
            if getattr(self, "smooth", False) and self._values.size > 1:
                bw = 1.06 * np.std(self._values) * self._values.size ** -0.2
                out = out + rng.normal(0.0, bw, n)
        elif self.kind == "mixture":
            w, s, sc, loc = self._mix
            comp = rng.choice(w.size, size=n, p=w)
            out = loc + sc[comp] * np.exp(s[comp] * rng.standard_normal(n))
        else:
            fast = self._rvs_fast(n)
            if fast is None:
                out = self.frozen.rvs(size=n, random_state=rng)
            else:
                rvs, args, loc, scale, size = fast
                out = rvs(*args, size=size, random_state=rng) * scale + loc
        return np.maximum(out, 0.0)

    def _rvs_fast(self, n: int):
        """What ``frozen.rvs(size=n)`` computes after its argument checks, checked once.

        ``rv_generic.rvs`` parses and validates the parameters on every call (most of
        the cost of a batch); the draws are ``dist._rvs(*args, size, random_state) *
        scale + loc`` with the parsed arguments -- exactly what is done here with the
        arguments it would parse.  ``None``: take the public path (bad parameters,
        scale 0).
        """
        cache = self.__dict__.setdefault("_fast", {})
        if n in cache:
            return cache[n]
        fast = None
        dist = self.frozen.dist
        if isinstance(dist, stats.rv_continuous) and "discrete" not in self.frozen.kwds:
            args, loc, scale, size = dist._parse_args_rvs(*self.frozen.args, **self.frozen.kwds, size=n)
            if np.all(np.logical_and(dist._argcheck(*args), scale >= 0)) and not np.all(scale == 0):
                fast = (dist._rvs, args, loc, scale, size)
        cache[n] = fast
        return fast

    def mean(self) -> float:
        if self.const is not None:
            return self.const
        if self.kind == "empirical":
            if self._probs is not None and self._values.size > 1 and "values" not in (self.spec or {}):
                return float(np.trapezoid(self._values, self._probs) if hasattr(np, "trapezoid")
                             else np.trapz(self._values, self._probs))
            return float(np.mean(self._values))
        if self.kind == "mixture":
            w, s, sc, loc = self._mix
            return float(loc + np.sum(w * sc * np.exp(s * s / 2)))
        return float(self.frozen.mean())

    def cdf(self, x):
        x = np.asarray(x, float)
        if self.const is not None:
            return (x >= self.const).astype(float)
        if self.kind == "empirical":
            return np.interp(x, self._values, self._probs, left=0.0, right=1.0)
        if self.kind == "mixture":
            w, s, sc, loc = self._mix
            z = np.clip(x - loc, 1e-300, None)
            return np.sum([wi * stats.lognorm.cdf(z, si, scale=ci) for wi, si, ci in zip(w, s, sc)], axis=0)
        return self.frozen.cdf(x)

    def scaled(self, factor: float) -> "Distribution":
        """The same shape with every draw multiplied by ``factor`` (used by calibration)."""
        return _Scaled(self, factor)


class _Scaled(Distribution):
    def __init__(self, base: Distribution, factor: float):  # noqa: D401 - thin wrapper
        self.base, self.factor = base, factor
        self.spec, self.where, self.kind, self.const = base.spec, base.where, "scaled", None

    def rvs(self, n, rng):
        return self.base.rvs(n, rng) * self.factor

    def mean(self):
        return self.base.mean() * self.factor

    def cdf(self, x):
        return self.base.cdf(np.asarray(x, float) / self.factor)


class Sampler:
    """Fast per-packet draws: ``next()`` returns one float, refilling in batches.

    ``next`` is a C-level iterator step (``itertools``) over batches of
    ``_BATCH`` draws, so a draw costs no Python call; a batch is drawn from the
    generator when the previous one is used up, as it always was, so the stream
    of values is the same as drawing them one by one from the same batches.
    """

    __slots__ = ("dist", "rng", "const", "it", "next")

    def __init__(self, dist: Distribution | dict | float | str, rng: np.random.Generator):
        if not isinstance(dist, Distribution):
            dist = Distribution(dist)
        self.dist = dist
        self.rng = rng
        self.const = dist.const
        self._start()

    def _start(self) -> None:
        c = self.const
        #: the draws as an iterator: ``next(sampler.it)`` is the cheapest way to take one
        self.it = repeat(c) if c is not None else chain.from_iterable(self._batches())
        self.next = self.it.__next__

    def _batches(self):
        while True:
            yield self._refill()

    def _refill(self) -> list:
        return self.dist.rvs(_BATCH, self.rng).tolist()

    def __call__(self) -> float:
        return self.next()


class SumSampler(Sampler):
    """Draws of the sum of several independent samplers, in one call per packet.

    The datapath's fast path pays stats + lookup + actions on every hit; summing
    batches in numpy makes that one list index instead of three calls.
    """

    __slots__ = ("parts",)

    def __init__(self, *parts: Sampler):
        self.parts = parts
        self.dist = self.rng = None
        consts = [p.const for p in parts]
        self.const = sum(consts) if all(c is not None for c in consts) else None
        self._start()

    def _refill(self) -> list:
        total = 0.0
        for p in self.parts:
            total = total + (p.dist.rvs(_BATCH, p.rng) if p.const is None else p.const)
        return np.asarray(total).tolist()
