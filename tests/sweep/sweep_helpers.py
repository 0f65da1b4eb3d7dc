"""Small scenarios and sweeps for the sweep tests (runs of 0.3 s simulated time)."""
from pathlib import Path
import textwrap


SCENARIO = textwrap.dedent('''
    [scenario]
    name = "tiny"
    duration = "0.3s"
    reps = 2
    seed = 3

    [[host]]
    name = "h1"
    cores = 2
    [[host]]
    name = "h2"
    cores = 2

    [[bridge]]
    name = "br0"
    host = "h1"
    uplink = "eth0"
    [[bridge]]
    name = "br1"
    host = "h2"
    uplink = "eth1"

    [[nic]]
    name = "eth0"
    host = "h1"
    rate = "100mbit"
    switch = "sw0"
    qdisc = { kind = "pfifo" }
    [[nic]]
    name = "eth1"
    host = "h2"
    rate = "100mbit"
    switch = "sw0"
    qdisc = { kind = "pfifo" }
    [[switch]]
    name = "sw0"

    [[vm]]
    name = "vm1"
    host = "h1"
    bridge = "br0"
    qdisc = { kind = "pfifo" }
    [[vm]]
    name = "vm2"
    host = "h2"
    bridge = "br1"
    qdisc = { kind = "pfifo" }

    [[workload]]
    name = "udp"
    tool = "iperf"
    proto = "udp"
    from = "vm1"
    to = "vm2"
    b = "30mbit"
    l = "1470b"

    [[workload]]
    name = "ping"
    tool = "ping"
    from = "vm1"
    to = "vm2"
    i = "0.02s"
''')


def write_sweep(tmp_path: Path, body: str, name: str = "sw.toml") -> Path:
    (tmp_path / "tiny.toml").write_text(SCENARIO)
    p = tmp_path / name
    p.write_text(textwrap.dedent(body))
    return p


GRID = '''
    [sweep]
    base = "tiny.toml"
    reps = 2
    seed = 11
    [grid]
    "vm.vm1.qdisc,vm.vm2.qdisc" = [{kind = "pfifo"}, {kind = "bfifo"}]
    "workload.udp.b" = ["20mbit", "40mbit"]
'''


