"""probe.py's run with the kernel's own TCP trace events recorded beside it (issue 18).

A tracefs instance records ``tcp:tcp_probe`` (every segment a socket receives: snd_una, snd_nxt, cwnd,
ssthresh, snd_wnd, srtt before it is processed) and ``tcp:tcp_rcvbuf_grow`` (each receive-buffer growth:
the measurement's time and RTT, bytes copied, the previous space, rcvbuf, window_clamp, scaling_ratio);
``nstat -az`` in the sender's namespace before it is deleted gives HyStart's exits
(TcpExtTCPHystartTrainDetect/DelayDetect and the cwnd at each).  Writes probe.py's JSON with ``trace``
(the raw trace text) and ``nstat`` added.

    sudo .venv/bin/python validation/tcp_window/trace_probe.py --bridge --rate 10mbit --out run.json.gz
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import probe  # noqa: E402

INSTANCE = "/sys/kernel/tracing/instances/tcpw"
EVENTS = ("tcp_probe", "tcp_rcvbuf_grow")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--shaper", default="htb", choices=["htb", "tbf"])
    p.add_argument("--rate", default="10mbit")
    p.add_argument("--flows", type=int, default=1)
    p.add_argument("--cc", default="cubic")
    p.add_argument("--time", type=int, default=8)
    p.add_argument("--bridge", action="store_true")
    p.add_argument("--router", action="store_true")
    p.add_argument("--sysctl", action="append", default=[])
    p.add_argument("--nice", type=int, default=None, help="both iperf3 processes at this nice value (probe.py)")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    args = argparse.Namespace(shaper=a.shaper, rate=a.rate, flows=a.flows, cc=a.cc, time=a.time, limit=None,
                              sysctl=a.sysctl, no_gso=False, router=a.router, bridge=a.bridge, tag="", out="",
                              period=0.05, snd_only=False, nice=a.nice)
    os.makedirs(INSTANCE, exist_ok=True)
    with open(f"{INSTANCE}/buffer_size_kb", "w") as fh:
        fh.write("65536")
    for ev in EVENTS:
        with open(f"{INSTANCE}/events/tcp/{ev}/enable", "w") as fh:
            fh.write("1")
    nstat = {}
    teardown = probe.teardown

    def teardown_after_nstat():
        nstat["sender"] = probe.ns(probe.A, "nstat -az", check=False)
        teardown()
    probe.teardown = teardown_after_nstat
    try:
        with open(f"{INSTANCE}/tracing_on", "w") as fh:
            fh.write("1")
        res = probe.run(args)
    finally:
        probe.teardown = teardown
        with open(f"{INSTANCE}/tracing_on", "w") as fh:
            fh.write("0")
        with open(f"{INSTANCE}/trace") as fh:
            trace = fh.read()
        os.rmdir(INSTANCE)
    res["summary"] = probe.summary(res)
    res["trace"] = trace
    res["nstat"] = nstat.get("sender")
    with gzip.open(a.out, "wt") as fh:
        json.dump(res, fh)
    print(json.dumps(res["summary"]))


if __name__ == "__main__":
    main()
