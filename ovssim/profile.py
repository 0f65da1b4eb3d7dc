"""Calibration profiles: load, validate, and sample from.

A profile is a TOML file (``calibration/*.toml``, or the embedded
``default``) with ``[profile]`` (name, description, ``base``), ``[provenance]``
(data files and hashes, command, date, ovssim version), ``[fit]``
(goodness-of-fit figures), ``[params]`` (dotted parameter names -> values or
distribution specs, see :mod:`ovssim.distributions`) and optional
``[uncertainty]`` and ``[sources]``.  A profile inherits every parameter it
does not set from its ``base`` (``"default"`` unless stated), so a fit can
publish only what it fitted.  Unknown parameter names and malformed values
are errors naming the file, the key and the fix.
"""
from __future__ import annotations

import difflib
import re
import tomllib
from importlib import resources
from pathlib import Path

from . import units
from .distributions import Distribution, Sampler
from .errors import ConfigError
from .path.vif import VIF_KINDS
from .qdisc.registry import KINDS as QDISC_KINDS
from .tomlfile import read_toml

# name -> kind of value
SCHEMA: dict[str, str] = {
    "ovs.stats": "dist", "ovs.lookup": "dist", "ovs.actions": "dist", "ovs.upcall": "dist",
    "ovs.latency": "dist", "ovs.upcall_wakeup": "dist",
    # how late a qdisc's watchdog runs the port (ovssim/path/port.py), not CPU work: a constant or a
    # distribution drawn per watchdog (UML: the instance's process now and then not scheduled by its host)
    "qdisc.watchdog_latency": "dist",
    # how long the frames one watchdog run dequeues wait for the next hop's deferred softirq (ksoftirqd on a
    # non-preemptible kernel: UML), a constant or a distribution drawn per watchdog run; 0 = off
    "qdisc.watchdog_handoff": "dist",
    "ovs.lookup_per_mask": "time", "ovs.masks": "int", "ovs.handlers": "int",
    "ovs.upcall_queue": "int", "ovs.max_idle": "time", "ovs.flow_limit": "int",
    # AF_PACKET socket buffers of the userspace netdev datapath, bytes of skb truesize (0: not modelled);
    # net.core.wmem_default / rmem_default = 212992 (see ovssim/path/afpacket.py)
    "ovs.tx_sndbuf": "size", "ovs.rx_rcvbuf": "size",
    # the netdev datapath thread's stall when woken after idling (ovssim/path/datapath.py)
    "ovs.idle_stall_prob": "prob", "ovs.idle_stall": "time", "ovs.idle_after": "time", "ovs.idle_wake": "time",
    # the share of a netdev fast-path pass's CPU cost that is its delivery into the receiving namespace's
    # stack (run in ovs-vswitchd's sendto()); a frame sent to a veth link to another bridge does not pay it
    "ovs.deliver_share": "prob",
    # the netdev thread's main-loop run after a pass, per bridge it goes through (ovssim/path/vswitchd_loop.py)
    "ovs.bridge_run": "time",
    # AF_XDP ports' PMD thread (ovssim/path/afxdp.py): its own work per frame and per batch, an empty poll,
    # the XSK ring size and the TSC rate (MHz) pmd-perf-show counts cycles in
    "ovs.afxdp.per_packet": "time", "ovs.afxdp.per_batch": "time", "ovs.afxdp.empty_poll": "time",
    "ovs.afxdp.ring_size": "int", "ovs.afxdp.tsc_mhz": "int",
    "linux_bridge.forward": "dist",
    "patch.translate": "time", "veth.cpu_per_packet": "time", "veth.cpu_per_byte": "time",
    "nic.rx_delay": "dist", "host.stack_delay": "dist", "host.netdev_max_backlog": "int",
    # the kernel's work answering one ICMP echo request (icmp_rcv -> icmp_reply), on the endpoint's CPU
    "host.icmp_echo": "time",
    # the kernel's receive stack per packet delivered into an endpoint (ip_rcv -> tcp_v4_rcv / udp_rcv), CPU on
    # the packet's connection core in the softirq that delivers it (ovssim/path/endpoint.py ReceiveStack)
    "host.stack_cpu": "time",
    # a long-idle core's way out of its idle state, and how long idle counts as long (ovssim/cpu/pool.py)
    "host.idle_exit": "dist", "host.idle_exit_after": "time",
    # a shallower idle state for idles from host.shallow_after (0 = none) up to host.idle_exit_after
    "host.shallow_exit": "dist", "host.shallow_after": "time", "host.shallow_cold_factor": "factor",
    # and how much slower its work runs just after (the first host.cold_work of it, as a warm core runs it)
    "host.cold_factor": "factor", "host.cold_work": "time",
    # a [[host]] that is itself a virtual machine (guest_of): how many times longer its CPU work takes than the
    # bare-metal figures of the profile (ovssim/cpu/guest.py)
    "guest.cpu_factor": "factor",
    # busy time per idle gap that delays no work (a UML instance's way into and out of idle; ovssim/cpu/pool.py)
    "host.idle_busy": "time",
    # batching (issue 15): a NAPI poll's fixed cost apart from each frame's and each byte's,
    # software segmentation per segment and per checksummed byte
    "nic.cpu_per_poll": "time", "nic.cpu_per_packet": "time",
    "nic.cpu_per_byte": "time", "gso.cpu_per_segment": "time", "gso.cpu_per_byte": "time",
    # OVS patch ports: the translation's work in the thread that polls the bridge
    "patch.cpu_per_packet": "time",
    "switch.latency": "time", "switch.buffer": "size",
    "app.send_per_packet": "time", "app.recv_per_packet": "time", "app.rr_processing": "time",
    "app.send_per_call": "time", "app.wakeup": "time",
    # a reader's wake-up when its core is idle, beyond app.wakeup: paid with the idle share 1 - [state] cpu_busy
    "app.idle_wake": "time",
    # the socket copies per byte (tcp_sendmsg from user, tcp_recvmsg to user) on the application's core
    "app.send_per_byte": "time", "app.recv_per_byte": "time",
    # the host CPU one system call of an application costs beyond its kernel work, busy time on its core that
    # delays no packet (a user-mode-Linux instance's ptrace round trip; ovssim/cpu/pool.py CpuPool.account); 0 = none
    "app.syscall": "time",
}
# times that must be above zero, and why
POSITIVE_TIMES = {"host.idle_exit_after": "a core idle for no time at all is not idle; the kernel's tick is 4 ms at HZ=250"}
for _k in VIF_KINDS:
    SCHEMA[f"vif.{_k}.backend_delay"] = "dist"
    SCHEMA[f"vif.{_k}.cpu_per_packet"] = "time"
    SCHEMA[f"vif.{_k}.cpu_per_byte"] = "time"
for _q in QDISC_KINDS:
    # a qdisc's CPU work per skb enqueued and dequeued (default 0): schedulers differ in processing cost
    SCHEMA[f"qdisc.{_q}.cpu_per_packet"] = "time"

# CPU work on a host, in seconds per packet, byte, segment, poll or call: what a faster (or less loaded) host
# does in less time, so what Profile.scaled rescales by the ratio of speed indices (ovssim.collect.state).  Not in
# it: latencies that are not CPU work -- hardware and hypervisor latencies (nic.rx_delay, vif.*.backend_delay,
# switch.*), the receive stack's latency to the socket (host.stack_delay: it leaves the core idle,
# ovssim/path/endpoint.py; fitted 31.5 / 31.4 us on this machine's quiet and busy days, speed indices 1.0 / 0.5),
# wake-ups (app.wakeup, ovs.idle_wake, ovs.upcall_wakeup), the timer tick of the idle stall, timer latencies --
# and thresholds, sizes, counts and probabilities.  ovs.latency stays in: the netdev thread's wait for its core,
# which grows with the other jobs' load as the wall-clock speed index falls (fitted 27.7 / 127.9 us on the quiet
# and busy days).  ovs.bridge_run too: the rest of ovs-vswitchd's main-loop run after a pass, per bridge.
CPU_COSTS: frozenset[str] = frozenset((
    "ovs.stats", "ovs.lookup", "ovs.actions", "ovs.upcall", "ovs.lookup_per_mask", "ovs.latency", "ovs.bridge_run",
    "ovs.afxdp.per_packet", "ovs.afxdp.per_batch", "ovs.afxdp.empty_poll",
    "linux_bridge.forward", "patch.translate", "patch.cpu_per_packet", "veth.cpu_per_packet", "veth.cpu_per_byte",
    "nic.cpu_per_poll", "nic.cpu_per_packet", "nic.cpu_per_byte", "gso.cpu_per_segment", "gso.cpu_per_byte",
    "app.send_per_packet", "app.recv_per_packet", "app.rr_processing", "app.send_per_call",
    "app.send_per_byte", "app.recv_per_byte", "app.syscall", "host.cold_work", "host.icmp_echo", "host.stack_cpu",
    *(f"vif.{k}.{c}" for k in VIF_KINDS for c in ("cpu_per_packet", "cpu_per_byte")),
    *(f"qdisc.{q}.cpu_per_packet" for q in QDISC_KINDS),
))
# Latencies that are wake-ups of an idle or sleeping context (the receive stack's latency to the socket, a
# reader's wake-up, the netdev thread's wake-up on an idle core): what Profile.scaled rescales by the ratio of
# latency indices.  On this machine they moved by x3 between two quiet evenings of one speed index (Linux-bridge
# ping 70 us on 24 Nov, 15-45 us on 25 Nov, TCP throughput 3.5 Gbit/s both), so the CPU speed index cannot carry
# them.
LATENCIES: frozenset[str] = frozenset(("host.stack_delay", "app.wakeup", "app.idle_wake", "ovs.idle_wake",
                                       "host.idle_exit", "host.shallow_exit"))
# latency_index: the speed of those wake-ups relative to a reference (reference RTT / this state's RTT of a ping
# through the simplest path: 1.0 the reference, 2.0 half its latency); ovssim/validate/local.py measured_state.
# idle_exit_us: the collector's measured idle exit (ovssim/collect/state.py), where the data have one;
# pingpong_us / pingpong_rtt_us: its hot ping-pong's time per exchange and mean RTT (ovssim/validate/cold.py).
# shallow_after_ms / idle_exit_after_ms / shallow_exit_us: the idle states of its idle ladder (ovssim/fit/idle_states.py).
# cpu_busy: the share of the host's cores busy with other work while the data were taken (the collector's
# cpu_busy of runs whose own tool uses next to no CPU, such as ping): what the netdev thread's wake-up after
# idling finds (ovssim/path/datapath.py, idle_stall_state); 1 when a profile does not state it
STATE_KEYS = {"speed_index", "latency_index", "idle_exit_us", "pingpong_us", "pingpong_rtt_us", "shallow_after_ms",
              "idle_exit_after_ms", "shallow_exit_us", "loadavg", "steal_share", "cpu_busy", "data", "note"}


def scale_costs(params: dict, factor: float) -> dict:
    """Every nonzero CPU cost of ``params`` (:data:`CPU_COSTS`) times ``factor``, as profile entries.  A zero
    stays unwritten: scaled it is still the value the profile inherits, and written it would be set
    explicitly, beating a scenario's ``[params]`` (ovssim/precedence.py) -- the UML scenarios' measured
    ``app.syscall`` was so overridden by a ``0us`` copied from the embedded default."""
    out = {}
    for key in sorted(CPU_COSTS & params.keys()):
        v = params[key]
        if not isinstance(v, dict) and units.time(v) == 0.0:
            continue
        if isinstance(v, dict):
            v = dict(v)
            if "scale" in v:
                v["scale"] = f"{units.time(v['scale']) * factor * 1e6:.6g}us"
            elif "quantiles" in v:
                v["quantiles"] = [f"{units.time(x) * factor * 1e6:.6g}us" for x in v["quantiles"]]
            else:
                raise ValueError(f"cannot scale {key}: {v}")
        else:
            v = f"{units.time(v) * factor * 1e6:.6g}us"
        out[key] = v
    return out


def _check_busy_share(busy, source) -> None:
    """``[state] cpu_busy`` (or ``Profile.scaled``'s): None or a share in [0, 1], else one ConfigError."""
    if busy is not None and (isinstance(busy, bool) or not isinstance(busy, (int, float)) or not 0 <= busy <= 1):
        raise ConfigError(f"cpu_busy {busy!r} is not a share in [0, 1]", file=source, key="state.cpu_busy",
                          fix="write [state] cpu_busy = 0.02 (the busy share of the cores during the data)")

PROFILE_DIRS = (Path("calibration"),)
DEFAULT_LABEL = "default profile"      # the origin of a value of the embedded default
TABLES = {"profile", "provenance", "fit", "params", "uncertainty", "sources", "state"}
PROFILE_KEYS = {"name", "description", "base", "ovssim_version"}


def _read_toml(path: Path) -> dict:
    return read_toml(path, "profile", "give a path to a profile TOML, a name in calibration/, or 'default'")


class Profile:
    """A validated set of model parameters."""

    def __init__(self, data: dict, *, source: str = "<memory>", base: "Profile | None" = None):
        self.source = source
        if not isinstance(data.get("profile"), dict) or "name" not in data["profile"]:
            raise ConfigError("missing [profile] table with a 'name'", file=source, key="profile.name",
                              fix='add [profile] name = "..."')
        for table, known in ((data, TABLES), (data["profile"], PROFILE_KEYS)):
            unknown = sorted(set(table) - known)
            if unknown:
                where = "the profile" if table is data else "[profile]"
                raise ConfigError(f"unknown key {unknown[0]!r} in {where}", file=source, key=unknown[0],
                                  fix=f"{where} takes: {', '.join(sorted(known))}")
        if not isinstance(data["profile"]["name"], str) or not data["profile"]["name"].strip():
            raise ConfigError("the profile's name must be a non-empty string", file=source, key="profile.name",
                              fix='write [profile] name = "my_testbed"')
        if not isinstance(data.get("params", {}), dict):
            raise ConfigError("[params] must be a table", file=source, key="params",
                              fix='write [params] "dotted.name" = value')
        self.name = data["profile"]["name"]
        self.meta = data["profile"]
        self.provenance = data.get("provenance", {})
        self.fit = data.get("fit", {})
        self.uncertainty = data.get("uncertainty", {})
        self.sources = data.get("sources", {})
        # the machine state of the data the values were fitted on (its own, else its base's)
        self.state = self._check_state(data["state"], source) if "state" in data else (
            dict(base.state) if base is not None else {})
        self.cpu_factor = 1.0           # Profile.scaled: every CPU cost is multiplied by it
        self.latency_factor = 1.0       # Profile.scaled: every wake-up latency (LATENCIES) is multiplied by it
        own = data.get("params", {})
        for k, v in own.items():
            self._validate(k, v, source)
        self.params: dict = dict(base.params) if base is not None else {}
        self.params.update(own)
        self.own_params = set(own)
        # which profile (or override) set each value: "default profile", "profile NAME (FILE)", ...
        self.label = DEFAULT_LABEL if self.name == "default" and base is None else f"profile {self.name} ({source})"
        self.origin: dict[str, str] = dict(base.origin) if base is not None else {}
        self.origin.update(dict.fromkeys(own, self.label))
        missing = [k for k in SCHEMA if k not in self.params]
        if missing:
            raise ConfigError(f"profile lacks parameters: {', '.join(missing[:6])}"
                              f"{' ...' if len(missing) > 6 else ''}", file=source, key="params",
                              fix="set them, or give [profile] base = 'default' to inherit them")
        self._check_idle_states(source)
        self._dists: dict[str, Distribution] = {}

    def _check_idle_states(self, source: str) -> None:
        """The shallow idle state, where there is one, is entered before the deep one (ovssim/cpu/pool.py)."""
        shallow, deep = units.time(self.params["host.shallow_after"]), units.time(self.params["host.idle_exit_after"])
        if shallow > 0.0 and not shallow < deep:
            raise ConfigError(f"host.shallow_after ({units.fmt_time(shallow)}) is not below host.idle_exit_after "
                              f"({units.fmt_time(deep)}): a core reaches the shallow idle state before the deep one",
                              file=source, key="params.host.shallow_after",
                              fix='set it below host.idle_exit_after (e.g. "3.5ms" with "9ms"), or "0s" for no '
                                  'shallow state')

    @staticmethod
    def _check_state(state, source: str) -> dict:
        fix = "write [state] speed_index = 0.55 (see ovssim/collect/state.py), loadavg = [1.2, 1.0, 0.9]"
        if not isinstance(state, dict):
            raise ConfigError("[state] must be a table", file=source, key="state", fix=fix)
        unknown = sorted(set(state) - STATE_KEYS)
        if unknown:
            raise ConfigError(f"unknown key {unknown[0]!r} in [state]", file=source, key=f"state.{unknown[0]}",
                              fix=f"[state] takes: {', '.join(sorted(STATE_KEYS))}")
        _check_busy_share(state.get("cpu_busy"), source)
        for key in ("speed_index", "latency_index", "shallow_after_ms", "idle_exit_after_ms", "shallow_exit_us"):
            idx = state.get(key)
            if idx is not None and (isinstance(idx, bool) or not isinstance(idx, (int, float)) or not 0 < idx < 1e6):
                raise ConfigError(f"{key} {idx!r} is not a positive number", file=source, key=f"state.{key}",
                                  fix=fix)
        return dict(state)

    @staticmethod
    def _validate(key: str, value, source: str) -> None:
        kind = SCHEMA.get(key)
        if kind is None:
            close = difflib.get_close_matches(key, list(SCHEMA), n=1)
            raise ConfigError(f"unknown parameter {key!r}", file=source, key=f"params.{key}",
                              fix=f"did you mean {close[0]!r}?" if close else
                              "see ovssim/data/default_profile.toml for the parameter names")
        try:
            if kind == "dist":
                mean = Distribution(value, where=f"params.{key}").mean()
                if not mean <= units.DELAY_MAX:
                    raise ValueError(f"its mean {mean!r} s is beyond the physical range of a per-packet delay "
                                     f"(0 .. {units.fmt_time(units.DELAY_MAX)})")
            elif kind == "time":
                if not units.time(value) > 0.0 and key in POSITIVE_TIMES:
                    raise ValueError(f"{value!r} must be above 0 ({POSITIVE_TIMES[key]})")
            elif kind == "size":
                units.size(value)
            elif kind == "int":
                units.whole(value, key, 1)
            elif kind == "prob":
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                    raise ValueError(f"{value!r} is not a probability between 0 and 1")
            elif kind == "factor":
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1 <= value <= 100:
                    raise ValueError(f"{value!r} is not a slow-down factor between 1 and 100")
        except ConfigError as exc:
            raise ConfigError(exc.problem, file=source, key=f"params.{key}", fix=exc.fix) from None
        except ValueError as exc:
            example = {"time": '"5us"', "size": '"128k"', "int": "1", "prob": "0.2", "factor": "3.2"}.get(kind, "1")
            raise ConfigError(f"bad value: {exc}", file=source, key=f"params.{key}",
                              fix=f"give a {kind} (e.g. {example})") from None

    # -- loading -------------------------------------------------------------------
    @classmethod
    def default(cls) -> "Profile":
        text = resources.files("ovssim.data").joinpath("default_profile.toml").read_text()
        return cls(tomllib.loads(text), source="ovssim/data/default_profile.toml")

    @classmethod
    def load(cls, ref: str | Path | None, *, relative_to: Path | None = None) -> "Profile":
        """A profile from ``"default"``, a file path, or a name found in ``calibration/``."""
        return cls._load(ref, relative_to, ())

    @classmethod
    def _load(cls, ref, relative_to: Path | None, chain: tuple) -> "Profile":
        """``chain``: the files already being loaded (a ``base`` naming one of them is a cycle)."""
        if ref is None or ref == "default":
            return cls.default()
        if not isinstance(ref, (str, Path)) or not str(ref).strip():
            raise ConfigError(f"profile {ref!r} names no profile", key="scenario.profile",
                              fix="give 'default', a path to a profile TOML, or a name of a file in calibration/")
        path = Path(ref)
        candidates = [path]
        if relative_to is not None and not path.is_absolute():
            candidates.insert(0, relative_to / path)
        if path.suffix != ".toml":
            candidates += [d / f"{ref}.toml" for d in PROFILE_DIRS]
            if relative_to is not None:
                candidates += [relative_to / d / f"{ref}.toml" for d in PROFILE_DIRS]
                candidates += [p / "calibration" / f"{ref}.toml" for p in relative_to.parents]
        candidates.append(bundled_calibration() / f"{path.stem}.toml")
        for c in candidates:
            if c.is_file():
                if c.resolve() in chain:
                    raise ConfigError(f"profile {c} is its own base (through {len(chain)} profile(s))",
                                      key="profile.base", fix="make one profile of the chain base = \"default\"",
                                      file=str(c))
                data = _read_toml(c)
                prof = data.get("profile", {})
                base_ref = prof.get("base", "default") if isinstance(prof, dict) else "default"
                sibling = c.parent / f"{base_ref}.toml" if isinstance(base_ref, str) else None
                if (sibling is not None and base_ref not in ("default", "none") and not base_ref.endswith(".toml")
                        and sibling.is_file() and sibling.resolve() != c.resolve()
                        and sibling.resolve() not in chain):
                    base_ref = sibling          # a base named by name: its sibling first (not itself)
                base = None if base_ref in (None, "none") else (
                    cls.default() if base_ref == "default" else
                    cls._load(base_ref, c.parent, chain + (c.resolve(),)))
                return cls(data, source=str(c), base=base)
        raise ConfigError(f"profile {str(ref)!r} not found", key="scenario.profile",
                          fix="give 'default', a path to a profile TOML, or a name of a file in calibration/")

    def with_overrides(self, overrides: dict, *, source: str = "scenario params") -> "Profile":
        """A copy with some parameters replaced (scenario ``params`` table, calibration)."""
        for k, v in overrides.items():
            self._validate(k, v, source)
        p = Profile.__new__(Profile)
        p.__dict__.update(self.__dict__)
        p.params = dict(self.params)
        p.params.update(overrides)
        p.origin = {**self.origin, **dict.fromkeys(overrides, source)}
        p._dists = {}
        p._check_idle_states(source)
        return p

    def explicit(self) -> set[str]:
        """The keys set by something other than the embedded default profile (this profile, its bases,
        overrides): what a profile given on the command line imposes (:mod:`ovssim.precedence`)."""
        return {k for k, o in self.origin.items() if o != DEFAULT_LABEL}

    def _index_ratio(self, key: str, value, *, value_key: str, own_fix: str, value_fix: str) -> float:
        """This profile's ``[state] key`` over ``value`` (a speed or latency index), with one clear error
        when the profile states none or ``value`` is not a positive number."""
        name = key.replace("_", " ")
        own = self.state.get(key)
        if own is None:
            raise ConfigError(f"profile {self.name!r} states no {name}, so it cannot be scaled to {value!r}",
                              file=self.source, key=f"state.{key}", fix=own_fix)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ConfigError(f"{name} {value!r} is not a positive number", key=value_key, fix=value_fix)
        return own / value

    def scaled(self, speed_index: float, cpu_busy: float | None = None,
               latency_index: float | None = None) -> "Profile":
        """A copy for a host of ``speed_index`` (ovssim.collect.state): every CPU cost (:data:`CPU_COSTS`)
        times (this profile's index / ``speed_index``), every other parameter unchanged; with ``cpu_busy``,
        the copy's state has that busy share (what the netdev thread's wake-ups find, :meth:`busy_share`);
        with ``latency_index``, every wake-up latency (:data:`LATENCIES`) times (this profile's latency index
        / ``latency_index``)."""
        ratio = self._index_ratio("speed_index", speed_index, value_key="scenario.speed_index",
                                  own_fix="fit it on data with a machine_state, or add [state] speed_index = ... to it",
                                  value_fix="give the index ovssim.collect.state measured, e.g. 0.8")
        p = Profile.__new__(Profile)
        p.__dict__.update(self.__dict__)
        p.cpu_factor = self.cpu_factor * ratio
        p.state = {**self.state, "speed_index": speed_index}
        if cpu_busy is not None:
            _check_busy_share(cpu_busy, self.source)
            p.state["cpu_busy"] = float(cpu_busy)
        if latency_index is not None:
            p.latency_factor = self.latency_factor * self._index_ratio(
                "latency_index", latency_index, value_key="state.latency_index",
                own_fix="add [state] latency_index = ... (ovssim/validate/local.py measured_state)",
                value_fix="give a positive index, e.g. 1.2")
            p.state["latency_index"] = latency_index
        p._dists = {}
        return p

    def with_state(self, state: dict) -> "Profile":
        """A copy whose ``[state]`` also holds ``state`` (validated), values unchanged: what a calibration
        evaluates while it fits a profile that will carry that state (its busy share decides which wake-ups
        the runs pay, :meth:`busy_share`)."""
        p = Profile.__new__(Profile)
        p.__dict__.update(self.__dict__)
        p.state = self._check_state({**self.state, **state}, self.source)
        p._dists = {}
        return p

    def busy_share(self) -> float:
        """The share of the host's cores busy with other work in this profile's state (1 if not stated)."""
        return float(self.state.get("cpu_busy", 1.0))

    # -- access --------------------------------------------------------------------
    def dist(self, key: str) -> Distribution:
        d = self._dists.get(key)
        if d is None:
            if SCHEMA.get(key) != "dist":
                raise KeyError(key)
            d = Distribution(self.params[key], where=f"params.{key}")
            if self.cpu_factor != 1.0 and key in CPU_COSTS:
                d = d.scaled(self.cpu_factor)
            elif self.latency_factor != 1.0 and key in LATENCIES:
                d = d.scaled(self.latency_factor)
            self._dists[key] = d
        return d

    def sampler(self, key: str, rng) -> Sampler:
        return Sampler(self.dist(key), rng)

    def time(self, key: str) -> float:
        t = units.time(self.params[key])
        if key in CPU_COSTS:
            return t * self.cpu_factor
        return t * self.latency_factor if key in LATENCIES else t

    def size(self, key: str) -> float:
        return units.size(self.params[key])

    def int(self, key: str) -> int:
        return int(self.params[key])

    def prob(self, key: str) -> float:
        return float(self.params[key])

    def factor(self, key: str) -> float:
        return float(self.params[key])


def bundled_calibration() -> Path:
    """The calibrated profiles shipped inside the package (``calibration/`` of the source tree)."""
    from .data import bundled
    return bundled("calibration")


def profile_key_pattern() -> re.Pattern:
    return re.compile("|".join(re.escape(k) for k in SCHEMA))
