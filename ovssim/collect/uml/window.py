"""What bounds a CUBIC flow's in-flight data inside a UML instance (issue 22): ``ss -tinm`` samples.

``python -m ovssim.collect.uml.window OUT [QDISC]`` boots one instance and runs :data:`SCRIPT`
there: the campaign's Linux-bridge testbed (ns ``w-vm1``/``w-vm2`` over veths into ``br0`` in
``w-sw``, transmit checksum offload off on each VM's eth0 as in data/campaigns/uml-schedulers.toml),
a 20 Mbit/s HTB class with a pfifo_fast leaf (or ``tbf``) on the receiver's port ``vif2``, four
iperf3 CUBIC flows for 8 s and ping every 10 ms from 1 s on; every 200 ms ``ss -tinm`` on both
ends (cwnd, ssthresh, unacked, notsent, snd_wnd, rcv_space, rcv_ssthresh, skmem) and the
bottleneck's ``tc -s qdisc``.  Before the run it prints the instance's TCP sysctls and the veths'
features (``ip -d link``: gso_max_size, gso_max_segs; ``ethtool -k``: TSO/GSO/checksum) -- the
inputs of tcp_tso_autosize and the buffer autotuning that the model takes from a profile.

Output: ``raw.txt`` and ``results.json`` (parsed samples), ``metadata.json``.
"""
from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

from ...atomic import write_atomic
from .collect import read_raw, run_probe, store_probe

# the campaign's Linux-bridge testbed inside the instance: two namespaces on a bridge, the bottleneck's qdisc
# (QDISC) on vif2; ovssim/collect/uml/latency.py builds on it too
TESTBED = textwrap.dedent("""\
    set -e
    ip netns add w-sw; ip -n w-sw link set lo up
    ip -n w-sw link add br0 type bridge stp_state 0 forward_delay 0; ip -n w-sw link set br0 up
    for i in 1 2; do
      ip netns add w-vm$i; ip -n w-vm$i link set lo up
      ip -n w-sw link add vif$i mtu 1500 type veth peer name eth0 mtu 1500 netns w-vm$i
      ip -n w-vm$i addr add 10.97.0.$i/24 dev eth0; ip -n w-vm$i link set eth0 up
      ip -n w-sw link set vif$i up; ip -n w-sw link set vif$i master br0
      ip netns exec w-vm$i ethtool -K eth0 tx off >/dev/null
    done
    QDISC
    """)

SCRIPT = TESTBED + textwrap.dedent("""\
    ip netns exec w-vm1 ping -c 3 -i 0.2 -q 10.97.0.2 >/dev/null
    echo "== kernel $(uname -r)"
    for k in tcp_rmem tcp_wmem tcp_moderate_rcvbuf tcp_limit_output_bytes tcp_autocorking \\
             tcp_notsent_lowat tcp_congestion_control tcp_adv_win_scale tcp_min_tso_segs tcp_tso_rtt_log \\
             tcp_pacing_ss_ratio tcp_pacing_ca_ratio; do
      echo "== sysctl net.ipv4.$k = $(ip netns exec w-vm1 cat /proc/sys/net/ipv4/$k 2>/dev/null | tr '\\t' ' ')"
    done
    echo "== core.rmem_max = $(cat /proc/sys/net/core/rmem_max) wmem_max = $(cat /proc/sys/net/core/wmem_max)"
    echo "== link vm1 $(ip -n w-vm1 -d link show eth0 | grep -o 'gso_max_size [0-9]* gso_max_segs [0-9]*')"
    echo "== link sw $(ip -n w-sw -d link show vif2 | grep -o 'gso_max_size [0-9]* gso_max_segs [0-9]*')"
    echo "== features vm1 $(ip netns exec w-vm1 ethtool -k eth0 | grep -E '^(tx-checksumming|scatter-gather|tcp-segmentation-offload|generic-segmentation-offload|generic-receive-offload):' | tr '\\n' ' ')"
    echo "== features vm2 $(ip netns exec w-vm2 ethtool -k eth0 | grep -E '^(tx-checksumming|scatter-gather|tcp-segmentation-offload|generic-segmentation-offload|generic-receive-offload):' | tr '\\n' ' ')"
    ip netns exec w-vm2 iperf3 -s -1 -D
    sleep 0.5
    T0=$(cut -d' ' -f1 /proc/uptime)
    ip netns exec w-vm1 iperf3 -c 10.97.0.2 -P 4 -C cubic -t 8 -J > /tmp/iperf.json &
    IP=$!
    (sleep 1; ip netns exec w-vm1 ping -c 300 -i 0.01 10.97.0.2 > /tmp/ping.txt) &
    PP=$!
    for n in $(seq 1 45); do
      t=$(cut -d' ' -f1 /proc/uptime)
      echo "== sample $t"
      echo "-- snd"; ip netns exec w-vm1 ss -tinmH dst 10.97.0.2 dport = :5201
      echo "-- rcv"; ip netns exec w-vm2 ss -tinmH sport = :5201
      echo "-- tc $(ip -n w-sw -s qdisc show dev vif2 | grep -o 'Sent [0-9]* bytes [0-9]* pkt (dropped [0-9]*, overlimits [0-9]* requeues [0-9]*)\\|backlog [0-9]*b [0-9]*p' | tr '\\n' ' ')"
      sleep 0.2
      kill -0 $IP 2>/dev/null || break
    done
    wait $IP; wait $PP || true
    echo "== t0 $T0"
    echo "== ping"; cat /tmp/ping.txt | tail -3
    echo "== iperf"; python3 -c "
    import json; d = json.load(open('/tmp/iperf.json')); e = d['end']
    print('throughput', e['sum_received']['bits_per_second'], 'retransmits', e['sum_sent'].get('retransmits'))
    for s in e['streams']: print('stream', s['receiver']['bits_per_second'], s['sender'].get('max_snd_cwnd'))"
    """)

def htb_leaf(leaf: str) -> str:
    """The campaign's bottleneck on vif2: HTB at 20 Mbit/s with ``leaf`` as its class's qdisc."""
    return ("tc -n w-sw qdisc replace dev vif2 root handle 1: htb default 1; "
            "tc -n w-sw class replace dev vif2 parent 1: classid 1:1 htb rate 20000000bit ceil 20000000bit; "
            f"tc -n w-sw qdisc replace dev vif2 parent 1:1 handle 10: {leaf}")


QDISCS = {
    "pfifo_fast": htb_leaf("pfifo_fast"),
    "tbf": "tc -n w-sw qdisc replace dev vif2 root tbf rate 20000000bit burst 15140 latency 50000us",
}

_FIELDS = {"cwnd": r"cwnd:(\d+)", "ssthresh": r"\bssthresh:(\d+)", "unacked": r"unacked:(\d+)",
           "notsent": r"notsent:(\d+)", "snd_wnd": r"snd_wnd:(\d+)", "rcv_space": r"rcv_space:(\d+)",
           "rcv_ssthresh": r"rcv_ssthresh:(\d+)", "rtt_ms": r"\brtt:([\d.]+)", "mss": r"\bmss:(\d+)",
           "skmem_rb": r"skmem:\(r\d+,rb(\d+)", "skmem_t": r"skmem:\(r\d+,rb\d+,t(\d+)",
           "skmem_tb": r",tb(\d+)", "skmem_wq": r",w(\d+)", "pacing_rate": r"pacing_rate (\d+)bps",
           "retrans": r"retrans:\d+/(\d+)"}


def _socket(block: str) -> dict:
    out = {}
    for k, rx in _FIELDS.items():
        m = re.search(rx, block)
        if m:
            out[k] = float(m.group(1))
    return out


def parse(text: str) -> dict:
    """results.json: sysctls, link features, and per sample the sockets' windows and the queue."""
    out: dict = {"sysctl": dict(re.findall(r"^== sysctl (\S+) = (.*)$", text, re.M)), "samples": []}
    for who in ("vm1", "sw"):
        m = re.search(rf"== link {who} gso_max_size (\d+) gso_max_segs (\d+)", text)
        if m:
            out[f"gso_max_size_{who}"], out[f"gso_max_segs_{who}"] = int(m.group(1)), int(m.group(2))
    out["features"] = {w: dict(re.findall(r"([a-z-]+): (on|off)", f))
                       for w, f in re.findall(r"^== features (\w+) (.*)$", text, re.M)}
    m = re.search(r"== t0 ([\d.]+)", text)
    t0 = float(m.group(1)) if m else 0.0
    for chunk in text.split("== sample ")[1:]:
        t = float(chunk.split("\n", 1)[0]) - t0
        snd = chunk.split("-- snd", 1)[1].split("-- rcv", 1)[0]
        rcv = chunk.split("-- rcv", 1)[1].split("-- tc", 1)[0]
        # ss -i prints each socket on one line (-H: no header) followed by its info line
        split = lambda s: [b for b in re.split(r"\n(?=ESTAB)", s.strip()) if b.startswith("ESTAB")]
        tc = chunk.split("-- tc", 1)[1].split("\n", 1)[0]
        q = re.search(r"backlog (\d+)b (\d+)p", tc)
        d = re.search(r"dropped (\d+)", tc)
        out["samples"].append({"t": t, "snd": [_socket(b) for b in split(snd)],
                               "rcv": [_socket(b) for b in split(rcv)],
                               "backlog_bytes": int(q.group(1)) if q else None,
                               "backlog_packets": int(q.group(2)) if q else None,
                               "dropped": int(d.group(1)) if d else None})
    m = re.search(r"rtt min/avg/max/mdev = ([\d.]+)/([\d.]+)/([\d.]+)", text)
    if m:
        out["ping_ms"] = {"min": float(m.group(1)), "avg": float(m.group(2)), "max": float(m.group(3))}
    m = re.search(r"^throughput ([\d.e+]+) retransmits (\S+)", text, re.M)
    if m:
        out["throughput"], out["retransmits"] = float(m.group(1)), m.group(2)
    out["streams"] = [float(x) for x in re.findall(r"^stream ([\d.e+]+)", text, re.M)]
    m = re.search(r"== kernel (\S+)", text)
    out["kernel"] = m.group(1) if m else ""
    return out


def run(out: Path, qdisc: str = "pfifo_fast", log=print) -> dict:
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    res, leaks, kernel = run_probe(out, SCRIPT.replace("QDISC", QDISCS[qdisc]), name="window", timeout=300,
                                   log=log, purpose=f"sampling ss -tinm behind {qdisc}")
    return store_probe(out, qdisc, res, marker="== sample", parse=parse, script="window.py", kernel=kernel,
                       leaks=leaks)


if __name__ == "__main__":      # python -m ovssim.collect.uml.window OUT [pfifo_fast|tbf] [--reparse]
    import sys
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "data/uml/window")
    q = next((a for a in sys.argv[2:] if a in QDISCS), "pfifo_fast")
    if "--reparse" in sys.argv:
        raw = read_raw(target / f"raw-{q}.txt")
        write_atomic(target / f"results-{q}.json", json.dumps(parse(raw), indent=1))
    else:
        run(target, q)
    print((target / f"results-{q}.json").read_text()[:1500])
