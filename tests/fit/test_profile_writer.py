"""Calibration profiles: TOML writing, provenance, validation (ovssim.fit.profile_writer)."""
import hashlib
import math
import tomllib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ovssim import __version__
from ovssim.errors import ConfigError
from ovssim.fit.profile_writer import build_profile, dumps_toml, read_profile, write_profile
from ovssim.profile import Profile

LONG = {"dist": "empirical", "values": [float(i) + 0.5 for i in range(40)], "unit": "us"}


def _doc(tmp_path, **kw):
    data = tmp_path / "samples.csv"
    data.write_text("delay_us\n1\n2\n")
    params = kw.pop("params", {"ovs.lookup": {"dist": "lognorm", "s": 0.4, "scale": 1.5, "unit": "us"},
                               "ovs.stats": LONG, "vif.kvm-tap.cpu_per_packet": "6us"})
    return build_profile(name="t", params=params, data_files=[data], command="ovssim fit samples x",
                         method="mle", fit={"ks": 0.01, "families": {"lognorm": {"ks": 0.01, "bic": -5.0}}},
                         uncertainty={"vif.kvm-tap.cpu_per_packet": {"std": "0.2us", "ci95": ["5.6us", "6.4us"]}},
                         **kw), data


def test_written_profile_loads_in_the_simulator(tmp_path):
    doc, data = _doc(tmp_path)
    path = write_profile(tmp_path / "calibration" / "t.toml", doc)
    prof = Profile.load(str(path))
    assert prof.name == "t"
    assert math.isclose(prof.dist("ovs.lookup").mean(), 1.5e-6 * math.exp(0.4 ** 2 / 2), rel_tol=1e-9)
    assert prof.time("vif.kvm-tap.cpu_per_packet") == pytest.approx(6e-6)
    assert prof.dist("ovs.stats").cdf(40.0e-6) == pytest.approx(1.0)
    raw = tomllib.loads(path.read_text())
    prov = raw["provenance"]
    assert prov["data"][0]["sha256"] == hashlib.sha256(data.read_bytes()).hexdigest()
    assert prov["command"] == "ovssim fit samples x" and prov["created"].endswith("Z")
    assert raw["profile"]["ovssim_version"] == __version__
    assert raw["fit"]["families"]["lognorm"]["bic"] == -5.0
    assert raw["uncertainty"]["vif.kvm-tap.cpu_per_packet"]["ci95"] == ["5.6us", "6.4us"]
    assert "[params.\"ovs.stats\"]" in path.read_text()      # long arrays get their own table
    assert read_profile(path)["params"]["ovs.stats"] == LONG


@pytest.mark.parametrize("mutate, match", [
    (lambda d: d.pop("provenance"), r"missing \[provenance\]"),
    (lambda d: d["provenance"].pop("command"), "missing field 'command'"),
    (lambda d: d["profile"].pop("ovssim_version"), "missing field 'ovssim_version'"),
    (lambda d: d["provenance"].update(data=["file.csv"]), "provenance.data"),
    (lambda d: d["params"].update({"ovs.lookup": {"dist": "lognorm", "s": -1, "scale": "2us"}}), "ovs.lookup"),
    (lambda d: d["params"].update({"ovs.lookup": {"dist": "nosuch", "x": 1}}), "unknown distribution"),
    (lambda d: d.update(params={}), "empty"),
])
def test_malformed_profiles_give_clear_errors(tmp_path, mutate, match):
    doc, _ = _doc(tmp_path)
    mutate(doc)
    with pytest.raises(ConfigError, match=match):
        write_profile(tmp_path / "bad.toml", doc)


def test_read_profile_errors(tmp_path):
    with pytest.raises(ConfigError, match="no such profile"):
        read_profile(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[profile\nname = 1")
    with pytest.raises(ConfigError, match="not valid TOML"):
        read_profile(bad)


_keys = st.text(alphabet="abcxyz.-_:\" \\é", min_size=1, max_size=12)
_scalars = st.one_of(st.floats(allow_nan=False, width=64), st.integers(-2**60, 2**60), st.booleans(),
                     st.text(max_size=20))
_values = st.one_of(_scalars, st.lists(st.floats(allow_nan=False), max_size=30),
                    st.dictionaries(_keys, _scalars, max_size=4))


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(_keys, _values, max_size=6))
def test_toml_writer_round_trips(table):
    doc = {"fit": table}
    assert tomllib.loads(dumps_toml(doc)) == ({"fit": table} if table else {"fit": {}})


def test_directory_provenance_hash_tracks_content(tmp_path):
    from ovssim.fit.profile_writer import data_entry
    d = tmp_path / "campaign"
    (d / "samples").mkdir(parents=True)
    (d / "results.csv").write_text("a\n1\n")
    (d / "samples" / "r1.csv").write_text("x\n")
    first = data_entry(d)
    assert first["kind"] == "directory" and len(first["sha256"]) == 64
    assert data_entry(d) == first
    (d / "samples" / "r1.csv").write_text("y\n")
    assert data_entry(d)["sha256"] != first["sha256"]
