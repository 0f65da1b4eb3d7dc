"""A replication is a pure function of scenario, profile, seed and index -- also across processes whose str
hashes are salted differently (``PYTHONHASHSEED``, random per process by default; the validation's worker
processes each have their own): no random stream may be seeded with the built-in ``hash()``.

Found in review (session 15): ``ovssim validate --no-fit --only afxdp`` run twice on the same commit gave
BBR throughputs of 892.0 and 891.7 Mbit/s for the same rows: ``tcp/bbr.py`` seeded each flow's random stream
(its PROBE_BW phase) with ``hash(flow)``; it now uses ``path.cpu.flow_key`` (CRC-32 of the 5-tuple).
"""
import os
import subprocess
import sys

# four BBR flows through one Linux bridge: each flow's PROBE_BW phase is drawn from its own random stream
SCRIPT = """
from ovssim.runner import run_scenario
d = {"scenario": {"name": "salt", "duration": "0.3s", "reps": 1, "seed": 3},
     "host": [{"name": "h", "cores": 2}],
     "bridge": [{"name": "br", "host": "h", "kind": "linux"}],
     "vm": [{"name": "a", "host": "h", "vif": "container-veth", "bridge": "br"},
            {"name": "b", "host": "h", "vif": "container-veth", "bridge": "br"}],
     "workload": [{"name": "bbr", "tool": "iperf", "proto": "tcp", "C": "bbr", "P": 4, "t": "0.25s",
                   "from": "a", "to": "b"}]}
pr = run_scenario(d).per_rep
print(pr.to_csv(index=False))
"""


def test_results_do_not_depend_on_the_processes_hash_salt():
    outs = set()
    for salt in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": salt}
        outs.add(subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                                check=True, timeout=120).stdout)
    assert len(outs) == 1
