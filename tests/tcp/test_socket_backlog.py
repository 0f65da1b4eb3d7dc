"""The socket backlog: segments that reach a socket its writer owns wait for ``release_sock``.

net/ipv4/tcp_ipv4.c ``tcp_v4_rcv``: when ``sock_owned_by_user`` the segment goes to ``tcp_add_backlog``;
net/core/sock.c ``release_sock`` -> ``__release_sock`` runs ``sk_backlog_rcv`` on each, in order.
A bulk writer on a run-to-completion endpoint owns its socket while its core carries its write().
"""
from ovssim.sched import call_at
from ovssim.tcp.connection import connect

MSS = 1448


def _bulk_path(make_path, until=0.02):
    p = make_path(rate=1e9, delay=20e-6, limit=10000)
    c, s = connect(p.env, p.a, p.b, 5001)
    free = [0.0]
    c.sender._rtc = (free, 0, None)          # the writer's core: busy until free[0]
    c.bulk(until)
    return p, c, free


def test_acks_wait_while_the_writer_owns_the_socket_and_are_processed_in_order_at_release(make_path):
    p, c, free = _bulk_path(make_path)
    seen = {}
    t0, busy = 0.005, 200e-6

    def own(_):
        seen["una0"] = c.sender.snd_una
        free[0] = t0 + busy                  # the writer enters a write() that lasts 200 us

    def during(_):
        seen["una_during"] = c.sender.snd_una
        seen["backlog"] = len(c.backlog)

    def after(_):
        seen["una_after"] = c.sender.snd_una
        seen["backlog_after"] = len(c.backlog)
    call_at(p.env, t0, own)
    call_at(p.env, t0 + busy - 1e-6, during)
    call_at(p.env, t0 + busy + 1e-9, after)
    p.env.run(until=t0 + 2 * busy)
    assert seen["una0"] > 0
    assert seen["backlog"] > 0                           # ACKs arrived meanwhile ...
    assert seen["una_during"] == seen["una0"]            # ... and none was processed
    assert seen["backlog_after"] == 0
    assert seen["una_after"] > seen["una0"]              # all at release, the highest ACK last


def test_without_an_owner_acks_are_processed_on_arrival(make_path):
    p, c, free = _bulk_path(make_path)
    c.use_backlog = False
    una = []
    for k in range(1, 6):
        call_at(p.env, 0.005 + k * 40e-6, lambda _: una.append(c.sender.snd_una))
    p.env.run(until=0.006)
    assert not c.backlog
    assert len(set(una)) > 1
