"""Running commands as argument lists, with timeouts and validated names.

No command is ever a shell string: user-supplied names go into argument lists
after :func:`check_name` has accepted them, so nothing is interpreted by a shell.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass

from ..errors import ConfigError, OvssimError

_IFNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,14}$")          # IFNAMSIZ-1 = 15
NSNAME_MAX = 64                     # our own limit for namespace names (ip netns allows NAME_MAX)
_NSNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,%d}$" % (NSNAME_MAX - 1))
_HOST = re.compile(r"^(?:[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}@)?[A-Za-z0-9][A-Za-z0-9.-]{0,252}$")
# an ssh endpoint: [user@]host[:port], host a DNS name, an IPv4 address or [an IPv6 address]
_SSH = re.compile(r"^(?P<dest>(?:[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}@)?"
                  r"(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})|\[[0-9A-Fa-f:.]{2,45}\]))(?::(?P<port>\d{1,5}))?$")


class CommandError(OvssimError):
    """A command the collector ran failed."""

    def __init__(self, argv, returncode, stderr):
        self.argv, self.returncode, self.stderr = list(argv), returncode, stderr
        tail = (stderr or "").strip().splitlines()[-3:]
        super().__init__(f"command failed (exit {returncode}): {' '.join(map(str, argv))}"
                         + (f": {' | '.join(tail)}" if tail else ""))


def check_name(value: str, kind: str = "interface", *, file: str | None = None,
               key: str | None = None) -> str:
    """Accept an interface, namespace or host name, or raise ConfigError."""
    pattern = {"interface": _IFNAME, "namespace": _NSNAME, "host": _HOST}[kind]
    if not isinstance(value, str) or not pattern.match(value):
        limit = {"interface": "1-15 characters of letters, digits, '_', '.', '-'",
                 "namespace": "1-64 characters of letters, digits, '_', '.', '-'",
                 "host": "a host name or user@host"}[kind]
        raise ConfigError(f"{kind} name {value!r} is not valid", file=file, key=key,
                          fix=f"use {limit}")
    return value


def ssh_prefix(spec, *, file: str | None = None, key: str | None = None) -> list[str]:
    """The command prefix for an ssh endpoint given as ``[user@]host[:port]``.

    Only a destination is accepted -- no ssh options (``-o ProxyCommand=...`` runs a local
    command), no command: the collector adds ``-o BatchMode=yes`` (never wait for a password)."""
    m = _SSH.match(spec) if isinstance(spec, str) else None
    port = int(m["port"]) if m and m["port"] else None
    if m is None or (port is not None and not 1 <= port <= 65535):
        raise ConfigError(f"ssh endpoint {spec!r} is not [user@]host[:port]", file=file, key=key,
                          fix='write e.g. "user@host1" or "user@192.0.2.1:2222" (no ssh options)')
    dest = m["dest"].replace("[", "").replace("]", "")
    return ["ssh", "-o", "BatchMode=yes"] + (["-p", str(port)] if port else []) + [dest]


@dataclass
class Result:
    argv: list
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False


def run(argv, *, check: bool = True, timeout: float | None = 30.0, env=None,
        input: str | None = None) -> Result:
    """Run ``argv`` (a list), capture its output, kill it after ``timeout`` seconds."""
    argv = [str(a) for a in argv]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env,
                              input=input)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        if check:
            raise CommandError(argv, "timeout", f"killed after {timeout:.1f}s; {err}") from None
        return Result(argv, -9, out, err, timed_out=True)
    except FileNotFoundError:
        raise CommandError(argv, 127, f"{argv[0]}: not found") from None
    res = Result(argv, proc.returncode, proc.stdout, proc.stderr)
    if check and proc.returncode != 0:
        raise CommandError(argv, proc.returncode, proc.stderr or proc.stdout)
    return res


def which(tool: str) -> str | None:
    return shutil.which(tool)


def tool_version(argv) -> str:
    """First non-empty line a tool prints for its version flag ('' if it fails)."""
    try:
        res = run(argv, check=False, timeout=5)
    except CommandError:
        return ""
    for line in (res.stdout + "\n" + res.stderr).splitlines():
        line = re.sub(r"\x1b\[[0-9;]*m", "", line).strip()
        if line:
            return line
    return ""
