"""Diagnostic (not the report): the tcp_window section with the writer's socket lock on (``TcpSender.write_lock``,
issue 18's single-stream BBR first sample), and a per-write CPU time the host profile does not have.

Linux (tcp_probe, data/local/tcp_window/2026-11-28-bbr*): iperf3's first data ACK of the first stream is processed
55-79 us after the receiver took the skb, in process context -- at ``release_sock`` of the 128 KiB write that sent
it (``tcp_sendmsg``: ``lock_sock``, ``tcp_sendmsg_locked`` copies the write and sends the first skb on the way,
``release_sock`` processes the backlog) -- so that sample (tcp_rate.c: delivered over the ACK interval) is
~5 segments over ~80 us.  The model holds such ACKs only with ``write_lock`` and a write that costs CPU time
(``app.send_per_call`` / ``app.send_per_byte``, 0 in calibration/local_netns_host.toml).

    .venv/bin/python validation/tcp_window/write_lock.py OUT/report.md app.send_per_call=80us [--first-only]

``--first-only``: the lock spans only each stream's first write (``app.send_per_call`` taken as its length,
nothing charged).  Writes OUT/results.json beside the report (validation/verdict_diff.py compares two).
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--first-only"]
    first_only = "--first-only" in sys.argv[1:]
    usage = "usage: write_lock.py OUT/report.md [KEY=VALUE ...] [--first-only], e.g. app.send_per_call=80us"
    if not args or args[0].startswith("-") or not args[0].endswith(".md"):
        sys.exit(f"write_lock.py: error: the first argument must be the report to write (OUT/report.md) -- {usage}")
    bad = [a for a in args[1:] if "=" not in a]
    if bad:
        sys.exit(f"write_lock.py: error: {bad[0]!r} is not KEY=VALUE -- {usage}")
    report, sets = args[0], dict(kv.split("=", 1) for kv in args[1:])
    if first_only and "app.send_per_call" not in sets:
        sys.exit(f"write_lock.py: error: --first-only takes the first write's length from app.send_per_call -- {usage}")
    from ovssim.tcp import sender as S
    S.TcpSender.write_lock = True
    if first_only:
        from ovssim.units import time as parse_time
        length = parse_time(sets.pop("app.send_per_call"))
        app_write = S.TcpSender._app_write

        def first_write(self, now):
            wrote = app_write(self, now)
            if wrote and not hasattr(self, "_first_end"):
                self._first_end = now + length
            return wrote

        def sendmsg_end(self, now):
            end = getattr(self, "_first_end", 0.0)
            return end if end > now else None
        S.TcpSender._app_write, S.TcpSender.sendmsg_end = first_write, sendmsg_end
    import ovssim.runner as R
    run_scenario = R.run_scenario

    def with_sets(*a, **k):
        k["sets"] = dict(sets, **(k.get("sets") or {}))
        return run_scenario(*a, **k)
    R.run_scenario = with_sets
    from ovssim.cli import main as cli
    sys.argv = ["ovssim", "validate", "--only", "tcp_window", "--no-fit", "--workers", "1", "--report", report]
    cli()


if __name__ == "__main__":
    main()
