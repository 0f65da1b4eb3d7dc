"""The collector: gathers real measurements through a real OVS bridge and real qdiscs.

It builds a testbed of network namespaces (``testbed``), starts a private Open
vSwitch (``ovs``), applies QoS (``qos``), runs the traffic tools and parses
their output (``tools``), runs a campaign matrix (``campaign``) and writes tidy
data (``store``).  It never imports the simulator: it only writes ``data/``.
"""
