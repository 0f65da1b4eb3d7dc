"""Real campaigns through a real OVS bridge and real qdiscs in network namespaces.

Needs root, Open vSwitch, iperf3, sockperf, ping; skipped otherwise.  Keeps
runs short (2 s): the whole module takes about a minute on a 2-core machine.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ["ip", "tc", "ethtool", "ovs-vsctl", "ovs-vswitchd", "ovsdb-server", "ovsdb-tool",
         "iperf3", "sockperf", "ping", "ss"]
missing = [t for t in TOOLS if shutil.which(t) is None]
pytestmark = [
    pytest.mark.netns,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root to build network namespaces"),
    pytest.mark.skipif(bool(missing), reason=f"tools missing: {', '.join(missing)} (run ./setup.sh)"),
]


def ovs_daemons():
    """(pid, cmdline) of every ovs-vswitchd / ovsdb-server on the machine."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and os.path.basename(argv[0].decode(errors="replace")) in ("ovs-vswitchd",
                                                                            "ovsdb-server"):
            out.append((int(d.name), b" ".join(argv).decode(errors="replace")))
    return sorted(out)


def host_state():
    """What must be identical before and after: the host's links, qdiscs, a system OVS, and
    no private OVS of ours (other jobs on this machine may run their own meanwhile)."""
    links = sorted(l["ifname"] for l in json.loads(subprocess.run(
        ["ip", "-j", "link", "show"], capture_output=True, text=True).stdout))
    qdiscs = subprocess.run(["tc", "qdisc", "show"], capture_output=True, text=True).stdout
    system_ovs = [p for p in ovs_daemons() if "/tmp/ovssim-" not in p[1]]
    return links, qdiscs, system_ovs


def ours(prefix):
    """Namespaces and OVS daemons with this test's prefix that still exist."""
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    left = [ln.split()[0] for ln in out.splitlines() if ln.startswith(prefix)]
    return left + [cmd for _, cmd in ovs_daemons() if f"ovssim-{prefix}-" in cmd]


def by_metric(df, **where):
    """One row per repetition, one column per metric, for the runs matching ``where``."""
    sel = df[df.status == "ok"]
    for k, v in where.items():
        sel = sel[sel[k] == v]
    return sel.pivot_table(index="rep", columns="metric", values="value")


def test_ci_campaign_is_physically_sane_and_restores_state(tmp_path):
    from ovssim.collect.campaign import run_campaign
    prefix = f"ci{uuid.uuid4().hex[:4]}"
    before = host_state()
    summary = run_campaign(ROOT / "data/campaigns/ci-short.toml", tmp_path / "ci", progress=False,
                           overrides={"prefix": prefix}, log=lambda m: None)
    assert host_state() == before
    assert ours(prefix) == []
    reps = 2
    assert summary["failed"] == 0 and summary["skipped"] == reps
    assert summary["ok"] == summary["total"] - reps

    df = pd.read_csv(tmp_path / "ci" / "results.csv.gz")
    skipped = df[df.status == "skipped"]
    assert set(skipped.qdisc_kind) == {"fq_codel"}
    recs = [json.loads(l) for l in (tmp_path / "ci" / "runs.jsonl").read_text().splitlines()]
    assert "unavailable" in next(r for r in recs if r["status"] == "skipped")["error"]
    meta = json.loads((tmp_path / "ci" / "metadata.json").read_text())
    assert meta["qdisc_availability"]["htb"]["available"] is True
    assert meta["qdisc_availability"]["fq_codel"]["available"] is False
    assert meta["campaign_sha256"] and meta["machine"]["cpu_count"] >= 1
    # the machine's state, before and after: a speed benchmark that ran, and what it was run on
    for when in ("before", "after"):
        st = meta["machine_state"][when]
        assert st["speed_index"] > 0 and st["benchmark"]["veth_pingpong_per_s"]["median"] > 0, st
        assert st["kernel"] == os.uname().release and len(st["loadavg"]) == 3
    assert summary["machine_state"]["after"]["time"] >= summary["machine_state"]["before"]["time"]

    for bridge in ("ovs", "linux"):
        # What this bridge carries unshaped on this machine right now (the best of the
        # repetitions: a shared machine only ever makes a run slower).
        capacity = by_metric(df, bridge=bridge, qdisc="pfifo_fast", workload="tcp")["throughput"]
        assert (capacity > 0).all(), bridge
        for qdisc, rel in (("htb50", 0.05), ("tbf50", 0.07)):
            tcp = by_metric(df, bridge=bridge, qdisc=qdisc, workload="tcp")
            # goodput at the shaper's rate: 50 Mbit/s x payload/frame (1448 of 1514 bytes)
            at_rate = 50e6 * tcp["tcp_mss"].iloc[0] / (tcp["tcp_mss"].iloc[0] + 66)
            # a shaper never lets more through than its rate, however fast the machine
            assert (tcp["throughput"] <= at_rate * (1 + rel)).all(), (bridge, qdisc, tcp)
            # and delivers its rate whenever the path can carry it
            expected = min(at_rate, capacity.max())
            assert tcp["throughput"].max() == pytest.approx(expected, rel=rel), (
                bridge, qdisc, tcp["throughput"].tolist(), capacity.tolist())
        # UDP at 40 Mbit/s, below the 50 Mbit/s shaper: the shaper drops nothing
        udp = by_metric(df, bridge=bridge, qdisc="htb50", workload="udp40")
        assert (udp["tc_vif2_drops"] == 0).all(), bridge
        assert udp["throughput"].max() == pytest.approx(40e6, rel=0.03)
        if bridge == "linux":
            assert udp["loss"].min() <= 0.005
        else:   # the userspace datapath may drop on its AF_PACKET sockets; it must say so
            assert udp["loss"].min() <= 0.05
        # the qdisc that was asked for is the one the kernel had during the run
        rec = next(r for r in recs if r["bridge"] == bridge and r["qdisc"] == "htb50")
        assert rec["qdisc_readback"]["kind"] == "htb"
        assert rec["qdisc_readback"]["htb_ceil_bps"] == 50e6
        pingm = by_metric(df, bridge=bridge, workload="ping")
        assert (0 < pingm["rtt_min"]).all()
        assert (pingm["rtt_min"] <= pingm["rtt_median"]).all()
        assert (pingm["rtt_median"] <= pingm["rtt_max"]).all() and (pingm["rtt_max"] < 0.1).all()
        assert (pingm["loss"] == 0).all()
        sp = by_metric(df, bridge=bridge, workload="sockperf")
        assert ((0 < sp["half_rtt_p50"]) & (sp["half_rtt_p50"] < 0.01)).all()
    # the OVS run really went through OVS: its datapath counted the packets and an upcall
    ovs_tcp = by_metric(df, bridge="ovs", qdisc="htb50", workload="tcp")
    assert (ovs_tcp["pmd_packets"] > 10000).all() and (ovs_tcp["dp_missed"] >= 1).all()
    from ovssim.collect.store import load_samples
    rtt = load_samples(tmp_path / "ci", "rtt")
    assert (rtt["value"] > 0).all() and set(rtt["workload"]) == {"ping", "sockperf"}


RESUME = """
[campaign]
name = "resume"
repetitions = 3
order = "interleaved"
duration = "1s"
cooldown = "0.3s"
prefix = "{prefix}"

[[workload]]
name = "ping"
tool = "ping"
count = 40
interval = "10ms"

[[workload]]
name = "broken"
tool = "iperf3"
cc = "nosuchcc"

[[matrix]]
bridge = ["ovs", "linux"]
workload = ["ping"]

[[matrix]]
bridge = ["linux"]
workload = ["broken"]
"""


def start_collector(camp, out):
    code = ("import sys; from ovssim.collect.campaign import run_campaign; "
            f"run_campaign({str(camp)!r}, {str(out)!r}, resume=True, progress=False)")
    return subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)


def wait_runs(out, n, proc, timeout=60):
    deadline = time.monotonic() + timeout
    j = out / "runs.jsonl"
    while time.monotonic() < deadline:
        if j.exists() and len(j.read_text().splitlines()) >= n:
            return
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.05)
    raise AssertionError("collector made no progress")


def test_kill_and_resume_completes_without_duplicates(tmp_path):
    from ovssim.collect.campaign import run_campaign
    from ovssim.collect.store import read_journal
    prefix = f"rs{uuid.uuid4().hex[:4]}"
    camp = tmp_path / "resume.toml"
    camp.write_text(RESUME.format(prefix=prefix))
    out = tmp_path / "out"
    before = host_state()

    # 1. SIGTERM: the collector tears down what it built before it exits
    p = start_collector(camp, out)
    wait_runs(out, 1, p)
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=30)
    assert ours(prefix) == []
    assert host_state() == before

    # 2. SIGKILL: nothing can be cleaned up now; the next collector removes the leftovers
    p = start_collector(camp, out)
    wait_runs(out, len(read_journal(out / "runs.jsonl")) + 2, p)
    p.kill()
    p.wait(timeout=10)
    done_before = sum(r["status"] in ("ok", "skipped") for r in read_journal(out / "runs.jsonl"))
    assert 1 <= done_before < 9

    summary = run_campaign(camp, out, resume=True, progress=False, log=lambda m: None)
    recs = read_journal(out / "runs.jsonl")
    ids = [r["run_id"] for r in recs]
    assert len(ids) == len(set(ids)) == summary["total"] == 9
    assert summary["previously_done"] == done_before
    # a run that fails (a congestion control the kernel lacks) is recorded and the campaign goes on
    failed = [r for r in recs if r["status"] == "failed"]
    assert len(failed) == 3 and all("iperf3" in r["error"] for r in failed), failed
    assert sum(r["status"] == "ok" for r in recs) == 6
    assert ours(prefix) == []
    assert host_state() == before
    meta = json.loads((out / "metadata.json").read_text())
    # failed runs are retried on resume, and a campaign with failed runs is not complete
    assert all(r["attempt"] >= 1 for r in failed)
    assert meta["complete"] is False and len(meta["sessions"]) == 3


def test_resume_refuses_a_different_campaign(tmp_path):
    from ovssim.collect.campaign import run_campaign
    from ovssim.errors import ConfigError
    out = tmp_path / "o"
    out.mkdir()
    (out / "runs.jsonl").write_text("")
    (out / "metadata.json").write_text(json.dumps({"campaign_sha256": "0" * 64}))
    with pytest.raises(ConfigError, match="different campaign"):
        run_campaign(ROOT / "data/campaigns/ci-short.toml", out, resume=True, progress=False)
    with pytest.raises(ConfigError, match="--resume"):
        run_campaign(ROOT / "data/campaigns/ci-short.toml", out, resume=False, progress=False)


def test_testbed_cli_up_status_down(tmp_path):
    from click.testing import CliRunner
    from ovssim.collect.cli import testbed
    prefix = f"tb{uuid.uuid4().hex[:4]}"
    f = tmp_path / "tb.toml"
    f.write_text(f'[testbed]\nbridge = "ovs"\nchain = 2\nlink = "veth"\nprefix = "{prefix}"\n')
    before = host_state()
    res = CliRunner().invoke(testbed, ["up", str(f)])
    assert res.exit_code == 0, res.output
    name = res.output.split()[1]
    assert name.startswith(prefix) and "checksum offload off" in res.output
    assert len(ours(prefix)) == 3 + 2      # switch + 2 VMs, ovsdb-server + ovs-vswitchd
    ping = subprocess.run(["ip", "netns", "exec", f"{name}-vm1", "ping", "-c", "2", "-i", "0.2",
                           "10.77.0.2"], capture_output=True, text=True)
    assert ping.returncode == 0, ping.stdout
    res = CliRunner().invoke(testbed, ["status"])
    assert name in res.output and "qdisc htb" in res.output
    res = CliRunner().invoke(testbed, ["down", name])
    assert res.exit_code == 0 and "removed" in res.output
    time.sleep(0.5)
    assert ours(prefix) == []
    assert host_state() == before


AFXDP = """
[campaign]
name = "afxdp"
repetitions = 1
duration = "1s"
prefix = "{prefix}"

[testbed]
vif_type = "afxdp"
datapath = "netdev"

[[workload]]
name = "ping"
tool = "ping"
count = 30
interval = "10ms"
"""


def test_afxdp_ports_give_pmd_perf_metrics(tmp_path):
    from ovssim.collect.campaign import run_campaign
    from ovssim.collect.store import load_results
    prefix = f"xd{uuid.uuid4().hex[:4]}"
    camp = tmp_path / "afxdp.toml"
    camp.write_text(AFXDP.format(prefix=prefix))
    before = host_state()
    s = run_campaign(camp, tmp_path / "o", progress=False, log=lambda m: None)
    assert s["ok"] == 1, (tmp_path / "o" / "runs.jsonl").read_text()
    m = by_metric(load_results(tmp_path / "o")).iloc[0]
    assert m["loss"] == 0
    # 30 requests + 30 replies crossed the PMD thread (plus ARP); each cost cycles
    assert m["pmdperf_rx_packets"] >= 60 and m["pmdperf_cycles_per_packet"] > 0
    assert ours(prefix) == [] and host_state() == before


ENDPOINTS = """
[campaign]
name = "endpoints"
repetitions = 2
duration = "1s"

[endpoints]
client = ["ip", "netns", "exec", "{vm1}"]
server = ["ip", "netns", "exec", "{vm2}"]
server_ip = "{ip}"

[[workload]]
name = "rr"
tool = "qperf"
test = "tcp_lat,udp_lat"

[[workload]]
name = "jitter"
tool = "iperf2"
proto = "udp"
rate = "5mbit"
"""


def test_endpoints_given_as_command_prefixes(tmp_path):
    """The same campaign runs between any two endpoints; here two namespaces of a testbed."""
    from ovssim.collect.campaign import run_campaign
    from ovssim.collect.store import load_results
    from ovssim.collect.testbed import Testbed, TestbedSpec
    prefix = f"ep{uuid.uuid4().hex[:4]}"
    with Testbed(TestbedSpec(bridge="linux"), prefix=prefix) as tb:
        tb.wait_ready()
        camp = tmp_path / "ep.toml"
        camp.write_text(ENDPOINTS.format(vm1=tb.vm_ns[0], vm2=tb.vm_ns[1], ip=tb.vm_ip[1]))
        s = run_campaign(camp, tmp_path / "o", progress=False, log=lambda m: None)
    assert s["ok"] == 4
    df = load_results(tmp_path / "o")
    rr = df[df.metric == "tcp_rr_rtt"]["value"]
    assert len(rr) == 2 and (rr > 0).all() and (rr < 0.05).all()
    assert (df[df.metric == "udp_rr_rtt"]["value"] > 0).all()
    assert (df[df.metric == "loss"]["value"] == 0).all()
    assert ours(prefix) == []


def test_keep_testbeds_false_leaves_one_testbed_up_at_a_time(tmp_path, monkeypatch):
    from ovssim.collect import campaign as cp
    prefix = f"kt{uuid.uuid4().hex[:4]}"
    camp = tmp_path / "kt.toml"
    camp.write_text(RESUME.format(prefix=prefix).replace('cooldown = "0.3s"',
                                                         'cooldown = "0s"\nkeep_testbeds = false')
                    .replace("repetitions = 3", "repetitions = 2"))
    seen = []
    real = cp.CampaignRunner.run_one

    def spy(self, rc, rep, order):
        seen.append(len(self.testbeds))
        return real(self, rc, rep, order)
    monkeypatch.setattr(cp.CampaignRunner, "run_one", spy)
    s = cp.run_campaign(camp, tmp_path / "o", progress=False, log=lambda m: None)
    assert s["ok"] == 4 and s["failed"] == 2
    assert max(seen) <= 1
    assert ours(prefix) == []


SOCKPERF = """
[campaign]
name = "killed"
repetitions = 3
duration = "4s"
prefix = "{prefix}"

[[workload]]
name = "sockperf"
tool = "sockperf"
"""


def _state_of(prefix, timeout=30):
    from ovssim.collect.testbed import saved_testbeds
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = [s for s in saved_testbeds() if s["name"].startswith(prefix)]
        if st:
            return st[0]
        time.sleep(0.05)
    raise AssertionError("no testbed state appeared")


def _sockperf_running(prefix, proc, timeout=60):
    """The testbed state once a sockperf run is under way (its log exists in the work folder)."""
    st = _state_of(prefix)
    deadline = time.monotonic() + timeout
    while not list(Path(st["workdir"]).glob("sockperf-*.csv")):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read().decode()
        time.sleep(0.05)
    return st


def test_sigkill_leftovers_are_removed_by_the_next_start(tmp_path):
    """A SIGKILLed collector leaves its OVS daemons, namespaces, traffic tools and work folder
    (with sockperf's 2 MB log, which used to be in /tmp); the next start removes all of them."""
    from ovssim.collect.campaign import run_campaign
    prefix = f"kl{uuid.uuid4().hex[:4]}"
    camp = tmp_path / "k.toml"
    camp.write_text(SOCKPERF.format(prefix=prefix))
    out = tmp_path / "out"
    before = host_state()
    p = start_collector(camp, out)
    st = _sockperf_running(prefix, p)
    work = Path(st["workdir"])
    time.sleep(0.5)
    p.kill()
    p.wait(timeout=10)
    left_pids = [int(x) for ns in st["namespaces"] for x in subprocess.run(
        ["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()]
    assert ours(prefix) and work.exists() and left_pids        # what a SIGKILL leaves
    logs = list(work.glob("sockperf-*.csv"))
    assert logs                                               # sockperf's log: in the work folder

    summary = run_campaign(camp, out, resume=True, progress=False, log=lambda m: None)
    assert summary["ok"] + summary["previously_done"] == 3
    assert ours(prefix) == [] and not work.exists()
    assert not [pid for pid in left_pids if Path(f"/proc/{pid}").exists()
                and b"sockperf" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    assert host_state() == before


def test_sighup_cleans_up_like_ctrl_c(tmp_path):
    prefix = f"hu{uuid.uuid4().hex[:4]}"
    camp = tmp_path / "h.toml"
    camp.write_text(SOCKPERF.format(prefix=prefix))
    before = host_state()
    p = start_collector(camp, tmp_path / "out")
    st = _sockperf_running(prefix, p)
    p.send_signal(signal.SIGHUP)
    p.wait(timeout=30)
    assert ours(prefix) == [] and not Path(st["workdir"]).exists()
    assert host_state() == before


def test_scratch_namespace_of_a_killed_qdisc_probe_is_reaped():
    from ovssim.collect.qos import PROBE_NS
    from ovssim.collect.testbed import reap_stale
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    ns = f"{PROBE_NS}{dead.pid}-{uuid.uuid4().hex[:8]}"
    live = f"{PROBE_NS}{os.getpid()}-{uuid.uuid4().hex[:8]}"
    for n in (ns, live):
        subprocess.run(["ip", "netns", "add", n], check=True)
    try:
        assert ns in reap_stale()
        names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert ns not in names and live in names          # a live process's probe is left alone
    finally:
        for n in (ns, live):
            subprocess.run(["ip", "netns", "del", n], capture_output=True)


def test_sigterm_during_testbed_up_leaves_nothing(tmp_path):
    """`ovssim testbed up` killed politely while it builds removes what it built so far."""
    prefix = f"tu{uuid.uuid4().hex[:4]}"
    f = tmp_path / "tb.toml"
    f.write_text(f'[testbed]\nbridge = "ovs"\nchain = 8\nlink = "veth"\nvms = 8\nsubnet = "10.78.0.0/24"\n'
                 f'prefix = "{prefix}"\n')
    before = host_state()
    p = subprocess.Popen([sys.executable, "-m", "ovssim", "testbed", "up", str(f)], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    st = _state_of(prefix)               # written before anything is built
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, (out, err)
    assert b"interrupted" in err and b"Traceback" not in err
    time.sleep(0.5)
    assert ours(prefix) == [] and not Path(st["workdir"]).exists()
    assert host_state() == before
