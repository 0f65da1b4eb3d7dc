"""Run a scenario: replications with independent seeds, tidy results with 95% CIs.

A replication is a pure function of (scenario, profile, seed, replication
index): every random stream is named (``rng("vm1.vif.tx")``) and seeded from
``SeedSequence([seed, rep, crc32(name)])``, so results do not depend on the
order elements are built or on which process runs them, and two scenarios
that differ only in, say, the qdisc see the same random draws (common random
numbers) wherever their elements coincide.
"""
from __future__ import annotations

import os
import zlib
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import simpy

from .metrics import summarise
from .precedence import Resolved, resolve
from .sequential import Precision, Stopping, check, next_checkpoint, stopping_of, values_of
from .profile import Profile
from .scenario import Scenario, load_scenario
from .sched import run_until
from .topology import ARP_SETTLE, build
from .workloads.base import RunContext
from .workloads.registry import make_workload

DRAIN = 1.0   # seconds after the traffic stops for packets in flight (ping waits ~1 s)


def rng_factory(seed: int, rep: int):
    cache: dict[str, np.random.Generator] = {}

    def rng(name: str) -> np.random.Generator:
        g = cache.get(name)
        if g is None:
            g = cache[name] = np.random.default_rng(
                np.random.SeedSequence([seed, rep, zlib.crc32(name.encode())]))
        return g
    return rng


@dataclass
class RunResult:
    scenario: str
    summary: pd.DataFrame
    per_rep: pd.DataFrame
    samples: dict = field(default_factory=dict)
    counters: list = field(default_factory=list)
    stopping: Stopping | None = None      # with a precision: how many replications, and why it stopped


def app_wakeup(profile: Profile) -> float:
    """A reader's mean wake-up per message: ``app.wakeup`` plus, with the idle share of the cores
    (1 - ``[state] cpu_busy``), ``app.idle_wake`` (a halted core's wake-up through the hypervisor).  The
    mean, not a draw per message: the request/response tools report mean round trips."""
    return profile.time("app.wakeup") + (1.0 - profile.busy_share()) * profile.time("app.idle_wake")


def run_replication(sc: Scenario, profile: Profile, rep: int, seed: int | None = None):
    """One replication: (rows, samples, counters)."""
    seed = sc.seed if seed is None else seed
    env = simpy.Environment()
    rng = rng_factory(seed, rep)
    topo = build(env, sc, profile, rng)
    app = {"send_per_packet": profile.time("app.send_per_packet"),
           "recv_per_packet": profile.time("app.recv_per_packet"),
           "rr_processing": profile.time("app.rr_processing"),
           "send_per_call": profile.time("app.send_per_call"), "wakeup": app_wakeup(profile),
           "send_per_byte": profile.time("app.send_per_byte"),
           "recv_per_byte": profile.time("app.recv_per_byte"), "syscall": profile.time("app.syscall")}
    workloads = []
    for wt in sc.workloads:
        wl = make_workload(wt)
        if sc.trace_every and getattr(wl, "trace_every", None) == 0:
            wl.trace_every = sc.trace_every          # per-stage delay samples on every Nth packet
        name = wt["name"]
        ctx = RunContext(env, topo.endpoints[wt["from"]], topo.endpoints[wt["to"]], sc.duration,
                         rng=(lambda n, _w=name: rng(f"workload.{_w}.{n}")), start_at=ARP_SETTLE + sc.warmup,
                         extra={"app": app, "profile": profile})
        wl.start(ctx)
        workloads.append((name, wl))
    end = ARP_SETTLE + sc.warmup + sc.duration
    run_until(env, end + DRAIN)
    # a tool whose test clock started after a set-up exchange (iperf3's control connection) runs that much longer
    late = max((getattr(wl, "late_start", 0.0) for _, wl in workloads), default=0.0)
    if late > 0.0:
        run_until(env, end + DRAIN + late)
    rows, samples = [], {}
    for name, wl in workloads:
        for m in wl.metrics():
            rows.append({"rep": rep, "workload": name, "metric": m.name, "unit": m.unit, "value": m.value})
        for k, v in wl.samples().items():
            samples[f"{name}:{k}"] = v
    for hname, cpu in topo.hosts.items():
        util = list(cpu.utilisation(end))
        pmd = topo.pmds.get(hname)
        if pmd is not None:          # the PMD's core, after the host's others: busy-polling, always 100 %
            util.append(pmd.utilisation(end) / 100.0)
        rows.append({"rep": rep, "workload": "system", "metric": f"cpu_util.{hname}", "unit": "%",
                     "value": 100.0 * float(np.mean(util))})
        for core, u in enumerate(util):
            rows.append({"rep": rep, "workload": "system", "metric": f"cpu_util.{hname}.core{core}",
                         "unit": "%", "value": 100.0 * u})
    host_pools = {id(c) for c in topo.hosts.values()}
    for gname, guest in topo.guest_cpus.items():
        if id(guest) in host_pools:
            continue                          # a container / bare metal: its work is the host's
        for v, u in enumerate(guest.utilisation(end)):
            rows.append({"rep": rep, "workload": "system", "metric": f"cpu_util.{gname}.vcpu{v}",
                         "unit": "%", "value": 100.0 * u})
    for hname, cpu in topo.hosts.items():
        for kind, (wait, _n) in cpu.run_queue_delay().items():
            rows.append({"rep": rep, "workload": "system", "metric": f"runq_delay.{hname}.{kind}",
                         "unit": "us", "value": 1e6 * wait})
    counters = topo.counters()
    for hname in topo.pmds:          # dpif-netdev/pmd-perf-show, and the AF_XDP rings' drops
        for k, v in counters[f"pmd:{hname}"].items():
            rows.append({"rep": rep, "workload": "system", "metric": f"pmd.{hname}.{k}",
                         "unit": "%" if k.endswith("_pct") else "count", "value": float(v)})
    for key, c in counters.items():
        if key.startswith("bridge:") and "hit" in c:
            # tx_dropped, rx_dropped[.port]: only with AF_PACKET socket buffers (ovs.tx_sndbuf, ovs.rx_rcvbuf)
            sockets = [k for k in c if k.startswith(("tx_dropped", "rx_dropped"))]
            for k in ["hit", "missed", "lost", "flows", *sockets]:
                rows.append({"rep": rep, "workload": "system", "metric": f"{key[7:]}.{k}", "unit": "count",
                             "value": float(c[k])})
    return rows, samples, counters


def local_cores() -> int:
    """The cores this process may run on (``sched_getaffinity``; ``cpu_count`` elsewhere)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class ReplicationPool:
    """Local worker processes for replications, reusable across :func:`run_scenario` calls
    (a calibration runs hundreds of them); a context manager.  ``forkserver``: rich's progress
    display runs a thread, so no plain fork; the workers import the runner once."""

    def __init__(self, workers: int):
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor
        self.workers = max(1, int(workers))
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["ovssim.runner"])
        self.executor = ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx)

    def close(self, *, kill: bool = False) -> None:
        shutdown_pool(self.executor, kill=kill)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        self.close(kill=exc_type is not None)


def shutdown_pool(executor, *, kill: bool) -> None:
    """Shut a :class:`~concurrent.futures.ProcessPoolExecutor` down.  ``kill`` (an interrupt: Ctrl-C,
    SIGTERM, SIGHUP, or an error) ends its workers at once, where a plain shutdown would wait for their
    running replications; the forkserver exits with this process (it reads the parent's end of a pipe)."""
    if kill:
        for proc in list((getattr(executor, "_processes", None) or {}).values()):
            if proc.is_alive():
                proc.terminate()
    executor.shutdown(wait=True, cancel_futures=True)


def _replications(sc: Scenario, profile: Profile, reps: range, seed: int, workers: int, advance,
                  pool: ReplicationPool | None = None):
    """Yield ``(rep, result)`` of the replications ``reps``: serially, on ``pool``, or on a pool of
    ``workers`` processes made for this call.

    Each replication's random streams derive from ``(seed, rep)`` alone, so the results do not
    depend on the worker count or the order replications finish in."""
    n = len(reps)
    if pool is None and (workers <= 1 or n <= 1):
        for rep in reps:
            yield rep, run_replication(sc, profile, rep, seed)
            advance()
        return
    from concurrent.futures import FIRST_COMPLETED, wait
    own = pool is None
    if own:
        pool = ReplicationPool(min(workers, n))
    pending = {}
    failed = True
    try:
        pending = {pool.executor.submit(run_replication, sc, profile, rep, seed): rep for rep in reps}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                rep = pending.pop(fut)
                yield rep, fut.result()          # a replication's error ends the run, as serially
                advance()
        failed = False
    finally:
        if own:
            pool.close(kill=failed)
        else:
            for fut in pending:                  # a shared pool: drop what this call left queued
                fut.cancel()


def run_scenario(scenario, reps: int | None = None, seed: int | None = None, progress: bool = False,
                 profile: "Profile | str | Resolved | None" = None, workers: int = 1,
                 pool: ReplicationPool | None = None, precision: Precision | None = None,
                 sets: dict | None = None) -> RunResult:
    """Run all replications of ``scenario`` (a path, dict or :class:`Scenario`).

    ``profile``: the caller's profile, replacing the scenario's (a name, path or :class:`Profile`; its
    values beat the scenario's ``[params]``); ``sets``: parameter values for this run alone.  The order
    is :mod:`ovssim.precedence`'s.

    ``precision`` (or the scenario's ``precision`` keys) replaces the fixed count: replications are
    added in batches until every watched metric's 95 % CI is as narrow as asked, or ``max_reps``
    (:mod:`ovssim.sequential`); ``RunResult.stopping`` says how it stopped.  ``reps`` and ``precision``
    together are an error.

    ``workers`` > 1 runs them on that many local processes (at most one per replication), or
    ``pool`` on its processes; the results are identical to a serial run.  The processes are
    started with ``forkserver``, which imports the calling script again: a script that asks for
    workers must guard its entry point with ``if __name__ == "__main__":``."""
    sc = load_scenario(scenario)
    # the documented order (ovssim.precedence): ``profile`` is the caller's (it beats the scenario's
    # [params] where it sets a value), ``sets`` beat everything; a Resolved is used as it is
    profile = profile.profile if isinstance(profile, Resolved) else resolve(sc, profile=profile, sets=sets).profile
    if precision is None and reps is None:
        precision = sc.precision
    seed = sc.seed if seed is None else seed
    n = (sc.reps if reps is None else reps) if precision is None else precision.min_reps
    bar = None
    if progress:
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeRemainingColumn)
        from rich.console import Console
        bar = Progress(TextColumn(f"{sc.name}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                       transient=True, console=Console(stderr=True))     # stdout stays the results
        bar.start()
        task = bar.add_task("reps", total=n)
    results: list = []
    stopping, looks = None, 0
    own_pool = None
    if precision is not None and pool is None and workers > 1:
        pool = own_pool = ReplicationPool(min(workers, precision.max_reps))    # one pool for every batch
    failed = True
    try:
        advance = (lambda: bar.advance(task)) if bar is not None else (lambda: None)
        while True:
            batch: list = [None] * (n - len(results))
            for rep, res in _replications(sc, profile, range(len(results), n), seed, workers, advance, pool):
                batch[rep - len(results)] = res
            results += batch
            if precision is None:
                break
            looks += 1
            per_rep = _per_rep(results)
            stopping = stopping_of(check(values_of(per_rep), precision), n, looks, precision)
            if stopping is not None:
                break
            n = next_checkpoint(n, precision)
            if bar is not None:
                bar.update(task, total=n)
        failed = False
    finally:
        if bar is not None:
            bar.stop()
        if own_pool is not None:
            own_pool.close(kill=failed)
    all_samples, all_counters = {}, []
    for _rows, samples, counters in results:          # in replication order, whatever finished first
        for k, v in samples.items():
            all_samples.setdefault(k, []).append(v)
        all_counters.append(counters)
    per_rep = _per_rep(results)
    samples = {k: np.concatenate(v) if v else np.array([]) for k, v in all_samples.items()}
    return RunResult(sc.name, summarise(per_rep, sc.name), per_rep, samples, all_counters, stopping)


def _per_rep(results) -> pd.DataFrame:
    rows = [r for rows, _s, _c in results for r in rows]
    return pd.DataFrame(rows, columns=["rep", "workload", "metric", "unit", "value"])
