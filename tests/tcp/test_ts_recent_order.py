"""TS.Recent is taken from an ACK before the ACK is processed, so the data the ACK releases echoes it.

Linux (net/ipv4/tcp_input.c): ``tcp_rcv_established``'s fast path runs ``tcp_store_ts_recent`` before
``tcp_ack``, and its slow path ``tcp_ack(..., FLAG_UPDATE_TS_RECENT)`` calls ``tcp_replace_ts_recent`` at the
top of ``tcp_ack``; ``tcp_data_snd_check`` sends only afterwards.  The peer's receiver times its round trip
on that echo (``tcp_rcv_rtt_measure_ts``) and sizes its buffer with it (``tcp_rcv_space_adjust``).  Measured
on this host (data/local/tcp_window/2026-11-28-trace, tcp:tcp_probe and tcp:tcp_rcvbuf_grow, bridge HTB
20 Mbit/s P1 CUBIC): the data skb the first data ACK released arrived 6.0 ms after that ACK, and the
receiver's first buffer growth had rtt_us=6000 -- one round trip, not two.
"""
from ovssim.tcp import connect


def test_data_released_by_an_ack_echoes_that_acks_timestamp(make_path):
    p = make_path(rate=100e6, delay=0.005)
    c, s = connect(p.env, p.a, p.b, 5001, cc="cubic")
    acks = []                      # (arrival time at A, ts_val) of pure ACKs
    data = []                      # (send time, ts_ecr) of data segments
    put_a, send_a = p.a.put, p.a.send

    def put(pkt):
        if not pkt.payload and getattr(pkt, "ts_val", 0.0):
            acks.append((p.env.now, pkt.ts_val))
        return put_a(pkt)

    def send(pkt):
        if pkt.payload:
            data.append((p.env.now, pkt.ts_ecr))
        return send_a(pkt)
    p.a.put, p.a.send = put, send
    c.sender.bulk(0.2)
    p.env.run(until=0.2)
    checked = 0
    for t, ecr in data:
        same = [v for ta, v in acks if ta == t]
        if same:                   # sent in the push of an ACK that arrived at this instant
            assert ecr == max(same), (t, ecr, same)
            checked += 1
    assert checked > 10
