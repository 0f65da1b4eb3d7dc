"""Who runs where: a host's cores, the threads on them, and guests' vCPUs.

:class:`CpuPool` serves softirq work analytically and schedules threads
(:class:`Thread`) only where they contend (:mod:`.scheduler`, from
kernel/sched/fair.c); :class:`GuestCpus` runs a guest's work on vCPUs that are
threads of the host's pool (two-level scheduling); :class:`WakePlacement` the core a thread that
sleeps in ``poll()`` (ovs-vswitchd's) wakes up on.  Kernel defaults:
:mod:`.defaults`.
"""
from .defaults import NETDEV_MAX_BACKLOG, base_slice
from .keys import conn_key, flow_key
from .pool import CpuPool
from .thread import THREAD_KINDS, Thread
from .guest import GuestCpus
from .wake import WakePlacement

__all__ = ["CpuPool", "GuestCpus", "Thread", "THREAD_KINDS", "WakePlacement", "NETDEV_MAX_BACKLOG", "base_slice",
           "conn_key", "flow_key"]
