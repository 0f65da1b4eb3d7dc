"""One user-mode-Linux instance: a real Linux 6.1 kernel run as an ordinary process.

The instance boots ``linux.uml`` with the host's file system as its root (hostfs), so
the host's ``ip``, ``tc``, ``iperf3``, ``ping``, OVS and this project's ``.venv`` run
inside it unchanged.  Its init script (written by :func:`init_script`):

* mounts private tmpfs over everything a run writes to -- ``/run`` (``ip netns``,
  OVS sockets, ovssim's state), ``/tmp``, ``/var/tmp``, ``/dev/shm``,
  ``/var/lib/openvswitch``, ``/var/log/openvswitch``, ``/etc/openvswitch`` -- so
  nothing of it reaches the host; only the instance's work folder, the paths
  named in ``keep`` (the campaign's output folder) and, where they lie under a
  masked directory, this checkout and its ``.venv`` are shared, bind-mounted back;
* writes a canary file into each private mount: the host checks afterwards that
  none of them leaked (:meth:`UmlInstance.leaks`);
* points ``/proc/sys/kernel/modprobe`` at a wrapper running ``modprobe -d`` on a
  private tree whose ``lib/modules/<version>`` is the package's module folder, so
  ``tc qdisc add ... sfq`` autoloads ``sch_sfq`` and the host's ``/lib`` is never
  touched; then preloads ``MODULES``;
* runs one command (its stdout/stderr/exit code go to the work folder), then
  either halts or, with ``agent=True``, serves commands dropped into ``cmd/``
  (``N.sh`` -> ``N.out``, ``N.err``, ``N.rc``) until ``halt`` appears.

Clean-up: the kernel and all its helper processes form one process group (started
with ``start_new_session``); it is killed on :meth:`stop`, at interpreter exit, by
the kernel when the collector dies (``PR_SET_PDEATHSIG``), and -- should all that
fail, e.g. after a SIGKILL -- by :func:`reap_stale` on the next start, from the
state file kept in ``STATE_DIR``.  Everything inside (namespaces, OVS, qdiscs)
dies with the kernel.
"""
from __future__ import annotations

import atexit
import ctypes
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from ...atomic import write_atomic
from ...errors import ConfigError
from ..shell import CommandError, Result, check_name
from ..testbed import _pid_alive, read_states
from .kernel import UmlKernel, find_kernel

STATE_DIR = Path(os.environ.get("OVSSIM_UML_STATE_DIR", "/run/ovssim-uml"))
IO = "/run/ovssim-uml-io"            # the work folder, as seen inside the instance
PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/var/lib/openvswitch", "/var/log/openvswitch",
                "/etc/openvswitch", "/var/cache/openvswitch")
MODULES = ("veth", "bridge", "openvswitch", "sch_htb", "sch_hfsc", "sch_sfq", "sch_codel",
           "sch_fq_codel", "sch_tbf", "sch_prio", "sch_netem", "sch_fq", "sch_red", "sch_cake",
           "sch_ingress", "cls_u32", "cls_matchall", "act_police", "tcp_bbr")
PR_SET_PDEATHSIG = 1
MIN_UPTIME_S = 11.0     # see init_script: OVS's handler count needs 10 s of monotonic clock

_ACTIVE: dict[str, "UmlInstance"] = {}


def _kill_active() -> None:
    for inst in list(_ACTIVE.values()):
        inst.stop(grace=0)


atexit.register(_kill_active)


def _die_with_parent() -> None:  # runs in the child between fork and exec
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def init_script(kernel: UmlKernel, workdir: Path, command: list[str] | None, *, env: dict,
                cwd: str, keep: list[str], agent: bool, name: str,
                min_uptime: float = MIN_UPTIME_S) -> str:
    """The instance's /sbin/init (POSIX sh), see the module docstring."""
    q = shlex.quote
    lines = ["#!/bin/sh", "export PATH=/usr/sbin:/usr/bin:/sbin:/bin",
             "mount -t proc proc /proc; mount -t sysfs sysfs /sys",
             "mount -t tmpfs -o mode=755 tmpfs /run",
             f"mkdir -p {IO} && mount --bind {q(str(workdir))} {IO}",
             f"exec >{IO}/init.log 2>&1",
             f"echo booted $(uname -r) > {IO}/booted"]
    for i, path in enumerate(keep):        # shared with the host, bind-mounted back after masking
        lines.append(f"mkdir -p /run/keep{i} && mount --bind {q(path)} /run/keep{i}")
    canary = f".ovssim-uml-canary-{name}"
    for d in PRIVATE_DIRS:
        lines.append(f"if [ -d {d} ] && [ ! -L {d} ]; then mount -t tmpfs -o mode=1777 tmpfs {d} "
                     f"&& touch {d}/{canary}; fi")
    lines.append(f"touch /run/{canary}")
    for i, path in enumerate(keep):
        lines.append(f"mkdir -p {q(path)} && mount --bind /run/keep{i} {q(path)}")
    mods = "/run/ovssim-uml-modules"
    lines += [f"mkdir -p {mods}/lib/modules {mods}/bin",
              f"ln -s {q(str(kernel.modules))} {mods}/lib/modules/{kernel.version}",
              f"printf '#!/bin/sh\\nexec /sbin/modprobe -d {mods} \"$@\"\\n' > {mods}/bin/modprobe",
              f"chmod +x {mods}/bin/modprobe",
              f"echo {mods}/bin/modprobe > /proc/sys/kernel/modprobe",
              f"export PATH={mods}/bin:$PATH",
              f"for m in {' '.join(MODULES)}; do modprobe $m || echo module $m not loaded; done",
              "ip link set lo up",
              # OVS 3.1 counts CPUs for its per-CPU upcall handlers only once CLOCK_MONOTONIC
              # has passed its refresh period (~10 s); started earlier, ovs-vswitchd gets
              # 0 handlers and loses every upcall (dpctl/show: lost == missed)
              f"while [ $(cut -d. -f1 /proc/uptime) -lt {int(min_uptime)} ]; do sleep 0.2; done",
              f"echo ready > {IO}/ready"]
    for k, v in env.items():
        lines.append(f"export {k}={q(str(v))}")
    if command:
        lines += [f"cd {q(cwd)}",
                  f"{' '.join(q(a) for a in command)} >{IO}/cmd.out 2>{IO}/cmd.err </dev/null",
                  f"echo $? > {IO}/cmd.rc.tmp && mv {IO}/cmd.rc.tmp {IO}/cmd.rc"]
    if agent:
        lines += [f"mkdir -p {IO}/cmd",
                  f"while [ ! -e {IO}/halt ]; do",
                  f"  for f in {IO}/cmd/*.sh; do",
                  "    [ -e \"$f\" ] || continue; b=${f%.sh}; mv \"$f\" \"$b.run\"",
                  "    ( sh \"$b.run\" >\"$b.out\" 2>\"$b.err\" </dev/null; echo $? >\"$b.rc.tmp\"; "
                  "mv \"$b.rc.tmp\" \"$b.rc\" ) &",
                  "  done",
                  "  sleep 0.1",
                  "done"]
    lines += ["sync", "halt -f -p"]
    return "\n".join(lines) + "\n"


def _software_under_private_dirs() -> list[str]:
    """This checkout and the running Python's prefix, where they lie under one of :data:`PRIVATE_DIRS`."""
    import ovssim
    paths = {Path(ovssim.__file__).resolve().parents[1], Path(sys.prefix).resolve()}
    return [str(p) for p in paths
            if any(p == Path(d) or Path(d) in p.parents for d in PRIVATE_DIRS)]


class UmlInstance:
    """A booted UML kernel running one command (and optionally a command agent)."""

    def __init__(self, name: str | None = None, *, mem: str = "1024M", keep=(),
                 detached: bool = False, purpose: str = ""):
        self.kernel = find_kernel()
        self.name = name or f"uml-{uuid.uuid4().hex[:6]}"
        check_name(self.name, "namespace")
        self.mem = mem
        # the software the instance runs (this checkout, its .venv) stays visible where it lies under a
        # directory the instance masks (a checkout in /tmp); broader paths are bound first so a kept
        # folder inside another one is not hidden by it
        kept = {str(Path(p).resolve()) for p in keep} | set(_software_under_private_dirs())
        self.keep = sorted(kept, key=len)
        self.detached = detached
        self.purpose = purpose
        self.workdir: Path | None = None
        self.proc: subprocess.Popen | None = None
        self._next_cmd = 0
        self._attached_pgid: int | None = None

    # -- lifecycle --------------------------------------------------------------------------
    def start(self, command: list[str] | None = None, *, env: dict | None = None,
              cwd: str | None = None, agent: bool = False, boot_timeout: float = 60.0,
              files: dict | None = None, min_uptime: float | None = None) -> "UmlInstance":
        """Boot; run ``command`` inside.  ``files`` (name -> text) are put in the work folder,
        which the command sees as ``IO/name`` (the host's /tmp is private inside)."""
        if os.geteuid() != 0:
            raise ConfigError("a UML testbed needs root", fix="run as root, e.g. sudo ovssim ...")
        reap_stale()
        for p in self.keep:
            Path(p).mkdir(parents=True, exist_ok=True)
        self.workdir = Path(tempfile.mkdtemp(prefix=f"ovssim-{self.name}-", dir="/tmp"))
        for fname, text in (files or {}).items():
            (self.workdir / fname).write_text(text)
        script = init_script(self.kernel, self.workdir, command, env=env or {},
                             cwd=cwd or os.getcwd(), keep=self.keep, agent=agent, name=self.name,
                             min_uptime=MIN_UPTIME_S if min_uptime is None else min_uptime)
        init = self.workdir / "init.sh"
        init.write_text(script)
        init.chmod(0o755)
        argv = [self.kernel.binary, f"mem={self.mem}", "root=/dev/root", "rootfstype=hostfs",
                "rootflags=/", "rw", f"init={init}", "con=null", "con0=null,fd:1", "quiet"]
        console = open(self.workdir / "console.log", "wb")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=console,
                                     stderr=subprocess.STDOUT, start_new_session=True,
                                     preexec_fn=None if self.detached else _die_with_parent)
        console.close()
        _ACTIVE[self.name] = self
        self._save_state()
        try:
            self.wait_for("ready", boot_timeout, "boot")
        except BaseException:
            self.stop(grace=0)
            raise
        return self

    def wait_for(self, name: str, timeout: float, what: str) -> Path:
        path = self.workdir / name
        deadline = time.monotonic() + timeout
        while not path.exists():
            if self.proc is not None and self.proc.poll() is not None:
                raise CommandError([self.kernel.binary], self.proc.returncode,
                                   f"UML instance {self.name} ended during {what}; "
                                   f"console: {self._tail('console.log')} init: {self._tail('init.log')}")
            if time.monotonic() > deadline:
                raise CommandError([self.kernel.binary], "timeout",
                                   f"UML instance {self.name}: no {what} within {timeout:.0f} s; "
                                   f"init: {self._tail('init.log')}")
            time.sleep(0.05)
        return path

    def _tail(self, name: str, n: int = 5) -> str:
        try:
            return " | ".join((self.workdir / name).read_text(errors="replace").strip().splitlines()[-n:])
        except OSError:
            return ""

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait(self, timeout: float | None = None) -> Result:
        """Wait for the instance to halt after its command; the command's output and exit code."""
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop(grace=0)
            raise CommandError([self.kernel.binary], "timeout",
                               f"UML instance {self.name} still running after {timeout:.0f} s; killed") from None
        return self.command_result()

    def command_result(self) -> Result:
        rc_file = self.workdir / "cmd.rc"
        rc = int(rc_file.read_text()) if rc_file.exists() else -1
        read = lambda n: (self.workdir / n).read_text(errors="replace") if (self.workdir / n).exists() else ""  # noqa: E731
        return Result(["uml", self.name], rc, read("cmd.out"), read("cmd.err") or self._tail("init.log", 20))

    def exec(self, argv: list[str], timeout: float = 60.0) -> Result:
        """Run ``argv`` inside a running agent instance (see ``agent=True``)."""
        n = self._next_cmd = self._next_cmd + 1
        base = self.workdir / "cmd" / f"{os.getpid()}-{n}"
        tmp = base.with_suffix(".tmp")
        tmp.write_text(" ".join(shlex.quote(str(a)) for a in argv) + "\n")
        os.replace(tmp, base.with_suffix(".sh"))
        deadline = time.monotonic() + timeout
        rc = base.with_suffix(".rc")
        while not rc.exists():
            if not self.running and not _pgid_alive(self._pgid()):
                raise CommandError(argv, "gone", f"UML instance {self.name} is not running")
            if time.monotonic() > deadline:
                raise CommandError(argv, "timeout", f"no answer within {timeout:.0f} s")
            time.sleep(0.05)
        out = [base.with_suffix(s).read_text(errors="replace") for s in (".out", ".err")]
        return Result(list(argv), int(rc.read_text()), out[0], out[1])

    def _pgid(self) -> int | None:
        return self.proc.pid if self.proc is not None else self._attached_pgid

    def stop(self, grace: float = 10.0) -> None:
        """Halt the instance (asking first when it runs an agent), kill its process group,
        remove its work folder and state file."""
        if self.workdir is not None and grace > 0 and self.running:
            (self.workdir / "halt").touch()
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
        if self.proc is not None:
            _killpg(self.proc.pid)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self.cleanup()

    def cleanup(self) -> None:
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
        state = STATE_DIR / f"{self.name}.json"
        if state.exists():
            state.unlink()
        _ACTIVE.pop(self.name, None)

    def leaks(self) -> list[str]:
        """Host paths the instance wrote into although they should have been private."""
        canary = f".ovssim-uml-canary-{self.name}"
        return [f"{d}/{canary}" for d in ("/run",) + PRIVATE_DIRS if Path(d, canary).exists()]

    def _save_state(self) -> None:
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        state = {"name": self.name, "pgid": self.proc.pid, "workdir": str(self.workdir),
                 "owner_pid": os.getpid(), "detached": self.detached, "purpose": self.purpose,
                 "kernel": self.kernel.version, "started": time.time()}
        write_atomic(STATE_DIR / f"{self.name}.json", json.dumps(state, indent=1))

    @classmethod
    def attach(cls, state: dict) -> "UmlInstance":
        """An instance started by another process (``ovssim testbed up --kernel uml``)."""
        inst = cls.__new__(cls)
        inst.kernel, inst.name, inst.detached = find_kernel(), state["name"], True
        inst.workdir, inst.proc, inst._next_cmd = Path(state["workdir"]), None, 0
        inst._attached_pgid = state["pgid"]
        return inst

    def stop_attached(self, grace: float = 10.0) -> None:
        pgid = self._pgid()
        (self.workdir / "halt").touch()
        deadline = time.monotonic() + grace
        while _pgid_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.1)
        _killpg(pgid)
        self.cleanup()


def _killpg(pgid: int | None) -> None:
    if not pgid:
        return
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _pgid_alive(pgid: int | None) -> bool:
    if not pgid:
        return False
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def saved_instances() -> list[dict]:
    out = read_states(STATE_DIR)
    for st in out:
        st["alive"] = _pgid_alive(st.get("pgid")) and _is_uml_group(st)
    return out


def _group_members(state: dict) -> list[int]:
    """Pids of this instance's processes: in its process group and booted with its work folder
    (the kernel's helper processes outlive a SIGKILLed leader)."""
    pids, mark = [], state["workdir"].encode()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if os.getpgid(int(d.name)) == state["pgid"] and mark in (d / "cmdline").read_bytes():
                pids.append(int(d.name))
        except (OSError, ProcessLookupError):
            continue
    return pids


def _is_uml_group(state: dict) -> bool:
    return bool(_group_members(state))


def reap_stale() -> list[str]:
    """Kill instances whose owner died (e.g. SIGKILL of the collector); remove their files."""
    reaped = []
    for st in saved_instances():
        if st.get("detached") and st["alive"]:
            continue
        if st["alive"] and _pid_alive(st.get("owner_pid", 0)):
            leader = Path(f"/proc/{st['pgid']}/cmdline")
            if leader.exists() and st["workdir"].encode() in leader.read_bytes():
                continue            # owner and kernel both alive: in use
        for pid in _group_members(st):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(st.get("workdir", "/nonexistent"), ignore_errors=True)
        (STATE_DIR / f"{st['name']}.json").unlink(missing_ok=True)
        reaped.append(st["name"])
    return reaped
