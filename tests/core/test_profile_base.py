"""A profile's ``base`` named by name resolves beside the profile first (ovssim/profile.py).

``ovssim validate`` without ``--write-profiles`` writes the profiles it fits beside the report; a derived one
(``local_netns``, base ``local_netns_host``) must then take the freshly fitted base there, not the committed
file of the same name in calibration/.
"""
from __future__ import annotations

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
