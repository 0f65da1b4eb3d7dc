"""Packet.clone copies every field (it is written field by field, so a new slot must be added there too)."""
from ovssim.packet import FlowKey, Packet


def test_clone_copies_every_slot_and_is_independent():
    pkt = Packet(FlowKey("a", "b", 1, 2, "tcp"), 1514, 0.5, 1448, 7)
    marks = {name: object() for name in Packet.__slots__}
    for name, mark in marks.items():
        setattr(pkt, name, mark)
    c = pkt.clone()
    assert c is not pkt and type(c) is Packet
    missing = [name for name in Packet.__slots__ if getattr(c, name, None) is not marks[name]]
    assert not missing, f"Packet.clone does not copy {missing}"
    c.size = 60
    c.seq = 99
    assert pkt.size is marks["size"] and pkt.seq is marks["seq"]
