"""Where the user-mode-Linux kernel and its modules are, and whether one can run here.

Debian's ``user-mode-linux`` package (installed by ./setup.sh) ships the kernel as
``/usr/bin/linux.uml`` and its modules -- every ``sch_*`` qdisc, ``veth``, ``bridge``,
``openvswitch`` -- under ``/usr/lib/uml/modules/<version>/`` with their ``modules.dep``
already built.  The instance loads them from there through a private ``modprobe -d``
wrapper, so nothing is ever written to the host's ``/lib/modules``.
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from ...errors import ConfigError

KERNEL_PATHS = ("/usr/bin/linux.uml", "/usr/bin/linux")
MODULE_ROOT = Path("/usr/lib/uml/modules")


@dataclass(frozen=True)
class UmlKernel:
    binary: str
    version: str
    modules: Path          # .../modules/<version>, holds modules.dep

    def describe(self) -> str:
        return f"user-mode Linux {self.version} ({self.binary})"


def find_kernel() -> UmlKernel:
    """The installed UML kernel, or ConfigError saying how to get one."""
    binary = next((p for p in KERNEL_PATHS if os.access(p, os.X_OK)
                   and Path(p).resolve().name.startswith("linux.uml")), None)
    if binary is None:
        binary = shutil.which("linux.uml")
    if binary is None:
        raise ConfigError("the user-mode-Linux kernel (linux.uml) is not installed",
                          fix="run ./setup.sh as root (it installs Debian's user-mode-linux package)")
    versions = sorted(d for d in MODULE_ROOT.glob("*") if (d / "modules.dep").exists()) \
        if MODULE_ROOT.is_dir() else []
    if not versions:
        raise ConfigError(f"no UML modules with a modules.dep under {MODULE_ROOT}",
                          fix="reinstall the user-mode-linux package (./setup.sh)")
    mod = versions[-1]
    return UmlKernel(binary=binary, version=mod.name, modules=mod)


def unavailable_reason() -> str | None:
    """Why a UML instance cannot run on this machine (None when it can)."""
    try:
        find_kernel()
    except ConfigError as exc:
        return str(exc)
    if os.geteuid() != 0:
        return "a UML testbed needs root (namespaces and OVS inside the instance run as root)"
    return None
