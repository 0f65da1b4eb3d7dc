"""What every tool runner returns, and a traffic server that is always stopped."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field

from ..shell import CommandError, run


@dataclass
class ToolResult:
    """Parsed output of one tool run: metrics (name -> (value, unit)) and sample series."""
    metrics: dict = field(default_factory=dict)
    samples: dict = field(default_factory=dict)   # series -> (list of values, unit)
    info: dict = field(default_factory=dict)      # e.g. congestion control actually used
    raw: str = ""

    def add(self, name: str, value, unit: str) -> None:
        if value is not None:
            self.metrics[name] = (float(value), unit)


class ToolFailed(Exception):
    """A tool ran but produced no usable result (the run is recorded as failed)."""


@dataclass
class Target:
    """Where a run goes: command prefixes of both endpoints and the server's address.

    ``workdir`` holds the tools' temporary files (the testbed's work folder, removed with it)."""
    client: list
    server: list
    server_ip: str
    workdir: str | None = None


class Server:
    """A traffic server started under ``prefix``; killed (process group) on exit."""

    def __init__(self, prefix: list, argv: list, *, port: int, proto: str = "tcp",
                 ready_timeout: float = 5.0):
        self.prefix, self.argv, self.port, self.proto = prefix, argv, port, proto
        self.ready_timeout = ready_timeout
        self.proc: subprocess.Popen | None = None

    def __enter__(self):
        self.proc = subprocess.Popen([str(a) for a in self.prefix + self.argv],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        flag = "-Hltn" if self.proto == "tcp" else "-Hlun"
        deadline = time.monotonic() + self.ready_timeout
        while True:
            if self.proc.poll() is not None:
                out = self.proc.stdout.read().decode(errors="replace")
                raise CommandError(self.argv, self.proc.returncode, out)
            res = run(self.prefix + ["ss", flag, "sport", "=", f":{self.port}"], check=False,
                      timeout=5)
            if res.stdout.strip():
                return self
            if time.monotonic() > deadline:
                self.stop()
                raise CommandError(self.argv, "timeout",
                                   f"server did not listen on {self.proto} port {self.port}")
            time.sleep(0.05)

    def stop(self) -> str:
        if self.proc is None:
            return ""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=3)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait(timeout=3)
        out = self.proc.stdout.read().decode(errors="replace") if self.proc.stdout else ""
        self.proc = None
        return out

    def __exit__(self, *exc):
        self.output = self.stop()
        return False


def client(target: Target, argv: list, duration: float, margin: float = 10.0):
    """Run the client; kill it after ``duration + margin``; raise ToolFailed on error/timeout."""
    res = run(target.client + argv, check=False, timeout=duration * 1.5 + margin)
    if res.timed_out:
        raise ToolFailed(f"{argv[0]} hung and was killed after {duration * 1.5 + margin:.0f} s")
    return res
