"""The receiver's RTT estimate as 6.18 updates it (``tcp_rcv_rtt_update``, net/ipv4/tcp_input.c).

``new_sample = m`` when there is no estimate yet or the sample is below it (``m < old_sample``); only a larger
sample is averaged in, by 1/8 (``old_sample - (old_sample >> 3) + sample``, in the <<3 fixed point).  The
estimate paces ``tcp_rcv_space_adjust`` (one measurement per estimated RTT), i.e. when the receive buffer and
window_clamp grow in slow start.
"""
from ovssim.tcp.buffers import ReceiveBuffer


def test_rcv_rtt_takes_a_smaller_sample_at_once():
    b = ReceiveBuffer(mss=1448)
    b.on_data(0, 1448, 0.100, 0.110)      # 10 ms
    assert abs(b.rtt - 0.010) < 1e-9
    b.on_data(0, 1448, 0.200, 0.230)      # 30 ms: 10 + (30 - 10) / 8
    assert abs(b.rtt - 0.0125) < 1e-9
    b.on_data(0, 1448, 0.300, 0.306)      # 6 ms < 12.5: replaces it
    assert abs(b.rtt - 0.006) < 1e-9
