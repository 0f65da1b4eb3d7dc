"""A corpus of bad inputs over every file and flag the simulator side reads (issue 20).

Each case runs the ``ovssim`` command in this process (``ovssim.cli.main``) under a timer and must end
with exit status 2 and exactly one error line, ``ovssim: error: ...``, last on stderr: no traceback (an exception
escaping ``main``), no hang (the timer), no nonsense accepted (status 0).  The cases are generated:
every key of a small scenario, a profile, a sweep file, and every option of run / whatif / sweep /
validate / fit, each with the values a typing mistake or an attacker would give.
"""
from __future__ import annotations

import copy
import signal
from pathlib import Path

import pytest

from ovssim.cli import main
from ovssim.fit.profile_writer import _key, _val

BIG = 99999999999999999999                       # overflows int64
NAN, INF = float("nan"), float("inf")
WRONG_TYPE = [True, [1], {"a": 1}]
TIME_BAD = ["abc", -1, "-5ms", "1e99s", 1e99, NAN, INF, BIG, "", "5parsecs", *WRONG_TYPE]
DURATION_BAD = TIME_BAD + [0, 1e-12, "1e-12s"]
COUNT_BAD = [0, -1, BIG, 1.5, "10", NAN, *WRONG_TYPE]
RATE_BAD = ["1e-30bit", 1e-30, 0, -1, "abc", "1e99gbit", 1e99, NAN, "100parsecs", *WRONG_TYPE]
NAME_BAD = ["nonsense", "", 1, [1]]

SCENARIO = {
    "scenario": {"name": "tiny", "duration": "20ms", "reps": 1, "seed": 1},
    "host": [{"name": "h1", "cores": 2}, {"name": "h2", "cores": 2}],
    "bridge": [{"name": "br0", "host": "h1", "uplink": "eth0"}, {"name": "br1", "host": "h2", "uplink": "eth1"}],
    "nic": [{"name": "eth0", "host": "h1", "rate": "100mbit", "switch": "sw0"},
            {"name": "eth1", "host": "h2", "rate": "100mbit", "switch": "sw0"}],
    "switch": [{"name": "sw0"}],
    "vm": [{"name": "vm1", "host": "h1", "bridge": "br0"}, {"name": "vm2", "host": "h2", "bridge": "br1"}],
    "workload": [{"name": "ping", "tool": "ping", "from": "vm1", "to": "vm2", "i": "5ms"},
                 {"name": "udp", "tool": "iperf", "proto": "udp", "from": "vm1", "to": "vm2", "b": "10mbit"}],
}

# (section, element index or None, key) -> bad values
SCENARIO_KEYS = {
    ("scenario", None, "duration"): DURATION_BAD,
    ("scenario", None, "warmup"): TIME_BAD,
    ("scenario", None, "reps"): COUNT_BAD,
    ("scenario", None, "seed"): [-1, BIG, "abc", 1.5, *WRONG_TYPE],
    ("scenario", None, "profile"): ["", "   ", "no_such_profile", 1, *WRONG_TYPE],
    ("scenario", None, "trace_every"): [-1, "x", 1.5, BIG, *WRONG_TYPE],
    ("scenario", None, "nonsense"): [1],
    ("host", 0, "cores"): [0, -1, 2000, "4", 1.5, BIG, *WRONG_TYPE],
    ("host", 0, "name"): ["", 1, [1]],
    ("host", 0, "nonsense"): [1],
    ("bridge", 0, "kind"): NAME_BAD,
    ("bridge", 0, "chain"): [0, 10, -1, "2", 1.5, BIG, *WRONG_TYPE],
    ("bridge", 0, "link"): NAME_BAD,
    ("bridge", 0, "host"): ["nohost", 1, [1], {"a": 1}],
    ("bridge", 0, "datapath_type"): NAME_BAD,
    ("bridge", 0, "port_type"): NAME_BAD + ["AFXDP", True, "afxdp"],   # afxdp: on the kernel datapath
    ("bridge", 0, "uplink"): ["noeth", 1, [1], {"a": 1}],
    ("bridge", 0, "flows"): ["x", [1], [{"set_queue": "x"}], [{"match": {"nonsense": 1}, "set_queue": 1}],
                             [{"match": 5, "set_queue": 1}], [{"match": {"dport": -1}, "set_queue": 1}]],
    ("vm", 0, "vif"): NAME_BAD,
    ("vm", 0, "vcpus"): [0, -1, "2", 1.5, BIG, *WRONG_TYPE],
    ("vm", 0, "bridge"): ["nobr", 1, [1], {"a": 1}],
    ("vm", 0, "host"): ["nohost", [1]],
    ("vm", 0, "vlan"): [0, 4095, -1, "10", 1.5, *WRONG_TYPE],
    ("vm", 0, "trunks"): [[0], "x", [4095], [1.5]],
    ("vm", 0, "mtu"): [0, 67, 9217, "1500", BIG, *WRONG_TYPE],
    ("vm", 0, "qdisc"): ["nonsense", 1, [1], {"kind": "tbf"},
                         {"kind": "tbf", "rate": "1e-30bit", "burst": "10k", "latency": "50ms"},
                         {"kind": "pfifo", "limit": -1}, {"kind": "pfifo", "limit": BIG},
                         {"kind": "htb", "rate": "0"}, {"kind": "sfq", "perturb": "1e99s"},
                         {"kind": "codel", "target": "-5ms"}, {"kind": "nonsense"}],
    ("nic", 0, "rate"): RATE_BAD,
    ("nic", 0, "prop_delay"): TIME_BAD + ["11s"],
    ("nic", 0, "mtu"): [0, 99999],
    ("nic", 0, "switch"): ["nosw", 1, [1]],
    ("nic", 0, "host"): ["nohost", [1]],
    ("nic", 0, "qdisc"): ["nonsense", {"kind": "tbf", "rate": 0, "burst": "10k", "latency": "50ms"}],
    ("nic", 0, "txqueuelen"): [-1, "x", BIG, 1.5],
    ("switch", 0, "latency"): TIME_BAD + ["11s"],
    ("switch", 0, "buffer"): [-1, "x", "1e99gb", NAN, *WRONG_TYPE],
    ("workload", 0, "tool"): NAME_BAD,
    ("workload", 0, "from"): ["vm9", 1, [1], {"a": 1}, "vm2"],
    ("workload", 0, "to"): ["vm9", 1, [1], "vm1"],
    ("workload", 0, "name"): [1, [1], "", "udp"],
    ("workload", 0, "i"): [0, -1, "abc", "1e99s", 1e-12, *WRONG_TYPE],
    ("workload", 0, "c"): [0, -1, 1.5, "x", BIG],
    ("workload", 0, "s"): [-1, 99999999, "x"],
    ("workload", 0, "nonsense"): [1],
    ("workload", 1, "b"): ["0", 0, "1e-30bit", -1, "abc", "1e99gbit", *WRONG_TYPE],
    ("workload", 1, "l"): [0, -1, 70000, "x", BIG],
    ("workload", 1, "t"): ["1e99s", -1, 0, 1e-12, "abc"],
    ("workload", 1, "start"): [-1, "1e99s", "abc"],
    ("workload", 1, "tos"): [-1, 256, "x", BIG],
    ("workload", 1, "port"): [-1, 70000, "x", BIG],
}
PARAMS_BAD = [
    {"ovs.lookup": "1e99s"}, {"ovs.lookup": 1e99}, {"ovs.lookup": -1}, {"ovs.lookup": "abc"},
    {"ovs.lookup": {"dist": "nope"}}, {"ovs.lookup": {"dist": "lognorm", "s": -1, "scale": "20us"}},
    {"ovs.lookup": {"dist": "lognorm", "s": 0.5, "scale": "1e99s"}}, {"ovs.lookup": [1]}, {"ovs.lookup": True},
    {"nonsense.param": 1}, {"ovs.handlers": 0}, {"ovs.handlers": BIG}, {"ovs.handlers": 1.5},
    {"ovs.idle_stall_prob": 2}, {"ovs.idle_stall_prob": -0.1}, {"switch.buffer": "1e99gb"},
    {"ovs.max_idle": "1e99s"}, {"ovs.max_idle": -1},
    # issues 15, 17, 18: the application's wake-up and per-byte copies, the netdev thread's idle wake-up, AF_XDP
    *({k: v} for k in ("app.wakeup", "app.send_per_byte", "app.recv_per_byte", "ovs.idle_wake",
                       "ovs.afxdp.per_packet", "ovs.afxdp.per_batch", "ovs.afxdp.empty_poll")
      for v in ("abc", -1, "1e99s", NAN, True)),
    *({k: v} for k in ("ovs.afxdp.ring_size", "ovs.afxdp.tsc_mhz") for v in (0, -1, BIG, 1.5, "10", True)),
]


def toml_text(doc: dict) -> str:
    """A scenario/profile/sweep dict as TOML (tables, arrays of tables, inline values)."""
    lines = []
    for sec, body in doc.items():
        for table in (body if isinstance(body, list) else [body]):
            lines.append(f"[[{sec}]]" if isinstance(body, list) else f"[{_key(sec)}]")
            lines += [f"{_key(k)} = {_val(v)}" for k, v in table.items()]
            lines.append("")
    return "\n".join(lines)


def _scenario_cases():
    for (sec, idx, key), values in SCENARIO_KEYS.items():
        for v in values:
            doc = copy.deepcopy(SCENARIO)
            (doc[sec] if idx is None else doc[sec][idx])[key] = v
            yield f"scenario:{sec}.{key}={v!r:.30}", doc
    for p in PARAMS_BAD:
        doc = copy.deepcopy(SCENARIO)
        doc["params"] = p
        yield f"scenario:params={p!r:.40}", doc
    for sec in ("scenario", "host", "workload", "vm"):
        doc = copy.deepcopy(SCENARIO)
        del doc[sec]
        yield f"scenario:no-{sec}", doc
    doc = copy.deepcopy(SCENARIO)
    doc["nonsense"] = {"a": 1}
    yield "scenario:unknown-section", doc
    doc = copy.deepcopy(SCENARIO)
    doc["params"] = {"a": {"b": 1}}
    yield "scenario:params-nested", doc
    afxdp = copy.deepcopy(SCENARIO)            # an AF_XDP bridge (issue 18): what it needs, and what it forbids
    afxdp["bridge"][0].update(datapath_type="netdev", port_type="afxdp")
    for label, edit in [("linux-bridge", lambda d: d["bridge"][0].update(kind="linux")),
                        ("one-core", lambda d: d["host"][0].update(cores=1)),
                        ("vif-qdisc", lambda d: d["vm"][0].update(qdisc={"kind": "pfifo", "limit": 10}))]:
        doc = copy.deepcopy(afxdp)
        edit(doc)
        yield f"scenario:afxdp-{label}", doc
    udp_bw = {"name": "bw", "tool": "qperf", "test": "udp_bw", "from": "vm1", "to": "vm2", "t": "10ms"}
    for key, v in [("m", 0), ("m", 70000), ("m", "x"), ("t", 0), ("port", 70000), ("cc", "cubic"),
                   ("nonsense", 1)]:
        doc = copy.deepcopy(SCENARIO)
        doc["params"] = {"app.send_per_packet": "2us"}
        doc["workload"][1] = {**udp_bw, key: v}
        yield f"scenario:qperf-udp_bw.{key}={v!r}", doc
    doc = copy.deepcopy(SCENARIO)                # udp_bw sends as fast as send() returns: it needs a send cost
    doc["params"] = {"app.send_per_packet": "0us"}
    doc["workload"][1] = udp_bw
    yield "scenario:qperf-udp_bw-no-send-cost", doc
    for v in ["yes", 2, "", [1]]:
        doc = copy.deepcopy(SCENARIO)
        doc["workload"][1] = {"name": "tcp", "tool": "iperf", "from": "vm1", "to": "vm2", "P": 2, "t": "10ms",
                              "one_thread": v}
        yield f"scenario:iperf-one_thread={v!r}", doc


RAW_FILES = {
    "nested-arrays": "a = " + "[" * 5000,
    "nested-tables": "a = " + "{b = " * 3000,
    "empty": "",
    "not-toml": "this is not toml\n",
    "binary": b"\xff\xfe\x00\x01" * 100,
    "huge-reps": '[scenario]\nname = "x"\nreps = 99999999999999999999\n',
    "array-scenario": "[[scenario]]\nname = 1\n",
}


def _write(path: Path, content) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else toml_text(content))
    return path


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    """Every case runs in its own folder: an accepted case must not write default outputs into the checkout."""
    monkeypatch.chdir(tmp_path)


def _run(argv, capsys, timeout=60.0):
    """``main(argv)`` under a timer: (exit status, stderr lines)."""
    def hang(*_):
        raise TimeoutError(f"ovssim {' '.join(map(str, argv))} ran for more than {timeout} s")
    old = signal.signal(signal.SIGALRM, hang)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        rc = main([str(a) for a in argv])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    err = capsys.readouterr().err
    return rc, [ln for ln in err.splitlines() if ln.strip()]


def assert_one_error_line(argv, capsys, timeout=60.0):
    rc, lines = _run(argv, capsys, timeout)
    assert rc == 2, f"accepted (exit {rc}): ovssim {' '.join(map(str, argv))}\n" + "\n".join(lines)
    errors = [ln for ln in lines if "error" in ln.lower() or "traceback" in ln.lower()]
    assert len(errors) == 1 and lines[-1] == errors[0] and errors[0].startswith("ovssim: error: "), "\n".join(lines)
    return errors[0]


# -- scenario files through `ovssim run` ------------------------------------------------------------------
SCENARIO_CASES = list(_scenario_cases())


@pytest.mark.parametrize("doc", [d for _, d in SCENARIO_CASES], ids=[i for i, _ in SCENARIO_CASES])
def test_bad_scenario(tmp_path, capsys, doc):
    path = _write(tmp_path / "sc.toml", doc)
    assert_one_error_line(["run", path, "--workers", "1", "--no-progress", "--format", "csv"], capsys)


@pytest.mark.parametrize("name", sorted(RAW_FILES))
@pytest.mark.parametrize("command", ["run", "sweep", "whatif", "fit-samples"])
def test_bad_file(tmp_path, capsys, name, command):
    path = _write(tmp_path / ("f.csv" if command == "fit-samples" else "f.toml"), RAW_FILES[name])
    assert_one_error_line(_command_on(command, path, tmp_path), capsys)


def _command_on(command, path, tmp_path):
    return {"run": ["run", path, "--workers", "1"],
            "sweep": ["sweep", path, "--workers", "1", "--out", tmp_path / "out"],
            "whatif": ["whatif", path, "--qdiscs", "pfifo,sfq", "--workers", "1", "--out", tmp_path / "out"],
            "fit-samples": ["fit", "samples", path]}[command]


@pytest.mark.parametrize("special", ["/dev/zero", "/dev/null", "DIR", "MISSING"])
@pytest.mark.parametrize("command", ["run", "sweep", "whatif", "fit-samples"])
def test_special_paths(tmp_path, capsys, special, command):
    path = {"DIR": tmp_path, "MISSING": tmp_path / "missing.toml"}.get(special, Path(special))
    assert_one_error_line(_command_on(command, path, tmp_path), capsys, timeout=20)


# -- profiles ----------------------------------------------------------------------------------------------
PROFILE = {"profile": {"name": "p", "base": "default"}, "params": {"ovs.lookup": "2us"}}


def _profile_cases():
    for key, v in [("base", "SELF"), ("base", "OTHER"), ("base", "missing_profile"), ("base", 1), ("base", ""),
                   ("name", ""), ("name", 1), ("nonsense", 1)]:
        doc = copy.deepcopy(PROFILE)
        doc["profile"][key] = v
        yield f"profile.{key}={v!r}", doc
    doc = copy.deepcopy(PROFILE)
    del doc["profile"]["name"]
    yield "profile-no-name", doc
    doc = copy.deepcopy(PROFILE)
    doc["nonsense"] = {"a": 1}
    yield "profile-unknown-table", doc
    yield "profile-params-not-table", '[profile]\nname = "p"\nparams = [1]\n'
    for v in [-0.1, 1.5, "x", True, NAN, [1]]:          # [state] cpu_busy: a share in [0, 1] (issue 17)
        doc = copy.deepcopy(PROFILE)
        doc["state"] = {"speed_index": 1.0, "cpu_busy": v}
        yield f"profile-state.cpu_busy={v!r}", doc
    for p in PARAMS_BAD:
        doc = copy.deepcopy(PROFILE)
        doc["params"] = p
        yield f"profile-params={p!r:.40}", doc


PROFILE_CASES = list(_profile_cases())


@pytest.mark.parametrize("doc", [d for _, d in PROFILE_CASES], ids=[i for i, _ in PROFILE_CASES])
def test_bad_profile(tmp_path, capsys, doc):
    prof = tmp_path / "p.toml"
    other = tmp_path / "other.toml"
    doc = copy.deepcopy(doc)
    if isinstance(doc, str):
        doc = {"profile": {}, "RAW": doc}
    if doc["profile"].get("base") == "SELF":
        doc["profile"]["base"] = str(prof)
    if doc["profile"].get("base") == "OTHER":               # p -> other -> p
        doc["profile"]["base"] = str(other)
        _write(other, {"profile": {"name": "o", "base": str(prof)}, "params": {"ovs.lookup": "3us"}})
    _write(prof, doc.get("RAW", doc))
    sc = _write(tmp_path / "sc.toml", SCENARIO)
    assert_one_error_line(["run", sc, "--workers", "1", "--profile", prof], capsys)


# -- command-line options ---------------------------------------------------------------------------------
def _flag_cases():
    run = ["run", "SC", "--workers", "1"]
    for flag, values in {"--reps": [0, -1, BIG, "abc"], "--seed": [-1, BIG, "abc"], "--workers": [0, -1, "x"],
                         "--profile": ["", "   ", "no_such_profile", "DIR"], "--format": ["xml"],
                         "--out": ["MISSINGDIR/out.csv", "DIR", "EXISTING"]}.items():
        for v in values:
            yield f"run{flag}={v}", run + [flag, v]
    wi = ["whatif", "SC", "--workers", "1", "--out", "OUT"]
    for flag, values in {"--qdiscs": ["", "nonsense", "tbf(rate=abc)", "pfifo,pfifo(limit=-1)", ","],
                         "--duration": ["1e99s", "-1s", "abc", "1e-12s", "0"], "--reps": [1, 0, BIG],
                         "--seed": [-1, BIG], "--on": ["nonsense", "vm.vm9.qdisc", ""],
                         "--set": ["x", "nonsense.key=1", "scenario.duration=1e99s", "vm.vm9.mtu=1500"],
                         "--figure": ["MISSINGDIR/f.png", "DIR"], "--dask": ["notaurl", "local:abc", "local:0",
                                                                            "tcp://", "local:-1"],
                         "--workers": [0, -1], "--metric": ["nonsense"]}.items():
        for v in values:
            args = wi + [flag, v] + ([] if flag == "--qdiscs" else ["--qdiscs", "pfifo,sfq"])
            yield f"whatif{flag}={v}", args
    sw = ["sweep", "SWEEP", "--out", "OUT"]
    for flag, values in {"--workers": [0, -1], "--dask": ["notaurl", "local:abc", "local:0"],
                         "--reps": [0, BIG], "--out": ["EXISTING"]}.items():
        for v in values:
            yield f"sweep{flag}={v}", sw + [flag, v]
    va = ["validate", "--fast", "--only", "thesis", "--report", "OUT/report.md"]
    for flag, values in {"--reps": [0, -1, BIG], "--max-evals": [-1, 0], "--workers": [0, -1],
                         "--report": ["EXISTING/report.md", "DIR"], "--only": ["nonsense"]}.items():
        for v in values:
            yield f"validate{flag}={v}", va + [flag, v]
    fs = ["fit", "samples", "SAMPLES"]
    for flag, values in {"--unit": ["parsecs", "", "5"], "--k-max": [0, -1, BIG], "--param": ["nonsense.param"],
                         "--families": ["nonsense"], "--choose": ["nonsense"], "--where": ["x", "nocol=1"],
                         "--column": ["nocol"], "--seed": [-1, BIG], "--by": ["nocol"],
                         "--criterion": ["x"]}.items():
        for v in values:
            yield f"fit-samples{flag}={v}", fs + [flag, v]
    yield "fit-samples-o-readonly", fs + ["--param", "ovs.lookup", "-o", "/proc/1/p.toml"]
    yield "fit-samples-o-under-a-file", fs + ["--param", "ovs.lookup", "-o", "EXISTING/p.toml"]
    yield "fit-samples-o-existing", fs + ["--param", "ovs.lookup", "-o", "EXISTING"]
    yield "fit-samples-o-without-param", fs + ["-o", "OUT/p.toml"]
    yield "fit-samples-bool-column", ["fit", "samples", "BOOLCSV"]
    yield "fit-samples-corrupt-json", ["fit", "samples", "BADJSON"]
    yield "fit-samples-wrong-columns", ["fit", "samples", "WRONGCOLS"]
    fr = ["fit", "runs", "SAMPLES", "--scenario", "SC", "-p", "ovs.lookup=1us..10us", "-t", "rtt=ping:rtt_mean"]
    for flag, values in {"--max-evals": [-1, 0], "--reps": [0, -1], "--workers": [0], "--bootstrap": [-1],
                         "--rel-sigma": [-1, 0], "-p": ["x", "nonsense.param=1..2", "ovs.lookup=10us..1us"],
                         "-t": ["x", "rtt=nocolon"], "--seed": [-1]}.items():
        for v in values:
            yield f"fit-runs{flag}={v}", fr + [flag, v]
    fe = ["fit", "export", "PROFILE"]
    for flag, values in {"--unit": ["parsecs", ""], "--format": ["x"], "--param": ["nonsense"]}.items():
        for v in values:
            yield f"fit-export{flag}={v}", fe + [flag, v]


FLAG_CASES = list(_flag_cases())


@pytest.mark.parametrize("argv", [a for _, a in FLAG_CASES], ids=[i for i, _ in FLAG_CASES])
def test_bad_option(tmp_path, capsys, argv):
    sc = _write(tmp_path / "sc.toml", SCENARIO)
    sweep = _write(tmp_path / "sweep.toml", {"sweep": {"base": "sc.toml", "reps": 1},
                                             "grid": {"vm.vm1.qdisc": [{"kind": "pfifo"}, {"kind": "sfq"}]}})
    samples = tmp_path / "s.csv"
    samples.write_text("delay_us\n" + "\n".join(str(10 + (i * 7) % 13) for i in range(200)) + "\n")
    existing = tmp_path / "existing.out"
    existing.write_text("keep me\n")
    profile = _write(tmp_path / "prof.toml", PROFILE)
    out = tmp_path / "out"
    out.mkdir()
    subst = {"SC": sc, "SWEEP": sweep, "SAMPLES": samples, "EXISTING": existing, "DIR": tmp_path, "OUT": out,
             "PROFILE": profile,
             "BOOLCSV": _write(tmp_path / "b.csv", "delay\n" + "true\nfalse\n" * 50),
             "BADJSON": _write(tmp_path / "bad.json", '{"delay": [1, 2,'),
             "WRONGCOLS": _write(tmp_path / "w.csv", "a,b\n1,2\n3,4\n")}
    args = []
    for a in argv:
        a = str(a)
        for k, v in subst.items():
            if a == k:
                a = str(v)
            elif a.startswith(k + "/"):
                a = str(v) + a[len(k):]
        args.append(a.replace("MISSINGDIR", str(tmp_path / "missing")))
    line = assert_one_error_line(args, capsys)
    assert existing.read_text() == "keep me\n"          # nothing replaced without --force
    assert "empty" not in line or "BADJSON" not in argv


# -- sweep files --------------------------------------------------------------------------------------------
SWEEP = {"sweep": {"base": "sc.toml", "reps": 1}, "grid": {"vm.vm1.qdisc": [{"kind": "pfifo"}, {"kind": "sfq"}]}}


def _sweep_cases():
    for key, values in {"reps": COUNT_BAD, "seed": [-1, BIG, "abc", [1], 1.5, True], "crn": ["no", 1, [1]],
                        "mode": ["x", 1], "keep_samples": [["nomatch:*"], [1], "x:y", 1],
                        "max_samples": [0, -1, BIG, "x"], "base": ["", 1, "missing.toml", "sweep.toml"],
                        "nonsense": [1], "name": [1, [1]]}.items():
        for v in values:
            doc = copy.deepcopy(SWEEP)
            doc["sweep"][key] = v
            yield f"sweep.{key}={v!r:.30}", doc
    for grid in [{"vm.vm1.qdisc": []}, {"vm.vm1.qdisc": "pfifo"}, {"nonsense": [1]}, {"vm.vm9.qdisc": ["pfifo"]},
                 {"vm.vm1.qdisc": ["nonsense"]}, {"scenario.duration": ["1e99s"]}, {"scenario.duration": [1e-12]},
                 {"nic.eth0.rate": ["1e-30bit"]}, {"scenario.reps": [BIG]}, {"params.ovs.lookup": ["1e99s"]},
                 {"params.nonsense": [1]}, {"workload": [[{"tool": "nonsense", "from": "vm1", "to": "vm2"}]]}]:
        doc = copy.deepcopy(SWEEP)
        doc["grid"] = grid
        yield f"sweep.grid={grid!r:.40}", doc
    for setv in [{"scenario.duration": "1e99s"}, {"nonsense": 1}, {"vm.vm1.mtu": 0}]:
        doc = copy.deepcopy(SWEEP)
        doc["set"] = setv
        yield f"sweep.set={setv!r:.40}", doc
    doc = copy.deepcopy(SWEEP)
    doc["sweep"].update(mode="random", samples=-1)
    yield "sweep.random-samples=-1", doc
    doc = copy.deepcopy(SWEEP)
    doc["sweep"].update(mode="random", samples=2)
    doc["grid"] = {"scenario.duration": {"low": 2, "high": 1}}
    yield "sweep.random-range-inverted", doc
    doc = copy.deepcopy(SWEEP)
    doc["nonsense"] = {"a": 1}
    yield "sweep.unknown-section", doc


SWEEP_CASES = list(_sweep_cases())


@pytest.mark.parametrize("doc", [d for _, d in SWEEP_CASES], ids=[i for i, _ in SWEEP_CASES])
def test_bad_sweep(tmp_path, capsys, doc):
    _write(tmp_path / "sc.toml", SCENARIO)
    path = _write(tmp_path / "sweep.toml", doc)
    assert_one_error_line(["sweep", path, "--workers", "1", "--out", tmp_path / "out"], capsys)


def test_the_corpus_is_several_hundred():
    n = (len(SCENARIO_CASES) + 4 * len(RAW_FILES) + 16 + len(PROFILE_CASES) + len(FLAG_CASES) + len(SWEEP_CASES))
    assert n >= 400, n


def test_a_good_scenario_runs(tmp_path, capsys):
    """The corpus's base files are valid: each bad case fails for its own change."""
    sc = _write(tmp_path / "sc.toml", SCENARIO)
    rc, lines = _run(["run", sc, "--workers", "1", "--format", "csv"], capsys)
    assert rc == 0, lines
    _write(tmp_path / "prof.toml", PROFILE)
    rc, lines = _run(["run", sc, "--workers", "1", "--profile", tmp_path / "prof.toml"], capsys)
    assert rc == 0, lines
    _write(tmp_path / "sweep.toml", SWEEP)
    rc, lines = _run(["sweep", tmp_path / "sweep.toml", "--workers", "1", "--out", tmp_path / "o"], capsys)
    assert rc == 0, lines

    # the new keys' cases start from valid files: an AF_XDP bridge, qperf udp_bw with a send cost, one_thread
    good = copy.deepcopy(SCENARIO)
    good["bridge"][0].update(datapath_type="netdev", port_type="afxdp")
    good["params"] = {"app.send_per_packet": "2us", "app.wakeup": "10us", "ovs.afxdp.ring_size": 64}
    good["workload"] = [{"name": "bw", "tool": "qperf", "test": "udp_bw", "from": "vm1", "to": "vm2", "t": "10ms",
                         "m": 1400},
                        {"name": "tcp", "tool": "iperf", "from": "vm1", "to": "vm2", "P": 2, "t": "10ms",
                         "one_thread": True}]
    rc, lines = _run(["run", _write(tmp_path / "good.toml", good), "--workers", "1", "--format", "csv"], capsys)
    assert rc == 0, lines
    prof = copy.deepcopy(PROFILE)
    prof["state"] = {"speed_index": 1.0, "cpu_busy": 0.02}
    rc, lines = _run(["run", sc, "--workers", "1", "--profile", _write(tmp_path / "busy.toml", prof)], capsys)
    assert rc == 0, lines

