"""The hand-transcribed seed tables (data/seeds/) are complete, consistent and load cleanly.

These tests check the transcription against the documents' own internal
consistency (published averages, repeated tables, min <= mean <= max, VLAN
tags), and the loader against corrupt files.
"""
from __future__ import annotations

import csv
import math

import pandas as pd
import pytest

from ovssim.errors import ConfigError, DataError
from ovssim.validate import seed_data as sd

ALL_TABLES = sorted(sd.SCHEMAS)


def raw_rows(name):
    """The CSV as plain text (independent of the loader)."""
    with open(sd.SEED_DIR / f"{name}.csv", newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("name", ALL_TABLES)
def test_every_seed_csv_loads_with_the_loader(name):
    df = sd.load_seed_table(name)
    assert len(df) > 0
    assert list(df.columns) == list(sd.SCHEMAS[name].kinds)


@pytest.mark.parametrize("name", [n for n in ALL_TABLES if "unit" in sd.SCHEMAS[n].kinds])
def test_units_come_from_the_allowed_set(name):
    units = {r["unit"] for r in raw_rows(name)}
    assert units <= sd.ALLOWED_UNITS, units - sd.ALLOWED_UNITS


@pytest.mark.parametrize("name", ALL_TABLES)
def test_every_row_names_its_source(name):
    for i, r in enumerate(raw_rows(name), start=2):
        assert r["document"] in sd.KNOWN_DOCUMENTS, f"line {i}"
        assert r["section"].strip(), f"line {i}: no section"
        if "table" in r:
            assert r["table"].strip(), f"line {i}: no table"


def test_measurement_tables_have_expected_shape():
    t000 = sd.load_seed_table("seed000_thesis_tables")
    # Tables 3/4/5: 6 schedulers x 4 columns; Tables 6/7: 6 schedulers x 3 metrics.
    assert t000.groupby("table").size().to_dict() == {
        "Table 3": 24, "Table 4": 24, "Table 5": 24, "Table 6": 18, "Table 7": 18}
    assert not t000.duplicated(["table", "virtualization", "bridge", "scheduler", "metric"]).any()
    # The thesis drew 95% CIs (Figures 11-16) but did not tabulate them.
    assert t000["ci95_low"].isna().all() and t000["ci95_high"].isna().all()
    assert (t000["n_iterations"] == 100).all()


def test_units_match_metrics():
    m = sd.load_measurements()
    expected = {"throughput": {"Mbit/s", "MB/s"}, "rtt": {"ms"}, "jitter": {"ms"},
                "cpu_utilisation": {"%"}, "scheduling_time": {"us"},
                "throughput_ratio_to_singlebr": {"%"}}
    for metric, units in m.groupby("metric")["unit"]:
        assert set(units) <= expected[metric], metric


def test_resolution_matches_printed_digits():
    """Resolution is one unit of the last printed digit: value is a whole multiple of it."""
    m = sd.load_measurements()
    ratio = m["value"] / m["resolution"]
    assert ((ratio - ratio.round()).abs() < 1e-6).all()


def test_seed004_published_average_row_matches_the_rounds():
    rounds = sd.interim_bridge_rounds()
    pub = sd.interim_bridge_published()
    assert list(rounds.index) == list(range(10))
    # AVG is printed with one decimal: agree within half a unit of that digit.
    assert (rounds.mean() - pub.loc["AVG"]).abs().max() <= 0.05
    # Comparison is AVG / single-bridge AVG, printed to 1 %.
    for dev in ("tap", "vif"):
        ratio = 100 * rounds[f"patchport-{dev}"].mean() / rounds[f"singlebr-{dev}"].mean()
        assert abs(ratio - pub.loc["Comparison", f"patchport-{dev}"]) <= 0.5
        assert pub.loc["Comparison", f"singlebr-{dev}"] == 100


def _cells(df, table, virt, bridge):
    sel = df[(df["table"] == table) & (df["virtualization"] == virt) & (df["bridge"] == bridge)]
    return {(r.scheduler, r.metric): r.value for r in sel.itertuples()}


def test_seed000_summary_tables_repeat_the_comparison_columns_except_flagged_cells():
    df = sd.load_seed_table("seed000_thesis_tables")
    comparison = df[df["table"].isin(["Table 3", "Table 4", "Table 5"])]
    found = {}
    for table, bridge in (("Table 6", "ovs"), ("Table 7", "linux-bridge")):
        summary = _cells(df, table, "kvm-tap", bridge)
        repeated = {}
        for t in ("Table 3", "Table 4", "Table 5"):
            repeated.update(_cells(comparison, t, "kvm-tap", bridge))
        assert summary.keys() == repeated.keys()
        differing = {k for k in summary if not math.isclose(summary[k], repeated[k])}
        flagged = set(
            df[(df["table"] == table) & df["flags"].fillna("").str.contains("table5_table6_mismatch")]
            .apply(lambda r: (r["scheduler"], r["metric"]), axis=1))
        assert differing == flagged
        found[table] = differing
    # The README documents exactly these three jitter cells; Table 7 repeats VM-LINUX exactly.
    assert found == {"Table 6": {("FIFO", "jitter"), ("CODEL", "jitter"), ("FQ-CODEL", "jitter")},
                     "Table 7": set()}
    t6 = sd.thesis_table("ovs", "kvm", source="summary")
    t5 = sd.thesis_table("ovs", "kvm")
    diff = t6.ne(t5)
    assert sorted(diff.stack()[lambda s: s].index.tolist()) == [
        ("CODEL", "jitter_ms"), ("FIFO", "jitter_ms"), ("FQ-CODEL", "jitter_ms")]
    # Both sides of each discrepancy carry the flag.
    flagged5 = df[(df["table"] == "Table 5") & df["flags"].fillna("").str.contains("table5_table6_mismatch")]
    assert set(flagged5["scheduler"]) == {"FIFO", "CODEL", "FQ-CODEL"}
    assert (flagged5["bridge"] == "ovs").all() and (flagged5["virtualization"] == "kvm-tap").all()


def test_thesis_table_shape_and_aliases():
    t = sd.thesis_table("linux", "docker")
    assert list(t.index) == list(sd.THESIS_SCHEDULERS)
    assert list(t.columns) == ["throughput_mbit_s", "rtt_ms", "jitter_ms"]
    assert t.equals(sd.thesis_table("linux-bridge", "container"))
    with pytest.raises(ConfigError):
        sd.thesis_table("ovs", "docker", source="summary")
    with pytest.raises(ConfigError):
        sd.thesis_table("vpp", "kvm")


def test_seed002_min_mean_max_are_ordered_and_conversion_is_consistent():
    for table in ("Table IV", "Table V", "Table VI", "Table VII", "Table VIII"):
        t = sd.xenserver_table(table)
        assert (t["min"] <= t["mean"]).all() and (t["mean"] <= t["max"]).all(), table
    pub = sd.xenserver_table("Table IV")
    conv = sd.xenserver_table("Table IV", derived=True)
    assert pub.attrs["unit"] == "MB/s" and conv.attrs["unit"] == "Mbit/s"
    pd.testing.assert_frame_equal(conv, pub * 8 * 1.048576, check_exact=False, rtol=1e-12)


def test_seed002_vlan_isolation_matrix():
    v = sd.load_seed_table("seed002_vlan_isolation")
    for table in ("Table II", "Table III"):
        t = v[v["table"] == table]
        pairs = set(zip(t["from_vm"], t["to_vm"]))
        assert len(pairs) == len(t) == 12          # 4 VMs, every ordered pair once
        assert all(a != b for a, b in pairs)
    t2, t3 = v[v["table"] == "Table II"], v[v["table"] == "Table III"]
    assert t2["reachable"].all() and t2["vlan_from"].isna().all()
    assert (t3["reachable"] == (t3["vlan_from"] == t3["vlan_to"])).all()


def test_expectations_are_testable():
    e = sd.expectations()
    assert e["expectation_id"].is_unique
    numeric = ~e["bound"].isin(["ordering", "trend"])
    assert e.loc[numeric, "value"].notna().all()
    assert e.loc[~numeric, "ordering"].notna().all()
    # Tolerances we chose ourselves are marked as ours.
    assert (e.loc[e["tolerance"].notna(), "tolerance_source"].notna()).all()
    assert {"seed001", "seed003"} <= set(e["document"])
    assert len(sd.expectations("seed003")) >= 3


def test_thesis_parameters_hold_the_workload_settings():
    p = sd.load_seed_table("seed000_test_parameters")
    assert p["key"].is_unique
    params = sd.thesis_parameters()
    assert params["iperf_udp.datagram_size"] == 1470
    assert params["physical_switch.rate"] == 100
    # "bits" in the thesis is recorded verbatim next to the bytes interpretation.
    row = p.set_index("key").loc["netperf_tcp_stream.local_send_buffer"]
    assert "bits" in row["as_published"] and row["unit"] == "bytes"


# ---- loader robustness -------------------------------------------------------------------

def _write(tmp_path, text, name="seed004_interim_bridge"):
    (tmp_path / f"{name}.csv").write_text(text)
    return tmp_path


def _good_text(name="seed004_interim_bridge"):
    return (sd.SEED_DIR / f"{name}.csv").read_text()


def test_loader_reads_a_copy(tmp_path):
    d = _write(tmp_path, _good_text())
    assert len(sd.load_seed_table("seed004_interim_bridge", d)) == 48


@pytest.mark.parametrize("mutate, words", [
    (lambda t: "", "empty"),
    (lambda t: t.splitlines()[0] + "\n", "no rows"),
    (lambda t: t.replace(",116,Mbit/s,", ",11x6,Mbit/s,", 1), "not a number"),
    (lambda t: t.replace(",116,Mbit/s,", ",116,Mbps,", 1), "unit"),
    (lambda t: t.replace("document,", "doc,", 1), "columns"),
    (lambda t: t.replace(",false,", ",maybe,", 1), "true/false"),
    (lambda t: t.replace("seed004,", ",", 1), "empty"),
    (lambda t: t + "1,2,3," * 30 + "\n", "CSV"),
    (lambda t: t.replace(",sample,0,", ",sample,0.5,", 1), "integer"),
])
def test_loader_raises_data_error_on_corrupt_file(tmp_path, mutate, words):
    d = _write(tmp_path, mutate(_good_text()))
    with pytest.raises(DataError, match=words):
        sd.load_seed_table("seed004_interim_bridge", d)


def test_loader_raises_data_error_on_missing_file(tmp_path):
    with pytest.raises(DataError, match="not found"):
        sd.load_seed_table("seed000_thesis_tables", tmp_path)


def test_loader_rejects_half_a_confidence_interval(tmp_path):
    text = _good_text("seed000_thesis_tables").replace(",100,,,false,", ",100,1.0,,false,", 1)
    d = _write(tmp_path, text, "seed000_thesis_tables")
    with pytest.raises(DataError, match="ci95"):
        sd.load_seed_table("seed000_thesis_tables", d)


# ---- testbed fact sheets refer to existing data -------------------------------------------

DRAFTS = sorted((sd.SEED_DIR.parents[1] / "validation" / "scenarios_draft").glob("*.toml"))


@pytest.mark.parametrize("path", DRAFTS, ids=lambda p: p.name)
def test_fact_sheet_references_exist(path):
    import tomllib
    sheet = tomllib.loads(path.read_text())
    ids = set(sd.expectations()["expectation_id"])
    testbeds = set(sd.load_measurements()["testbed"]) | set(sd.expectations()["testbed"])
    assert set(sheet.get("expected", {}).get("expectations", [])) <= ids
    if sheet["testbed"]["documents"]:
        assert sheet["testbed"]["id"] in testbeds
