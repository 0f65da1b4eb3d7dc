"""Re-run the fast subset of the validation and compare with the committed report's figures.

The fast subset uses the committed calibration/*.toml (no fitting) and the same seeds and replications as
``ovssim validate``, so its simulated values are those of validation/results.json unless the simulator or
the data changed.  The test fails if an error figure got worse than the committed one by more than its
noise (the simulated CI's half-width relative to the measured value, plus the measured CI's, since
data/local may have gained runs since the report was generated).
"""
import json
import math

import pytest

from ovssim.validate.base import CALIBRATION, ROOT, Settings
from ovssim.validate.report import run_testbeds

RESULTS = ROOT / "validation" / "results.json"


@pytest.mark.skipif(not RESULTS.is_file(), reason="no committed validation/results.json")
def test_fast_subset_not_worse_than_committed(tmp_path):
    committed = json.loads(RESULTS.read_text())
    only = [t for t, prof in (("thesis", "thesis_kvm"), ("local", "local_netns"), ("load", "local_netns"),
                              ("interim", "openstack_xenserver_interim"), ("xenserver", "xenserver_two_host"),
                                 ("chains", "chained_bridges_desktop"))
            if (CALIBRATION / f"{prof}.toml").is_file()]
    settings = Settings(fit=False, fast=True, reps=committed["settings"]["reps"], workers=2,
                        figures_dir=tmp_path)
    results = run_testbeds(settings, only, progress=lambda m: None)
    old = {(name, r["config"], r["metric"]): r for name, tb in committed["testbeds"].items() for r in tb["rows"]}
    checked, worse = 0, []
    for tb in results:
        for r in tb.rows:
            o = old.get((tb.name, r.config, r.metric))
            if o is None or o["error"] is None or not math.isfinite(r.error):
                continue
            meas_noise = 0.0
            if not r.kind.startswith("ks") and math.isfinite(r.measured_lo) and r.measured:
                meas_noise = (r.measured_hi - r.measured_lo) / 2 / abs(r.measured)
            tol = max(r.noise, o["noise"] or 0.0) + meas_noise + 1e-9
            checked += 1
            if r.error > o["error"] + tol:
                worse.append(f"{tb.name} {r.config} {r.metric}: error {r.error:.4f} > committed "
                             f"{o['error']:.4f} + noise {tol:.4f}")
    assert checked >= 8, f"only {checked} rows matched the committed report"
    assert not worse, "\n".join(worse)
