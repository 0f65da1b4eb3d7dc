"""Measured and simulated ping RTT quantiles under load of the 2026-11-28 UML campaigns (issue 22), per scheduler,
with optional parameter overrides: the what-ifs of data/uml/2026-11-28/uml-latency/README.md.

    OV='{"qdisc.watchdog_handoff": {"dist": "empirical", ...}}' \\
        .venv/bin/python validation/uml_latency/ping_quantiles.py [PROFILE] [QDISC,QDISC,...] [REPS]

PROFILE defaults to calibration/uml_linux61_quiet.toml (an empty string takes the default); the simulations are
the report's thin-flow / OVS configurations (ovssim/validate/uml.py ``_config``), seeds 2034 / 2033.
"""
import json
import os
import sys

import numpy as np

from ovssim.validate import uml
from ovssim.validate.compare import ks_distance
from ovssim.validate.load import probe_timing
from ovssim.validate.simulate import Runner

np.set_printoptions(precision=3, suppress=True, linewidth=200)
prof = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] else str(uml.CALIBRATION / "uml_linux61_quiet.toml")
qs = sys.argv[2].split(",") if len(sys.argv) > 2 else ["pfifo_fast", "sfq", "codel", "fq_codel"]
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 2
overrides = json.loads(os.environ.get("OV", "{}"))
PCT = [0, 5, 10, 25, 50, 75, 90, 95, 99]
print("percentiles", PCT, "(ms)")
for data, bridge in ((uml.DATA_THIN, "linux"), (uml.DATA_OVS, "ovs")):
    df, rtts = uml._load(uml.TestbedResult("x", "x"), data, "x")
    cfgs = {q: uml._config(q, *probe_timing(df, bridge, q)[:2], bridge=bridge, udp=True) for q in qs}
    meas = {q: uml._measured(df, rtts, c) for q, c in cfgs.items()}
    sims = Runner(1).run(list(cfgs.values()), prof, overrides=overrides, reps=reps,
                         seed=2034 if bridge == "linux" else 2033, sample_keys={"ping:rtt"})
    for q, c in cfgs.items():
        m = meas[q]["rtt"]
        s = np.asarray(sims[c.label].samples["ping:rtt"]) * 1e3
        print(bridge, q, "meas", np.percentile(m, PCT), f"mean {m.mean():.3f}")
        print(bridge, q, "sim ", np.percentile(s, PCT), f"mean {s.mean():.3f}", f"KS {ks_distance(m, s):.3f}",
              f"cpu {sims[c.label].values('system', 'cpu_util.local').mean():.1f} %")
