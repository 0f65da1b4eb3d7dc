"""Executors: in-process, a local forkserver process pool, Dask."""
from __future__ import annotations

import time

from ..errors import ConfigError, OvssimError
from ..runner import shutdown_pool
from .worker import run_task


MAX_ATTEMPTS = 3


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
    except BaseException:
        shutdown_pool(pool, kill=True)          # interrupted (Ctrl-C, SIGTERM, SIGHUP): no worker left behind
        raise
    shutdown_pool(pool, kill=False)


DASK_SCHEMES = ("tcp", "tls", "ws", "wss", "ucx", "inproc")     # distributed's comm backends


def check_dask_address(address: str) -> str:
    """``address`` if it is ``local``, ``local:N``, ``local-threads:N`` (N >= 1) or SCHEME://HOST[:PORT];
    a :class:`ConfigError` otherwise (before any work: a bad address would otherwise fail after start-up)."""
    from urllib.parse import urlsplit
    bad = ConfigError(f"--dask {address!r} is not a Dask scheduler address", key="--dask",
                      fix='use "local", "local:N", "local-threads:N" or tcp://HOST:8786')
    kind, sep, n = address.partition(":")
    if kind in ("local", "local-threads"):
        if sep and not (n.isdigit() and 1 <= int(n) <= 4096):
            raise bad
        return address
    try:
        parts = urlsplit(address)
        port = parts.port
    except ValueError:
        raise bad from None
    if parts.scheme not in DASK_SCHEMES or not parts.hostname or parts.path not in ("", "/") or \
            (port is not None and not 1 <= port <= 65535):
        raise bad
    return address


def dask_client(address: str, workers: int):
    """(client, cluster-or-None): ``"local"``/``"local:N"``/``"local-threads:N"`` start a LocalCluster."""
    check_dask_address(address)
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise OvssimError("--dask needs the 'distributed' package; install it with "
                          "pip install 'ovssim[dask]'") from None
    if address.startswith("local"):
        kind, _, n = address.partition(":")
        n = int(n) if n else workers
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
            while len(meta) < _window(nworkers) and submit_next():   # a sequential batch may add several
                pass
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
