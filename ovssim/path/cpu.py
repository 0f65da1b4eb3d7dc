"""Kept for importers: the CPU model lives in :mod:`ovssim.cpu`."""
from ..cpu import NETDEV_MAX_BACKLOG, CpuPool, GuestCpus, Thread, conn_key, flow_key  # noqa: F401
from ..cpu.keys import _CONN_KEYS, _FLOW_KEYS  # noqa: F401
