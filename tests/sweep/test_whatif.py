"""What-if ranking: CIs, paired vs Welch tests, Holm adjustment, and the end-to-end command."""
import contextlib
import io

import numpy as np
import pandas as pd
import pytest

from ovssim.errors import ConfigError
from ovssim.whatif import parse_qdiscs, rank, resolve_metrics


def _frame(values: dict, metric="rtt_mean", workload="ping", unit="ms"):
    rows = []
    for label, xs in values.items():
        for rep, x in enumerate(xs):
            rows.append({"run": f"{label}-{rep}", "point": label, "label": label, "rep": rep,
                         "workload": workload, "metric": metric, "unit": unit, "value": float(x)})
    return pd.DataFrame(rows)


def test_paired_test_finds_a_small_consistent_difference_that_welch_cannot():
    rng = np.random.default_rng(0)
    common = rng.normal(1.0, 0.3, 30)                 # replication-to-replication noise shared under CRN
    df = _frame({"a": common, "b": common + 0.02 + rng.normal(0, 0.005, 30), "c": common + 0.5})
    paired = rank(df, "ping", "rtt_mean", paired=True).table
    welch = rank(df, "ping", "rtt_mean", paired=False).table
    assert paired["qdisc"].tolist() == ["a", "b", "c"] == welch["qdisc"].tolist()
    pb = paired.set_index("qdisc")
    wb = welch.set_index("qdisc")
    assert pb.loc["b", "significant"] and pb.loc["c", "significant"]
    assert not wb.loc["b", "significant"] and wb.loc["c", "significant"]
    # Holm never lowers a p-value, and the CI brackets the mean
    assert (pb["p_holm"].iloc[1:] >= pb["p_value"].iloc[1:]).all()
    assert (pb["ci95_low"] <= pb["mean"]).all() and (pb["mean"] <= pb["ci95_high"]).all()
    assert pb.loc["c", "delta_pct"] == pytest.approx(50.0, rel=0.05)


def test_throughput_ranks_highest_first_and_identical_runs_are_not_different():
    x = np.array([90.0, 91.0, 89.5, 90.5])
    df = _frame({"sfq": x, "fifo": x, "htb": x + 2.0}, metric="throughput", workload="stream", unit="Mbit/s")
    t = rank(df, "stream", "throughput", paired=True).table
    assert t["qdisc"].iloc[0] == "htb"
    rest = t.set_index("qdisc").loc[["sfq", "fifo"]]
    assert rest["significant"].all()                 # a constant +2 Mbit/s under CRN: zero-variance difference
    same = rank(_frame({"sfq": x, "fifo": x}, "throughput", "stream", "Mbit/s"), "stream", "throughput",
                paired=True).table
    assert same["p_holm"].iloc[1] == 1.0 and not same["significant"].iloc[1] and same["identical"].iloc[1]
    assert not rest["identical"].any()


def test_metric_names_resolve_with_aliases_and_unknown_ones_list_the_choices():
    df = pd.concat([_frame({"a": [1, 2]}, "rtt_p99"), _frame({"a": [1, 2]}, "jitter", "udp")])
    assert resolve_metrics(df, ["p99_rtt"]) == [("ping", "rtt_p99")]
    assert resolve_metrics(df, ["udp:jitter"]) == [("udp", "jitter")]
    assert set(resolve_metrics(df, [])) == {("ping", "rtt_p99"), ("udp", "jitter")}
    with pytest.raises(ConfigError, match="ping:rtt_p99"):
        resolve_metrics(df, ["goodput"])


def test_a_qdisc_that_measured_nothing_is_not_ranked_best():
    """Jitter of a stream a qdisc dropped entirely is undefined (NaN), not 0: it must not win."""
    nan = float("nan")
    df = _frame({"fifo": [0.015, 0.016, 0.014], "dropall": [nan, nan, nan], "sfq": [0.02, 0.021, 0.019]},
                metric="jitter", workload="udp")
    t = rank(df, "udp", "jitter", paired=True).table
    assert t["qdisc"].tolist() == ["fifo", "sfq", "dropall"]
    assert t["rank"].tolist()[:2] == [1, 2] and pd.isna(t["rank"].iloc[2])
    assert t["no_data"].tolist() == [False, False, True]
    assert t.set_index("qdisc").loc["sfq", "significant"]
    from ovssim.whatif import format_rankings
    text = format_rankings([rank(df, "udp", "jitter", paired=True)], width=160)
    assert "no data" in text and "dropall" in text
    part = rank(_frame({"fifo": [0.015, 0.016, 0.014], "some": [0.001, nan, nan]}, "jitter", "udp"), "udp", "jitter",
                paired=True)
    assert "1 of 3 reps have a value" in format_rankings([part], width=200)
    only = rank(_frame({"dropall": [nan, nan]}, "jitter", "udp"), "udp", "jitter", paired=True).table
    assert only["no_data"].all() and pd.isna(only["rank"]).all()


def test_iperf_jitter_is_undefined_without_two_datagrams():
    import simpy
    from ovssim.path.base import Sink
    from ovssim.path.endpoint import Endpoint
    from ovssim.runner import rng_factory
    from ovssim.workloads.base import RunContext
    from ovssim.workloads.udp import IperfUdp
    env = simpy.Environment()
    src = Endpoint(env, "a", Sink(env))                  # the datagrams go nowhere
    wl = IperfUdp(rate_bps=1e6, length=1000)
    wl.start(RunContext(env, src, Endpoint(env, "b"), 0.1, rng_factory(1, 0)))
    env.run(until=0.2)
    m = {x.name: x.value for x in wl.metrics()}
    assert wl.sent > 10 and m["loss"] == 100.0 and m["throughput"] == 0.0
    assert np.isnan(m["jitter"])


def test_bare_htb_and_hfsc_mean_what_ovs_installs():
    """tc's HTB/HFSC without classes would pass everything unshaped or drop everything: a bare name in
    --qdiscs stands for the OVS QoS type with its defaults (queue 0 as the default class)."""
    assert parse_qdiscs("htb,hfsc") == [{"type": "linux-htb"}, {"type": "linux-hfsc"}]
    from ovssim.packet import FlowKey, Packet
    from ovssim.qdisc import make_qdisc
    for spec in parse_qdiscs("htb,hfsc"):
        q = make_qdisc(spec)
        assert q.classify(Packet(FlowKey("a", "b"), 1000, 0.0)) is q.classes[0x10001]    # class 1:1 = queue 0
    assert parse_qdiscs("hfsc(default=1)") == [{"kind": "hfsc", "default": 1}]   # parameters: tc form


def test_qdisc_list_parsing():
    q = parse_qdiscs("pfifo_fast, sfq(perturb=10 quantum=1514),tbf(rate=10mbit, burst=10kb, latency=20ms)")
    assert q == [{"kind": "pfifo_fast"}, {"kind": "sfq", "perturb": 10, "quantum": 1514},
                 {"kind": "tbf", "rate": "10mbit", "burst": "10kb", "latency": "20ms"}]
    for bad, msg in [("wfq", "unknown qdisc kind"), ("sfq(perturb)", "key=value"), ("sfq(perturb=1", "cannot read"),
                     (" , ", "no qdiscs")]:
        with pytest.raises(ConfigError, match=msg):
            parse_qdiscs(bad)


def test_whatif_command_ranks_a_rate_limited_port_last_and_writes_a_figure(tmp_path, scenario_file):
    from ovssim.cli import main
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        status = main(["whatif", str(scenario_file), "--qdiscs", "pfifo,tbf(rate=10mbit burst=10kb latency=20ms)",
                       "--reps", "3", "--workers", "1", "--out", str(tmp_path / "w"),
                       "--metric", "throughput", "--metric", "p99_rtt"])
    text = out.getvalue()
    assert status == 0, text
    assert "udp: throughput" in text and "ping: rtt_p99" in text and "Holm" in text
    # 30 Mbit/s offered into a 10 Mbit/s token bucket: throughput ~10, queueing adds ~the tbf latency to RTT
    from ovssim.sweep import load_results
    df, samples = load_results(tmp_path / "w", samples=True)
    thr = df[df.metric == "throughput"].groupby("label")["value"].mean()
    tbf = [lab for lab in thr.index if lab.startswith("tbf")][0]
    assert thr["pfifo"] == pytest.approx(30, rel=0.02) and thr[tbf] == pytest.approx(10, rel=0.03)
    lines = [ln for ln in text.splitlines() if "│" in ln and ("pfifo" in ln or "tbf" in ln)]
    assert "worse" in [ln for ln in lines if "tbf" in ln][0]
    assert "ping:rtt" in samples["pfifo"]
    assert (tmp_path / "w" / "whatif.png").stat().st_size > 10_000


def test_thesis_shorthand_ovs_qos_forms_and_separate_tests(tmp_path, scenario_file):
    from ovssim.sweep_cli import _parse_set
    from ovssim.whatif import qdisc_choices, whatif_sweep
    labels, specs = qdisc_choices("thesis")
    assert labels == ["pfifo_fast", "sfq", "codel", "fq_codel", "htb", "hfsc"]
    assert specs[4]["type"] == "linux-htb" and "0" in specs[4]["queues"]
    _, q = qdisc_choices("linux-hfsc(max-rate=50000000),linux-codel")
    assert q == [{"type": "linux-hfsc", "other-config": {"max-rate": "50000000"},
                  "queues": {"0": {"max-rate": "50000000"}}}, {"type": "linux-codel"}]
    with pytest.raises(ConfigError, match="OVS QoS type"):
        qdisc_choices("linux-wfq")
    assert _parse_set("bridge.br0.kind,bridge.br1.kind=linux") == ("bridge.br0.kind,bridge.br1.kind", "linux")
    assert _parse_set('vm.vm1.qdisc={kind="sfq"}') == ("vm.vm1.qdisc", {"kind": "sfq"})
    with pytest.raises(ConfigError, match="KEY=VALUE"):
        _parse_set("nothing")
    sw = whatif_sweep(scenario_file, specs[:2], labels=labels[:2], separately=True,
                      fixed={"bridge.br0.kind,bridge.br1.kind": "linux"})
    # 2 qdiscs x 2 workloads (udp, ping), each run carries one workload, both VIF ports changed
    assert len(sw.points) == 4
    assert sorted({p.label for p in sw.points}) == ["pfifo_fast", "sfq"]
    t = next(iter(sw.tasks()))
    assert len(t.changes["workload"]) == 1 and t.changes["bridge.br0.kind,bridge.br1.kind"] == "linux"
    assert "vm.vm1.qdisc,vm.vm2.qdisc" in t.changes
