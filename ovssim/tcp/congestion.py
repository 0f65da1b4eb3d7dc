"""The congestion-control contract, modelled on Linux ``struct tcp_congestion_ops``.

The sender owns ``cwnd`` (segments, an integer as ``tp->snd_cwnd``),
``cwnd_cnt`` (``snd_cwnd_cnt``) and ``ssthresh``; a congestion-control module
changes them through these hooks:

* ``ssthresh()``      -- the new slow-start threshold on loss (``.ssthresh``)
* ``cong_avoid(acked, now)`` -- grow cwnd for ``acked`` newly delivered segments
  (called only when the flow is cwnd-limited and not reducing its window)
* ``on_rtt(rtt, now)`` -- one RTT sample (``.pkts_acked``)
* ``on_loss_timeout()`` -- the retransmission timer fired (``.set_state(TCP_CA_Loss)``)
* ``undo_cwnd()`` -- the window after a reduction proved spurious (``.undo_cwnd``)

``slow_start`` and ``additive_increase`` are the kernel's shared helpers
(``tcp_slow_start`` and ``tcp_cong_avoid_ai`` in net/ipv4/tcp_cong.c).
"""
from __future__ import annotations

from ..errors import ConfigError


class CongestionControl:
    name = "base"

    def __init__(self):
        self.s = None   # the TcpSender

    def attach(self, sender) -> None:
        self.s = sender
        # only a module that samples the delivery rate (BBR) keeps tcp_rate.c's per-skb snapshots
        q = getattr(sender, "q", None)
        if q is not None:
            q.on_delivered = None

    # -- hooks -----------------------------------------------------------------
    def ssthresh(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def cong_avoid(self, acked: int, now: float) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def on_rtt(self, rtt: float, now: float) -> None:
        return None

    def on_loss_timeout(self) -> None:
        return None

    def undo_cwnd(self) -> int:
        """``tcp_reno_undo_cwnd`` (Reno and CUBIC): the window before the reduction, if larger."""
        s = self.s
        return s.cwnd if s.cwnd > s.prior_cwnd else s.prior_cwnd

    # -- kernel helpers ------------------------------------------------------------
    def slow_start(self, acked: int) -> int:
        """``tcp_slow_start``: cwnd += acked up to ssthresh; return the ACKs left over."""
        s = self.s
        cwnd = s.cwnd + acked
        if cwnd > s.ssthresh:
            cwnd = s.ssthresh
        acked -= cwnd - s.cwnd
        s.cwnd = cwnd
        return acked

    def additive_increase(self, w: int, acked: int) -> None:
        """``tcp_cong_avoid_ai``: one segment more per ``w`` segments delivered."""
        s = self.s
        if s.cwnd_cnt >= w:
            s.cwnd_cnt = 0
            s.cwnd += 1
        s.cwnd_cnt += acked
        if s.cwnd_cnt >= w:
            delta = s.cwnd_cnt // w
            s.cwnd_cnt -= delta * w
            s.cwnd += delta


ALGORITHMS = {"cubic": "cubic:Cubic", "newreno": "newreno:NewReno", "reno": "newreno:NewReno",
              "bbr": "bbr:Bbr"}


def make_congestion_control(name: str | CongestionControl) -> CongestionControl:
    """A fresh module from its Linux name (``cubic``, ``bbr``, ``reno``/``newreno``)."""
    if isinstance(name, CongestionControl):
        return name
    target = ALGORITHMS.get(str(name).lower())
    if target is None:
        raise ConfigError(f"unknown TCP congestion control {name!r}", key="congestion",
                          fix=f"use one of: {', '.join(sorted(ALGORITHMS))}")
    import importlib  # noqa: PLC0415
    mod, cls = target.split(":")
    return getattr(importlib.import_module(f"{__package__}.{mod}"), cls)()
