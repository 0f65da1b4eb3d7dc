"""The sweep file: points, replications, seeds and run identities; validated before any run."""
from __future__ import annotations

import copy
import fnmatch
import hashlib
import itertools
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import ConfigError, OvssimError
from ..tomlfile import read_toml


SWEEP_KEYS = {"name", "description", "base", "reps", "seed", "crn", "mode", "samples", "keep_samples",
              "max_samples", "precision", "abs_precision", "min_reps", "max_reps"}
TOP_KEYS = {"sweep", "set", "grid", "point"}
MODES = ("grid", "list", "random")


@dataclass
class Point:
    """One combination of changes to the base scenario."""
    changes: dict
    id: str = ""
    label: str = ""

    def __post_init__(self):
        if not self.id:
            self.id = point_id(self.changes)
        if not self.label:
            self.label = point_label(self.changes)


@dataclass
class Sweep:
    """A validated sweep: base scenario (raw TOML tables), fixed changes, points, replications."""
    name: str
    base: dict
    base_file: str
    base_dir: Path
    points: list
    reps: int
    seed: int = 1
    crn: bool = True
    fixed: dict = field(default_factory=dict)
    keep_samples: tuple = ()
    max_samples: int = 500
    file: str = "<memory>"
    precision: object = None     # ovssim.sequential.Precision: replications until the CIs are narrow enough

    @property
    def total(self) -> int:
        """Runs of a fixed-count sweep; with a precision, the most it may take (every point at max_reps)."""
        return len(self.points) * (self.precision.max_reps if self.precision is not None else self.reps)

    def fingerprint(self) -> str:
        """What makes results comparable: base scenario, fixed changes, seed and CRN (not the grid)."""
        return _digest({"base": self.base, "fixed": self.fixed, "seed": self.seed, "crn": self.crn,
                        "keep": list(self.keep_samples), "max_samples": self.max_samples})[:16]

    def tasks(self, done: set | frozenset = frozenset()):
        """Runs not yet done, replication-major so partial results stay balanced across points."""
        for rep in range(self.reps):
            for p in self.points:
                if run_id(p.id, rep) not in done:
                    yield self.task(p, rep)

    def task(self, p: "Point", rep: int) -> "Task":
        """Replication ``rep`` of point ``p``."""
        return Task(run=run_id(p.id, rep), point=p.id, label=p.label, rep=rep, seed=self.run_seed(p.id),
                    changes={**self.fixed, **p.changes}, base=self.base, base_file=self.base_file,
                    base_dir=str(self.base_dir), keep=tuple(self.keep_samples),
                    max_samples=self.max_samples, fault=os.environ.get("OVSSIM_SWEEP_KILL", ""))

    def run_seed(self, pid: str) -> int:
        if self.crn:
            return self.seed
        return int.from_bytes(hashlib.sha256(f"{self.seed}:{pid}".encode()).digest()[:8], "big") >> 1


@dataclass
class Task:
    """Everything a worker needs for one run (picklable, self-contained)."""
    run: str
    point: str
    label: str
    rep: int
    seed: int
    changes: dict
    base: dict
    base_file: str
    base_dir: str
    keep: tuple = ()
    max_samples: int = 500
    fault: str = ""         # test hook, see _fault_hook


def _canon(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _digest(value) -> str:
    return hashlib.sha256(_canon(value).encode()).hexdigest()


def point_id(changes: dict) -> str:
    return _digest(changes)[:12]


def run_id(pid: str, rep: int) -> str:
    return f"{pid}-{rep}"


def _short(value) -> str:
    """A compact display form: ``sfq(perturb=10)``, ``htb(max-rate=100000000)``, ``stream+udp``."""
    if isinstance(value, dict):
        kind = value.get("kind") or value.get("type")
        if isinstance(kind, str) and kind.startswith("linux-"):
            kind = kind[6:]
        flat = {}
        for k, v in value.items():
            if k in ("kind", "type"):
                continue
            if isinstance(v, dict) and k == "other-config":
                flat.update({kk: vv for kk, vv in v.items() if not isinstance(vv, (dict, list))})
            elif not isinstance(v, (dict, list)) or not kind:
                flat[k] = v
        inner = " ".join(f"{k}={_short(v)}" for k, v in flat.items())
        return f"{kind}({inner})" if kind and inner else (str(kind) if kind else "{" + inner + "}")
    if isinstance(value, list):
        if value and all(isinstance(v, dict) and "name" in v for v in value):
            return "+".join(str(v["name"]) for v in value)
        return "[" + ",".join(_short(v) for v in value) + "]"
    return str(value)


def point_label(changes: dict) -> str:
    """A short human label: ``qdisc=sfq kind=ovs`` (last part of the first key of each group)."""
    if not changes:
        return "base"
    parts = []
    for key, value in changes.items():
        parts_ = key.split(",")[0].strip().split(".")
        name = parts_[0] if parts_[-1] == "kind" and len(parts_) > 1 else parts_[-1]
        parts.append(f"{name}={_short(value)}")
    return " ".join(parts)


def expand_changes(changes: dict) -> dict:
    """``{"a.b,c.d": v}`` -> ``{"a.b": v, "c.d": v}`` (a value shared by several keys)."""
    out = {}
    for key, value in changes.items():
        for k in key.split(","):
            out[k.strip()] = value
    return out


def apply_changes(data: dict, changes: dict) -> dict:
    """A deep copy of raw scenario tables with ``changes`` applied (``workload`` replaces the list)."""
    from ..scenario import set_key
    data = copy.deepcopy(data)
    for key, value in expand_changes(changes).items():
        if key in ("workload", "workloads"):
            data["workload"] = copy.deepcopy(value if isinstance(value, list) else [value])
        else:
            set_key(data, key, copy.deepcopy(value))
    return data


def _err(file, key, problem, fix):
    return ConfigError(problem, file=file, key=key, fix=fix)


def _check_key(file, key):
    from ..scenario import SECTIONS
    for k in key.split(","):
        k = k.strip()
        if k in ("workload", "workloads"):
            continue
        sec = k.split(".")[0]
        if not k or sec not in SECTIONS or (sec not in ("scenario", "params") and len(k.split(".")) < 3) \
                or len(k.split(".")) < 2:
            raise _err(file, key, f"{k!r} is not a scenario key",
                       'write "section.name.key" (e.g. "vm.vm1.qdisc"), "scenario.key", "params.name" '
                       'or "workload"')


def load_sweep(source, *, reps: int | None = None) -> Sweep:
    """A validated :class:`Sweep` from a sweep TOML path or an already-parsed dict."""
    if isinstance(source, Sweep):
        return source
    if isinstance(source, dict):
        return sweep_from_dict(source, file="<memory>", base_dir=Path.cwd(), reps=reps)
    path = Path(source)
    data = read_toml(path, "sweep", "check the path (examples/sweep_thesis.toml is a ready-made sweep)")
    return sweep_from_dict(data, file=str(path), base_dir=path.parent, reps=reps)


def _whole(file, key, value, low, what, high=None):
    from .. import units
    try:
        return units.whole(value, what, low, units.COUNT_MAX if high is None else high)
    except OvssimError as exc:
        raise _err(file, key, str(exc), f"write e.g. {key.split('.')[-1]} = {max(low, 10)}") from None


def sweep_from_dict(data: dict, *, file: str = "<memory>", base_dir: Path | None = None,
                    reps: int | None = None, base_scenario: dict | None = None) -> Sweep:
    """Validate a parsed sweep file; ``base_scenario`` (raw tables) replaces ``[sweep] base``."""
    from ..scenario import from_dict, load_scenario  # noqa: F401 - validation of the base
    base_dir = Path(base_dir or Path.cwd())
    if not isinstance(data, dict):
        raise _err(file, None, "a sweep must be a table", "see docs/whatif.md for the sweep file format")
    unknown = set(data) - TOP_KEYS
    if unknown:
        k = sorted(unknown)[0]
        raise _err(file, k, f"unknown section [{k}]", f"sections are: {', '.join(sorted(TOP_KEYS))}")
    sw = data.get("sweep")
    if not isinstance(sw, dict):
        raise _err(file, "sweep", "missing [sweep] table", 'add [sweep] base = "scenario.toml" reps = 10')
    bad = set(sw) - SWEEP_KEYS
    if bad:
        k = sorted(bad)[0]
        raise _err(file, f"sweep.{k}", f"unknown key {k!r} in [sweep]", f"[sweep] takes: {', '.join(sorted(SWEEP_KEYS))}")
    # the base scenario
    if base_scenario is not None:
        base_raw, base_file, sc_dir = copy.deepcopy(base_scenario), file, base_dir
    else:
        b = sw.get("base")
        if not isinstance(b, str) or not b:
            raise _err(file, "sweep.base", "no base scenario", 'add base = "scenario.toml" (relative to the sweep file)')
        bpath = (base_dir / b) if not Path(b).is_absolute() else Path(b)
        base_raw = read_toml(bpath, "base scenario", "give a path relative to the sweep file",
                             key="sweep.base", file=file)
        base_file, sc_dir = str(bpath), bpath.parent
    base_sc = from_dict(base_raw, file=base_file, base_dir=sc_dir)   # raises ConfigError naming the base
    name = sw.get("name") or (Path(file).stem if file != "<memory>" else base_sc.name)
    if not isinstance(name, str):
        raise _err(file, "sweep.name", f"name must be a string, got {name!r}", 'write name = "my_sweep"')
    n = reps if reps is not None else sw.get("reps", base_sc.reps)
    n = _whole(file, "sweep.reps", n, 1, "reps")
    from ..sequential import parse_precision
    precision = parse_precision(sw.get("precision"), sw.get("abs_precision"), sw.get("min_reps"),
                                sw.get("max_reps"), where="sweep.precision", file=file)
    if precision is not None and "reps" in sw:
        raise _err(file, "sweep.reps", "reps and precision are both given",
                   "keep reps for a fixed count, or precision (with min_reps/max_reps) to stop at a CI width")
    if precision is None and reps is None and "reps" not in sw:
        precision = base_sc.precision           # the base scenario's own precision keys
    if precision is not None and reps is not None:
        precision = None                        # an explicit count (--reps) wins over the file's precision
    from ..units import SEED_MAX
    seed = _whole(file, "sweep.seed", sw.get("seed", base_sc.seed), 0, "seed", SEED_MAX)
    crn = sw.get("crn", True)
    if not isinstance(crn, bool):
        raise _err(file, "sweep.crn", f"crn must be true or false, got {crn!r}", "write crn = true")
    keep = sw.get("keep_samples", [])
    if isinstance(keep, str):
        keep = [keep]
    if not isinstance(keep, list) or not all(isinstance(k, str) and ":" in k for k in keep):
        raise _err(file, "sweep.keep_samples", "keep_samples must be a list of WORKLOAD:SAMPLE patterns",
                   'write keep_samples = ["*:rtt"]')
    max_samples = _whole(file, "sweep.max_samples", sw.get("max_samples", 500), 1, "max_samples")
    fixed = data.get("set", {})
    if not isinstance(fixed, dict):
        raise _err(file, "set", "[set] must be a table of key = value", '"scenario.duration" = "1s"')
    for k in fixed:
        _check_key(file, k)
    mode = sw.get("mode", "list" if "point" in data and "grid" not in data else "grid")
    if mode not in MODES:
        raise _err(file, "sweep.mode", f"unknown mode {mode!r}", f"use one of: {', '.join(MODES)}")
    if mode == "list":
        pts = data.get("point")
        if isinstance(pts, dict):
            pts = [pts]
        if not isinstance(pts, list) or not pts or not all(isinstance(p, dict) for p in pts):
            raise _err(file, "point", "mode = \"list\" needs [[point]] tables", 'add [[point]] "vm.vm1.qdisc" = "sfq"')
        if "grid" in data:
            raise _err(file, "grid", "mode = \"list\" takes [[point]] tables, not [grid]", 'remove [grid] or set mode = "grid"')
        for p in pts:
            for k in p:
                _check_key(file, k)
        changes_list = [dict(p) for p in pts]
    else:
        grid = data.get("grid", {})
        if not isinstance(grid, dict):
            raise _err(file, "grid", "[grid] must be a table of key = [values]", '"vm.vm1.qdisc" = ["pfifo", "sfq"]')
        if "point" in data:
            raise _err(file, "point", f"mode = {mode!r} takes [grid], not [[point]]", 'set mode = "list"')
        for k, vals in grid.items():
            _check_key(file, k)
            if mode == "grid" or not isinstance(vals, dict):
                if not isinstance(vals, list) or not vals:
                    raise _err(file, f"grid.{k}", "each [grid] key needs a non-empty list of values",
                               f'write "{k}" = [value1, value2]')
        if mode == "grid":
            keys = list(grid)
            changes_list = [dict(zip(keys, combo)) for combo in itertools.product(*(grid[k] for k in keys))]
        else:
            samples = sw.get("samples")
            samples = _whole(file, "sweep.samples", samples, 1, "samples") if samples is not None else None
            if samples is None:
                raise _err(file, "sweep.samples", 'mode = "random" needs samples = N', "write samples = 50")
            changes_list = _random_points(file, grid, samples, seed)
    points, seen = [], set()
    for ch in changes_list:
        p = Point(ch)
        if p.id in seen:
            continue
        seen.add(p.id)
        points.append(p)
    # labels must be unique to be useful in tables
    labels = {}
    for p in points:
        labels.setdefault(p.label, []).append(p)
    for lab, ps in labels.items():
        if len(ps) > 1:
            for p in ps:
                p.label = f"{lab} #{p.id[:6]}"
    sweep = Sweep(name=name, base=base_raw, base_file=base_file, base_dir=sc_dir, points=points, reps=n,
                  seed=seed, crn=crn, fixed=dict(fixed), keep_samples=tuple(keep), max_samples=max_samples,
                  file=file, precision=precision)
    validate_points(sweep)
    return sweep


def _random_points(file, grid: dict, samples: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x5EED]))
    out = []
    for _ in range(samples):
        ch = {}
        for k, spec in grid.items():
            if isinstance(spec, list):
                ch[k] = copy.deepcopy(spec[int(rng.integers(len(spec)))])
                continue
            lo, hi = spec.get("low"), spec.get("high")
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (lo, hi)) or hi < lo:
                raise _err(file, f"grid.{k}", "a random range needs numbers low <= high",
                           f'write "{k}" = {{low = 1, high = 9}}')
            log = bool(spec.get("log", False))
            if log and lo <= 0:
                raise _err(file, f"grid.{k}", "a log range needs low > 0", "raise low or set log = false")
            if spec.get("int", False):
                x = int(rng.integers(int(lo), int(hi) + 1)) if not log else \
                    int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))
            else:
                x = float(math.exp(rng.uniform(math.log(lo), math.log(hi))) if log else rng.uniform(lo, hi))
            unit = spec.get("unit")
            ch[k] = f"{x}{unit}" if unit else x
        out.append(ch)
    return out


def validate_points(sweep: Sweep) -> None:
    """Build every point's scenario, qdiscs and workloads once, so bad values fail before any run."""
    from ..scenario import from_dict
    from .worker import _profile_for
    workloads = set()
    for p in sweep.points:
        where = f"point {p.label!r}"
        try:
            data = apply_changes(sweep.base, {**sweep.fixed, **p.changes})
            sc = from_dict(data, file=sweep.base_file, base_dir=sweep.base_dir)    # builds qdiscs and workloads
            _profile_for(sc)
            workloads |= {w["name"] for w in sc.workloads}
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc.problem}", file=sweep.file if sweep.file != "<memory>" else exc.file,
                              key=exc.key, fix=exc.fix) from None
        except OvssimError as exc:
            raise ConfigError(f"{where}: {exc}", file=sweep.file, fix="correct the value in the sweep file") from None
        except (TypeError, ValueError, KeyError) as exc:
            raise ConfigError(f"{where}: invalid value ({exc})", file=sweep.file,
                              fix="check the values of the keys this point changes") from None
    for pat in sweep.keep_samples:
        if not any(fnmatch.fnmatchcase(w, pat.split(":", 1)[0]) for w in workloads):
            raise ConfigError(f"keep_samples pattern {pat!r} names no workload", file=sweep.file,
                              key="sweep.keep_samples", fix=f"workloads are: {', '.join(sorted(workloads))}")
