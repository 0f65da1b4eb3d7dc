"""Executors give identical per-run results; a dead worker's run is retried; a killed sweep resumes."""
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from ovssim.sweep import RESULTS, iter_records, load_results, load_sweep, run_sweep

from sweep_helpers import write_sweep


def _values(out):
    df, _ = load_results(out)
    df = df[~df["metric"].str.startswith("cpu_util")]     # wall-clock free, but keep the set stable
    return df.sort_values(["run", "workload", "metric"]).reset_index(drop=True)[
        ["run", "rep", "workload", "metric", "value"]]


def test_same_results_with_one_worker_two_workers_and_dask(tmp_path, grid_sweep):
    pytest.importorskip("distributed")
    sw = load_sweep(grid_sweep)
    runs = {}
    for name, kw in [("one", dict(workers=1)), ("two", dict(workers=2)),
                     ("dask", dict(workers=2, dask="local-threads:2"))]:
        rep = run_sweep(sw, tmp_path / name, **kw)
        assert rep.ran == sw.total == 8 and not rep.failed
        runs[name] = _values(tmp_path / name)
    assert len(runs["one"]) > 8 * 10
    for name in ("two", "dask"):
        assert runs[name]["run"].tolist() == runs["one"]["run"].tolist()
        np.testing.assert_array_equal(runs[name]["value"].to_numpy(), runs["one"]["value"].to_numpy())
    # workers were separate processes in the pool run
    workers = {r["worker"] for r in iter_records(tmp_path / "two")}
    assert len(workers) >= 1 and all(w.split(":")[1] != str(os.getpid()) for w in workers)


def test_crn_makes_points_that_share_a_path_identical_and_independent_seeds_do_not(tmp_path):
    # pfifo vs a bfifo big enough never to drop: at 20 Mbit/s no queue forms, so the qdisc cannot matter
    body = '''
        [sweep]
        base = "tiny.toml"
        reps = 2
        seed = 5
        crn = {crn}
        [set]
        "workload.udp.b" = "20mbit"
        [grid]
        "vm.vm1.qdisc,vm.vm2.qdisc" = [{{kind = "pfifo"}}, {{kind = "bfifo"}}]
    '''
    out = {}
    for crn in ("true", "false"):
        sw = load_sweep(write_sweep(tmp_path, body.format(crn=crn), name=f"{crn}.toml"))
        run_sweep(sw, tmp_path / crn, workers=1)
        df, _ = load_results(tmp_path / crn)
        rtt = df[(df["metric"] == "rtt_mean")].pivot_table(index="rep", columns="label", values="value")
        out[crn] = rtt
    t = out["true"]
    np.testing.assert_array_equal(t["qdisc=pfifo"].to_numpy(), t["qdisc=bfifo"].to_numpy())
    f = out["false"]
    assert not np.array_equal(f["qdisc=pfifo"].to_numpy(), f["qdisc=bfifo"].to_numpy())


def test_a_worker_that_dies_has_its_run_retried(tmp_path, grid_sweep, monkeypatch):
    sw = load_sweep(grid_sweep)
    victim = f"{sw.points[1].id}-0"
    marker = tmp_path / "killed"
    monkeypatch.setenv("OVSSIM_SWEEP_KILL", f"{victim}:{marker}")
    rep = run_sweep(sw, tmp_path / "out", workers=2)
    assert marker.exists()                              # the worker really died on it
    assert int(marker.read_text()) != os.getpid()
    assert not rep.failed and rep.ran == sw.total
    recs = [r for r in iter_records(tmp_path / "out") if r["status"] == "ok"]
    assert sorted(r["run"] for r in recs) == sorted(f"{p.id}-{r}" for p in sw.points for r in range(2))


def test_a_torn_last_line_is_dropped_and_redone_on_resume(tmp_path, grid_sweep):
    sw = load_sweep(grid_sweep)
    out = tmp_path / "out"
    run_sweep(sw, out, workers=1)
    lines = (out / RESULTS).read_bytes().splitlines(keepends=True)
    (out / RESULTS).write_bytes(b"".join(lines[:5]) + lines[5][:40])      # killed mid-write
    rep = run_sweep(sw, out, workers=1, resume=True)
    assert rep.skipped == 5 and rep.ran == 3
    ids = [json.loads(ln)["run"] for ln in (out / RESULTS).read_bytes().splitlines()]
    assert len(ids) == len(set(ids)) == sw.total


def test_out_dir_of_another_sweep_is_refused(tmp_path, grid_sweep):
    from ovssim.errors import ConfigError
    sw = load_sweep(grid_sweep)
    run_sweep(sw, tmp_path / "out", workers=1)
    with pytest.raises(ConfigError, match="--resume"):
        run_sweep(sw, tmp_path / "out", workers=1)
    other = load_sweep(write_sweep(tmp_path, grid_sweep.read_text().replace("seed = 11", "seed = 12"), "b.toml"))
    with pytest.raises(ConfigError, match="different sweep"):
        run_sweep(other, tmp_path / "out", workers=1, resume=True)
    # more replications of the same sweep: only the new ones run
    more = load_sweep(grid_sweep, reps=3)
    rep = run_sweep(more, tmp_path / "out", workers=1, resume=True)
    assert rep.skipped == 8 and rep.ran == 4


def test_a_killed_sweep_resumes_without_redoing_or_losing_runs(tmp_path):
    p = write_sweep(tmp_path, '''
        [sweep]
        base = "tiny.toml"
        reps = 6
        seed = 2
        [grid]
        "vm.vm1.qdisc,vm.vm2.qdisc" = [{kind = "pfifo"}, {kind = "bfifo"}, {kind = "pfifo", limit = 50}]
    ''')
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "ovssim", "sweep", str(p), "--out", str(out), "--workers", "2", "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            path = out / RESULTS
            if path.exists() and path.read_bytes().count(b"\n") >= 4:
                break
            if proc.poll() is not None:
                pytest.fail(f"sweep ended early: {proc.stderr.read().decode()}")
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)              # the coordinator and its workers, mid-sweep
    finally:
        proc.wait(timeout=30)
    before = [json.loads(ln)["run"] for ln in (out / RESULTS).read_bytes().splitlines() if ln.endswith(b"}")]
    assert 4 <= len(before) < 18
    sw = load_sweep(p)
    rep = run_sweep(sw, out, workers=2, resume=True)
    assert rep.skipped == len(set(before))
    assert rep.skipped + rep.ran == sw.total == 18
    ids = [r["run"] for r in iter_records(out) if r["status"] == "ok"]
    assert len(ids) == len(set(ids)) == 18                           # nothing redone, nothing lost
    assert set(ids) == {f"{pt.id}-{r}" for pt in sw.points for r in range(6)}


def test_two_coordinators_cannot_share_an_output_directory(tmp_path, grid_sweep):
    from ovssim.errors import ConfigError
    from ovssim.sweep import ResultStore
    sw = load_sweep(grid_sweep)
    first = ResultStore(tmp_path / "out", sw)
    try:
        with pytest.raises(ConfigError, match="another sweep is running"):
            ResultStore(tmp_path / "out", sw, resume=True)
    finally:
        first.close()
    ResultStore(tmp_path / "out", sw, resume=True).close()        # free again once the first has finished
