"""A profile's ``base`` named by name resolves beside the profile first (ovssim/profile.py).

``ovssim validate`` without ``--write-profiles`` writes the profiles it fits beside the report; a derived one
(``local_netns``, base ``local_netns_host``) must then take the freshly fitted base there, not the committed
file of the same name in calibration/.
"""
from __future__ import annotations

import pytest

from ovssim.profile import Profile


def _write(path, name, base, value):
    path.write_text(f'[profile]\nname = "{name}"\nbase = "{base}"\n\n[params]\n"host.idle_exit" = "{value}"\n')


def test_a_base_named_by_name_is_the_sibling_file(tmp_path, monkeypatch):
    committed, fresh = tmp_path / "calibration", tmp_path / "report" / "calibration"
    committed.mkdir()
    fresh.mkdir(parents=True)
    _write(committed / "local_netns_host.toml", "local_netns_host", "default", "11us")
    _write(fresh / "local_netns_host.toml", "local_netns_host", "default", "22us")
    fresh.joinpath("local_netns.toml").write_text('[profile]\nname = "local_netns"\nbase = "local_netns_host"\n')
    monkeypatch.chdir(tmp_path)                   # calibration/ of the working directory holds the other one
    p = Profile.load(str(fresh / "local_netns.toml"))
    assert p.time("host.idle_exit") == 22e-6
    # a profile whose base has no sibling still finds it in calibration/
    other = tmp_path / "elsewhere"
    other.mkdir()
    other.joinpath("x.toml").write_text('[profile]\nname = "x"\nbase = "local_netns_host"\n')
    assert Profile.load(str(other / "x.toml")).time("host.idle_exit") == 11e-6


def test_default_and_a_profile_named_like_its_base_keep_their_meaning(tmp_path, monkeypatch):
    """``base = "default"`` is the embedded default even beside a default.toml; an overlay named like its base
    (myexp/local_netns_host.toml, base = "local_netns_host") takes the calibration/ one, not itself."""
    committed, exp = tmp_path / "calibration", tmp_path / "myexp"
    committed.mkdir()
    exp.mkdir()
    _write(committed / "local_netns_host.toml", "local_netns_host", "default", "11us")
    exp.joinpath("default.toml").write_text('[profile]\nname = "default"\n\n[params]\n"host.idle_exit_after" = "9ms"\n')
    _write(exp / "a.toml", "a", "default", "33us")
    exp.joinpath("local_netns_host.toml").write_text('[profile]\nname = "local_netns_host"\nbase = "local_netns_host"\n'
                                                     '\n[params]\n"host.cold_factor" = 2.0\n')
    monkeypatch.chdir(tmp_path)
    a = Profile.load(str(exp / "a.toml"))
    assert a.time("host.idle_exit") == pytest.approx(33e-6) and a.time("host.idle_exit_after") == 4e-3
    overlay = Profile.load(str(exp / "local_netns_host.toml"))
    assert overlay.factor("host.cold_factor") == 2.0 and overlay.time("host.idle_exit") == pytest.approx(11e-6)
