"""The UML schedulers section: the simulated qdiscs are the campaign's, and its fast subset stays as good
as the committed validation/results.json (no UML needed: it reads data/uml)."""
import json
import math

import numpy as np

import pytest

from ovssim import units
from ovssim.collect.campaign import load_campaign
from ovssim.validate import uml
from ovssim.validate.base import ROOT, Settings
from ovssim.validate.simulate import Runner

CAMPAIGN = ROOT / "data" / "campaigns" / "uml-schedulers.toml"
COMMITTED = ROOT / "validation" / "results.json"


def test_simulated_qdiscs_are_the_campaigns():
    """Kind, rate and leaf of every simulated configuration match what the collector installed."""
    camp = load_campaign(CAMPAIGN)
    specs = {rc.qdisc.name: rc.qdisc for rc in camp.configs}
    assert set(specs) == set(uml.FITTED + uml.HELD_OUT)
    for name, q in specs.items():
        sim = uml.qdisc_spec(name)
        assert sim["kind"] == q.kind
        rate = sim.get("rate") or sim["classes"][0].get("ceil") or sim["classes"][0]["ul"]
        assert units.rate(rate) == q.rate
        if q.kind == "htb":
            leaf = sim["classes"][0]["qdisc"]["kind"]
            assert leaf == (q.leaf or "pfifo")          # tc gives an htb class pfifo by default
        if q.kind == "tbf":
            assert sim["burst"] == q.tbf_burst()


@pytest.mark.slow
@pytest.mark.skipif(not COMMITTED.is_file() or not (uml.DATA / "runs.jsonl").is_file(),
                    reason="no committed UML dataset / report")
def test_fast_subset_not_worse_than_committed(tmp_path):
    committed = json.loads(COMMITTED.read_text())
    old = {(name, r["config"], r["metric"]): r for name, tb in committed["testbeds"].items() for r in tb["rows"]}
    settings = Settings(fit=False, fast=True, reps=committed["settings"]["reps"], workers=1, figures_dir=tmp_path)
    with Runner(1) as runner:
        results = uml.run(runner, settings)
    checked = 0
    for r in (r for tb in results for r in tb.rows):
        o = old.get((r.testbed, r.config, r.metric))
        if o is None or o["error"] is None or not math.isfinite(r.error):
            continue
        checked += 1
        assert r.error <= o["error"] + max(r.noise, o["noise"] or 0.0) + 1e-9, (r.config, r.metric)
    assert checked >= 4


def test_hfsc_by_tc_and_iproute2_61s_hfsc_json(monkeypatch):
    """HFSC put on with tc (one class, sc = ul = rate), and its counters read back although
    iproute2 6.1 prints hfsc's options as bare text inside its JSON."""
    from ovssim.collect import qos
    spec = qos.QdiscSpec(name="hfsc", kind="hfsc", rate=20e6)
    root, cls = spec.tc_args()
    assert root[-6:] == ["root", "handle", "1:", "hfsc", "default", "1"]
    assert cls[cls.index("sc") + 1: cls.index("sc") + 3] == ["rate", "20000000bit"]
    assert cls[cls.index("ul") + 1: cls.index("ul") + 3] == ["rate", "20000000bit"]
    printed = ('[{"kind":"hfsc","handle":"1:","root":true,"refcnt":2,"options":{default 1 },'
               '"bytes":1514,"packets":1,"drops":0,"overlimits":3,"requeues":0,"backlog":0,"qlen":0}]')
    monkeypatch.setattr(qos, "run", lambda *a, **k: type("R", (), {"returncode": 0, "stdout": printed})())
    got = qos.root_counters(qos.tc_stats([], "vif2"))
    assert got["qdisc_bytes"] == 1514 and got["qdisc_overlimits"] == 3


def test_upcall_fit_recovers_known_slow_path_parameters():
    """fit_upcall on first - second RTTs drawn from known (service, wake-up) parameters finds them again
    (parameter recovery: the fit's own model, a different seed, 400 flushes)."""
    rng = np.random.default_rng(7)
    s, median, p = 0.15, 350e-6, 0.3
    svc = median * np.exp(s * rng.standard_normal((2, 400)))
    wake = np.where(rng.random((2, 400)) < p, rng.random((2, 400)) * uml.UML_TICK, 0.0)
    second = np.full(400, 0.12)
    first = second + (svc + wake).sum(axis=0) * 1e3
    params, fit = uml.fit_upcall({"first_packet": {uml.UPCALL_FIT_ROWS: {"first_ms": list(first),
                                                                         "second_ms": list(second)}}})
    assert fit["success"]
    assert units.time(params["ovs.upcall"]["scale"]) == pytest.approx(median, rel=0.08)
    assert 1 - params["ovs.upcall_wakeup"]["probs"][1] == pytest.approx(p, abs=0.06)


def test_thin_udp_flow_is_simulated_with_the_probe():
    """The thin flow of the campaign (iperf2 UDP 1 Mbit/s, 1470 B, started with the probe) is in the
    simulated scenario, from the probe's start to the end."""
    camp = load_campaign(CAMPAIGN)
    udp = camp.configs[0].workload.beside[0]
    cfg = uml._config("pfifo_fast", 0.015, 0.8, udp=True)
    sim = next(w for w in cfg.scenario["workload"] if w["name"] == "udp")
    ping = next(w for w in cfg.scenario["workload"] if w["name"] == "ping")
    assert units.rate(sim["b"]) == udp.rate and sim["l"] == udp.size
    assert sim["start"] == ping["start"]


def test_upcall_queue_probe_parses_misses_losses_and_the_handler_sockets_memory():
    """datapath.py --queue: with ovs-vswitchd stopped every datagram misses; dpctl's lost counts what the
    handler's netlink socket refused, /proc/net/netlink its receive memory (NETLINK_GENERIC = 16)."""
    from ovssim.collect.uml import datapath
    text = ("== q-before  lookups: hit:7 missed:12 lost:0 flows: 0\n"
            "== q-after  lookups: hit:7 missed:8012 lost:5100 flows: 0\n"
            "== netlink\n"
            "sk               Eth Pid        Groups   Rmem     Wmem     Dump  Locks    Drops    Inode\n"
            "ffff8880 0   1          00000000 4352     0        0     2        0        11\n"
            "ffff8881 16  3214       00000000 2097920  0        0     2        5100     2048\n"
            "== rmem_max 212992\n")
    q = datapath.parse_queue(text)
    assert (q["upcalls"], q["lost"], q["queued"]) == (8000, 5100, 2900)
    assert q["rmem_bytes"] == 2097920 and q["truesize_per_upcall"] == 2097920 / 2900


def test_upcall_queue_depth_is_read_only_from_a_measurement_that_overflowed(tmp_path):
    """Without a loss the count queued is only a lower bound: no depth then."""
    p = tmp_path / "queue.json"
    p.write_text(json.dumps({"sent": 8000, "upcalls": 8000, "lost": 0, "queued": 8000}))
    assert uml.upcall_queue_depth(p) is None
    p.write_text(json.dumps({"sent": 8000, "upcalls": 8000, "lost": 5100, "queued": 2900}))
    assert uml.upcall_queue_depth(p) == 2900


def test_simulated_burst_conserves_upcalls_and_loses_only_beyond_the_queue():
    """Every new flow misses once; each upcall is either lost or delivered; a queue deeper than the burst
    loses none, and the loss grows as the queue shrinks (the same arrivals and service draws)."""
    from ovssim.profile import Profile
    from ovssim.validate.base import CALIBRATION
    prof = Profile.load(str(CALIBRATION / "uml_linux61.toml"))
    lost = []
    for depth in (3000, 1000, 300):
        r = uml.simulate_burst(prof.with_overrides({"ovs.upcall_queue": depth}), 2000, 0.09)
        assert r["upcalls"] == 2000 and r["lost"] + r["delivered"] == 2000
        lost.append(r["lost"])
    assert lost[0] == 0 and 0 < lost[1] < lost[2]


def test_state_profile_changes_the_watchdog_and_nothing_else(tmp_path, monkeypatch):
    """A host state's profile (fit_uml_state) is uml_linux61 with only qdisc.watchdog_latency refitted:
    every other parameter, CPU costs included, resolves to the base profile's value."""
    from ovssim.profile import Profile
    fitted = {"best": (0.5, 0.07, 0.0018, 17.6, 81.0, 0.96), "evaluations": 3, "success": True,
              "watchdog_stall": {"p": 0.07, "max_ms": 1.8}, "targets": [], "check": {}}
    monkeypatch.setattr(uml, "fit_watchdog", lambda *a, **k: fitted)
    base = ROOT / "calibration" / f"{uml.PROFILE}.toml"
    path = tmp_path / f"{uml.STATE_PROFILE}.toml"
    (tmp_path / base.name).write_bytes(base.read_bytes())
    uml.fit_uml_state(None, {}, path, uml.DATA_THIN, tmp_path / base.name)
    state, ref = Profile.load(str(path)), Profile.load(str(base))
    changed = {k for k in set(state.params) | set(ref.params) if state.params.get(k) != ref.params.get(k)}
    assert changed == {"qdisc.watchdog_latency"}
    assert state.params["qdisc.watchdog_latency"] == uml.watchdog_stall(0.07, 0.0018)


def test_ranking_counts_only_swaps_the_runs_tell_apart():
    """A swapped pair whose runs overlap is reported as within their spread; a swapped pair whose runs are
    clearly apart (Welch's t-test) is reported against the model."""
    rng = np.random.default_rng(1)
    apart = lambda mu: mu + 0.01 * rng.standard_normal(6)
    overlap = lambda mu: mu + 1.0 * rng.standard_normal(6)
    summary = {"a": {"throughput": (19.0, 17.0, apart(19.0))}, "b": {"throughput": (18.0, 18.0, apart(18.0))},
               "c": {"throughput": (17.5, 16.0, overlap(17.5))}, "d": {"throughput": (17.4, 16.5, overlap(17.4))}}
    note = uml.ranking_notes(summary)[0]
    told_apart, within = note.split("; swapped within the runs' spread: ")
    assert "a/b" in told_apart and "c/d" in within and "c/d" not in told_apart


def test_state_profile_with_the_every_time_family_writes_a_lognormal_lateness(tmp_path, monkeypatch):
    """fit_uml_state with the lognormal family (watchdog late every time, UML's timer path): the profile's
    qdisc.watchdog_latency is watchdog_every(median, shape), a lognormal whose median is the fitted one."""
    from ovssim.distributions import Distribution
    from ovssim.profile import Profile
    fitted = {"best": (0.5, 140e-6, 0.8, 17.6, 81.0, 0.96), "evaluations": 3, "success": True, "family": "every",
              "watchdog_every": {"median_us": 140.0, "s": 0.8}, "targets": [], "check": {}}
    monkeypatch.setattr(uml, "fit_watchdog", lambda *a, **k: fitted)
    monkeypatch.setattr(uml, "STATE_FAMILY", "every")
    base = ROOT / "calibration" / f"{uml.PROFILE}.toml"
    path = tmp_path / f"{uml.STATE_PROFILE}.toml"
    (tmp_path / base.name).write_bytes(base.read_bytes())
    uml.fit_uml_state(None, {}, path, uml.DATA_THIN, tmp_path / base.name)
    lat = Profile.load(str(path)).params["qdisc.watchdog_latency"]
    assert lat == uml.watchdog_every(140e-6, 0.8)
    draws = Distribution(lat).rvs(100000, np.random.default_rng(3))
    assert np.median(draws) == pytest.approx(140e-6, rel=0.02) and draws.min() > 0
    assert "median 140 us" in uml.watchdog_text({"fit": {"watchdog_every": fitted["watchdog_every"]}})


def test_offset_note_finds_a_constant_shared_by_the_short_rtt_schedulers_and_names_a_stalled_run():
    import pandas as pd
    from ovssim.validate.simulate import Config, ConfigResult
    rng = np.random.default_rng(5)
    cfgs, meas, sims, rows = {}, {}, {}, []
    for q, base in (("fq_codel", 0.0), ("sfq", 1.8)):
        sim = base + rng.uniform(0.0, 0.6, 600)                       # ms
        m = base + 0.12 + rng.uniform(0.0, 0.6, 1000)                 # the same shape, 0.12 ms later
        run_means = [0.44, 0.46, 0.44, 0.46, 2.0] if q == "fq_codel" else [2.3, 2.4, 2.35, 2.3, 2.4]
        cfgs[q] = Config(f"uml-{q}", {}, {"qdisc": q})
        meas[q] = {"rtt": m, "rtt_run": np.array(run_means)}
        sims[f"uml-{q}"] = ConfigResult(f"uml-{q}", pd.DataFrame(), {"ping:rtt": sim / 1e3})
        for k, thr in enumerate([18e6, 18.1e6, 17.9e6, 18e6, 14e6]):
            rows.append({"qdisc": q, "metric": "throughput", "run_id": f"{q}-r{k + 1:03d}", "value": thr})
    (note,) = uml.offset_note(cfgs, meas, sims, pd.DataFrame(rows))
    import re
    shifts = dict(re.findall(r"(fq_codel|sfq) \+(\d\.\d\d) ms", note))
    assert set(shifts) == {"fq_codel", "sfq"}
    assert all(abs(float(v) - 0.12) <= 0.015 for v in shifts.values()), shifts
    assert "without run fq_codel-r005, delivering 14.0 Mbit/s" in note and "the mean is 0.45 ms" in note
    assert "without run sfq" not in note
    assert uml.offset_note(cfgs, meas, {}, pd.DataFrame(rows)) == []
