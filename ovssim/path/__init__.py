"""The elements a packet passes, one file each, in path order.

Every element takes the ``simpy.Environment`` and its parameters in its
constructor, has ``put(packet)`` and an ``out`` attribute (anything with
``put``), and holds its own counters -- the wiring ns.py users know.
"""
