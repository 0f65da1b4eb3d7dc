"""The AF_XDP campaign's runs and the PMDs up beside them (ovssim/validate/afxdp.py ``pmds_up``), checked
against what OVS itself counted in those runs (data/local/2026-11-25-quiet/local-afxdp)."""
import json

import numpy as np
import pytest

from ovssim.validate.afxdp import ALONE, QUIET, load_measured, pmds_up

pytestmark = pytest.mark.skipif(not (QUIET / "runs.jsonl").is_file(), reason="campaign data not present")


def test_kept_testbeds_leave_one_pmd_per_afxdp_configuration_up():
    up = pmds_up(QUIET)
    runs = sorted((json.loads(line) for line in (QUIET / "runs.jsonl").read_text().splitlines()),
                  key=lambda r: r["start"])
    # the campaign begins with the 1-bridge AF_XDP configuration: its PMD alone; three AF_XDP configurations
    # in all, so at most three PMDs
    assert runs[0]["datapath"] == "netdev+afxdp" and up[runs[0]["run_id"]] == 1
    assert max(up.values()) == 3
    assert [up[r["run_id"]] for r in runs] == sorted(up[r["run_id"]] for r in runs)   # never fewer


def test_a_pmd_gets_its_fair_share_of_the_core_with_the_others_up():
    """An idle PMD iterates as fast as its core lets it: pmd-perf-show's iterations per second in the ping runs
    fall as 1 / (1 + the other PMDs up) -- the premise of host.pmd_core_threads."""
    df = load_measured(QUIET)
    sel = df[(df["port_type"] == "afxdp") & (df["workload"] == "ping")]
    w = sel[sel["metric"].isin(["pmdperf_iterations", "wall_time"])].pivot_table(
        index=["run_id", "pmd_others"], columns="metric", values="value")
    rate = (w["pmdperf_iterations"] / w["wall_time"]).groupby(level="pmd_others").mean()
    assert set(rate.index) == {0, 1, 2}
    for n in (1, 2):
        assert rate[0] / rate[n] == pytest.approx(n + 1, rel=0.1)


def test_the_system_port_runs_had_a_core_taken():
    """cpu1 was 100 % busy in every system-port ping run (a ping every 20 ms): the AF_XDP testbeds' PMDs."""
    df = load_measured(QUIET)
    sel = df[(df["port_type"] == "system") & (df["workload"] == "ping")]
    busy1 = sel[sel["metric"] == "cpu1_busy"]["value"].to_numpy(float)
    busy0 = sel[sel["metric"] == "cpu0_busy"]["value"].to_numpy(float)
    assert busy1.size == 9 and np.all(busy1 > 0.99) and np.median(busy0) < 0.1
    assert (sel.drop_duplicates("run_id")["pmds_up"] >= 1).all()


@pytest.mark.skipif(not (ALONE / "runs.jsonl").is_file(), reason="campaign data not present")
def test_one_testbed_at_a_time_leaves_the_pmd_alone():
    """The 29-Nov collection built one testbed at a time (keep_testbeds = false): every AF_XDP run had its own PMD
    only, and a system-port ping run found both cores idle -- where on 25 Nov the kept PMDs held core 1 at 100 %."""
    up = pmds_up(ALONE)
    df = load_measured(ALONE)
    kinds = df.drop_duplicates("run_id").set_index("run_id")["port_type"]
    assert {up[r] for r in kinds[kinds == "afxdp"].index} == {1}
    assert {up[r] for r in kinds[kinds == "system"].index} == {0}
    assert set(df["pmd_others"]) == {0}
    sel = df[(df["port_type"] == "system") & (df["workload"] == "ping")]
    for core in ("cpu0_busy", "cpu1_busy"):
        assert np.all(sel[sel["metric"] == core]["value"].to_numpy(float) < 0.1)
    # and an AF_XDP ping run shows its PMD: one core at 100 %, the other idle
    sel = df[(df["port_type"] == "afxdp") & (df["workload"] == "ping")]
    busy = sel[sel["metric"].isin(["cpu0_busy", "cpu1_busy"])].groupby("run_id")["value"]
    assert np.all(busy.max().to_numpy() > 0.99) and np.all(busy.min().to_numpy() < 0.1)
