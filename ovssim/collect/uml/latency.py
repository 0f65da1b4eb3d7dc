"""Where a ping's time goes inside a UML instance under the campaign's load (issue 22).

``python -m ovssim.collect.uml.latency OUT [QDISC]`` boots one instance and runs :data:`SCRIPT` there:
the Linux-bridge testbed of data/campaigns/uml-schedulers.toml (as ovssim/collect/uml/window.py builds
it), a 20 Mbit/s HTB class with a ``fq_codel`` leaf (or ``pfifo_fast``, ``sfq``) on the receiver's port
``vif2``, and two phases:

* ``idle``: ping every 10 ms (100 probes), then a timer probe (1 ms ``clock_nanosleep`` x 1500,
  timer slack 1 ns) -- nothing else running;
* ``load``: four iperf3 CUBIC flows for 8 s; from 1 s on ping every 10 ms (150 probes), from 4.5 s
  the timer probe again; /proc/stat and the iperf3 processes' and ksoftirqd's CPU times at 1 s and
  7.5 s.

Meanwhile a packet socket in each of ``w-vm1`` and ``w-sw`` (a classic-BPF filter: ICMP only,
``SO_TIMESTAMPNS``) records every echo request and reply with the kernel's time stamp at each tap:
``vm1/eth0`` out (A), ``sw/vif1`` in (B), ``sw/vif2`` out (C: after the qdisc), ``sw/vif2`` in
(E: the reply, stamped as vm2's veth hands it over), ``sw/vif1`` out (F), ``vm1/eth0`` in (G); the
request's payload carries ping's own send time (its ``gettimeofday`` before ``sendmsg``, T0).  A
received frame is stamped when the veth puts it on the receiving CPU's backlog
(``netif_rx`` -> ``net_timestamp_check``, ``netdev_tstamp_prequeue`` = 1), as ping's own
``SO_TIMESTAMP`` is, so G - T0 is ping's RTT.

Output: ``raw-QDISC.txt``, ``results-QDISC.json`` (per probe and phase: T0 and the taps' times,
timer overshoots, CPU counters), ``metadata-QDISC.json``.
"""
from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

from ...atomic import write_atomic
from .collect import read_raw, run_probe, store_probe
from .window import TESTBED, htb_leaf

# a packet socket with an ICMP-only classic BPF filter, kernel time stamps, one line per frame
CAPTURE = textwrap.dedent("""\
    import ctypes, signal, socket, struct, sys, time
    dur = float(sys.argv[1])
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    ins = [(0x28, 0, 0, 12), (0x15, 0, 3, 0x0800), (0x30, 0, 0, 23), (0x15, 0, 1, 1), (0x06, 0, 0, 256),
           (0x06, 0, 0, 0)]
    prog = b"".join(struct.pack("HBBI", *i) for i in ins)
    buf = ctypes.create_string_buffer(prog)
    s.setsockopt(socket.SOL_SOCKET, 26, struct.pack("HL", len(ins), ctypes.addressof(buf)))
    s.setsockopt(socket.SOL_SOCKET, 35, 1)          # SO_TIMESTAMPNS
    s.settimeout(0.5)
    out, end = [], time.time() + dur
    while time.time() < end:
        try:
            data, anc, _, addr = s.recvmsg(256, 64)
        except socket.timeout:
            continue
        ts = next((struct.unpack("qq", d[:16]) for lv, ty, d in anc if ty == 35), (0, 0))
        ihl = (data[14] & 15) * 4
        ty, ident, seq = data[14 + ihl], *struct.unpack("!HH", data[14 + ihl + 4:14 + ihl + 8])
        if ty not in (0, 8):
            continue
        sec, usec = struct.unpack("qq", data[14 + ihl + 8:14 + ihl + 24]) if len(data) >= 14 + ihl + 24 else (0, 0)
        out.append(f"{ts[0]}.{ts[1]:09d} {addr[0]} {addr[2]} {ty} {ident} {seq} {sec}.{usec:06d}")
    print("\\n".join(out))
    """)

# every frame through vif2 (no filter, bound to it): time stamp, packet type, IP protocol, IP length (``--all``)
CAPTURE_ALL = textwrap.dedent("""\
    import socket, struct, sys, time
    dur, dev = float(sys.argv[1]), sys.argv[2]
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.bind((dev, 0))
    s.setsockopt(socket.SOL_SOCKET, 35, 1)          # SO_TIMESTAMPNS
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.settimeout(0.5)
    out, end = [], time.time() + dur
    while time.time() < end:
        try:
            data, anc, _, addr = s.recvmsg(64, 64)
        except socket.timeout:
            continue
        ts = next((struct.unpack("qq", d[:16]) for lv, ty, d in anc if ty == 35), (0, 0))
        if len(data) >= 34 and data[12:14] == b"\\x08\\x00":
            out.append(f"{ts[0]}.{ts[1]:09d} {addr[2]} {data[23]} {struct.unpack('!H', data[16:18])[0]}")
    print("\\n".join(out))
    """)

# how late a 1 ms clock_nanosleep returns (timer slack 1 ns: PR_SET_TIMERSLACK), in ns
TIMER = textwrap.dedent("""\
    import ctypes, sys, time
    ctypes.CDLL(None).prctl(29, 1, 0, 0, 0)         # PR_SET_TIMERSLACK = 1 ns (default 50 us)
    n, d = int(sys.argv[1]), float(sys.argv[2])
    out = []
    for _ in range(n):
        t = time.monotonic_ns(); time.sleep(d); out.append(time.monotonic_ns() - t - int(d * 1e9))
    print(" ".join(map(str, out)))
    """)

SCRIPT = TESTBED + textwrap.dedent("""\
    cat > /tmp/cap.py <<'EOF'
    CAPTURE_PY
    EOF
    cat > /tmp/timer.py <<'EOF'
    TIMER_PY
    EOF
    ip netns exec w-vm1 ping -c 3 -i 0.2 -q 10.97.0.2 >/dev/null
    echo "== kernel $(uname -r)"
    cpu() { echo "== cpu $1 $(cut -d' ' -f1 /proc/uptime) $(head -1 /proc/stat)"
            for p in $(pgrep -x iperf3) $(pgrep -x ksoftirqd/0) $(pgrep -f cap.py); do
              echo "== pid $1 $p $(cut -d' ' -f2,14,15 /proc/$p/stat 2>/dev/null)"; done; }
    ip netns exec w-vm1 PY /tmp/cap.py 22 > /tmp/cap-vm1.txt 2>/tmp/cap-vm1.err &
    C1=$!
    ip netns exec w-sw PY /tmp/cap.py 22 > /tmp/cap-sw.txt 2>/tmp/cap-sw.err &
    C2=$!
    sleep 1
    echo "== phase idle $(date +%s.%N)"
    cpu idle0
    ip netns exec w-vm1 ping -c 100 -i 0.01 10.97.0.2 > /tmp/ping-idle.txt
    echo "== timer idle $(ip netns exec w-vm1 PY /tmp/timer.py 1500 0.001)"
    cpu idle1
    ip netns exec w-vm2 iperf3 -s -1 -D
    sleep 0.5
    ALL_START
    echo "== phase load $(date +%s.%N)"
    ip netns exec w-vm1 iperf3 -c 10.97.0.2 -P 4 -C cubic -t 8 -J > /tmp/iperf.json &
    IP=$!
    sleep 1
    cpu load0
    (ip netns exec w-vm1 ping -c 150 -i 0.01 10.97.0.2 > /tmp/ping-load.txt) &
    PP=$!
    sleep 3.5
    echo "== timer load $(ip netns exec w-vm1 PY /tmp/timer.py 1500 0.001)"
    cpu load1
    echo "== tc $(tc -n w-sw -s qdisc show dev vif2 | tr '\\n' ' ')"
    wait $IP; wait $PP || true
    echo "== ping idle"; tail -2 /tmp/ping-idle.txt
    echo "== ping load"; tail -2 /tmp/ping-load.txt
    echo "== iperf"; PY -c "
    import json; d = json.load(open('/tmp/iperf.json')); e = d['end']
    print('throughput', e['sum_received']['bits_per_second'], 'cpu', e['cpu_utilization_percent'])"
    wait $C1 $C2 || true
    echo "== cap vm1"; cat /tmp/cap-vm1.txt
    echo "== cap sw"; cat /tmp/cap-sw.txt
    ALL_PRINT
    echo "== caperr $(cat /tmp/cap-vm1.err /tmp/cap-sw.err | tr '\\n' ' ')"
    echo "== end"
    """)

QDISCS = {leaf: htb_leaf(leaf) for leaf in ("fq_codel", "pfifo_fast", "sfq")}

# (namespace, interface, packet type, ICMP type) -> the tap's letter (packet type mod 3: 1 = PACKET_OUTGOING (4),
# 0 = PACKET_HOST or, a bridge port's received frames, PACKET_OTHERHOST (3))
TAPS = {("vm1", "eth0", 1, 8): "A", ("sw", "vif1", 0, 8): "B", ("sw", "vif2", 1, 8): "C",
        ("sw", "vif2", 0, 0): "E", ("sw", "vif1", 1, 0): "F", ("vm1", "eth0", 0, 0): "G"}


def script(qdisc: str, every_frame: bool | str = False) -> str:
    """The instance's script; ``every_frame``: also every frame through vif2 (or the port it names) during the
    load (CAPTURE_ALL)."""
    body = SCRIPT.replace("QDISC", QDISCS[qdisc])
    if every_frame:
        dev = every_frame if isinstance(every_frame, str) else "vif2"
        body = body.replace("ALL_START", "cat > /tmp/capall.py <<'EOF'\n" + CAPTURE_ALL.rstrip() + "\nEOF\n"
                            f"ip netns exec w-sw PY /tmp/capall.py 9 {dev} > /tmp/cap-all.txt 2>/tmp/cap-all.err &\nCA=$!")
        body = body.replace("ALL_PRINT", "wait $CA || true; echo \"== allerr $(cat /tmp/cap-all.err | tr '\\n' ' ')\"; "
                            "echo \"== cap all\"; cat /tmp/cap-all.txt")
    else:
        body = body.replace("ALL_START", ":").replace("ALL_PRINT", ":")
    # the here-documents' bodies, dedented as the script is
    body = body.replace("CAPTURE_PY", CAPTURE.rstrip().replace("\n", "\n")).replace("TIMER_PY", TIMER.rstrip())
    return body.replace("PY ", sys.executable + " ")


def parse(text: str) -> dict:
    """results.json: per phase and echo (by ICMP sequence) T0 and the taps' times in s, timer
    overshoots in us, the CPU counters."""
    phases = {k: float(v) for k, v in re.findall(r"^== phase (\w+) ([\d.]+)", text, re.M)}
    out: dict = {"phases": phases, "timer_us": {}, "cpu": [], "pids": [], "probes": {}}
    for ph, vals in re.findall(r"^== timer (\w+) ([-\d ]+)$", text, re.M):
        out["timer_us"][ph] = [int(v) / 1e3 for v in vals.split()]
    for tag, up, rest in re.findall(r"^== cpu (\w+) ([\d.]+) cpu\s+([\d ]+)$", text, re.M):
        out["cpu"].append({"tag": tag, "uptime": float(up), "jiffies": [int(x) for x in rest.split()]})
    for tag, pid, rest in re.findall(r"^== pid (\w+) (\d+) (.*)$", text, re.M):
        f = rest.split()
        if len(f) == 3:
            out["pids"].append({"tag": tag, "pid": int(pid), "comm": f[0], "utime": int(f[1]), "stime": int(f[2])})
    m = re.search(r"== tc (.*)", text)
    out["tc"] = m.group(1) if m else ""
    m = re.search(r"^throughput ([\d.e+]+)", text, re.M)
    out["throughput"] = float(m.group(1)) if m else None
    if "== cap all\n" in text:            # every frame through the port: [time, packet type, IP protocol, IP length]
        block = text.split("== cap all\n", 1)[1].split("\n== ", 1)[0]
        out["vif2_frames"] = [[float(f[0]), int(f[1]), int(f[2]), int(f[3])]
                              for f in (line.split() for line in block.splitlines()) if len(f) == 4]
    start_load = phases.get("load", float("inf"))
    for ns in ("vm1", "sw"):
        block = text.split(f"== cap {ns}\n", 1)[-1].split("\n== ", 1)[0] if f"== cap {ns}" in text else ""
        for line in block.splitlines():
            f = line.split()
            if len(f) != 7:
                continue
            t, dev, ptype, ty, seq, t0 = float(f[0]), f[1], int(f[2]) % 3, int(f[3]), int(f[5]), float(f[6])
            tap = TAPS.get((ns, dev, ptype, ty))
            if tap is None:
                continue
            phase = "load" if t >= start_load else "idle"
            p = out["probes"].setdefault(phase, {}).setdefault(str(seq), {})
            p[tap] = t
            if ty == 8 and t0 > 0:
                p["T0"] = t0
    return out


def run(out: Path, qdisc: str = "fq_codel", log=print, every_frame: bool | str = False) -> dict:
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    tag = qdisc + (f"-all-{every_frame}" if isinstance(every_frame, str) else "-all" if every_frame else "")
    res, leaks, kernel = run_probe(out, script(qdisc, every_frame), name="latency", timeout=240, log=log,
                                   purpose=f"timing a ping's path and the timers behind {qdisc}")
    return store_probe(out, tag, res, marker="== end", parse=parse, script="latency.py", kernel=kernel,
                       leaks=leaks, host_loadavg=Path("/proc/loadavg").read_text().split()[:3])


def components(results: dict, phase: str) -> dict:
    """Per echo of ``phase`` with every tap: the time in ms from ping's send to its frame leaving vm1
    (T0->A), in the bridge and the bottleneck's qdisc (B->C), in vm2 until its reply (C->E), back (E->G),
    and the RTT (T0->G)."""
    import numpy as np
    probes = [p for p in results["probes"].get(phase, {}).values()
              if all(k in p for k in ("T0", "A", "B", "C", "E", "F", "G"))]
    get = lambda a, b: np.array([p[b] - p[a] for p in probes]) * 1e3
    return {"send T0->A": get("T0", "A"), "bridge + qdisc B->C": get("B", "C"), "vm2's reply C->E": get("C", "E"),
            "back E->G": get("E", "G"), "RTT T0->G": get("T0", "G")}


def excess_distribution(paths, points: int = 21) -> dict:
    """``qdisc.watchdog_handoff`` as the runs in ``paths`` (results JSON files) measured it: vm2's answer to a
    watchdog-dequeued ping under load (C->E) less its idle median, clipped at 0, pooled, as an empirical
    distribution of ``points`` quantiles."""
    import numpy as np
    ex = []
    for path in paths:
        r = json.loads(Path(path).read_text())
        idle = components(r, "idle")["vm2's reply C->E"]
        ex.append(np.clip(components(r, "load")["vm2's reply C->E"] - np.median(idle), 0.0, None))
    probs = np.linspace(0.0, 1.0, points)
    q = np.quantile(np.concatenate(ex), probs)
    return {"dist": "empirical", "quantiles": [f"{x * 1e3:.1f}us" for x in q], "probs": [round(float(p), 3) for p in probs]}


def plot(results: dict, path: Path) -> None:
    """The figure of data/uml/2026-11-28/uml-latency/README.md: the ping's components, idle and under load,
    and the timer probe's lateness."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6))
    for ax, key in zip(axes, ("bridge + qdisc B->C", "vm2's reply C->E", "RTT T0->G")):
        for phase, colour in (("idle", "tab:blue"), ("load", "tab:red")):
            v = components(results, phase)[key]
            if v.size:
                ax.hist(v, bins=np.linspace(0, max(0.9, float(np.percentile(v, 99))), 46), alpha=0.6, color=colour,
                        label=f"{phase} (mean {v.mean():.3f} ms)")
        ax.set_xlabel(f"{key} (ms)")
        ax.legend(fontsize=8)
    ax = axes[3]
    for phase, colour in (("idle", "tab:blue"), ("load", "tab:red")):
        v = np.sort(np.asarray(results["timer_us"].get(phase, []), float))
        if v.size:
            ax.plot(v, np.arange(1, v.size + 1) / v.size, color=colour, label=f"{phase} (median {np.median(v):.0f} us)")
    ax.set_xscale("log")
    ax.set_xlabel("1 ms clock_nanosleep: lateness (us)")
    ax.set_ylabel("CDF")
    ax.legend(fontsize=8)
    fig.suptitle("UML 6.1, HTB 20 Mbit/s + fq_codel on vif2, 4 iperf3 CUBIC flows (load) -- ovssim/collect/uml/latency.py")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":   # python -m ovssim.collect.uml.latency OUT [fq_codel|pfifo_fast|sfq] [--all] [--reparse]
    import json
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "data/uml/latency")
    q = next((a for a in sys.argv[2:] if a in QDISCS), "fq_codel")
    # --all: also every frame through vif2 during the load; --all=vif1: through that port instead
    every = next((a.split("=", 1)[1] if "=" in a else True for a in sys.argv if a.startswith("--all")), False)
    suffix = f"-all-{every}" if isinstance(every, str) else "-all" if every else ""
    if "--reparse" in sys.argv:
        q += suffix
        write_atomic(target / f"results-{q}.json", json.dumps(parse(read_raw(target / f"raw-{q}.txt")), indent=1))
    else:
        run(target, q, every_frame=every)
        q += suffix
    plot(json.loads((target / f"results-{q}.json").read_text()), target / f"components-{q}.png")
    print(f"wrote {target}/results-{q}.json, components-{q}.png")
