"""Record the kernel's per-ACK view of a probe.py run: the ``tcp:tcp_probe`` trace event (issue 18, BBR).

``tcp_probe`` fires at the top of ``tcp_rcv_established`` for every segment a socket processes, with the
kernel's timestamp, the task it ran in (the softirq's interrupted task, or the socket owner releasing its
backlog), ``snd_una``/``snd_nxt``/``snd_cwnd``/``srtt`` before the segment is processed and ``data_len``.
For iperf3's sender each event is an ACK as BBR's ``bbr_main`` sees it (its ``tcp_mstamp``), for the
receiver each event is a data skb.  The events go to a private tracefs instance (``bbr_probe_<pid>``), filtered
on iperf3's port (probe.py's ``--port``, 5201 by default), and are written next to probe.py's JSON as ``<run>.tcp_probe.txt.gz``.

    sudo .venv/bin/python validation/tcp_window/bbr_trace.py -- --bridge --shaper htb --rate 100mbit \
        --flows 1 --cc bbr --period 2 --snd-only --out data/local/tcp_window/2026-11-28-bbr
"""
from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
from pathlib import Path

TRACEFS = Path("/sys/kernel/tracing")
INST = TRACEFS / "instances" / f"bbr_probe_{os.getpid()}"     # one instance per run: another job may trace too


def main():
    args = sys.argv[1:]
    if args and args[0] == "--":
        args = args[1:]
    if os.geteuid() != 0:
        sys.exit("bbr_trace.py: needs root")
    INST.mkdir(exist_ok=True)
    try:
        (INST / "buffer_size_kb").write_text("32768")
        ev = INST / "events" / "tcp" / "tcp_probe"
        port = int(args[args.index("--port") + 1]) if "--port" in args else 5201
        (ev / "filter").write_text(f"sport == {port} || dport == {port}")
        (INST / "trace").write_text("")
        (ev / "enable").write_text("1")
        out = subprocess.run([sys.executable, str(Path(__file__).with_name("probe.py")), *args],
                             capture_output=True, text=True)
        (ev / "enable").write_text("0")
        print(out.stdout, end="")
        print(out.stderr, end="", file=sys.stderr)
        name = re.match(r"(\S+) \{", out.stdout.splitlines()[-1]).group(1)
        outdir = args[args.index("--out") + 1] if "--out" in args else str(
            Path(__file__).resolve().parents[2] / "data/local/tcp_window")
        text = (INST / "trace").read_text()
        with gzip.open(Path(outdir, name + ".tcp_probe.txt.gz"), "wt") as fh:
            fh.write(text)
        print(f"{name}.tcp_probe.txt.gz: {text.count(chr(10))} lines")
    finally:
        INST.rmdir()


if __name__ == "__main__":
    main()
