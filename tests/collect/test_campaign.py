"""Campaign files, run order, the crash-safe store and the importers (no root needed)."""
import gzip
import json
import os
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from ovssim.collect import campaign as cp
from ovssim.collect.importers import import_files, read_flent, read_samples_csv
from ovssim.collect.shell import check_name
from ovssim.collect.store import CampaignStore, load_results, load_samples, read_journal
from ovssim.errors import ConfigError, DataError

ROOT = Path(__file__).resolve().parents[2]

BASE = """
[campaign]
name = "t"
repetitions = 3
order = "{order}"
seed = 7
duration = "2s"

[[qdisc]]
name = "htb50"
kind = "htb"
rate = "50mbit"
via = "ovs"

[[workload]]
name = "tcp"
tool = "iperf3"

[[workload]]
name = "ping"
tool = "ping"

[[matrix]]
bridge = ["ovs", "linux"]
chain = [1, 2]
link = ["patch", "veth"]
qdisc = ["none", "htb50"]
workload = ["tcp", "ping"]
"""


def write(tmp_path, text, name="c.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_matrix_expansion_drops_impossible_and_duplicate_configurations(tmp_path):
    c = cp.load_campaign(write(tmp_path, BASE.format(order="interleaved")))
    # bridges/chains: ovs x1, ovs x2 patch, ovs x2 veth, linux x1, linux x2 veth = 5 testbeds;
    # (linux x2 patch does not exist; chain 1 patch == chain 1 veth) x 2 qdiscs x 2 workloads
    assert len(c.configs) == 5 * 2 * 2
    assert len({rc.config_id() for rc in c.configs}) == len(c.configs)
    # the OVS QoS table is not there on a Linux bridge: the same qdisc goes on with tc
    assert {rc.qdisc.via for rc in c.configs if rc.testbed.bridge == "linux" and
            rc.qdisc.kind == "htb"} == {"tc"}
    assert c.duration == 2.0 and c.configs[0].qdisc.kind in ("none", "htb")


@pytest.mark.parametrize("order", ["interleaved", "randomised", "sequential"])
def test_every_run_once_and_order_properties(tmp_path, order):
    c = cp.load_campaign(write(tmp_path, BASE.format(order=order)))
    runs = c.runs()
    n = len(c.configs)
    assert len(runs) == n * 3
    keys = Counter((rc.config_id(), rep) for _, rc, rep in runs)
    assert set(keys.values()) == {1}
    reps = [rep for _, _, rep in runs]
    if order == "sequential":
        assert [rc.config_id() for _, rc, _ in runs[:3]] == [runs[0][1].config_id()] * 3
    else:
        # blocked: every configuration's rep r runs before any configuration's rep r+1
        assert reps == sorted(reps)
        blocks = [[rc.config_id() for _, rc, rep in runs if rep == r] for r in (1, 2, 3)]
        if order == "interleaved":
            assert blocks[0] == blocks[1] == blocks[2]
        else:
            assert blocks[0] != blocks[1] and sorted(blocks[0]) == sorted(blocks[1])


def test_randomised_order_is_reproducible_from_seed(tmp_path):
    p = write(tmp_path, BASE.format(order="randomised"))
    a = [rc.config_id() for _, rc, _ in cp.load_campaign(p).runs()]
    b = [rc.config_id() for _, rc, _ in cp.load_campaign(p).runs()]
    assert a == b


@pytest.mark.parametrize("patch,match", [
    (("order = \"interleaved\"", "order = \"shuffled\""), "order must be"),
    (("repetitions = 3", "repetitions = 0"), "repetitions"),
    (("workload = [\"tcp\", \"ping\"]", "workload = [\"tcp\", \"udp\"]"), "workload 'udp' is not defined"),
    (("rate = \"50mbit\"", "rate = \"fast\""), "cannot read rate"),
    (("tool = \"iperf3\"", "tool = \"iperf4\""), "unknown tool"),
    (("kind = \"htb\"", "kind = \"wfq\""), "unknown qdisc kind"),
    (("name = \"t\"", "name = \"t; rm -rf /\""), "not valid"),
    (("[[matrix]]", "[[matrix]]\nbridges = [\"ovs\"]"), "unknown matrix axis"),
])
def test_bad_campaign_files_give_one_clear_error(tmp_path, patch, match):
    text = BASE.format(order="interleaved").replace(*patch, 1)
    with pytest.raises(ConfigError, match=match) as exc:
        cp.load_campaign(write(tmp_path, text))
    assert "c.toml" in str(exc.value)


def test_htb_without_rate_and_ovs_qos_for_tbf_are_refused(tmp_path):
    text = BASE.format(order="interleaved").replace('rate = "50mbit"\n', "", 1)
    with pytest.raises(ConfigError, match="needs a rate"):
        cp.load_campaign(write(tmp_path, text))
    text = BASE.format(order="interleaved").replace('kind = "htb"', 'kind = "tbf"', 1)
    with pytest.raises(ConfigError, match="no type for 'tbf'"):
        cp.load_campaign(write(tmp_path, text))


def test_not_toml_and_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="not valid TOML"):
        cp.load_campaign(write(tmp_path, "[campaign\nname="))
    with pytest.raises(ConfigError, match="cannot read"):
        cp.load_campaign(tmp_path / "nope.toml")


def test_endpoint_prefixes_are_validated(tmp_path):
    text = BASE.format(order="interleaved").replace("chain = [1, 2]", "chain = [1]") + """
[endpoints]
client = ["ssh", "user@host1"]
server = ["ip", "netns", "exec", "vm2; reboot"]
server_ip = "192.0.2.2"
"""
    with pytest.raises(ConfigError, match="namespace name"):
        cp.load_campaign(write(tmp_path, text))
    ok = text.replace("vm2; reboot", "vm2").replace("qdisc = [\"none\", \"htb50\"]", "qdisc = [\"none\"]")
    c = cp.load_campaign(write(tmp_path, ok))
    assert c.endpoints["client"] == ["ssh", "-o", "BatchMode=yes", "user@host1"]
    c = cp.load_campaign(write(tmp_path, ok.replace('["ssh", "user@host1"]', '"me@[2001:db8::1]:2222"')))
    assert c.endpoints["client"] == ["ssh", "-o", "BatchMode=yes", "-p", "2222", "me@2001:db8::1"]


@pytest.mark.parametrize("name,kind,ok", [
    ("vif2", "interface", True), ("a" * 15, "interface", True), ("a" * 16, "interface", False),
    ("eth0;ls", "interface", False), ("-x", "interface", False), ("$(id)", "namespace", False),
    ("user@host.example", "host", True), ("host name", "host", False),
])
def test_check_name(name, kind, ok):
    if ok:
        assert check_name(name, kind) == name
    else:
        with pytest.raises(ConfigError):
            check_name(name, kind)


def test_bundled_campaigns_load():
    for f in (ROOT / "data" / "campaigns").glob("*.toml"):
        c = cp.load_campaign(f)
        assert c.configs, f


# -- store ------------------------------------------------------------------------------------
def record(i, metrics=None):
    return {"campaign": "t", "run_id": f"cfg{i}-r001", "config_id": f"cfg{i}", "rep": 1,
            "order": i, "status": "ok", "metrics": metrics or {"throughput": [1e6 * i, "bit/s"]}}


def test_journal_survives_a_torn_last_line_and_table_has_one_row_per_metric(tmp_path):
    st = CampaignStore(tmp_path / "c")
    st.create()
    for i in range(3):
        st.append(record(i, {"a": [i, "s"], "b": [2 * i, "s"]}), {"rtt": ([0.1, 0.2], "s")})
    with open(st.dir / "runs.jsonl", "ab") as fh:      # killed in the middle of a write
        fh.write(b'{"run_id": "cfg9-r001", "metr')
    assert [r["run_id"] for r in st.records()] == ["cfg0-r001", "cfg1-r001", "cfg2-r001"]
    df = st.rebuild_table()
    assert len(df) == 6 and set(df["metric"]) == {"a", "b"}
    assert pd.read_csv(st.dir / "results.csv.gz").shape[0] == 6
    s = load_samples(st.dir, "rtt")
    assert len(s) == 6 and set(s["run_id"]) == {"cfg0-r001", "cfg1-r001", "cfg2-r001"}


def test_corrupt_middle_line_is_a_data_error(tmp_path):
    p = tmp_path / "runs.jsonl"
    p.write_text(json.dumps(record(1)) + "\nGARBAGE\n" + json.dumps(record(2)) + "\n")
    with pytest.raises(DataError, match="line 2"):
        read_journal(p)


# -- importers --------------------------------------------------------------------------------
def flent_file(tmp_path):
    doc = {"version": 3, "metadata": {"NAME": "rrul", "TITLE": "t", "TIME": "2020-01-01T00:00:00Z",
                                      "LENGTH": 60, "STEP_SIZE": 0.2, "FLENT_VERSION": "2.1.1"},
           "x_values": [0.0, 0.2, 0.4, 0.6],
           "results": {"Ping (ms) ICMP": [1.0, 2.0, None, 3.0], "TCP upload sum": [90.0, 95.0, 100.0, None]},
           "raw_values": {"Ping (ms) ICMP": [{"t": 1.0, "val": 1.0, "seq": 1},
                                             {"t": 1.2, "val": 2.0, "seq": 2},
                                             {"t": 1.6, "val": 3.0, "seq": 4}]}}
    p = tmp_path / "rrul-2020.flent.gz"
    with gzip.open(p, "wt") as fh:
        json.dump(doc, fh)
    return p


def test_flent_import_converts_units(tmp_path):
    rec, samples = read_flent(flent_file(tmp_path))
    assert samples["ping_ms_icmp"] == ([1e-3, 2e-3, 3e-3], "s")
    assert rec["metrics"]["ping_ms_icmp_median"] == [2e-3, "s"]
    assert rec["metrics"]["tcp_upload_sum_mean"][0] == pytest.approx(95e6)
    assert rec["metrics"]["tcp_upload_sum_mean"][1] == "bit/s"


def test_csv_import_and_round_trip(tmp_path):
    csvp = tmp_path / "rtts.csv"
    csvp.write_text("seq,rtt_ms\n1,0.25\n2,0.30\n3,0.20\n")
    rec, samples = read_samples_csv(csvp, unit="ms")
    assert samples["rtt_ms"][0] == pytest.approx([0.25e-3, 0.30e-3, 0.20e-3])
    out = tmp_path / "imp"
    assert import_files([flent_file(tmp_path), csvp], out, campaign="old", unit="ms") == 2
    assert import_files([csvp], out, campaign="old", unit="ms") == 0     # not duplicated
    df = load_results(out)
    assert set(df["tool"]) == {"flent", "csv"} and set(df["campaign"]) == {"old"}


def test_bad_import_files(tmp_path):
    bad = tmp_path / "x.flent.gz"
    bad.write_bytes(b"not gzip")
    with pytest.raises(DataError, match="Flent"):
        read_flent(bad)
    empty = tmp_path / "e.csv"
    empty.write_text("a,b\nx,y\n")
    with pytest.raises(DataError, match="numeric"):
        read_samples_csv(empty)


def test_collect_does_not_import_the_simulator():
    src = "\n".join(p.read_text() for p in (ROOT / "ovssim" / "collect").rglob("*.py"))
    for forbidden in ("ovssim.path", "ovssim.topology", "ovssim.scenario", "ovssim.runner",
                      "ovssim.qdisc", "from ..path", "from ..qdisc", "from ..topology"):
        assert forbidden not in src, forbidden


def test_no_shell_strings():
    src = "\n".join(p.read_text() for p in (ROOT / "ovssim" / "collect").rglob("*.py"))
    assert "shell=True" not in src and "os.system" not in src


def test_preflight_refuses_non_root_with_one_message(tmp_path, monkeypatch):
    c = cp.load_campaign(write(tmp_path, BASE.format(order="interleaved")))
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(ConfigError, match="needs root") as exc:
        cp.preflight(c)
    assert "fix:" in str(exc.value)


def test_preflight_names_missing_tools(tmp_path, monkeypatch):
    c = cp.load_campaign(write(tmp_path, BASE.format(order="interleaved")))
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(cp, "which", lambda t: None if t in ("iperf3", "ovs-vswitchd") else "/bin/" + t)
    monkeypatch.setattr(cp, "probe_qdiscs", lambda kinds: {})
    with pytest.raises(ConfigError, match="iperf3 is not installed; ovs-vswitchd is not installed"):
        cp.preflight(c)


def test_cli_prints_one_line_error_without_traceback(tmp_path):
    from click.testing import CliRunner
    from ovssim.collect.cli import collect
    bad = write(tmp_path, "[campaign]\nrepetitions = -1\n[[workload]]\nname='p'\ntool='ping'\n")
    res = CliRunner().invoke(collect, [str(bad), "--out", str(tmp_path / "o"), "--no-progress"])
    assert res.exit_code == 2
    assert "repetitions" in res.output and "Traceback" not in res.output


def test_a_hanging_tool_is_killed_after_duration_plus_margin():
    import time
    from ovssim.collect.tools.base import Target, ToolFailed, client
    t0 = time.monotonic()
    with pytest.raises(ToolFailed, match="hung"):
        client(Target(client=["sleep", "30"], server=[], server_ip="127.0.0.1"), ["1"],
               duration=0.2, margin=0.5)
    assert time.monotonic() - t0 < 5


def test_endpoints_cannot_take_qdiscs(tmp_path):
    text = BASE.format(order="interleaved").replace("chain = [1, 2]", "chain = [1]") + """
[endpoints]
client = ["ssh", "user@host1"]
server = ["ssh", "user@host2"]
server_ip = "192.0.2.2"
"""
    with pytest.raises(ConfigError, match="qdisc"):
        cp.load_campaign(write(tmp_path, text))


def test_headline_tables_are_medians_over_repetitions(tmp_path):
    from ovssim.collect.summary import headline_tables
    st = CampaignStore(tmp_path / "c")
    st.create()
    for rep, v in enumerate([1e8, 3e8, 2e8], start=1):
        st.append({"campaign": "t", "run_id": f"a-r{rep:03d}", "config_id": "a", "rep": rep,
                   "status": "ok", "bridge": "ovs", "chain": 1, "link": "-", "qdisc": "none",
                   "workload": "tcp", "metrics": {"throughput": [v, "bit/s"]}})
    tables = dict(headline_tables(st.dir))
    t = tables["TCP throughput, iperf3 cubic (Mbit/s)"]
    assert t["median"].iloc[0] == 200.0 and t["n"].iloc[0] == 3
    assert tables["runs by status"].loc["ok", "runs"] == 3


# -- a latency probe alongside a load -------------------------------------------------------
ALONGSIDE = BASE.replace('[[workload]]\nname = "tcp"\ntool = "iperf3"\n',
                         '[[workload]]\nname = "tcp"\ntool = "iperf3"\nalongside = "ping"\n'
                         'alongside_start = "0.5s"\n').replace(
    '[[workload]]\nname = "ping"\ntool = "ping"\n',
    '[[workload]]\nname = "ping"\ntool = "ping"\ncount = 100\ninterval = "10ms"\n')


def test_alongside_resolves_the_probe_into_the_load(tmp_path):
    c = cp.load_campaign(write(tmp_path, ALONGSIDE.format(order="interleaved")))
    tcp = next(rc.workload for rc in c.configs if rc.workload.name == "tcp")
    assert tcp.alongside.name == "ping" and tcp.alongside.count == 100
    assert tcp.alongside_start == 0.5
    # the probe is part of the configuration's identity
    plain = cp.load_campaign(write(tmp_path, BASE.format(order="interleaved"), "p.toml"))
    ids = {rc.config_id() for rc in plain.configs}
    assert not ids & {rc.config_id() for rc in c.configs if rc.workload.name == "tcp"}


@pytest.mark.parametrize("patch,match", [
    (('alongside = "ping"', 'alongside = "pong"'), "names no defined workload"),
    (('count = 100', 'count = 200'), r"needs 2 s but only 1.5 s"),
    (('alongside_start = "0.5s"', 'alongside_start = "-1s"'), "cannot read time '-1s'"),
])
def test_alongside_mistakes_are_one_clear_error(tmp_path, patch, match):
    with pytest.raises(ConfigError, match=match):
        cp.load_campaign(write(tmp_path, ALONGSIDE.format(order="interleaved").replace(*patch, 1)))


def test_alongside_needs_a_load_and_a_latency_probe(tmp_path):
    text = ALONGSIDE.format(order="interleaved").replace('alongside = "ping"', 'alongside = "tcp"', 1)
    with pytest.raises(ConfigError, match="latency probe"):
        cp.load_campaign(write(tmp_path, text))


def test_probe_runs_during_the_load_and_its_metrics_are_prefixed(tmp_path, monkeypatch):
    """The probe starts alongside_start after the load and ends before it; its metrics get probe_."""
    import threading
    import time as _time

    from ovssim.collect.tools.base import ToolResult
    c = cp.load_campaign(write(tmp_path, ALONGSIDE.format(order="interleaved")))
    w = next(rc.workload for rc in c.configs if rc.workload.name == "tcp")
    spans, lock = {}, threading.Lock()

    def fake_tool(self, spec, target, duration):
        t0 = _time.monotonic()
        _time.sleep(0.4 if spec.tool == "iperf3" else 0.1)
        with lock:
            spans[spec.tool] = (t0, _time.monotonic(), duration)
        r = ToolResult()
        if spec.tool == "iperf3":
            r.add("throughput", 47e6, "bit/s")
            r.info["client_start_epoch"] = 1000.0
        else:
            r.add("rtt_mean", 0.018, "s")
            r.samples["rtt"] = ([0.017, 0.019], "s")
            r.info["first_send_epoch"] = 1000.55
        return r

    monkeypatch.setattr(cp.CampaignRunner, "_run_tool", fake_tool)
    w = cp.WorkloadSpec(**{**w.__dict__, "alongside_start": 0.1})
    runner = cp.CampaignRunner.__new__(cp.CampaignRunner)
    res = runner._run_with_probe(w, None, 2.0)
    assert res.metrics["throughput"][0] == 47e6 and res.metrics["probe_rtt_mean"][0] == 0.018
    assert "rtt_mean" not in res.metrics and res.samples["rtt"][0] == [0.017, 0.019]
    # the probe's real start, timed from the load client's start (both from the tools' own clocks)
    assert res.metrics["probe_start_offset"][0] == pytest.approx(0.55)
    (l0, l1, _), (p0, p1, pdur) = spans["iperf3"], spans["ping"]
    assert l0 + 0.09 <= p0 and p1 <= l1 and pdur == pytest.approx(1.9)


def test_a_failing_probe_fails_the_run(monkeypatch, tmp_path):
    from ovssim.collect.tools.base import ToolFailed, ToolResult
    c = cp.load_campaign(write(tmp_path, ALONGSIDE.format(order="interleaved")))
    w = next(rc.workload for rc in c.configs if rc.workload.name == "tcp")
    w = cp.WorkloadSpec(**{**w.__dict__, "alongside_start": 0.0})

    def fake_tool(self, spec, target, duration):
        if spec.tool == "ping":
            raise ToolFailed("cannot read ping output")
        return ToolResult()

    monkeypatch.setattr(cp.CampaignRunner, "_run_tool", fake_tool)
    runner = cp.CampaignRunner.__new__(cp.CampaignRunner)
    with pytest.raises(ToolFailed, match="probe ping failed during the load"):
        runner._run_with_probe(w, None, 1.0)


# -- a priority-marked probe and an HTB class with its own leaf qdisc --------------------------
def test_existing_campaigns_keep_their_config_ids():
    """Settings added later (leaf, tos) stay out of the id when unset: resuming a collected dataset works."""
    import json
    root = Path(__file__).resolve().parents[2]
    c = cp.load_campaign(root / "data/campaigns/local-load.toml")
    collected = {json.loads(ln)["config_id"] for ln in open(root / "data/local/local-load/runs.jsonl")}
    assert {rc.config_id() for rc in c.configs} == collected


def test_leaf_and_tos_are_parsed_and_change_the_config_id(tmp_path):
    text = ALONGSIDE.format(order="interleaved").replace('via = "ovs"', 'via = "tc"\nleaf = "pfifo_fast"')
    c = cp.load_campaign(write(tmp_path, text))
    rc = next(r for r in c.configs if r.qdisc.name == "htb50" and r.workload.name == "tcp")
    assert rc.qdisc.tc_args()[-1] == ["qdisc", "replace", "dev", "vif2", "parent", "1:1", "handle", "10:",
                                      "pfifo_fast"]
    marked = cp.load_campaign(write(tmp_path, text.replace('count = 100', 'count = 100\ntos = "0x10"'), "m.toml"))
    rm = next(r for r in marked.configs if r.qdisc.name == "htb50" and r.workload.name == "tcp")
    assert rm.workload.alongside.tos == 0x10 and rm.config_id() != rc.config_id()


@pytest.mark.parametrize("patch,match", [
    (('via = "ovs"', 'via = "ovs"\nleaf = "pfifo_fast"'), "needs kind = 'htb', via = 'tc'"),
    (('via = "ovs"', 'via = "tc"\nleaf = "htb"'), "a classless qdisc"),
    (('count = 100', 'count = 100\ntos = 300'), "tos must be a byte"),
    (('tool = "iperf3"\n', 'tool = "iperf3"\ntos = 16\n'), "tos is a ping setting"),
])
def test_leaf_and_tos_mistakes_are_one_clear_error(tmp_path, patch, match):
    with pytest.raises(ConfigError, match=match):
        cp.load_campaign(write(tmp_path, ALONGSIDE.format(order="interleaved").replace(*patch, 1)))


def test_iperf3_json_import_uses_the_collectors_parser(tmp_path):
    from ovssim.collect.importers import read_iperf3_json
    from ovssim.collect.tools import iperf3
    for name in ("iperf3_tcp.json", "iperf3_udp.json", "iperf3_tcp_p2.json"):
        src = Path(__file__).parent / "samples" / name
        parsed = iperf3.parse(src.read_text())
        rec, samples = read_iperf3_json(src)
        assert rec["tool"] == "iperf3" and rec["status"] == "ok"
        assert rec["metrics"] == {k: [v, u] for k, (v, u) in parsed.metrics.items()}
        assert samples == parsed.samples
        doc = json.loads(src.read_text())
        assert rec["proto"] == doc["start"]["test_start"]["protocol"].lower()
        assert rec["streams"] == doc["start"]["test_start"]["num_streams"]
    out = tmp_path / "imp"
    assert import_files([Path(__file__).parent / "samples" / "iperf3_tcp.json"], out, campaign="old") == 1
    df = load_results(out)
    thr = df[df.metric == "throughput"]["value"].item()
    doc = json.loads((Path(__file__).parent / "samples" / "iperf3_tcp.json").read_text())
    assert thr == doc["end"]["sum_received"]["bits_per_second"]
    assert len(load_samples(out, "interval_throughput")) == len(doc["intervals"])


THIN = """
[campaign]
name = "thin"
duration = "8s"

[[qdisc]]
name = "noop"
kind = "noop"
via = "ovs"

[[workload]]
name = "ping"
tool = "ping"
count = 300
interval = "10ms"

[[workload]]
name = "udp"
tool = "iperf2"
proto = "udp"
rate = "1mbit"

[[workload]]
name = "tcp4"
tool = "iperf3"
streams = 4
alongside = "ping"
alongside_start = "1s"
beside = ["udp"]

[[matrix]]
bridge = ["ovs"]
qdisc = ["noop"]
workload = ["tcp4"]
"""


def test_a_thin_udp_flow_runs_beside_the_probe_and_linux_noop_goes_through_ovs(tmp_path):
    c = cp.load_campaign(write(tmp_path, THIN))
    w = c.configs[0].workload
    assert [b.name for b in w.beside] == ["udp"] and w.beside[0].rate == 1e6
    assert c.configs[0].qdisc.kind == "noop"
    from ovssim.collect.qos import OVS_QOS_TYPES
    assert OVS_QOS_TYPES["noop"] == "linux-noop"
    # the thin flow is part of the configuration's identity
    plain = cp.load_campaign(write(tmp_path, THIN.replace('beside = ["udp"]', ""), "p.toml"))
    assert plain.configs[0].config_id() != c.configs[0].config_id()


@pytest.mark.parametrize("patch, match", [
    (('beside = ["udp"]', 'beside = ["ping"]'), "thin UDP load"),
    (('beside = ["udp"]', 'beside = ["nope"]'), "thin UDP load"),
    (('alongside = "ping"\n', ""), "beside runs thin loads with the latency probe"),
])
def test_bad_beside_gives_one_clear_error(tmp_path, patch, match):
    with pytest.raises(ConfigError, match=match):
        cp.load_campaign(write(tmp_path, THIN.replace(*patch, 1)))
