"""Open a TCP connection between two endpoints.

``connect(env, client_ep, server_ep, port, **options)`` returns the two
:class:`~ovssim.tcp.socket.TcpSocket` ends, already established (the
handshake is not simulated: netperf and iperf start timing after it); a SYN
and its SYN-ACK still cross the path so that the client's RTT estimate starts
from the idle round trip, as Linux's does (``TcpSocket.syn``).  The
client gets an ephemeral port; the server side is a :class:`TcpListener`
bound on ``(tcp, port)`` that hands each segment to the connection its
source port names, so many connections (``iperf -P N``) share one port as
they do on a real server.

The MSS follows the smaller of the two endpoints' ``mtu`` attributes (1500
when an endpoint has none) unless ``mtu`` or ``mss`` is given.
Options can differ per side: ``client={...}``/``server={...}`` override the
common ones (e.g. netperf's ``-s`` for the client and ``-S`` for the server).
"""
from __future__ import annotations

from .socket import TcpSocket


class TcpListener:
    """A listening port: demultiplexes segments by the client's port (the socket lookup)."""

    def __init__(self, endpoint, port: int):
        self.endpoint = endpoint
        self.port = port
        self.connections: dict[int, TcpSocket] = {}
        self.unclaimed = 0

    def put(self, pkt) -> None:
        sock = self.connections.get(pkt.flow.sport)
        if sock is None:
            self.unclaimed += 1
            return
        sock.put(pkt)


def listener_for(endpoint, port: int) -> TcpListener:
    """The endpoint's listener on ``port``, created and bound on first use."""
    handlers = getattr(endpoint, "_handlers", None)
    existing = handlers.get(("tcp", port)) if handlers is not None else None
    if isinstance(existing, TcpListener):
        return existing
    lst = TcpListener(endpoint, port)
    endpoint.bind("tcp", port, lst)
    return lst


def connect(env, client_ep, server_ep, port: int, *, client: dict | None = None,
            server: dict | None = None, client_port: int | None = None,
            **common) -> tuple[TcpSocket, TcpSocket]:
    """Establish a connection ``client_ep -> server_ep:port``; returns ``(client, server)``."""
    cport = client_port if client_port is not None else client_ep.ephemeral_port()
    if common.get("mtu") is None:
        # each side announces an MSS from its own MTU; the smaller one is used (RFC 9293 3.7.1)
        common["mtu"] = min(getattr(client_ep, "mtu", None) or 1500, getattr(server_ep, "mtu", None) or 1500)
    copts = dict(common, **(client or {}))
    sopts = dict(common, **(server or {}))
    csock = TcpSocket(env, client_ep, cport, server_ep.name, port, **copts)
    ssock = TcpSocket(env, server_ep, port, client_ep.name, cport, **sopts)
    client_ep.bind("tcp", cport, csock)
    listener_for(server_ep, port).connections[cport] = ssock
    csock.connected_to(ssock)
    ssock.connected_to(csock)
    csock.syn()
    return csock, ssock
