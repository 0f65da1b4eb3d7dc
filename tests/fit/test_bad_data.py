"""Bad delay data gives one clear DataError (ovssim.fit.samples)."""
import numpy as np
import pandas as pd
import pytest

from ovssim.errors import DataError
from ovssim.fit.families import fit_samples
from ovssim.fit.samples import check_delays, read_samples


@pytest.mark.parametrize("values, match", [
    ([], "empty"),
    ([1e-5, float("nan"), 2e-5], "NaN"),
    ([1e-5, -2e-6, 3e-5], "negative"),
    (["1e-5", "fast", "2e-5"], "non-numeric"),
    ([2.5e-5] * 50, "single repeated value"),
    ([12.0, 15.0, 30.0], "plausible"),          # microseconds read as seconds
    ([1e-12, 2e-12, 3e-12], "plausible"),       # nanoseconds read as kiloseconds the other way
    ([1e-5], "at least 2"),
])
def test_bad_values_are_rejected(values, match):
    with pytest.raises(DataError, match=match):
        check_delays(values, unit="s")


def test_error_names_the_fix():
    with pytest.raises(DataError) as exc:
        check_delays([12.0, 15.0, 30.0], unit="s")
    assert "--unit" in str(exc.value)


def test_fit_samples_rejects_bad_data_too():
    with pytest.raises(DataError):
        fit_samples(np.array([1e-5, np.inf, 2e-5]))


def test_files(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(DataError, match="empty"):
        read_samples(empty)
    with pytest.raises(DataError, match="no such file"):
        read_samples(tmp_path / "missing.csv")
    two = tmp_path / "two.csv"
    pd.DataFrame({"a": [1, 2], "b": [3, 4]}).to_csv(two, index=False)
    with pytest.raises(DataError, match="--column"):
        read_samples(two)
    with pytest.raises(DataError, match="no column"):
        read_samples(two, column="delay")
    words = tmp_path / "words.csv"
    words.write_text("delay_us\n12\n13\nabc\n")
    with pytest.raises(DataError, match="row 2"):
        read_samples(words)


def test_units_from_suffix_unit_column_and_plain_numbers(tmp_path):
    rng = np.random.default_rng(0)
    us = rng.uniform(10, 40, 100)
    a = tmp_path / "a.csv"
    pd.DataFrame({"delay_us": us}).to_csv(a, index=False)
    assert np.allclose(read_samples(a)[()], us * 1e-6)
    b = tmp_path / "b.csv"
    pd.DataFrame({"value": us, "unit": "us"}).to_csv(b, index=False)
    assert np.allclose(read_samples(b)[()], us * 1e-6)
    c = tmp_path / "c.txt"
    c.write_text("\n".join(repr(float(v)) for v in us))
    assert np.allclose(read_samples(c, unit="us")[()], us * 1e-6)
    d = tmp_path / "d.csv"
    pd.DataFrame({"value": us, "unit": ["us"] * 50 + ["ms"] * 50}).to_csv(d, index=False)
    with pytest.raises(DataError, match="mixes"):
        read_samples(d)


def test_groups_and_collector_campaign_directory(tmp_path):
    rng = np.random.default_rng(1)
    (tmp_path / "samples").mkdir()
    for run, qdisc in (("r1", "sfq"), ("r2", "codel")):
        df = pd.DataFrame({"run_id": run, "series": "rtt", "index": range(50),
                           "value": rng.uniform(100, 300, 50), "unit": "us"})
        df = pd.concat([df, pd.DataFrame({"run_id": run, "series": "jitter", "index": [0],
                                          "value": [5.0], "unit": "us"})])
        df.to_csv(tmp_path / "samples" / f"{run}.csv.gz", index=False)
    pd.DataFrame({"run_id": ["r1", "r1", "r2"], "qdisc": ["sfq", "sfq", "codel"],
                  "metric": ["a", "b", "a"], "value": [1, 2, 3], "unit": ["x"] * 3}
                 ).to_csv(tmp_path / "results.csv", index=False)
    with pytest.raises(DataError, match="series"):
        read_samples(tmp_path)
    groups = read_samples(tmp_path, by=["qdisc"], where={"series": "rtt"})
    assert set(groups) == {("codel",), ("sfq",)}
    assert all(v.size == 50 and v.max() < 301e-6 for v in groups.values())
    with pytest.raises(DataError, match="no rows match"):
        read_samples(tmp_path, where={"series": "nope"})
