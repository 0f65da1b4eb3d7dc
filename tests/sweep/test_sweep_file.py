"""Sweep files: point expansion, identities and seeds, and one clear error for each kind of mistake."""

import pytest

from ovssim.errors import ConfigError
from ovssim.sweep import load_sweep, point_id, run_id

from sweep_helpers import write_sweep


def test_grid_is_the_cartesian_product_with_stable_ids(grid_sweep):
    sw = load_sweep(grid_sweep)
    assert len(sw.points) == 4 and sw.total == 8
    changes = [p.changes for p in sw.points]
    assert {"vm.vm1.qdisc,vm.vm2.qdisc": {"kind": "bfifo"}, "workload.udp.b": "20mbit"} in changes
    # identity is the canonical changes, independent of key order
    a = point_id({"x.y.z": 1, "a.b.c": 2})
    assert a == point_id({"a.b.c": 2, "x.y.z": 1})
    assert len({p.id for p in sw.points}) == 4
    assert load_sweep(grid_sweep).points[2].id == sw.points[2].id
    assert run_id(sw.points[0].id, 3).endswith("-3")
    assert sw.points[0].label == "qdisc=pfifo b=20mbit"


def test_crn_shares_seeds_across_points_and_independent_mode_does_not(tmp_path, grid_sweep):
    sw = load_sweep(grid_sweep)
    tasks = list(sw.tasks())
    assert len(tasks) == 8 and {t.seed for t in tasks} == {11}
    # replication-major order: every point's rep 0 before any rep 1
    assert [t.rep for t in tasks] == [0, 0, 0, 0, 1, 1, 1, 1]
    p = write_sweep(tmp_path, (tmp_path / "sw.toml").read_text().replace("seed = 11", "seed = 11\ncrn = false"),
                    name="indep.toml")
    ind = load_sweep(p)
    seeds = {t.point: t.seed for t in ind.tasks()}
    assert len(set(seeds.values())) == 4
    # a point's seed depends on its identity only: dropping other points does not change it
    q = write_sweep(tmp_path, (tmp_path / "indep.toml").read_text().replace('"40mbit"', ""), name="fewer.toml")
    fewer = load_sweep(q)
    for t in fewer.tasks():
        assert t.seed == seeds[t.point]


def test_list_and_random_modes(tmp_path):
    p = write_sweep(tmp_path, '''
        [sweep]
        base = "tiny.toml"
        mode = "list"
        [[point]]
        "vm.vm2.qdisc" = {kind = "bfifo", limit = 30000}
        [[point]]
        "bridge.br0.kind" = "linux"
        "scenario.duration" = "0.2s"
    ''')
    sw = load_sweep(p)
    assert [p.label for p in sw.points] == ["qdisc=bfifo(limit=30000)", "bridge=linux duration=0.2s"]
    assert sw.reps == 2            # the base scenario's reps
    body = '''
        [sweep]
        base = "tiny.toml"
        mode = "random"
        samples = 6
        seed = {seed}
        [grid]
        "vm.vm2.qdisc.limit" = {{low = 10, high = 1000, int = true, log = true}}
        "workload.udp.b" = {{low = 5, high = 50, unit = "mbit"}}
        "bridge.br0.kind" = ["ovs", "linux"]
    '''
    a = load_sweep(write_sweep(tmp_path, body.format(seed=1), name="r1.toml"))
    b = load_sweep(write_sweep(tmp_path, body.format(seed=1), name="r2.toml"))
    c = load_sweep(write_sweep(tmp_path, body.format(seed=2), name="r3.toml"))
    assert [p.changes for p in a.points] == [p.changes for p in b.points]
    assert [p.changes for p in a.points] != [p.changes for p in c.points]
    for pt in a.points:
        assert 10 <= pt.changes["vm.vm2.qdisc.limit"] <= 1000
        assert pt.changes["workload.udp.b"].endswith("mbit")
        assert pt.changes["bridge.br0.kind"] in ("ovs", "linux")


BAD = [
    ("[sweep\nbase = 1", "not valid TOML"),
    ('[grid]\n"vm.vm1.qdisc" = ["pfifo"]', "missing [sweep]"),
    ('[sweep]\nbase = "tiny.toml"\nrepz = 3', "unknown key 'repz'"),
    ('[sweep]\nbase = "nope.toml"', "not found"),
    ('[sweep]\nbase = "tiny.toml"\nmode = "latin"', "unknown mode"),
    ('[sweep]\nbase = "tiny.toml"\nreps = 0', "reps must be"),
    ('[sweep]\nbase = "tiny.toml"\n[grid]\n"vm.vm1.qdisc" = "sfq"', "non-empty list"),
    ('[sweep]\nbase = "tiny.toml"\n[grid]\n"vmm.vm1.qdisc" = ["sfq"]', "not a scenario key"),
    ('[sweep]\nbase = "tiny.toml"\n[grid]\n"vm.vm9.qdisc" = ["pfifo"]', "no vm named 'vm9'"),
    ('[sweep]\nbase = "tiny.toml"\n[grid]\n"vm.vm1.qdisc" = [{kind = "pfifo"}, {kind = "wfq"}]', "unknown qdisc kind 'wfq'"),
    ('[sweep]\nbase = "tiny.toml"\n[grid]\n"bridge.br0.kind" = ["ovs", "vde"]', "unknown bridge kind"),
    ('[sweep]\nbase = "tiny.toml"\nmode = "random"\n[grid]\n"bridge.br0.kind" = ["ovs"]', "needs samples"),
    ('[sweep]\nbase = "tiny.toml"\nmode = "list"', "needs [[point]]"),
    ('[sweep]\nbase = "tiny.toml"\n[extras]\na = 1', "unknown section [extras]"),
]


@pytest.mark.parametrize("body,expect", BAD)
def test_malformed_sweep_files_give_one_clear_error(tmp_path, body, expect):
    p = write_sweep(tmp_path, body)
    with pytest.raises(ConfigError) as exc:
        load_sweep(p)
    msg = str(exc.value)
    assert expect in msg
    assert "fix:" in msg and "\n" not in msg
    assert str(p) in msg or "tiny.toml" in msg


def test_cli_prints_one_line_for_a_bad_sweep(tmp_path):
    from ovssim.cli import main
    p = write_sweep(tmp_path, '[sweep]\nbase = "tiny.toml"\n[grid]\n"vm.vm1.qdisc" = [{kind = "wfq"}]')
    import contextlib
    import io
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = main(["sweep", str(p), "--out", str(tmp_path / "o")])
    assert status == 2
    lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("ovssim: error:") and "wfq" in lines[0]
    assert not (tmp_path / "o").exists()
