"""A TCP that behaves like Linux's: sender, receiver, buffer autotuning, CUBIC, BBR v1 and NewReno.

``connect(env, a, b, port)`` gives two established :class:`TcpSocket` ends on
two :class:`~ovssim.path.endpoint.Endpoint` objects; ``sock.write(n)`` or
``sock.bulk(until)`` makes the application send.  See ``sender.py`` and
``receiver.py`` for what is modelled and what is not.
"""
from .bbr import Bbr
from .buffers import ReceiveBuffer, SendBuffer, TcpSysctls
from .connection import TcpListener, connect
from .congestion import CongestionControl, make_congestion_control
from .cubic import Cubic
from .newreno import NewReno
from .receiver import TcpReceiver
from .rtt import RttEstimator
from .sender import TcpSender
from .socket import TcpSocket

__all__ = ["connect", "TcpListener", "TcpSocket", "TcpSender", "TcpReceiver", "RttEstimator",
           "CongestionControl", "Cubic", "NewReno", "Bbr", "make_congestion_control",
           "TcpSysctls", "SendBuffer", "ReceiveBuffer"]
