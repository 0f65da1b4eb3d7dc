"""Resume after a kill: a torn journal line is cut before appending (nothing lost), failed runs
are retried (bounded), ``complete`` means every run succeeded or was skipped with its reason.

The runner's bookkeeping is real (store, journal, metadata, order); only the measurement itself
(``run_one``) and the host checks are replaced, so no root is needed."""
import json
import tomllib
from pathlib import Path

import pandas as pd
import pytest

from ovssim.collect import campaign as cp
from ovssim.collect.store import CampaignStore, load_results, read_journal
from ovssim.errors import DataError

ROOT = Path(__file__).resolve().parents[2]

CAMPAIGN = """
[campaign]
name = "resume"
repetitions = 3
seed = 3
duration = "1s"
cooldown = 0

[[workload]]
name = "ping"
tool = "ping"
count = 5

[[workload]]
name = "tcp"
tool = "iperf3"

[[matrix]]
bridge = ["ovs", "linux"]
"""


class Measure:
    """Stands in for run_one: ``fail(run_id, attempt)`` says which attempts fail; ``stop_after``
    raises KeyboardInterrupt (as Ctrl-C / SIGTERM) before that many runs of this session."""

    def __init__(self, fail=lambda run_id, attempt: False, stop_after=None):
        self.fail, self.stop_after, self.calls = fail, stop_after, []

    def __call__(self, runner, rc, rep, order):
        if self.stop_after is not None and len(self.calls) >= self.stop_after:
            raise KeyboardInterrupt
        run_id = cp.run_id(rc, rep)
        attempt = sum(1 for r in runner.store.records() if r["run_id"] == run_id) + \
            sum(1 for c in self.calls if c == run_id)
        self.calls.append(run_id)
        rec = {"campaign": runner.camp.name, "config_id": rc.config_id(), "rep": rep, "order": order,
               "run_id": run_id, **rc.as_columns(), "start": "t0", "end": "t1"}
        if self.fail(run_id, attempt):
            return dict(rec, status="failed", error="tool hung", metrics={}), {}
        return dict(rec, status="ok", metrics={"rtt_mean": [1e-4 * (order + 1), "s"]}), \
            {"rtt": ([1e-4, 2e-4], "s")}


@pytest.fixture
def camp(tmp_path, monkeypatch):
    monkeypatch.setattr(cp, "preflight", lambda c: {"qdisc_availability": {}})
    monkeypatch.setattr(cp, "reap_stale", lambda: [])
    monkeypatch.setattr(cp, "machine_metadata", lambda: {"kernel": "test"})
    f = tmp_path / "c.toml"
    f.write_text(CAMPAIGN)
    return f


def session(camp, out, measure, monkeypatch, resume=False):
    monkeypatch.setattr(cp.CampaignRunner, "run_one", lambda self, rc, rep, order: measure(self, rc, rep, order))
    return cp.run_campaign(camp, out, resume=resume, progress=False, log=lambda m: None)


def meta(out):
    return json.loads((out / "metadata.json").read_text())


def test_a_torn_last_line_is_cut_before_resume_appends(camp, tmp_path, monkeypatch):
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        session(camp, out, Measure(stop_after=5), monkeypatch)
    journal = out / "runs.jsonl"
    first = journal.read_bytes()
    assert first.count(b"\n") == 5 and not meta(out)["complete"]
    torn = b'{"campaign": "resume", "run_id": "half-wri'          # the kill came mid-write
    journal.write_bytes(first + torn)
    s = session(camp, out, Measure(), monkeypatch, resume=True)
    total = len(cp.load_campaign(camp).runs())
    assert s["previously_done"] == 5 and s["ok"] == total - 5
    data = journal.read_bytes()
    assert data.startswith(first) and torn not in data              # the 5 runs kept byte for byte
    lines = data.splitlines()
    assert all(json.loads(ln) for ln in lines)                     # every line is whole again
    ids = [json.loads(ln)["run_id"] for ln in lines]
    assert len(ids) == len(set(ids)) == total                     # nothing lost, nothing twice
    assert meta(out)["complete"] is True
    df = load_results(out)
    assert set(df["run_id"]) == set(ids) and (df["status"] == "ok").all()


def test_without_cutting_the_torn_line_the_next_record_would_be_lost(tmp_path):
    """What the cut prevents: appending onto a torn tail glues the next record to it."""
    st = CampaignStore(tmp_path / "c")
    st.create()
    st.append({"run_id": "a", "status": "ok"})
    with open(tmp_path / "c" / "runs.jsonl", "ab") as fh:
        fh.write(b'{"run_id": "b", "sta')
    st.append({"run_id": "c", "status": "ok"})                     # no cut: as the old --resume did
    assert [r["run_id"] for r in read_journal(tmp_path / "c" / "runs.jsonl")] == ["a"]    # c is lost
    st.append({"run_id": "d", "status": "ok"})
    with pytest.raises(DataError, match="line 2"):                 # and every later load fails
        read_journal(tmp_path / "c" / "runs.jsonl")
    st2 = CampaignStore(tmp_path / "d")
    st2.create()
    st2.append({"run_id": "a", "status": "ok"})
    with open(tmp_path / "d" / "runs.jsonl", "ab") as fh:
        fh.write(b'{"run_id": "b", "sta')
    assert st2.create() == len(b'{"run_id": "b", "sta')          # what --resume does first
    st2.append({"run_id": "c", "status": "ok"})
    assert [r["run_id"] for r in read_journal(tmp_path / "d" / "runs.jsonl")] == ["a", "c"]


def test_failed_runs_are_retried_on_resume_and_complete_means_all_succeeded(camp, tmp_path, monkeypatch):
    out = tmp_path / "out"
    flaky = Measure(fail=lambda run_id, attempt: attempt == 0 and run_id.endswith("r002"))
    s1 = session(camp, out, flaky, monkeypatch)
    total = len(cp.load_campaign(camp).runs())
    assert s1["failed"] == 4 and s1["ok"] == total - 4
    assert meta(out)["complete"] is False                     # failed runs are not "done"
    again = Measure(fail=flaky.fail)
    s2 = session(camp, out, again, monkeypatch, resume=True)
    assert sorted(again.calls) == sorted(r for r in flaky.calls if r.endswith("r002"))   # only those
    assert s2["ok"] == 4 and s2["failed"] == 0
    assert meta(out)["complete"] is True
    df = load_results(out)                                     # the last attempt of each run counts
    assert df["run_id"].nunique() == total and (df["status"] == "ok").all()
    recs = [json.loads(ln) for ln in (out / "runs.jsonl").read_text().splitlines()]
    assert len(recs) == total + 4
    assert {r["attempt"] for r in recs if r["run_id"].endswith("r002")} == {1, 2}


def test_retries_are_bounded_and_a_campaign_with_no_success_is_never_complete(camp, tmp_path, monkeypatch):
    out = tmp_path / "out"
    never = Measure(fail=lambda run_id, attempt: True)
    session(camp, out, never, monkeypatch)
    total = len(cp.load_campaign(camp).runs())
    assert meta(out)["complete"] is False
    for _ in range(cp.MAX_ATTEMPTS - 1):
        session(camp, out, Measure(fail=never.fail), monkeypatch, resume=True)
    last = Measure(fail=never.fail)
    s = session(camp, out, last, monkeypatch, resume=True)
    assert last.calls == [] and s["given_up"] == total        # no run is tried a 4th time
    assert meta(out)["complete"] is False
    recs = (out / "runs.jsonl").read_text().splitlines()
    assert len(recs) == total * cp.MAX_ATTEMPTS


def test_skipped_runs_with_a_reason_count_as_done(camp, tmp_path, monkeypatch):
    out = tmp_path / "out"
    m = Measure()

    def run_one(self, rc, rep, order):
        rec, samples = m(self, rc, rep, order)
        if rc.testbed.bridge == "linux":
            rec = dict(rec, status="skipped", error="qdisc x unavailable in this kernel", metrics={})
        return rec, samples
    monkeypatch.setattr(cp.CampaignRunner, "run_one", run_one)
    cp.run_campaign(camp, out, progress=False, log=lambda m: None)
    assert meta(out)["complete"] is True


def test_bundled_campaigns_are_recorded_under_their_own_name():
    """Each bundled campaign's metadata, journal and tidy table name the campaign of its
    campaign.toml (they named its last workload: load_campaign reused ``name`` in a loop)."""
    dirs = sorted(p.parent for p in (ROOT / "data").glob("**/runs.jsonl"))
    assert len(dirs) >= 7
    for d in dirs:
        name = tomllib.loads((d / "campaign.toml").read_text())["campaign"]["name"]
        assert json.loads((d / "metadata.json").read_text())["campaign"] == name, d
        assert {r["campaign"] for r in read_journal(d / "runs.jsonl")} == {name}, d
        assert set(pd.read_csv(d / "results.csv.gz")["campaign"]) == {name}, d


def test_load_campaign_keeps_the_campaign_name_with_an_alongside_probe(tmp_path):
    text = CAMPAIGN + '\n[[workload]]\nname = "tcp_ping"\ntool = "iperf3"\nalongside = "ping"\n'
    f = tmp_path / "c.toml"
    f.write_text(text.replace('duration = "1s"', 'duration = "3s"'))
    assert cp.load_campaign(f).name == "resume"


def test_fit_runs_finds_the_collectors_results_csv_gz(tmp_path):
    from ovssim.fit.samples import campaign_table, read_table
    d = ROOT / "data" / "local" / "local-prio"
    assert not (d / "results.csv").exists()
    table = campaign_table(d)
    assert table == d / "results.csv.gz"
    df = read_table(table)
    assert len(df) == len(load_results(d))
    assert campaign_table(tmp_path) is None
