"""TCP Small Queues when a veth keeps the sent skb charged (Linux 6.1, ``veth_orphans = false``).

Measured inside UML's 6.1 (data/uml/2026-11-25/uml-window, 22 ``ss -tinm`` samples of four CUBIC
senders behind a 20 Mbit/s HTB on the bridge port): unacked was 0.40-0.87 of cwnd (mean 0.59) while
data waited unsent, and skmem t = unacked x 2728 -- every queued segment charged, ``tcp_small_queue_check``
(limit 2 x the truesize of the next skb, cut to the window's quota) holding the rest back."""
import simpy

from ovssim.profile import Profile
from ovssim.runner import ARP_SETTLE, RunContext, make_workload, run_until, rng_factory
from ovssim.scenario import from_dict
from ovssim.topology import build
from ovssim.validate import uml
from ovssim.validate.base import CALIBRATION


def test_senders_behind_a_shaped_bridge_port_are_held_by_tsq_not_by_cwnd():
    cfg = uml._config("pfifo_fast", 0.01, 1.0)
    sc = from_dict(cfg.scenario, file="<test>")
    prof = Profile.load(str(CALIBRATION / "local_netns_host.toml"))
    env = simpy.Environment()
    rng = rng_factory(7, 0)
    topo = build(env, sc, prof, rng)
    for wt in sc.workloads:
        if wt["name"] != "tcp":
            continue
        iperf = wl = make_workload(wt)
        wl.start(RunContext(env, topo.endpoints[wt["from"]], topo.endpoints[wt["to"]], sc.duration,
                            rng=lambda n: rng(f"w.{n}"), start_at=ARP_SETTLE, extra={"profile": prof}))
    senders, ratios, charged = [], [], []

    def sample(env):
        yield env.timeout(ARP_SETTLE + 1.0)
        senders.extend(c.sender for c, _ in iperf.streams)
        for _ in range(50):
            for s in senders:
                flight = s.q.packets_out
                if flight and s.wq.write_seq > s.snd_nxt:          # data waiting unsent
                    ratios.append(flight / s.cwnd)
                    charged.append((flight, s.wmem_queued))
            yield env.timeout(0.05)
    env.process(sample(env))
    run_until(env, ARP_SETTLE + 3.6)
    assert len(senders) == 4 and len(ratios) > 100
    mean = sum(ratios) / len(ratios)
    print(f"in flight / cwnd {mean:.2f}")
    assert 0.40 <= mean <= 0.87, mean              # within the measured samples (cwnd-limited: 1.0)
    # each queued segment charged its own truesize: 6.1's 1280-byte head + 1448, as ss -tinm showed in UML
    # (skmem t = unacked x 2728); in flight and no longer charged is at most the segment or two the receiver
    # has and not yet ACKed (its every-second-segment ACK; UML's 22 samples showed none)
    assert all(wmem % 2728 == 0 for _, wmem in charged)
    assert all(0 <= flight - wmem // 2728 <= 2 for flight, wmem in charged)
    assert sum(flight == wmem // 2728 for flight, wmem in charged) > len(charged) // 3
