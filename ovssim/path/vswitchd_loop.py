"""ovs-vswitchd's main loop around the userspace ``netdev`` datapath's passes.

Without PMD threads, one thread of ovs-vswitchd does every netdev bridge's packets, inside its main
loop (vswitchd/ovs-vswitchd.c): ``bridge_run`` first lets each datapath type run
(``ofproto_type_run`` -> ``dpif_netdev_run``, lib/dpif-netdev.c, which reads each non-PMD port's
receive queue once, every bridge's internal port among them) and then runs each bridge
(``ofproto_run``: connection manager, MAC learning, port status), then ``unixctl_server_run``,
``netdev_run``, and only then ``poll_block`` sleeps until a port has a frame.  So after the pass
that handled a frame, the thread still spends the rest of the run -- work that grows with the
number of bridges -- before it can read a frame that arrived meanwhile on a port it has passed.

:class:`VswitchdLoop` is that thread's run: ``bridges`` x ``bridge_run`` (profile ``ovs.bridge_run``,
CPU work, default 0) after each pass.  A frame that reaches any of the thread's bridges in that time
is read when the run ends (:meth:`read_at`).  Frames that arrive while passes are still running join
them (the same run reads them), so under load the rest of a run is paid once per run, not per frame:
the model neglects it there.  What this gives, measured on this machine (2026-11-24 and 27, quiet):

* a frame forwarded into a veth pair that links two bridges arrives on the next bridge's AF_PACKET
  socket inside the sending pass (``sendto()`` -> ``veth_xmit`` -> ``packet_rcv``), so it always waits
  for the rest of the run: the wait per link grows with the chain (60 us per pass at 2 bridges,
  81 us at 4 in a TCP_RR round trip);
* with patch ports every frame still takes one pass, yet a TCP_RR round trip grows by 11-19 us at 2
  bridges and 54-59 us at 4: a reply that comes back before the run's end waits for it.

The rest of the run is not charged to the core (as ``ovs.latency`` is not): it is time the thread is
busy, which only frames of its own bridges wait for.
"""
from __future__ import annotations

_NEVER = float("-inf")


class VswitchdLoop:
    """The main loop of one ovs-vswitchd thread shared by ``bridges`` netdev bridges."""

    __slots__ = ("bridge_run", "bridges", "_pass_end", "_run_end")

    def __init__(self, bridge_run: float = 0.0):
        if not bridge_run >= 0.0:
            raise ValueError(f"ovs.bridge_run must be >= 0 seconds, got {bridge_run!r}")
        self.bridge_run = bridge_run
        self.bridges = 0
        self._pass_end = _NEVER           # when the thread's last pass ended
        self._run_end = _NEVER            # when the rest of that run ends

    def add_bridge(self) -> None:
        """One more bridge whose ``ofproto_run`` (and internal port) every run goes through."""
        self.bridges += 1

    @property
    def rest(self) -> float:
        """Seconds of the run after its last pass: ``bridges`` x ``bridge_run``."""
        return self.bridges * self.bridge_run

    def read_at(self, t: float) -> float:
        """When the thread reads a frame that reached one of its ports at ``t``: at once, unless it came
        after the run's last pass and before the run's end (then at the end)."""
        if self._pass_end <= t < self._run_end:
            return self._run_end
        return t

    def passed(self, done: float) -> None:
        """A pass ended at ``done``: the rest of the run follows it."""
        if done > self._pass_end:
            self._pass_end = done
            self._run_end = done + self.bridges * self.bridge_run
