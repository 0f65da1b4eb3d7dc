"""A user-mode-Linux testbed: every qdisc and the OVS kernel datapath on a real Linux 6.1 kernel.

``kernel`` finds Debian's UML kernel and its modules, ``instance`` boots and cleans up
one instance, ``collect`` runs a campaign (the ordinary collector) inside one.
"""
