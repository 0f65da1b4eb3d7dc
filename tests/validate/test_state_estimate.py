"""The old datasets' machine states on the collector's scale (ovssim.validate.local.measured_state)."""
import pytest

from ovssim.validate.local import (BUSY25, MEASURED_STATES, QUIET25, REFERENCE_PING, load_measured,
                                   measured_state, without_offloads)

pytestmark = pytest.mark.skipif(not all((w[0] / "results.csv.gz").is_file() for w in MEASURED_STATES),
                                reason="the 25-Nov local-offloads campaigns are not in data/")


@pytest.mark.parametrize("which", [QUIET25, BUSY25], ids=["quiet25", "busy25"])
def test_a_measured_campaign_estimated_as_if_unmeasured_lands_near_its_measured_index(which, capsys):
    """The estimate (Linux-bridge TCP throughput x measured index per bit/s of the measured campaigns) of a
    campaign whose index the collector measured: within 20 % of it (the two campaigns' index per bit/s
    differ by ~30 %: CPU speed is not the only thing throughput follows)."""
    df = without_offloads(load_measured(which[0]))
    measured = measured_state(df, which[0])
    estimated = measured_state(df)                      # as if the campaign carried no machine state
    with capsys.disabled():
        print(f"\n  {which[3]}: measured {measured['speed_index']:.3f}, estimated {estimated['speed_index']:.3f}")
    assert "estimated on the collector's scale" in estimated["note"] and "mean of the collector" in measured["note"]
    assert estimated["speed_index"] == pytest.approx(measured["speed_index"], rel=0.2)
    assert measured["latency_index"] == estimated["latency_index"] > 0
    assert measured["cpu_busy"] == estimated["cpu_busy"]


def test_the_latency_index_is_relative_to_the_reference_ping():
    df = without_offloads(load_measured(QUIET25[0]))
    sel = df[(df["bridge"] == "linux") & (df["chain"] == 1) & (df["workload"] == "ping") & (df["metric"] == "rtt_mean")]
    assert measured_state(df, QUIET25[0])["latency_index"] == pytest.approx(REFERENCE_PING / sel["value"].mean(),
                                                                           abs=1e-3)
