"""Stable integer keys that pin a flow's or a connection's work to one core."""
from __future__ import annotations

import zlib

_FLOW_KEYS: dict = {}


def flow_key(flow) -> int:
    """A stable integer for a flow (CRC-32 of its 5-tuple), to pin its work to one core.

    Linux keeps a flow's packets on one CPU (RSS / RPS hash the 5-tuple), so a flow
    is never reordered by being processed on two cores at once.  Stable across
    processes (no salted ``hash()``), cached per flow.
    """
    k = _FLOW_KEYS.get(flow)
    if k is None:
        if len(_FLOW_KEYS) > 100_000:
            _FLOW_KEYS.clear()
        k = _FLOW_KEYS[flow] = zlib.crc32(repr(tuple(flow)).encode())
    return k


_CONN_KEYS: dict = {}


def conn_key(flow) -> int:
    """A connection's core key: the same for both directions of a 5-tuple.

    Softirq work follows the connection, not the direction: on a path of veths
    and bridges the data and the ACKs it triggers are processed in the same
    softirq run, on one CPU (run to completion, :mod:`ovssim.path.endpoint`).
    For frames from a NIC this is an approximation: default Toeplitz RSS is not
    symmetric, so the two directions may land on different queues.  Stable
    across processes, cached per flow."""
    k = _CONN_KEYS.get(flow)
    if k is None:
        if len(_CONN_KEYS) > 100_000:
            _CONN_KEYS.clear()
        a, b = (flow[0], flow[2]), (flow[1], flow[3])
        lo, hi = (a, b) if repr(a) <= repr(b) else (b, a)
        k = _CONN_KEYS[flow] = zlib.crc32(repr((lo, hi, flow[4])).encode())
    return k


def pinned_key(key: int, affinity, cores: int) -> int:
    """``key`` kept within ``affinity`` (``taskset -c``'s cores, each below ``cores``; None = any): the key
    itself if its core is allowed, else an allowed core picked by the key (so a pinned tool's
    connections still spread over its cores as their hashes spread them)."""
    if affinity is None or key % cores in affinity:
        return key
    return affinity[key % len(affinity)]
