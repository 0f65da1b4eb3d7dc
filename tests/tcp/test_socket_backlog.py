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


def _first_write(make_path, call_cost, lock=True):
    """A BBR bulk writer whose 128 KiB write() lasts ``call_cost`` (its copy, tcp_sendmsg_locked), on a path
    whose round trip (~45 us) is shorter than the write; every ACK the sender processes and every rate sample."""
    from ovssim.tcp import bbr
    p = make_path(rate=10e9, delay=20e-6, limit=10000)
    c, s = connect(p.env, p.a, p.b, 5001, cc="bbr", client={"call_cost": call_cost})
    p.env.run(until=0.001)                   # the SYN's round trip
    acks, samples, sent = [], [], []
    snd = c.sender
    snd.write_lock = lock
    on_ack, transmit, gen = snd.on_ack, snd._transmit, snd.cc.rate.gen

    def ack(pkt, now):
        acks.append((now, pkt.ack))
        return on_ack(pkt, now)

    def tx(seq, n, now, new, segs=1):
        sent.append((now, seq, n))
        return transmit(seq, n, now, new, segs)

    def sample(delivered, now, min_rtt):
        rs = gen(delivered, now, min_rtt)
        samples.append((now, delivered, rs))
        return rs
    snd.on_ack, snd._transmit, snd.cc.rate.gen = ack, tx, sample
    t0 = p.env.now
    call_at(p.env, t0, lambda _: c.bulk(t0 + 0.01, 131072))
    p.env.run(until=t0 + 400e-6)
    return t0, acks, samples, sent, snd


def test_acks_arriving_during_the_write_are_processed_at_its_release_and_sampled_then(make_path):
    """tcp_sendmsg (net/ipv4/tcp.c) holds the socket lock for the whole write: ``lock_sock``, then
    ``tcp_sendmsg_locked`` copies all 128 KiB (sending the first skb on the way), then ``release_sock``.  The
    first skb's ACK comes back within the write, goes to the backlog (``tcp_add_backlog``) and is processed at
    ``release_sock`` (``__release_sock``) -- this host's tcp_probe: iperf3's first data ACK 55-79 us after the
    receiver took the skb, in process context.  Its rate sample (net/ipv4/tcp_rate.c ``tcp_rate_gen``) is the
    skb's segments over max(send interval, ACK interval), the ACK interval running from the skb's departure
    (``tcp_rate_skb_sent`` with nothing in flight) to that processing: the write's length, not the round trip."""
    write = 150e-6
    t0, acks, samples, sent, snd = _first_write(make_path, write)
    first_tx, seq, n = sent[0]
    assert first_tx == t0 and seq == 0
    data_acks = [(t, a) for t, a in acks if a > 0]
    # nothing processed before the write ends, then everything that came back meanwhile
    assert data_acks[0][0] == t0 + write
    assert sum(1 for t, _ in data_acks if t == t0 + write) > 1
    t, delivered, rs = next(x for x in samples if x[1] > 0)
    assert t == t0 + write and rs is not None
    assert abs(rs[0] - delivered / write) < 1e-6 * rs[0]     # over the write's 150 us, not the ~45 us round trip


def test_a_write_without_cost_or_without_write_lock_holds_no_ack(make_path):
    """Zero write costs (this repository's profiles but the fitted batching/chains ones), or ``write_lock`` off
    (the default): the ACK is processed when it arrives, one round trip after the skb left."""
    for cost, lock in ((0.0, True), (150e-6, False)):
        t0, acks, samples, sent, snd = _first_write(make_path, cost, lock)
        first = next(t for t, a in acks if a > 0)
        assert 40e-6 < first - t0 < 60e-6
