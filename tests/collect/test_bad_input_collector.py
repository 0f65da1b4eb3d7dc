"""Bad input to ``ovssim collect``, ``testbed`` and ``import-data``: one test per kind of fault,
each over many inputs.  Every one must end in one line ``ovssim: error: ...`` and exit status 2,
with no traceback and before any work (no output folder, no testbed).  No root needed."""
import gzip
import json
import os
import subprocess
from pathlib import Path

import pytest

from ovssim.cli import main

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = Path(__file__).parent / "samples"

CAMPAIGN = """
[campaign]
name = "bad"
repetitions = 2
seed = 7
duration = "2s"
flush_flows = true

[testbed]
mtu = 1500

[[qdisc]]
name = "htb50"
kind = "htb"
rate = "50mbit"
via = "tc"

[[workload]]
name = "tcp"
tool = "iperf3"

[[workload]]
name = "ping"
tool = "ping"
count = 10
interval = "10ms"

[[workload]]
name = "udp"
tool = "iperf3"
proto = "udp"
rate = "10mbit"
size = 1400

[[matrix]]
bridge = ["ovs", "linux"]
qdisc = ["none", "htb50"]
"""


def run_cli(args, capsys):
    """``ovssim ARGS`` as a user runs it: (exit status, stderr)."""
    try:
        rc = main(args)
    except SystemExit as exc:
        rc = exc.code
    return rc, capsys.readouterr().err


def assert_one_line_error(rc, err, match=None):
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ovssim: error: "), err
    assert "Traceback" not in err
    if match:
        assert match in err, err


# -- campaign files: every value out of its physical bounds or of the wrong kind ---------------
CAMPAIGN_FAULTS = [
    ('seed = 7', 'seed = "abc"', "seed"), ('seed = 7', 'seed = [1]', "seed"),
    ('seed = 7', 'seed = true', "seed"), ('seed = 7', 'seed = -1', "seed"), ('seed = 7', 'seed = 1.5', "seed"),
    ('repetitions = 2', 'repetitions = 1e9', "repetitions"),
    ('repetitions = 2', 'repetitions = 1000000000', "repetitions"),
    ('repetitions = 2', 'repetitions = 99999999999999999999', "repetitions"),
    ('repetitions = 2', 'repetitions = true', "repetitions"), ('repetitions = 2', 'repetitions = 0', "repetitions"),
    ('duration = "2s"', 'duration = "1e99s"', "duration"), ('duration = "2s"', 'duration = "1e-12s"', "duration"),
    ('duration = "2s"', 'duration = 0', "duration"), ('duration = "2s"', 'duration = "abc"', "duration"),
    ('duration = "2s"', 'duration = "nan"', "duration"), ('duration = "2s"', 'duration = "-3s"', "duration"),
    ('duration = "2s"', 'duration = "2s"\ncooldown = "2h"', "cooldown"),
    ('flush_flows = true', 'flush_flows = "no"', "flush_flows"), ('flush_flows = true', 'flush_flows = 0', "flush_flows"),
    ('flush_flows = true', 'keep_testbeds = "yes"', "keep_testbeds"),
    ('flush_flows = true', 'description = 3', "description"),
    ('mtu = 1500', 'mtu = -1', "mtu"), ('mtu = 1500', 'mtu = 0', "mtu"), ('mtu = 1500', 'mtu = 70000', "mtu"),
    ('mtu = 1500', 'mtu = "1500"', "mtu"), ('mtu = 1500', 'mtu = true', "mtu"),
    ('mtu = 1500', 'vms = 1', "vms"), ('mtu = 1500', 'vms = true', "vms"), ('mtu = 1500', 'subnet = 3', "subnet"),
    ('mtu = 1500', 'vm_tx_offload = "no"', "vm_tx_offload"),
    ('interval = "10ms"', 'interval = 0', "interval"), ('interval = "10ms"', 'interval = "0s"', "interval"),
    ('interval = "10ms"', 'interval = "1us"', "interval"), ('count = 10', 'count = 0', "count"),
    ('count = 10', 'count = 1.5', "count"), ('count = 10', 'count = "10"', "count"),
    ('rate = "10mbit"', 'rate = 0', "rate"), ('rate = "10mbit"', 'rate = "0mbit"', "rate"),
    ('rate = "10mbit"', 'rate = 1e-30', "rate"), ('rate = "10mbit"', 'rate = "1e30bit"', "rate"),
    ('rate = "10mbit"', 'rate = true', "rate"),
    ('size = 1400', 'size = 0', "size"), ('size = 1400', 'size = -1', "size"),
    ('size = 1400', 'size = 70000', "size"), ('size = 1400', 'size = 1.5', "size"),
    ('tool = "iperf3"', 'tool = "iperf3"\nstreams = 0', "streams"),
    ('tool = "iperf3"', 'tool = "iperf3"\nstreams = true', "streams"),
    ('tool = "iperf3"', 'tool = "iperf3"\nflush_flows = "false"', "flush_flows"),
    ('tool = "iperf3"', 'tool = "iperf3"\nduration = "0.1s"', "duration"),
    ('tool = "iperf3"', 'tool = "iperf3"\ntest = "x;y"', "test"),
    ('tool = "iperf3"', 'tool = "iperf3"\nalongside = 3', "alongside"),
    ('tool = "ping"', 'tool = "ping"\ntos = 256', "tos"), ('tool = "ping"', 'tool = "ping"\ntos = "0xZZ"', "tos"),
    ('name = "bad"', 'name = "bad"\nprefix = "' + "p" * 60 + '"', "prefix"),
    ('name = "bad"', 'name = "bad"\nprefix = "a b"', "prefix"),
    ('name = "bad"', 'name = "' + "n" * 80 + '"', "name"),
    ('name = "tcp"', 'name = "a/b"', "name"), ('name = "tcp"', 'name = 3', "name"),
    ('rate = "50mbit"', 'rate = "0mbit"', "rate"), ('rate = "50mbit"', 'rate = 1e-30', "rate"),
    ('rate = "50mbit"', 'rate = "50mbit"\nburst = 0', "burst"),
    ('rate = "50mbit"', 'rate = "50mbit"\nlatency = "1e9s"', "latency"),
    ('rate = "50mbit"', 'rate = "50mbit"\nlimit = -5', "limit"),
    ('name = "htb50"', 'name = 5', "qdisc"),
]


@pytest.mark.parametrize("old,new,match", CAMPAIGN_FAULTS, ids=[f[1][:40] for f in CAMPAIGN_FAULTS])
def test_campaign_value_out_of_bounds(tmp_path, capsys, old, new, match):
    assert old in CAMPAIGN
    f = tmp_path / "c.toml"
    f.write_text(CAMPAIGN.replace(old, new, 1))
    rc, err = run_cli(["collect", str(f), "--out", str(tmp_path / "out"), "--no-progress"], capsys)
    assert_one_line_error(rc, err, match)
    assert not (tmp_path / "out").exists()          # refused before any work


MATRIX_FAULTS = [
    'streams = ["x"]', "streams = [0]", "streams = [true]", 'chain = ["x"]', "chain = [0]", "chain = [true]",
    'bridge = [["ovs"]]', 'bridge = ["hub"]', 'link = ["wire"]', 'cc = ["a b"]', "size = [0]", 'rate = ["0"]',
    'rate = [1e-30]', 'vm_tx_offload = ["no"]', 'datapath = ["fast"]', 'vif_type = ["dpdk"]',
    'qdisc = [["htb50"]]', 'workload = [{a = 1}]',
    'cpus = ["0"]',              # taskset is an iperf2 TCP setting, the matrix's workloads are iperf3/ping
    'cpus = ["zero"]',
]


@pytest.mark.parametrize("axis", MATRIX_FAULTS)
def test_matrix_axis_values(tmp_path, capsys, axis):
    f = tmp_path / "c.toml"
    f.write_text(CAMPAIGN + axis + "\n")
    rc, err = run_cli(["collect", str(f), "--out", str(tmp_path / "out"), "--no-progress"], capsys)
    assert_one_line_error(rc, err, "matrix")
    assert not (tmp_path / "out").exists()


def test_too_many_runs_are_refused_before_any_work(tmp_path, capsys):
    f = tmp_path / "c.toml"
    f.write_text(CAMPAIGN.replace("repetitions = 2", "repetitions = 1000")
                 + 'chain = [1, 2, 3, 4, 5, 6, 7, 8]\nlink = "veth"\nsize = [100, 200, 300, 400, 500, 600, 700, 800]\n')
    rc, err = run_cli(["collect", str(f), "--out", str(tmp_path / "out")], capsys)
    assert_one_line_error(rc, err, "runs")
    assert not (tmp_path / "out").exists()


# -- [endpoints]: only an ssh destination or a local namespace, never a command ----------------
ENDPOINT_FAULTS = [
    '["ssh", "-o", "ProxyCommand=touch /tmp/x", "host"]', '["ssh", "-oProxyCommand=x", "host"]',
    '["sh", "-c", "touch /tmp/x"]', '["sudo", "ip", "netns", "exec", "vm1"]', '"user@host;ls"',
    '"-oProxyCommand=x@host"', '"host:99999"', '"host:0"', '"user@ho st"', '"$(id)"', '""', "3",
    '["ip", "netns", "exec", "vm1", "sh"]', '["ip", "netns", "exec", "vm1;ls"]', '["ssh"]',
    '["ssh", "host", "rm"]', '{host = "x"}',
]


@pytest.mark.parametrize("client", ENDPOINT_FAULTS)
def test_endpoints_accept_no_command(tmp_path, capsys, client):
    f = tmp_path / "c.toml"
    text = CAMPAIGN.replace('qdisc = ["none", "htb50"]', 'qdisc = ["none"]')
    f.write_text(text + f'\n[endpoints]\nclient = {client}\nserver = "user@host2"\nserver_ip = "192.0.2.2"\n')
    rc, err = run_cli(["collect", str(f), "--out", str(tmp_path / "out")], capsys)
    assert_one_line_error(rc, err, "endpoints")
    assert not Path("/tmp/x").exists() or Path("/tmp/x").stat().st_mtime < f.stat().st_mtime


# -- files that are not campaign / testbed files -----------------------------------------------
def _unreadable(tmp_path, kind):
    p = tmp_path / "x.toml"
    if kind == "nested":
        p.write_text("a = " + "[" * 5000)
    elif kind == "binary":
        p.write_bytes(b"\xff\xfe\x00garbage")
    elif kind == "not toml":
        p.write_text("[campaign\nname=")
    elif kind == "directory":
        p.mkdir()
    elif kind == "missing":
        pass
    elif kind == "unknown section":
        p.write_text(CAMPAIGN + "\n[extra]\na = 1\n")
    elif kind == "no workload":
        p.write_text("[campaign]\nname = 'x'\n")
    elif kind == "fifo":
        os.mkfifo(p)
    elif kind == "device":
        return Path("/dev/zero")
    elif kind == "huge":
        p.write_text("# " + "x" * (2 << 20) + "\n")
    elif kind == "testbed key":
        p.write_text("[testbed]\nbridges = 'ovs'\n")
    elif kind == "testbed not a table":
        p.write_text("testbed = 3\n")
    return p


FILE_KINDS = ["nested", "binary", "not toml", "directory", "missing", "unknown section", "no workload", "fifo",
              "device", "huge"]


@pytest.mark.parametrize("kind", FILE_KINDS)
def test_unusable_campaign_files(tmp_path, capsys, kind):
    rc, err = run_cli(["collect", str(_unreadable(tmp_path, kind)), "--out", str(tmp_path / "out")], capsys)
    assert_one_line_error(rc, err)
    assert not (tmp_path / "out").exists()


TESTBED_FAULTS = ["nested", "binary", "not toml", "directory", "missing", "device", "huge", "testbed key", "testbed not a table",
                  "mtu = -1", "mtu = 70000", "vms = true", 'prefix = "' + "p" * 60 + '"', 'prefix = "a;b"',
                  'vm_tx_offload = "no"', "chain = 0", 'subnet = "10.77.0.0/33"', 'subnet = "10.77.0.0/30"\nvms = 4']


@pytest.mark.parametrize("fault", TESTBED_FAULTS)
def test_unusable_testbed_files(tmp_path, capsys, fault):
    if fault in FILE_KINDS or fault.startswith("testbed "):
        p = _unreadable(tmp_path, fault)
    else:
        p = tmp_path / "tb.toml"
        p.write_text(f"[testbed]\n{fault}\n")
    rc, err = run_cli(["testbed", "up", str(p)], capsys)
    assert_one_line_error(rc, err)


# -- command-line flags ------------------------------------------------------------------------
@pytest.mark.parametrize("flags,match", [
    (["--repetitions", "0"], "repetitions"), (["--repetitions", "99999999999999999999"], "repetitions"),
    (["--repetitions", "5000"], "repetitions"), (["--duration", "1e99s"], "duration"),
    (["--duration", "abc"], "duration"), (["--duration", "0s"], "duration"), (["--duration", "1e-12s"], "duration"),
])
def test_collect_flags(tmp_path, capsys, flags, match):
    f = tmp_path / "c.toml"
    f.write_text(CAMPAIGN)
    rc, err = run_cli(["collect", str(f), "--out", str(tmp_path / "out"), *flags], capsys)
    assert_one_line_error(rc, err, match)
    assert not (tmp_path / "out").exists()


def test_testbed_down_of_an_unknown_testbed(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OVSSIM_STATE_DIR", str(tmp_path))
    from ovssim.collect import testbed
    monkeypatch.setattr(testbed, "STATE_DIR", tmp_path)
    rc, err = run_cli(["testbed", "down", "nosuch-abcdef"], capsys)
    assert_one_line_error(rc, err, "nosuch-abcdef")


# -- import-data -------------------------------------------------------------------------------
def _bad_import(tmp_path, kind):
    d = tmp_path / "in"
    d.mkdir(exist_ok=True)
    files = {
        "tidy table": ("r.csv", "campaign,run_id,metric,value,unit\nc,r1,rtt,0.1,s\n"),
        "several numeric columns": ("r.csv", "seq,rtt,other\n1,0.1,3\n"),
        "only counters": ("r.csv", "seq,time\n1,0.1\n"),
        "text in the column": ("r.csv", "rtt\n0.1\nabc\n"),
        "infinite": ("r.csv", "rtt\n0.1\ninf\n"),
        "boolean column": ("r.csv", "rtt\nTrue\nFalse\n"),
        "negative delays": ("r.csv", "rtt\n0.1\n-0.2\n"),
        "empty csv": ("r.csv", ""),
        "no rows": ("r.csv", "rtt\n"),
        "binary csv": ("r.csv", b"\x00\xff\x00\x01"),
        "nested json": ("r.json", "[" * 5000),
        "json not iperf3": ("r.json", json.dumps({"a": 1})),
        "iperf3 error": ("r.json", json.dumps({"start": {}, "end": {}, "error": "unable to connect"})),
        "iperf3 no summary": ("r.json", json.dumps({"start": {"test_start": {"protocol": "TCP"}}, "end": {}})),
        "iperf3 wrong types": ("r.json", json.dumps({"start": [], "end": 3})),
        "truncated json": ("r.json", (SAMPLES / "iperf3_tcp.json").read_text()[:500]),
        "flent not gzip": ("r.flent.gz", b"not gzip"),
        "flent wrong shape": ("r.flent.gz", gzip.compress(json.dumps({"results": [], "metadata": 3}).encode())),
        "flent nan": ("r.flent.gz", gzip.compress(json.dumps(
            {"metadata": {}, "results": {"Ping (ms)": [1.0, "x"]}}).encode())),
        "unknown kind": ("r.txt", "1\n2\n"),
    }
    name, content = files[kind]
    p = d / name
    p.write_bytes(content if isinstance(content, bytes) else content.encode())
    return p


IMPORT_FAULTS = ["tidy table", "several numeric columns", "only counters", "text in the column", "infinite",
                 "boolean column", "negative delays", "empty csv", "no rows", "binary csv", "nested json",
                 "json not iperf3", "iperf3 error", "iperf3 no summary", "iperf3 wrong types", "truncated json",
                 "flent not gzip", "flent wrong shape", "flent nan", "unknown kind"]


@pytest.mark.parametrize("kind", IMPORT_FAULTS)
def test_import_rejects_unusable_files(tmp_path, capsys, kind):
    rc, err = run_cli(["import-data", str(_bad_import(tmp_path, kind)), "--out", str(tmp_path / "out")], capsys)
    assert_one_line_error(rc, err)
    assert not (tmp_path / "out").exists()          # every file is checked before anything is written


@pytest.mark.parametrize("flags,match", [
    (["--unit", "parsecs"], "unit"), (["--unit", ""], "unit"), (["--name", ""], "name"),
    (["--name", "a b/c"], "name"), (["--column", "nosuch"], "nosuch"),
])
def test_import_flags(tmp_path, capsys, flags, match):
    f = tmp_path / "rtt.csv"
    f.write_text("seq,rtt\n1,0.1\n")
    rc, err = run_cli(["import-data", str(f), "--out", str(tmp_path / "out"), *flags], capsys)
    assert_one_line_error(rc, err, match)
    assert not (tmp_path / "out").exists()


def test_import_fifo_does_not_hang(tmp_path, capsys):
    fifo = tmp_path / "f.csv"
    os.mkfifo(fifo)
    rc, err = run_cli(["import-data", str(fifo), "--out", str(tmp_path / "out")], capsys)
    assert_one_line_error(rc, err, "regular file")


def test_import_into_an_unwritable_folder(tmp_path, capsys):
    f = tmp_path / "rtt.csv"
    f.write_text("rtt\n0.1\n")
    (tmp_path / "file").write_text("")
    rc, err = run_cli(["import-data", str(f), "--out", str(tmp_path / "file" / "out")], capsys)
    assert_one_line_error(rc, err, "cannot write")
    if os.geteuid() == 0:       # root ignores permissions: a read-only mount is what stops it
        ro = tmp_path / "ro"
        ro.mkdir()
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro", "tmpfs", str(ro)]).returncode == 0:
            try:
                rc, err = run_cli(["import-data", str(f), "--out", str(ro / "out")], capsys)
                assert_one_line_error(rc, err, "Read-only file system")
            finally:
                subprocess.run(["umount", str(ro)], check=True)
    else:
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o555)
        rc, err = run_cli(["import-data", str(f), "--out", str(ro / "out")], capsys)
        assert_one_line_error(rc, err, "cannot write")


def test_import_never_appends_to_a_collected_campaign(tmp_path, capsys):
    import shutil
    camp = tmp_path / "camp"
    shutil.copytree(ROOT / "data" / "local" / "local-prio", camp)
    before = (camp / "runs.jsonl").read_bytes()
    f = tmp_path / "rtt.csv"
    f.write_text("rtt\n0.1\n")
    rc, err = run_cli(["import-data", str(f), "--out", str(camp)], capsys)
    assert_one_line_error(rc, err, "collect")
    assert (camp / "runs.jsonl").read_bytes() == before


# -- campaign structure: sections of the wrong shape, duplicates, empty matrices ---------------
PING = '[[workload]]\nname = "p"\ntool = "ping"\n'
STRUCTURE_FAULTS = {
    "campaign is a number": "campaign = 3\n" + PING, "campaign is an array": '[[campaign]]\nname = "x"\n' + PING,
    "workload is a number": "workload = 3\n", "workload is one table": '[workload]\nname = "p"\ntool = "ping"\n',
    "workload is strings": 'workload = ["a"]\n', "qdisc is one table": '[qdisc]\nname = "q"\n' + PING,
    "matrix is a number": "matrix = 3\n" + PING, "matrix is strings": 'matrix = ["a"]\n' + PING,
    "testbed is an array": "[[testbed]]\nmtu = 1500\n" + PING, "endpoints is a number": "endpoints = 3\n" + PING,
    "workload twice": PING + PING, "qdisc twice": '[[qdisc]]\nname = "q"\nkind = "pfifo"\n' * 2 + PING,
    "qdisc none redefined": '[[qdisc]]\nname = "none"\nkind = "pfifo"\n' + PING,
    "tool is a list": '[[workload]]\nname = "p"\ntool = ["ping"]\n',
    "empty matrix axis": PING + "[[matrix]]\nbridge = []\n",
    "ping lasting years": '[[workload]]\nname = "p"\ntool = "ping"\ncount = 1000000\ninterval = "60s"\n',
    "public subnet": '[testbed]\nsubnet = "8.8.8.0/24"\n' + PING,
    "duration is a date": "[campaign]\nduration = 1979-05-27T07:32:00Z\n" + PING,
    "empty file": "",
}


@pytest.mark.parametrize("kind", STRUCTURE_FAULTS)
def test_campaign_structure(tmp_path, capsys, kind):
    f = tmp_path / "c.toml"
    f.write_text(STRUCTURE_FAULTS[kind])
    rc, err = run_cli(["collect", str(f), "--out", str(tmp_path / "out")], capsys)
    assert_one_line_error(rc, err)
    assert not (tmp_path / "out").exists()


def test_import_keeps_two_files_that_share_a_name_and_skips_the_same_data(tmp_path, capsys):
    for d, v in (("a", "0.1"), ("b", "0.2")):
        (tmp_path / d).mkdir()
        (tmp_path / d / "rtt.csv").write_text(f"rtt\n{v}\n")
    out = tmp_path / "out"
    assert run_cli(["import-data", str(tmp_path / "a" / "rtt.csv"), str(tmp_path / "b" / "rtt.csv"),
                    "--out", str(out)], capsys)[0] == 0
    assert run_cli(["import-data", str(tmp_path / "a" / "rtt.csv"), "--out", str(out)], capsys)[0] == 0
    from ovssim.collect.store import load_results
    df = load_results(out)
    assert sorted(df[df.metric == "rtt_mean"]["value"]) == [0.1, 0.2]


def test_collect_into_an_unwritable_folder(tmp_path, capsys):
    f = tmp_path / "c.toml"
    f.write_text(CAMPAIGN)
    (tmp_path / "file").write_text("")
    rc, err = run_cli(["collect", str(f), "--out", str(tmp_path / "file" / "out")], capsys)
    assert_one_line_error(rc, err, "cannot write")


@pytest.mark.parametrize("port", ["vif9", "eth0", "lk0a"])
def test_a_qdisc_on_a_port_the_testbed_lacks_is_refused_up_front(tmp_path, capsys, port):
    f = tmp_path / "c.toml"
    f.write_text(CAMPAIGN.replace('via = "tc"', f'via = "tc"\nport = "{port}"'))
    rc, err = run_cli(["collect", str(f), "--out", str(tmp_path / "out")], capsys)
    assert_one_line_error(rc, err, port)
    f.write_text(CAMPAIGN.replace('via = "tc"', 'via = "tc"\nport = "lk0a"') + 'chain = [2]\nlink = ["veth"]\n')
    from ovssim.collect.campaign import load_campaign
    assert {rc.qdisc.port for rc in load_campaign(f).configs} >= {"lk0a"}      # a veth link end exists


@pytest.mark.parametrize("cmd", ["collect", "import-data"])
def test_out_is_a_file(tmp_path, capsys, cmd):
    f = tmp_path / ("c.toml" if cmd == "collect" else "rtt.csv")
    f.write_text(CAMPAIGN if cmd == "collect" else "rtt\n0.1\n")
    (tmp_path / "out").write_text("not a folder")
    rc, err = run_cli([cmd, str(f), "--out", str(tmp_path / "out")], capsys)
    assert_one_line_error(rc, err, "out")
    assert (tmp_path / "out").read_text() == "not a folder"


# -- every key of a full campaign, given values of every kind ----------------------------------
def _toml(v):
    import math
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "inf" if v == math.inf else "-inf" if v == -math.inf else "nan" if v != v else repr(v)
    if isinstance(v, (int, str)):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    return "{" + ", ".join(f"{k} = {_toml(x)}" for k, x in v.items()) + "}"


def _dump(doc):
    out = []
    for sec in ("campaign", "testbed"):
        out += [f"[{sec}]"] + [f"{k} = {_toml(v)}" for k, v in doc[sec].items()]
    for sec in ("qdisc", "workload", "matrix"):
        for t in doc[sec]:
            out += [f"[[{sec}]]"] + [f"{k} = {_toml(v)}" for k, v in t.items()]
    return "\n".join(out) + "\n"


FULL = {
    "campaign": {"name": "f", "repetitions": 2, "order": "interleaved", "seed": 1, "duration": "2s",
                 "cooldown": "0.1s", "flush_flows": True, "prefix": "fz", "description": "d", "keep_testbeds": True},
    "testbed": {"bridge": "ovs", "chain": 1, "link": "patch", "vms": 2, "datapath": "auto", "vm_tx_offload": False,
                "subnet": "10.77.0.0/24", "mtu": 1500, "vif_type": "system"},
    "qdisc": [{"name": "h", "kind": "htb", "via": "tc", "port": "vif2", "rate": "50mbit", "burst": "15k", "leaf": "pfifo"},
              {"name": "t", "kind": "tbf", "rate": "50mbit", "latency": "50ms"}, {"name": "p", "kind": "pfifo", "limit": 100}],
    "workload": [{"name": "tcp", "tool": "iperf3", "proto": "tcp", "streams": 2, "cc": "cubic", "size": 1400,
                  "rate": "1gbit", "duration": "3s", "flush_flows": False, "alongside": "ping", "alongside_start": "0.5s"},
                 {"name": "ping", "tool": "ping", "count": 10, "interval": "10ms", "tos": 16},
                 {"name": "q", "tool": "qperf", "test": "tcp_lat"}],
    "matrix": [{"bridge": ["ovs", "linux"], "chain": [1, 2], "link": ["veth"], "qdisc": ["none", "h"],
                "workload": ["tcp", "ping"], "size": [100], "rate": ["10mbit"], "streams": [1], "cc": ["cubic"],
                "vm_tx_offload": [False], "datapath": ["auto"], "vif_type": ["system"]}],
}
KINDS = ["", "abc", -1, 0, 1e308, float("inf"), float("nan"), True, [1], [], {"a": 1}, "1e99s", "1e-12s",
         99999999999999999999, "-5mbit", " ", "../x", "a;b", "\u00e9", 1.5, [[1]], ["x"]]
KEYS = [(sec, i, k) for sec, body in FULL.items() for i, t in enumerate(body if isinstance(body, list) else [body])
        for k in t]


@pytest.mark.parametrize("sec,i,key", KEYS, ids=[f"{s}{i}.{k}" for s, i, k in KEYS])
def test_every_key_with_values_of_every_kind(tmp_path, sec, i, key):
    """A value of the wrong kind or out of bounds is one ConfigError; what is accepted is a
    campaign whose every configuration passes the checks again (never a half-checked one)."""
    import copy
    from ovssim.collect.campaign import load_campaign
    from ovssim.errors import OvssimError
    f = tmp_path / "c.toml"
    f.write_text(_dump(FULL))
    assert load_campaign(f).configs
    for value in KINDS:
        doc = copy.deepcopy(FULL)
        (doc[sec][i] if isinstance(doc[sec], list) else doc[sec])[key] = value
        f.write_text(_dump(doc))
        try:
            camp = load_campaign(f)
        except OvssimError as exc:
            assert "\n" not in str(exc)
            continue
        for rc in camp.configs:
            rc.testbed.validate()
            rc.workload.check()


@pytest.mark.parametrize("key", list(FULL["testbed"]) + ["prefix"])
def test_every_testbed_file_key_with_values_of_every_kind(tmp_path, key):
    """`ovssim testbed up FILE` reads the file before building anything: same rule."""
    from ovssim.collect.cli import _load_testbed_file
    from ovssim.errors import OvssimError
    f = tmp_path / "tb.toml"
    for value in KINDS:
        f.write_text("[testbed]\n" + "\n".join(f"{k} = {_toml(v)}" for k, v in
                                                {**FULL["testbed"], key: value}.items()) + "\n")
        try:
            spec, prefix = _load_testbed_file(f)
        except OvssimError as exc:
            assert "\n" not in str(exc)
            continue
        spec.validate()
        assert len(prefix) <= 52


@pytest.mark.parametrize("field", ["NAME", "LENGTH", "TIME", "SERIES_META", "FLENT_VERSION", "TITLE"])
def test_flent_metadata_of_every_kind(tmp_path, field):
    """Odd metadata never breaks an import and never puts a table or list into a column."""
    from ovssim.collect.importers import read_flent
    from ovssim.errors import OvssimError
    for value in KINDS:
        doc = {"metadata": {"NAME": "rrul", "LENGTH": 60, "TIME": "2020-01-01T00:00:00", field: value},
               "results": {"Ping (ms) ICMP": [1.0, 2.0]}}
        p = tmp_path / "x.flent.gz"
        p.write_bytes(gzip.compress(json.dumps(doc).encode()))
        try:
            rec, _ = read_flent(p)
        except OvssimError:
            continue
        assert all(v is None or isinstance(v, (str, int, float)) for k, v in rec.items() if k != "metrics")


@pytest.mark.parametrize("where", ["end.sum_received.bits_per_second", "end.sum_sent.retransmits",
                                   "start.test_start", "end.cpu_utilization_percent", "intervals",
                                   "start.timestamp", "end.sum_received"])
def test_iperf3_json_of_every_kind(tmp_path, capsys, where):
    """Real iperf3 -J output with one field replaced by each kind of value: imported (with finite
    numbers only) or one error line."""
    import copy
    import math
    from ovssim.collect.importers import read_iperf3_json
    from ovssim.errors import OvssimError
    base = json.loads((SAMPLES / "iperf3_tcp.json").read_text())
    keys = where.split(".")
    for value in KINDS + ["NaN"]:
        doc = copy.deepcopy(base)
        node = doc
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value
        p = tmp_path / "x.json"
        p.write_text(json.dumps(doc).replace('"NaN"', "NaN"))
        try:
            rec, samples = read_iperf3_json(p)
        except OvssimError:
            continue
        assert all(math.isfinite(v) for v, _ in rec["metrics"].values())
        assert all(math.isfinite(v) for vals, _ in samples.values() for v in vals)
