"""A guest's vCPUs as threads on the host's cores: two-level scheduling.

The guest kernel serves its work FIFO on its vCPUs (as :class:`CpuPool` does for
a host); each vCPU is a ``vcpu`` :class:`~ovssim.cpu.thread.Thread` of the
host's pool, so the guest's work takes host CPU time and waits whenever the
host runs something else on that core -- the hypervisor scheduling delay seed
002 measured (Tables VII/VIII).  A vCPU alone on a host core with nothing else
there runs the guest's work at once; one sharing its core with a CPU-bound host
thread waits for that thread's slice (``RUN_TO_PARITY``, kernel/sched/fair.c).
"""
from __future__ import annotations

from .pool import CpuPool
from .scheduler import fair_run
from .thread import Thread


class GuestCpus(CpuPool):
    """``vcpus`` vCPUs of guest ``name`` on ``host``; ``pin`` maps vCPU i to its host cores (``virsh vcpupin``)."""

    def __init__(self, env, vcpus: int, name: str, host: CpuPool, *, pin=None, **kw):
        super().__init__(env, vcpus, name, **kw)
        if pin is not None and len(pin) != vcpus:
            raise ValueError(f"{name}: pin lists {len(pin)} vCPUs' host cores, the guest has {vcpus}")
        self.host = host
        self.vcpu_threads = [host.add_thread(Thread(f"{name}.vcpu{i}", "vcpu",
                                                    affinity=None if pin is None else pin[i]))
                             for i in range(vcpus)]
        self.schedule_threads = host.schedule_threads

    def serve(self, t: float, work: float, key: int | None = None, thread: Thread | None = None,
              arrival: float | None = None) -> float | None:
        """Run ``work`` of guest CPU arriving at ``t`` on a vCPU, and that vCPU on the host (``arrival``, as
        :meth:`CpuPool.serve` takes it, changes nothing: a vCPU serves its work in the order it is handed)."""
        free = self.free
        if key is not None:
            v = self.core_of(key)
        elif self.cores == 1:
            v = 0
        else:
            v = free.index(min(free))
        start = t if t > free[v] else free[v]
        vcpu = self.vcpu_threads[v]
        ran = vcpu.ran
        done = self.host.run(vcpu, start, work / self.speed)
        if done is None:
            self.refused += 1
            return None
        free[v] = done
        self.busy[v] += vcpu.ran - ran        # what the host ran of it (a cold start's slowdown included)
        self.jobs += 1
        return done

    def _fair_run(self, thread: Thread, t: float, work: float) -> tuple[float, float, float]:
        """A guest thread's work scheduled on its vCPU by the guest kernel, then the vCPU on the host."""
        start, done, cpu = fair_run(self, thread, t, work)
        v = thread.core
        host_done = self.host.run(self.vcpu_threads[v], start, cpu)
        if host_done is not None and host_done > start + cpu:
            done += host_done - (start + cpu)              # the vCPU waited for the host's core
            self.free[v] = max(self.free[v], host_done)
        return start, done, cpu
