"""ovssim: a discrete-event simulator of the Open vSwitch packet path.

VIF -> bridge (OVS datapath or Linux bridge) -> qdisc -> PIF, built on SimPy,
with parameters fitted from measurements (see ``calibration/``) and validated
against real data (see ``validation/``).
"""

__version__ = "0.1.0"
