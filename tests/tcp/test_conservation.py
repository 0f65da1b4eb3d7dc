"""Every byte written arrives exactly once and in order, whatever is lost; runs repeat exactly."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ovssim.tcp import connect


def transfer(make_path, nbytes, fwd_drops, rev_drops, cc, sack, rcvbuf, until=3000.0):
    # long enough for 30 back-to-back timeouts (1 + 2 + ... + 64 s, then 120 s each)
    p = make_path(rate=50e6, delay=0.002, limit=50, fwd_pattern=fwd_drops, rev_pattern=rev_drops)
    c, s = connect(p.env, p.a, p.b, 5001, cc=cc, sack=sack, server=dict(rcvbuf=rcvbuf))
    chunks = []
    expected_next = [0]

    def reads(n, now):
        # in-order delivery: the receiver's next byte is exactly where the last read ended
        assert s.receiver.rcv_nxt == expected_next[0] + n
        expected_next[0] += n
        chunks.append(n)

    s.receiver.on_deliver = reads
    c.write(nbytes)
    p.env.run(until=until)
    return p, c, s, chunks


drops = st.sets(st.integers(min_value=0, max_value=400), max_size=60)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(nbytes=st.integers(min_value=1, max_value=400_000), fwd=drops,
       rev=st.sets(st.integers(min_value=0, max_value=200), max_size=30),
       cc=st.sampled_from(["cubic", "newreno"]), sack=st.booleans(),
       rcvbuf=st.sampled_from([8 * 1024, 64 * 1024, None]))
def test_bytes_arrive_exactly_once_in_order(make_path, nbytes, fwd, rev, cc, sack, rcvbuf):
    p, c, s, chunks = transfer(make_path, nbytes, fwd, rev, cc, sack, rcvbuf)
    assert sum(chunks) == nbytes                     # all of it, nothing twice
    assert s.receiver.rcv_nxt == nbytes
    assert c.sender.snd_una == nbytes                # and the sender knows
    assert c.sender.packets_out == 0
    assert c.sender.lost_out == c.sender.retrans_out == 0
    # conservation on the wire: what the data path carried = delivered + dropped + queued
    lost_here = p.loss.dropped
    assert p.loss.arrived == p.loss.forwarded + lost_here
    # every lost data segment had to be sent again
    assert c.sender.retransmits >= (1 if lost_here else 0)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fwd=drops, cc=st.sampled_from(["cubic", "newreno"]), sack=st.booleans())
def test_runs_are_deterministic(make_path, fwd, cc, sack):
    runs = []
    for _ in range(2):
        p, c, s, chunks = transfer(make_path, 300_000, fwd, set(), cc, sack, None, until=60.0)
        snd = c.sender
        runs.append((chunks, snd.segs_out, snd.retransmits, snd.timeouts, snd.rtt_samples,
                     s.receiver.acks_sent, p.env.now))
    assert runs[0] == runs[1]


def test_random_loss_bulk_conserves_bytes(make_path):
    p = make_path(rate=100e6, delay=0.005, loss_p=0.01, seed=11)
    c, s = connect(p.env, p.a, p.b, 5001)
    c.bulk(3.0)
    p.env.run(until=10.0)
    snd = c.sender
    assert snd.bulk_until is None and snd.packets_out == 0
    assert s.receiver.bytes_received == snd.write_end == snd.snd_una
    # data segments sent = first transmissions + retransmissions
    first = -(-snd.write_end // snd.mss)
    assert snd.data_segs_out == first + snd.retransmits
    assert snd.retransmits >= p.loss.dropped
