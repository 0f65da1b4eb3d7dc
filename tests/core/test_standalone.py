"""Elements work alone in a user's simpy.Environment, wired ns.py-style (the README's example)."""
import numpy as np
import simpy

from ovssim.distributions import Sampler
from ovssim.packet import FlowKey, Packet
from ovssim.path.base import Sink
from ovssim.path.cpu import CpuPool
from ovssim.path.datapath import OvsDatapath
from ovssim.path.port import EgressPort
from ovssim.path.vif import VifBackend


def test_readme_example_real_time_delivery():
    env = simpy.Environment()
    rng = np.random.default_rng(1)
    host = CpuPool(env, cores=2)
    ovs = OvsDatapath(env, "br0", host, stats=Sampler("2us", rng), lookup=Sampler("1us", rng),
                      actions=Sampler("1us", rng), upcall=Sampler("100us", rng))
    sink = Sink(env, keep=True)
    nic = EgressPort(env, 100e6, {"kind": "pfifo"}, sink, name="eth0", prop_delay=1e-6)
    ovs.add_port("vm1-vif", Sink(env))
    uplink = ovs.add_port("eth0", nic)
    ovs.fdb[(None, "remote")] = (uplink, 0.0)
    vif = VifBackend(env, "kvm-tap", host, delay=Sampler("5us", rng), cpu_per_packet=3e-6,
                     cpu_per_byte=0.0, out=ovs.ports[0])

    def user_source(env):
        for i in range(3):
            vif.put(Packet(FlowKey("vm1", "remote", 1, 2, "udp"), 1000, env.now, seq=i))
            yield env.timeout(1e-3)

    seen = []
    orig = sink.put
    sink.put = lambda p: (seen.append(env.now), orig(p))   # a user's sink reads env.now
    env.process(user_source(env))
    env.run()
    # first packet: vif 3+5us, miss: 3us stats+lookup, 100us upcall, 1us actions, 80.24us wire, 1us prop
    tx = (1000 + 24) * 8 / 100e6
    assert abs(seen[0] - (8e-6 + 3e-6 + 100e-6 + 1e-6 + tx + 1e-6)) < 1e-12
    # later packets hit the flow cache: 4us instead of 104us
    assert abs(seen[1] - (1e-3 + 8e-6 + 4e-6 + tx + 1e-6)) < 1e-12
    assert ovs.hit == 2 and ovs.missed == 1
