"""validation/tcp_window/ack_train.py's analysis of captured skbs and ACKs (the numbers its data README quotes)."""
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("ack_train", ROOT / "validation" / "tcp_window" / "ack_train.py")
ack_train = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ack_train)

MSS = 1448
WRAP = 1 << 32


def _records(isn: int, skbs: list[int], data_port=40002, control_port=40001):
    """A capture as the sniffer writes it: (t, dir, payload, seq, ack, client port) -- iperf3's control
    connection's small messages on one port, the data connection's skbs, each ACKed whole, on another."""
    recs = [(0.0, "out", 37, 7, 0, control_port), (0.001, "in", 0, 0, 44, control_port)]
    t, seq = 0.01, isn
    for n in skbs:
        recs.append((t, "out", n * MSS, seq % WRAP, 0, data_port))
        seq += n * MSS
        recs.append((t + 0.0001, "in", 0, 0, seq % WRAP, data_port))
        t += 0.005
    return recs


def test_segments_per_skb_and_per_ack_of_the_data_connection_across_the_sequence_wrap():
    skbs = [9, 9, 10, 8, 9]
    st = ack_train.analyse(_records(WRAP - 12 * MSS, skbs), MSS)    # the second skb crosses 2^32
    assert st["skb_segs"] == {8: 1, 9: 3, 10: 1}                      # the control connection's 37 B left out
    assert st["acked_segs"] == {9: 2, 10: 1, 8: 1}                   # the first ACK only sets the start
    assert st["flight_segs_quartiles"] == [0.0, 0.0, 0.0]             # each skb ACKed before the next leaves


def test_a_duplicate_or_stale_ack_counts_nothing():
    recs = _records(1000, [5, 5])
    last_ack = recs[-1]
    recs.append((last_ack[0] + 0.001, "in", 0, 0, last_ack[4], last_ack[5]))            # duplicate
    recs.append((last_ack[0] + 0.002, "in", 0, 0, (last_ack[4] - 5 * MSS) % WRAP, last_ack[5]))   # stale
    st = ack_train.analyse(recs, MSS)
    assert st["acked_segs"] == {5: 1}
