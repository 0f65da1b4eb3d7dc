"""ovssim: a discrete-event simulator of the Open vSwitch packet path.

VIF -> bridge (OVS datapath or Linux bridge) -> qdisc -> PIF, built on SimPy,
with parameters fitted from measurements (see ``calibration/``) and validated
against real data (see ``validation/``).

Everything a user composes is importable from here (``from ovssim import
EgressPort, Sink``); the names are loaded on first use, so ``import ovssim``
stays cheap.  ``__all__`` is the public API: anything else may change.
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"

# public name -> "module:attribute" (relative to this package)
_EXPORTS: dict[str, str] = {
    # packets
    "Packet": "packet:Packet",
    "FlowKey": "packet:FlowKey",
    "udp_frame_size": "packet:udp_frame_size",
    "tcp_frame_size": "packet:tcp_frame_size",
    "icmp_frame_size": "packet:icmp_frame_size",
    # units, tc's spelling
    "parse_rate": "units:rate",
    "parse_size": "units:size",
    "parse_time": "units:time",
    # the path elements
    "Source": "path.source:Source",
    "Sink": "path.base:Sink",
    "Endpoint": "path.endpoint:Endpoint",
    "VifLatency": "path.vif:VifLatency",
    "VifBackend": "path.vif:VifBackend",
    "OvsDatapath": "path.datapath:OvsDatapath",
    "QueueRule": "path.datapath:QueueRule",
    "LinuxBridge": "path.linux_bridge:LinuxBridge",
    "PatchPort": "path.links:PatchPort",
    "VethLink": "path.links:VethLink",
    "AfxdpPort": "path.afxdp:AfxdpPort",
    "PmdThread": "path.afxdp:PmdThread",
    "EgressPort": "path.port:EgressPort",
    "Nic": "path.nic:Nic",
    "PhysicalSwitch": "path.switch:PhysicalSwitch",
    "CpuPool": "path.cpu:CpuPool",
    "RandomLoss": "path.loss:RandomLoss",
    # qdiscs
    "Qdisc": "qdisc.base:Qdisc",
    "make_qdisc": "qdisc.registry:make_qdisc",
    "qdisc_class": "qdisc.registry:qdisc_class",
    "QDISC_KINDS": "qdisc.registry:KINDS",
    # TCP
    "tcp_connect": "tcp.connection:connect",
    "TcpSocket": "tcp.socket:TcpSocket",
    # workloads (traffic tools)
    "make_workload": "workloads.registry:make_workload",
    "RunContext": "workloads.base:RunContext",
    "Workload": "workloads.base:Workload",
    "Metric": "workloads.base:Metric",
    "IperfUdp": "workloads.udp:IperfUdp",
    "Iperf3Udp": "workloads.udp:Iperf3Udp",
    "IperfTcp": "workloads.iperf_tcp:IperfTcp",
    "NetperfTcpStream": "workloads.netperf:NetperfTcpStream",
    "NetperfTcpRR": "workloads.netperf:NetperfTcpRR",
    "Ping": "workloads.ping:Ping",
    # random delays
    "Distribution": "distributions:Distribution",
    "Sampler": "distributions:Sampler",
    # scenarios, profiles, runs
    "Scenario": "scenario:Scenario",
    "load_scenario": "scenario:load_scenario",
    "Profile": "profile:Profile",
    "run_scenario": "runner:run_scenario",
    "RunResult": "runner:RunResult",
    "load_sweep": "sweep:load_sweep",
    "run_sweep": "sweep:run_sweep",
    "load_sweep_results": "sweep:load_results",
    "summarise_sweep_results": "sweep:summarise_results",
    # errors
    "OvssimError": "errors:OvssimError",
    "ConfigError": "errors:ConfigError",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str):
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'ovssim' has no attribute {name!r}")
    module, attr = target.split(":")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
    globals()[name] = value                    # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
