"""Linux queueing disciplines behind one enqueue/dequeue contract (see ``base``).

``make_qdisc(spec)`` builds one from a scenario's ``qdisc`` table or an OVS QoS
``type``; ``KINDS`` lists what is available.
"""
from .base import Qdisc, QdiscStats
from .registry import KINDS, make_qdisc, register

__all__ = ["Qdisc", "QdiscStats", "KINDS", "make_qdisc", "register"]
