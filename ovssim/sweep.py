"""Sweeps: many simulated runs over a grid of scenario changes, in parallel, resumable.

A sweep file names a base scenario and the changes to try::

    [sweep]
    name = "thesis"
    base = "thesis_kvm_ovs.toml"     # relative to the sweep file
    reps = 100                       # replications of every point
    seed = 7
    crn = true                       # common random numbers across points
    mode = "grid"                    # "grid" | "list" | "random" (+ samples = N)
    keep_samples = ["*:rtt"]         # raw samples to keep (fnmatch on "workload:sample")
    max_samples = 500                # per run and sample name (evenly thinned)

    [set]                            # changes applied to every point
    "scenario.duration" = "10s"

    [grid]                           # the cartesian product of these lists
    "vm.vm1.qdisc,vm.vm2.qdisc" = [{kind = "pfifo_fast"}, {kind = "sfq"}]   # one value, several keys
    "bridge.br0.kind,bridge.br1.kind" = ["ovs", "linux"]
    workload = [[{...}], [{...}]]    # ``workload`` replaces the whole [[workload]] list

Keys are the dotted keys of :meth:`ovssim.scenario.Scenario.replace`
(``section.name.key``, ``scenario.key``, ``params.dotted.name``).  ``mode =
"list"`` takes explicit ``[[point]]`` tables; ``mode = "random"`` draws
``samples`` points from ``[grid]`` whose values are lists (uniform choice) or
ranges ``{low = 1, high = 9, int = true, log = false}``.

Identity and seeds: a point's id is a hash of its canonical changes, a run's
id is ``<point id>-<rep>``.  With ``crn = true`` every point's replication
``r`` uses the sweep seed and ``r``, so two schedulers see the same random
draws wherever their paths coincide (:func:`ovssim.runner.rng_factory` names
every stream); with ``crn = false`` the seed is a hash of (sweep seed, point
id).  Either way a run's result depends only on its identity, never on the
executor, the worker count or the order runs finish.

Results: ``OUT/runs.jsonl`` gets one JSON line per finished run, written by
the coordinating process alone with a single ``write`` + flush + fsync; a
line torn by a kill is dropped on ``resume``, which skips every run whose line
is complete.  ``OUT/sweep.json`` is the manifest; ``OUT/summary.csv`` the
mean and 95% CI per point, workload and metric.

Executors: in-process (1 worker), a local process pool
(:class:`concurrent.futures.ProcessPoolExecutor` with ``max_tasks_per_child``
so memory stays bounded; a dead worker's runs are retried on a fresh pool),
or Dask (``distributed.Client(address)``, or a ``LocalCluster`` for
``"local"`` / ``"local:N"``; the Dask scheduler reschedules runs of workers
that die).  At most a few runs per worker are in flight, so the coordinator's
memory does not grow with the number of runs.
"""
from __future__ import annotations

import copy
import fnmatch
import hashlib
import itertools
import json
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .tomlfile import read_toml
from . import journal
from .errors import ConfigError, OvssimError

SWEEP_KEYS = {"name", "description", "base", "reps", "seed", "crn", "mode", "samples", "keep_samples",
              "max_samples"}
TOP_KEYS = {"sweep", "set", "grid", "point"}
MODES = ("grid", "list", "random")
RESULTS = "runs.jsonl"
MANIFEST = "sweep.json"
SUMMARY = "summary.csv"
MAX_ATTEMPTS = 3


# --------------------------------------------------------------------------- sweep definition

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

    @property
    def total(self) -> int:
        return len(self.points) * self.reps

    def fingerprint(self) -> str:
        """What makes results comparable: base scenario, fixed changes, seed and CRN (not the grid)."""
        return _digest({"base": self.base, "fixed": self.fixed, "seed": self.seed, "crn": self.crn,
                        "keep": list(self.keep_samples), "max_samples": self.max_samples})[:16]

    def tasks(self, done: set | frozenset = frozenset()):
        """Runs not yet done, replication-major so partial results stay balanced across points."""
        for rep in range(self.reps):
            for p in self.points:
                rid = run_id(p.id, rep)
                if rid in done:
                    continue
                yield Task(run=rid, point=p.id, label=p.label, rep=rep, seed=self.run_seed(p.id),
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
    from .scenario import set_key
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
    from .scenario import SECTIONS
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


def _whole(file, key, value, low, what):
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise _err(file, key, f"{what} must be a whole number >= {low}, got {value!r}", f"write e.g. {key.split('.')[-1]} = {max(low, 10)}")
    return value


def sweep_from_dict(data: dict, *, file: str = "<memory>", base_dir: Path | None = None,
                    reps: int | None = None, base_scenario: dict | None = None) -> Sweep:
    """Validate a parsed sweep file; ``base_scenario`` (raw tables) replaces ``[sweep] base``."""
    from .scenario import from_dict, load_scenario  # noqa: F401 - validation of the base
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
    n = reps if reps is not None else sw.get("reps", base_sc.reps)
    n = _whole(file, "sweep.reps", n, 1, "reps")
    seed = _whole(file, "sweep.seed", sw.get("seed", base_sc.seed), 0, "seed")
    crn = sw.get("crn", True)
    if not isinstance(crn, bool):
        raise _err(file, "sweep.crn", f"crn must be true or false, got {crn!r}", "write crn = true")
    keep = sw.get("keep_samples", [])
    if isinstance(keep, str):
        keep = [keep]
    if not isinstance(keep, list) or not all(isinstance(k, str) for k in keep):
        raise _err(file, "sweep.keep_samples", "keep_samples must be a list of patterns", 'write keep_samples = ["*:rtt"]')
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
                  file=file)
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
    from .qdisc.registry import make_qdisc
    from .scenario import from_dict
    from .workloads.registry import make_workload
    for p in sweep.points:
        where = f"point {p.label!r}"
        try:
            data = apply_changes(sweep.base, {**sweep.fixed, **p.changes})
            sc = from_dict(data, file=sweep.base_file, base_dir=sweep.base_dir)
            for sec in ("vm", "nic"):
                for item in sc.data.get(sec, []):
                    if item.get("qdisc") is not None:
                        make_qdisc(item["qdisc"])
            for wt in sc.workloads:
                make_workload(wt)
            _profile_for(sc)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc.problem}", file=sweep.file if sweep.file != "<memory>" else exc.file,
                              key=exc.key, fix=exc.fix) from None
        except OvssimError as exc:
            raise ConfigError(f"{where}: {exc}", file=sweep.file, fix="correct the value in the sweep file") from None
        except (TypeError, ValueError, KeyError) as exc:
            raise ConfigError(f"{where}: invalid value ({exc})", file=sweep.file,
                              fix="check the values of the keys this point changes") from None


# --------------------------------------------------------------------------- one run (worker side)

_PROFILES: dict = {}


def _profile_for(sc):
    from .profile import Profile
    params = sc.data.get("params") or {}
    key = (sc.profile, str(sc.base_dir), _canon(params))
    prof = _PROFILES.get(key)
    if prof is None:
        prof = Profile.load(sc.profile, relative_to=sc.base_dir)
        if params:
            prof = prof.with_overrides(params, source=f"{sc.file} [params]")
        if len(_PROFILES) > 64:
            _PROFILES.clear()
        _PROFILES[key] = prof
    return prof


def _thin(x: np.ndarray, cap: int) -> list:
    x = np.asarray(x, float)
    if x.size > cap:
        x = x[np.linspace(0, x.size - 1, cap).round().astype(int)]
    return [float(v) for v in x]


def _fault_hook(task: Task) -> None:
    """Test hook: with ``OVSSIM_SWEEP_KILL=<run id>:<marker file>`` in the coordinator's environment, the
    worker running that run dies (``os._exit``) the first time, leaving the marker file."""
    spec = task.fault
    if not spec:
        return
    rid, _, marker = spec.partition(":")
    if rid == task.run and marker and not os.path.exists(marker):
        with open(marker, "w") as fh:
            fh.write(str(os.getpid()))
        os._exit(17)


def run_task(task: Task) -> dict:
    """Run one replication of one point and return its JSON-ready record (never raises for bad input)."""
    from .runner import run_replication
    from .scenario import from_dict
    _fault_hook(task)
    t0, c0 = time.perf_counter(), time.thread_time()
    rec = {"run": task.run, "point": task.point, "label": task.label, "rep": task.rep, "seed": task.seed}
    try:
        data = apply_changes(task.base, task.changes)
        sc = from_dict(data, file=task.base_file, base_dir=Path(task.base_dir))
        rows, samples, _counters = run_replication(sc, _profile_for(sc), task.rep, task.seed)
    except OvssimError as exc:
        rec.update(status="error", error=str(exc))
        return rec
    except Exception as exc:  # noqa: BLE001 - a simulator bug in one run must not end a long sweep
        import traceback
        where = traceback.extract_tb(exc.__traceback__)[-1]
        rec.update(status="error", error=f"{type(exc).__name__}: {exc} (at {Path(where.filename).name}:"
                                        f"{where.lineno}; a bug -- please report it)")
        return rec
    rec["status"] = "ok"
    rec["rows"] = [[r["workload"], r["metric"], r["unit"], float(r["value"])] for r in rows]
    if task.keep:
        rec["samples"] = {k: _thin(v, task.max_samples) for k, v in samples.items()
                          if any(fnmatch.fnmatchcase(k, pat) for pat in task.keep)}
    rec["elapsed"] = time.perf_counter() - t0           # wall seconds (not part of the result)
    rec["cpu"] = time.thread_time() - c0                # CPU seconds of the thread that ran it
    rec["worker"] = f"{os.uname().nodename}:{os.getpid()}"
    return rec


# --------------------------------------------------------------------------- the results store

class ResultStore:
    """Append-only JSON lines, one per finished run, written atomically by one process."""

    def __init__(self, out: Path, sweep: Sweep, *, resume: bool = False):
        self.dir = Path(out)
        self.path = self.dir / RESULTS
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OvssimError(f"cannot create output directory {self.dir}: {exc.strerror}; choose a writable --out") from None
        self._lock = open(self.dir / ".lock", "w")
        try:
            import fcntl
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            raise ConfigError(f"another sweep is running in {self.dir}", key="--out",
                              fix="wait for it to finish (or stop it), or choose another --out") from None
        except ImportError:     # pragma: no cover - not POSIX: no protection against two coordinators
            pass
        try:
            self._open(sweep, resume)
        except BaseException:
            self._lock.close()
            raise

    def _open(self, sweep: "Sweep", resume: bool) -> None:
        manifest = self.dir / MANIFEST
        fp = sweep.fingerprint()
        if manifest.exists():
            try:
                old = json.loads(manifest.read_text())
            except (OSError, json.JSONDecodeError):
                old = {}
            if not resume:
                raise ConfigError(f"{self.dir} already holds a sweep", key="--out",
                                  fix="pass --resume to continue it, or choose another --out")
            if old.get("fingerprint") != fp:
                raise ConfigError(f"{self.dir} holds a different sweep (base scenario, [set], seed or crn changed)",
                                  key="--out", fix="choose another --out, or restore the sweep file it was run with")
        elif self.path.exists() and self.path.stat().st_size and not resume:
            raise ConfigError(f"{self.dir} already holds results", key="--out", fix="pass --resume or choose another --out")
        self.done = self._scan(repair=True)
        tmp = manifest.with_suffix(".tmp")
        tmp.write_text(json.dumps({
            "name": sweep.name, "file": sweep.file, "base": sweep.base_file, "fingerprint": fp,
            "seed": sweep.seed, "crn": sweep.crn, "reps": sweep.reps, "total": sweep.total,
            "points": [{"id": p.id, "label": p.label, "changes": p.changes} for p in sweep.points],
            "fixed": sweep.fixed}, indent=1, default=str))
        os.replace(tmp, manifest)
        self._fh = open(self.path, "ab")

    def _scan(self, repair: bool) -> set:
        """Run ids with a complete, successful line; a torn last line is cut off (:mod:`ovssim.journal`)."""
        if repair:
            journal.cut_torn_tail(self.path)
        return {rec["run"] for rec in journal.iter_records(self.path) if rec.get("status") == "ok"}

    def write(self, rec: dict) -> None:
        line = (json.dumps(rec, separators=(",", ":")) + "\n").encode()
        self._fh.write(line)
        self._fh.flush()
        os.fsync(self._fh.fileno())     # (self.done stays the set found at start: memory does not grow)

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()
        if not self._lock.closed:
            self._lock.close()          # releases the flock


def iter_records(out: Path):
    """Every complete record of ``OUT/runs.jsonl`` (later lines for the same run win in :func:`load_results`)."""
    path = Path(out) / RESULTS
    if not path.exists():
        raise ConfigError(f"no results in {out}", key="--out", fix="run the sweep first")
    yield from journal.iter_records(path)


def load_results(out: Path, *, samples: bool = False):
    """Tidy per-run results: (DataFrame[run, point, label, rep, workload, metric, unit, value], samples).

    ``samples`` (when asked) maps label -> sample name -> concatenated array.
    """
    import pandas as pd
    rows, seen, smp = [], set(), {}
    for rec in iter_records(out):
        if rec.get("status") != "ok" or rec["run"] in seen:
            continue
        seen.add(rec["run"])
        for wl, metric, unit, value in rec["rows"]:
            rows.append((rec["run"], rec["point"], rec["label"], rec["rep"], wl, metric, unit, value))
        if samples:
            for k, v in (rec.get("samples") or {}).items():
                smp.setdefault(rec["label"], {}).setdefault(k, []).append(np.asarray(v, float))
    df = pd.DataFrame(rows, columns=["run", "point", "label", "rep", "workload", "metric", "unit", "value"])
    smp = {lab: {k: np.concatenate(v) for k, v in d.items()} for lab, d in smp.items()}
    return df, smp


def summarise_results(df):
    """Mean and 95% CI per point, workload and metric."""
    import pandas as pd

    from .metrics import ci95
    out = []
    for (pid, label, wl, metric, unit), g in df.groupby(["point", "label", "workload", "metric", "unit"], sort=False):
        m, lo, hi = ci95(g["value"])
        out.append({"point": pid, "label": label, "workload": wl, "metric": metric, "unit": unit, "mean": m,
                    "ci95_low": lo, "ci95_high": hi, "reps": int(g["value"].notna().sum())})
    return pd.DataFrame(out, columns=["point", "label", "workload", "metric", "unit", "mean", "ci95_low",
                                      "ci95_high", "reps"])


# --------------------------------------------------------------------------- executors

def _window(workers: int) -> int:
    return max(4, 3 * workers)


def _run_inprocess(tasks, emit):
    for t in tasks:
        emit(t, run_task(t))


def _pool(workers: int, max_tasks_per_child: int):
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["ovssim.sweep", "ovssim.runner"])
    return ProcessPoolExecutor(max_workers=workers, mp_context=ctx, max_tasks_per_child=max_tasks_per_child)


def _run_local(tasks, emit, workers: int, max_tasks_per_child: int = 200):
    """A process pool; if a worker dies the pool is rebuilt and its in-flight runs retried."""
    from concurrent.futures import FIRST_COMPLETED, wait
    from concurrent.futures.process import BrokenProcessPool
    tasks = iter(tasks)
    retry: list = []           # (task, attempts)
    attempts: dict = {}
    pool = _pool(workers, max_tasks_per_child)
    inflight: dict = {}
    try:
        while True:
            while len(inflight) < _window(workers):
                if retry:
                    t = retry.pop()
                else:
                    t = next(tasks, None)
                    if t is None:
                        break
                try:
                    inflight[pool.submit(run_task, t)] = t
                except BrokenProcessPool:
                    retry.append(t)
                    break
            if not inflight:
                if retry:       # pool broke while submitting
                    pool.shutdown(wait=True, cancel_futures=True)
                    pool = _pool(workers, max_tasks_per_child)
                    continue
                break
            finished, _ = wait(inflight, return_when=FIRST_COMPLETED)
            broken = False
            for fut in finished:
                t = inflight.pop(fut)
                try:
                    rec = fut.result()
                except BrokenProcessPool:
                    broken = True
                    n = attempts[t.run] = attempts.get(t.run, 1) + 1
                    if n > MAX_ATTEMPTS:
                        emit(t, {"run": t.run, "point": t.point, "label": t.label, "rep": t.rep, "seed": t.seed,
                                 "status": "error", "error": f"worker died {MAX_ATTEMPTS} times running it"})
                    else:
                        retry.append(t)
                    continue
                emit(t, rec)
            if broken:
                for fut, t in list(inflight.items()):    # the rest of the broken pool's runs
                    inflight.pop(fut)
                    attempts[t.run] = attempts.get(t.run, 1) + 1
                    retry.append(t)
                pool.shutdown(wait=True, cancel_futures=True)
                pool = _pool(workers, max_tasks_per_child)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def dask_client(address: str, workers: int):
    """(client, cluster-or-None): ``"local"``/``"local:N"``/``"local-threads:N"`` start a LocalCluster."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise OvssimError("--dask needs the 'distributed' package; install it with "
                          "pip install 'ovssim[dask]'") from None
    if address.startswith("local"):
        kind, _, n = address.partition(":")
        try:
            n = int(n) if n else workers
        except ValueError:
            raise ConfigError(f"bad --dask {address!r}", key="--dask",
                              fix='use "local", "local:N", "local-threads:N" or tcp://HOST:8786') from None
        if kind not in ("local", "local-threads"):
            raise ConfigError(f"bad --dask {address!r}", key="--dask",
                              fix='use "local", "local:N", "local-threads:N" or tcp://HOST:8786')
        import logging
        logging.getLogger("distributed").setLevel(logging.ERROR)
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=(kind == "local"),
                               dashboard_address=None, silence_logs=logging.ERROR)
        return Client(cluster), cluster
    try:
        return Client(address, timeout="10s"), None
    except (OSError, TimeoutError) as exc:
        raise OvssimError(f"cannot reach the Dask scheduler at {address} ({exc}); start one with "
                          f"'dask scheduler' and workers with 'dask worker {address}'") from None


def _run_dask(tasks, emit, address: str, workers: int):
    from distributed import as_completed
    try:
        from distributed import KilledWorker
    except ImportError:   # pragma: no cover - older distributed
        from distributed.scheduler import KilledWorker
    client, cluster = dask_client(address, workers)
    try:
        nworkers = max(1, len(client.scheduler_info().get("workers", {})) or workers)
        tasks = iter(tasks)
        ac = as_completed()
        meta = {}

        def submit_next():
            t = next(tasks, None)
            if t is None:
                return False
            fut = client.submit(run_task, t, pure=False, key=f"ovssim-run-{t.run}-{time.monotonic_ns()}")
            meta[fut.key] = t
            ac.add(fut)
            return True

        for _ in range(_window(nworkers)):
            if not submit_next():
                break
        for fut in ac:
            t = meta.pop(fut.key)
            try:
                rec = fut.result()
            except KilledWorker as exc:
                rec = {"run": t.run, "point": t.point, "label": t.label, "rep": t.rep, "seed": t.seed,
                       "status": "error", "error": f"Dask workers kept dying on it ({exc})"}
            fut.release()
            emit(t, rec)
            submit_next()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


# --------------------------------------------------------------------------- progress

class Progress:
    """Runs done / total, runs per second and time left: a rich bar on a terminal, else log lines."""

    def __init__(self, total: int, already: int, enabled: bool, name: str):
        self.total, self.done, self.new = total, already, 0
        self.t0 = time.monotonic()
        self.enabled = enabled
        self.tty = enabled and sys.stderr.isatty()
        self.last_log = self.t0
        self.bar = None
        if self.tty:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress as RichProgress, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)
            self.bar = RichProgress(TextColumn(name), BarColumn(), MofNCompleteColumn(),
                                    TextColumn("{task.fields[rate]}"), TimeElapsedColumn(),
                                    TextColumn("elapsed,"), TimeRemainingColumn(), TextColumn("left"),
                                    transient=True)
            self.bar.start()
            self.task = self.bar.add_task("runs", total=total, completed=already, rate="")

    @property
    def rate(self) -> float:
        dt = time.monotonic() - self.t0
        return self.new / dt if dt > 0 else 0.0

    def eta(self) -> float:
        r = self.rate
        return (self.total - self.done) / r if r > 0 else float("nan")

    def advance(self) -> None:
        self.done += 1
        self.new += 1
        if self.bar is not None:
            self.bar.update(self.task, completed=self.done, rate=f"{self.rate:.2f} runs/s")
        elif self.enabled and (time.monotonic() - self.last_log > 10 or self.done == self.total):
            self.last_log = time.monotonic()
            print(f"ovssim sweep: {self.done}/{self.total} runs, {self.rate:.2f} runs/s, "
                  f"{_fmt_s(self.eta())} left", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _fmt_s(s: float) -> str:
    if not math.isfinite(s):
        return "?"
    s = int(round(s))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


# --------------------------------------------------------------------------- driver

@dataclass
class SweepReport:
    out: Path
    total: int
    skipped: int
    ran: int
    failed: list
    seconds: float
    workers: int
    executor: str

    @property
    def rate(self) -> float:
        return self.ran / self.seconds if self.seconds > 0 else float("nan")


def run_sweep(sweep, out, *, workers: int | None = None, dask: str | None = None, resume: bool = False,
              progress: bool = False, max_tasks_per_child: int = 200, summary: bool = True,
              on_run=None) -> SweepReport:
    """Run every (point, rep) of ``sweep`` not already in ``out``; write results as they finish.

    ``on_run(record, done, total)`` (optional) is called after each run is stored.
    """
    sweep = load_sweep(sweep)
    from .runner import local_cores
    workers = workers or local_cores()      # the cores this process may use, as `ovssim run`
    if workers < 1:
        raise ConfigError(f"--workers must be >= 1, got {workers}", key="--workers", fix="write --workers 2")
    store = ResultStore(Path(out), sweep, resume=resume)
    skipped = sum(1 for p in sweep.points for r in range(sweep.reps) if run_id(p.id, r) in store.done)
    bar = Progress(sweep.total, skipped, progress, sweep.name)
    failed = []

    def emit(task, rec):
        store.write(rec)
        if rec.get("status") != "ok":
            failed.append((task.run, task.label, rec.get("error", "?")))
        bar.advance()
        if on_run is not None:
            on_run(rec, bar.done, bar.total)

    t0 = time.perf_counter()
    tasks = sweep.tasks(frozenset(store.done))
    try:
        if dask:
            executor = f"dask {dask}"
            _run_dask(tasks, emit, dask, workers)
        elif workers == 1:
            executor = "in-process"
            _run_inprocess(tasks, emit)
        else:
            executor = f"{workers} local processes"
            _run_local(tasks, emit, workers, max_tasks_per_child)
    finally:
        bar.close()
        store.close()
    secs = time.perf_counter() - t0
    report = SweepReport(Path(out), sweep.total, skipped, bar.new, failed, secs, workers, executor)
    if summary:
        df, _ = load_results(out)
        tmp = Path(out) / (SUMMARY + ".tmp")
        summarise_results(df).to_csv(tmp, index=False)
        os.replace(tmp, Path(out) / SUMMARY)
    return report
