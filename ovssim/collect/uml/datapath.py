"""The OVS kernel datapath's slow path, measured inside a UML instance (seeds 000/001, issue 22).

``ovssim uml-datapath`` (see :func:`run`) boots one instance and runs :data:`SCRIPT` there: two
namespaces joined by ``br0`` on ``system@ovs-system`` (the kernel datapath), then

* **first-packet latency**: ``REPS`` times, flush the datapath's flows (``ovs-dpctl del-flows``)
  and ping twice: the first echo takes the upcall (miss -> handler thread -> flow install ->
  execute), the second hits the kernel's flow table; with the bridge's one NORMAL rule and with
  ``RULES`` extra OpenFlow rules (seed 001: 2,000 rules barely change the lookup);
* **flow setup**: with those rules installed (each matches one UDP destination port, so every port
  is its own megaflow), ns1 sends one UDP datagram to each of ``RULES`` ports, unpaced and paced;
  ``ovs-dpctl show`` before/after gives misses (upcalls), losses (upcalls dropped on the way to
  the handler) and flows, ns2's ``Udp`` counters what was delivered;
* **max-idle eviction**: ``other_config:max-idle`` set, a burst of new flows, then the datapath's
  flow count every 100 ms until the revalidator has evicted them.

Output (``--out``): ``raw.txt`` (the script's output), ``results.json`` (parsed) and
``metadata.json`` (kernel, OVS version, that it ran under user-mode Linux).
"""
from __future__ import annotations

import json
import platform
import re
import textwrap
from datetime import datetime, timezone
from pathlib import Path

from ...atomic import write_atomic
from ..shell import CommandError
from .collect import read_raw, run_probe, write_raw

REPS = 30
RULES = 2000
MAX_IDLE_MS = 2000

SETUP = textwrap.dedent("""\
    D=/run/ovs; mkdir -p $D; export OVS_RUNDIR=$D OVS_DBDIR=$D OVS_LOGDIR=$D
    VS="ovs-vsctl --db=unix:$D/db.sock"
    ovsdb-tool create $D/conf.db /usr/share/openvswitch/vswitch.ovsschema
    ovsdb-server $D/conf.db --remote=punix:$D/db.sock --pidfile --detach --log-file
    $VS --no-wait init
    ovs-vswitchd unix:$D/db.sock --pidfile --detach --log-file
    CTL=$D/ovs-vswitchd.$(cat $D/ovs-vswitchd.pid).ctl
    for i in 1 2; do
      ip netns add dp-vm$i; ip link add vif$i type veth peer name eth0 netns dp-vm$i
      ip -n dp-vm$i addr add 10.98.0.$i/24 dev eth0; ip -n dp-vm$i link set eth0 up
      ip -n dp-vm$i link set lo up; ip link set vif$i up
    done
    $VS add-br br0 -- set bridge br0 datapath_type=system -- add-port br0 vif1 -- add-port br0 vif2
    ip netns exec dp-vm1 ping -c 3 -i 0.2 -q 10.98.0.2 >/dev/null   # ARP + MAC learning
    echo "== version"; ovs-vswitchd --version | head -1; uname -r
    """)

SCRIPT = SETUP + textwrap.dedent("""\
    first() {   # $1 = label
      for r in $(seq 1 REPS); do
        ovs-appctl -t $CTL revalidator/purge; sleep 0.3
        echo "first $1 $r $(ip netns exec dp-vm1 ping -c 2 -i 0.2 -W 2 10.98.0.2 | grep -o 'time=[0-9.]*' | tr '\\n' ' ')"
      done
    }
    first normal
    python3 -c "
    for p in range(10000, 10000 + RULES):
        print(f'priority=100,udp,nw_dst=10.98.0.2,tp_dst={p},actions=NORMAL')" > /tmp/rules.txt
    ovs-ofctl add-flows br0 /tmp/rules.txt; echo "== rules $(ovs-ofctl dump-flows br0 | grep -c priority=100)"
    first rules
    counters() { echo "== $1 $(ovs-dpctl show | grep -E 'lookups|flows:' | tr '\\n' ' ') \
    udp $(ip netns exec dp-vm2 awk '/^Udp:/ {n++; if (n == 2) print $2 + $3}' /proc/net/snmp)"; }
    burst() {   # $1 = label, $2 = datagrams per second (0 = unpaced)
      ovs-appctl -t $CTL revalidator/purge; sleep 0.5; counters "before-$1"
      ip netns exec dp-vm1 python3 -c "
    import socket, time
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); gap = 1.0 / $2 if $2 else 0.0
    t0 = time.monotonic()
    for i, p in enumerate(range(10000, 10000 + RULES)):
        while gap and time.monotonic() < t0 + i * gap:
            pass
        s.sendto(b'x' * 18, ('10.98.0.2', p))
    print('== sent-$1', RULES, time.monotonic() - t0)"
      sleep 1; counters "after-$1"
    }
    burst unpaced 0
    burst paced2000 2000
    burst paced500 500
    $VS set Open_vSwitch . other_config:max-idle=MAX_IDLE
    burst idle 0
    for t in $(seq 1 60); do echo "== idle-poll $(cut -d' ' -f1 /proc/uptime) $(ovs-dpctl show | grep -o 'flows: [0-9]*')"; sleep 0.1; done
    echo "== upcall"; ovs-appctl -t $CTL upcall/show
    echo "== coverage"; ovs-appctl -t $CTL coverage/show | grep -E 'upcall|handler|dpif_flow|revalidate|xlate_actions '
    """).replace("REPS", str(REPS)).replace("RULES", str(RULES)).replace("MAX_IDLE", str(MAX_IDLE_MS))


QUEUE_SENT = 8000
# How many upcalls the handler's queue holds (net/openvswitch/datapath.c queue_userspace_packet ->
# genlmsg_unicast -> netlink_attachskb, which drops once the socket's sk_rmem_alloc exceeds its
# sk_rcvbuf, set by OVS with SO_RCVBUFFORCE in lib/netlink-socket.c nl_sock_create and doubled by the
# kernel; measured 2026-11-25: 6,553 upcalls of 1,280 B truesize, 8 MiB): with ovs-vswitchd stopped (SIGSTOP: no handler reads), QUEUE_SENT datagrams to new
# UDP ports each miss; `ovs-dpctl show` counts the misses and the upcalls lost, /proc/net/netlink the
# handler socket's receive memory (Rmem) and its drops.
QUEUE_SCRIPT = SETUP + textwrap.dedent("""\
    ovs-dpctl del-flows; echo "== q-before $(ovs-dpctl show | grep -E 'lookups' | tr '\\n' ' ')"
    kill -STOP $(cat $D/ovs-vswitchd.pid)
    ip netns exec dp-vm1 python3 -c "
    import socket
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for p in range(20000, 20000 + SENT):
        s.sendto(b'x' * 18, ('10.98.0.2', p))"
    sleep 0.5
    echo "== q-after $(ovs-dpctl show | grep -E 'lookups' | tr '\\n' ' ')"
    echo "== netlink"; awk 'NR == 1 || $5 > 0' /proc/net/netlink
    echo "== rmem_max $(cat /proc/sys/net/core/rmem_max)"
    kill -CONT $(cat $D/ovs-vswitchd.pid); sleep 1
    """).replace("SENT", str(QUEUE_SENT))


def parse_queue(text: str) -> dict:
    """queue.json: upcalls offered, lost and queued with the handler stopped, and what they occupy."""
    look = {k: (int(m), int(lost)) for k, m, lost in
            re.findall(r"== q-(before|after)\s+lookups: hit:\d+ missed:(\d+) lost:(\d+)", text)}
    out: dict = {"sent": QUEUE_SENT}
    if "before" in look and "after" in look:
        out["upcalls"] = look["after"][0] - look["before"][0]
        out["lost"] = look["after"][1] - look["before"][1]
        out["queued"] = out["upcalls"] - out["lost"]
    socks = []
    block = text.split("== netlink", 1)[1].split("== rmem_max", 1)[0] if "== netlink" in text else ""
    for line in block.strip().splitlines()[1:]:
        f = line.split()
        if len(f) >= 9 and f[1] == "16":          # NETLINK_GENERIC: the handler's upcall socket
            socks.append({"pid": int(f[2]), "rmem": int(f[4]), "drops": int(f[8])})
    out["sockets"] = socks
    if socks and out.get("queued"):
        big = max(socks, key=lambda x: x["rmem"])
        out["rmem_bytes"] = big["rmem"]
        out["truesize_per_upcall"] = big["rmem"] / out["queued"]
    return out


def parse(text: str) -> dict:
    """results.json from the script's output."""
    out: dict = {"first_packet": {}, "bursts": {}, "idle_poll": []}
    for label, a, b in re.findall(r"^first (\w+) \d+ time=([\d.]+) time=([\d.]+)", text, re.M):
        d = out["first_packet"].setdefault(label, {"first_ms": [], "second_ms": []})
        d["first_ms"].append(float(a))
        d["second_ms"].append(float(b))
    m = re.search(r"== rules (\d+)", text)
    out["extra_rules"] = int(m.group(1)) if m else 0
    cnt = {}
    for tag, hit, missed, lost, flows, udp in re.findall(
            r"== (\S+)\s+lookups: hit:(\d+) missed:(\d+) lost:(\d+)\s+flows: (\d+)\s+udp (\d*)", text):
        cnt[tag] = {"hit": int(hit), "missed": int(missed), "lost": int(lost), "flows": int(flows),
                    "udp_delivered": int(udp or 0)}
    for label, n, secs in re.findall(r"== sent-(\w+) (\d+) ([\d.]+)", text):
        b, a = cnt.get(f"before-{label}"), cnt.get(f"after-{label}")
        if not (a and b):
            continue
        sent, secs = int(n), float(secs)
        missed, lost = a["missed"] - b["missed"], a["lost"] - b["lost"]
        out["bursts"][label] = {"sent": sent, "send_seconds": secs, "offered_pps": sent / secs,
                                "upcalls": missed, "upcalls_lost": lost, "flows_after": a["flows"],
                                "delivered": a["udp_delivered"] - b["udp_delivered"],
                                # every upcall was handled within the send time plus the 1 s pause
                                # before the counters are read: a lower bound of the setup rate
                                "flow_setups_per_s_at_least": (missed - lost) / (secs + 1.0)}
    out["idle_poll"] = [(float(t), int(f)) for t, f in re.findall(r"== idle-poll ([\d.]+) flows: (\d+)", text)]
    out["max_idle_ms"] = MAX_IDLE_MS
    m = re.search(r"== version\n(.*)\n(.*)\n", text)
    if m:
        out["ovs_version"], out["kernel"] = m.group(1).strip(), m.group(2).strip()
    return out


def run(out: Path, log=print) -> dict:
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    res, leaks, kernel = run_probe(out, SCRIPT, name="datapath", timeout=900, log=log,
                                   purpose="measuring the kernel datapath's slow path")
    write_raw(out / "raw.txt", res)
    if res.returncode != 0 and "first normal" not in res.stdout:
        raise CommandError(["uml", "datapath.sh"], res.returncode, res.stderr)
    results = parse(res.stdout)
    write_atomic(out / "results.json", json.dumps(results, indent=1))
    meta = {"created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "script": "ovssim/collect/uml/datapath.py SCRIPT", "reps": REPS, "extra_rules": RULES,
            "testbed_kernel": kernel,
            "ovs_version": results.get("ovs_version"), "datapath": "system (openvswitch kernel module)",
            "host_kernel": platform.release(), "host_paths_leaked": leaks}
    write_atomic(out / "metadata.json", json.dumps(meta, indent=1))
    return results


def run_queue(out: Path, log=print) -> dict:
    """The upcall queue's depth (:data:`QUEUE_SCRIPT`): ``queue-raw.txt``, ``queue.json``, ``queue-metadata.json``."""
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    res, leaks, kernel = run_probe(out, QUEUE_SCRIPT, name="dp-queue", timeout=300, log=log,
                                   purpose="measuring the kernel datapath's upcall queue")
    write_raw(out / "queue-raw.txt", res)
    if "== q-after" not in res.stdout:
        raise CommandError(["uml", "dp-queue.sh"], res.returncode, res.stderr)
    results = parse_queue(res.stdout)
    write_atomic(out / "queue.json", json.dumps(results, indent=1))
    meta = {"created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "script": "ovssim/collect/uml/datapath.py QUEUE_SCRIPT", "testbed_kernel": kernel,
            "host_kernel": platform.release(), "host_paths_leaked": leaks}
    write_atomic(out / "queue-metadata.json", json.dumps(meta, indent=1))
    return results


if __name__ == "__main__":      # python -m ovssim.collect.uml.datapath OUT [--reparse] [--queue]
    import sys
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "data/uml/datapath")
    if "--queue" in sys.argv:
        if "--reparse" in sys.argv:
            raw = read_raw(target / "queue-raw.txt")
            write_atomic(target / "queue.json", json.dumps(parse_queue(raw), indent=1))
        else:
            run_queue(target)
        print((target / "queue.json").read_text())
        sys.exit(0)
    if "--reparse" in sys.argv:    # parse an earlier raw.txt again
        raw = read_raw(target / "raw.txt")
        write_atomic(target / "results.json", json.dumps(parse(raw), indent=1))
    else:
        run(target)
    print((target / "results.json").read_text()[:3000])
