"""The built-in testbed: namespaces as VMs, VIFs into real OVS or Linux bridges.

What seed 000 built with KVM guests, on one machine::

    vm1 [eth0] ==veth== [vif1] br0 --link-- br1 ... br{n-1} [vif2] ==veth== [eth0] vm2

* every VM is a network namespace ``<name>-vm<i>`` with one veth (``eth0``);
* the bridges live in their own namespace ``<name>-sw`` (the "host"), so nothing
  -- not even OVS's ``ovs-netdev`` tap -- appears in the host's namespace;
* ``bridge = "ovs"``: a private OVS (``ovs.PrivateOVS``) started inside the
  switch namespace; the datapath is the kernel one when the ``openvswitch``
  module is loaded, otherwise the userspace ``netdev`` datapath;
* ``bridge = "linux"``: ``ip link add brN type bridge`` (STP off, no forward delay);
* chained bridges are joined by OVS patch ports or by veth pairs.

The userspace datapath receives on AF_PACKET sockets, which hand it frames
whose TCP checksum the sender left to the NIC (CHECKSUM_PARTIAL); those frames
leave OVS with a bad checksum and TCP stalls.  So transmit checksum offload
is switched off on each VM's eth0 (``ethtool -K eth0 tx off``) for OVS, and,
by default, for the Linux bridge too so both carry the same frames.
"""
from __future__ import annotations

import atexit
import ipaddress
import json
import os
import re
import shutil
import signal
import tempfile
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import ConfigError
from . import bounds
from .ovs import PrivateOVS, kernel_datapath_available
from .qos import PROBE_NS
from ..atomic import write_atomic
from .shell import NSNAME_MAX, check_name, run, which

STATE_DIR = Path(os.environ.get("OVSSIM_STATE_DIR", "/run/ovssim"))


@dataclass(frozen=True)
class TestbedSpec:
    """What to build.  ``key()`` identifies testbeds that are interchangeable."""
    __test__ = False
    bridge: str = "ovs"          # ovs | linux
    chain: int = 1               # number of bridges in series
    link: str = "patch"          # patch | veth (between chained bridges)
    vms: int = 2
    datapath: str = "auto"       # auto | netdev | system (OVS only)
    vm_tx_offload: bool = False  # transmit checksum offload on the VMs' eth0
    subnet: str = "10.77.0.0/24"
    mtu: int = 1500
    vif_type: str = "system"     # OVS port type of the VIFs: system (AF_PACKET) | afxdp

    @classmethod
    def from_dict(cls, d: dict, *, file=None, check: bool = True) -> "TestbedSpec":
        """A spec from a [testbed] table; ``check=False`` only refuses unknown settings."""
        allowed = {f for f in cls.__dataclass_fields__}
        bad = set(d) - allowed - {"prefix"}
        if bad:
            raise ConfigError(f"unknown testbed setting(s) {sorted(bad)}", file=file, key="testbed",
                              fix=f"use only {sorted(allowed)}")
        spec = cls(**{k: v for k, v in d.items() if k in allowed})
        if check:
            spec.validate(file=file)
        return spec

    def validate(self, *, file=None) -> None:
        if self.bridge not in ("ovs", "linux"):
            raise ConfigError(f"bridge must be 'ovs' or 'linux', not {self.bridge!r}", file=file,
                              key="bridge")
        bounds.whole(self.chain, 1, 16, file=file, key="chain")
        bounds.whole(self.vms, 2, 32, file=file, key="vms")
        bounds.whole(self.mtu, *bounds.MTU, file=file, key="mtu")
        bounds.flag(self.vm_tx_offload, file=file, key="vm_tx_offload")
        if self.link not in ("patch", "veth"):
            raise ConfigError(f"link must be 'patch' or 'veth', not {self.link!r}", file=file,
                              key="link")
        if self.bridge == "linux" and self.link == "patch" and self.chain > 1:
            raise ConfigError("a Linux bridge has no patch ports", file=file, key="link",
                              fix='use link = "veth" for chained Linux bridges')
        if self.vif_type not in ("system", "afxdp"):
            raise ConfigError(f"vif_type must be 'system' or 'afxdp', not {self.vif_type!r}",
                              file=file, key="vif_type")
        if self.vif_type == "afxdp" and self.bridge != "ovs":
            raise ConfigError("AF_XDP ports are an OVS userspace-datapath feature", file=file,
                              key="vif_type", fix='use bridge = "ovs" or vif_type = "system"')
        if self.datapath not in ("auto", "netdev", "system"):
            raise ConfigError(f"datapath must be auto, netdev or system, not {self.datapath!r}",
                              file=file, key="datapath")
        try:
            if not isinstance(self.subnet, str):
                raise TypeError
            net = ipaddress.ip_network(self.subnet)
        except (TypeError, ValueError):
            raise ConfigError(f"subnet {self.subnet!r} is not an IP network", file=file,
                              key="subnet", fix='e.g. "10.77.0.0/24"') from None
        if not net.is_private:
            raise ConfigError(f"subnet {self.subnet} is not a private network", file=file, key="subnet",
                              fix='use a private range such as "10.77.0.0/24" (it exists only inside the testbed)')
        if net.num_addresses < self.vms + 2:
            raise ConfigError(f"subnet {self.subnet} is too small for {self.vms} VMs", file=file,
                              key="subnet")

    def ports(self) -> list[str]:
        """Every bridge port in the switch namespace: the VIFs and the ends of veth links."""
        ports = [f"vif{i}" for i in range(1, self.vms + 1)]
        if self.chain > 1 and self.link == "veth":
            for k in range(self.chain - 1):
                ports += [f"lk{k}a", f"lk{k}b"]
        return ports

    def key(self) -> tuple:
        link = self.link if self.chain > 1 else "-"
        return (self.bridge, self.chain, link, self.vms, self.datapath, self.vm_tx_offload,
                self.subnet, self.mtu, self.vif_type)

    def resolved_datapath(self) -> str:
        if self.bridge != "ovs":
            return "linux-bridge"
        if self.datapath == "auto":
            return "system" if kernel_datapath_available() else "netdev"
        return self.datapath


_ACTIVE: dict[str, "Testbed"] = {}
_NAME_TAIL = "-xxxxxx-vm32"   # what a testbed adds to its prefix: "-<6 hex>" and "-sw" / "-vm<i>"


def check_prefix(prefix, *, file=None, key="prefix") -> str:
    """A testbed name prefix whose every namespace name will be valid (checked before any run)."""
    check_name(prefix, "namespace", file=file, key=key)
    room = NSNAME_MAX - len(_NAME_TAIL)
    if len(prefix) > room:
        raise ConfigError(f"prefix {prefix!r} is {len(prefix)} characters: the testbed's namespaces "
                          f"(PREFIX{_NAME_TAIL}) would be longer than {NSNAME_MAX}", file=file, key=key,
                          fix=f"use a prefix of at most {room} characters")
    return prefix


def _teardown_all() -> None:
    for tb in list(_ACTIVE.values()):
        try:
            tb.down()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass


atexit.register(_teardown_all)


class Testbed:
    """A built testbed.  Use as a context manager, or ``up()`` / ``down()``."""
    __test__ = False

    def __init__(self, spec: TestbedSpec, prefix: str = "ovss", name: str | None = None):
        spec.validate()
        check_prefix(prefix)
        self.spec = spec
        self.name = name or f"{prefix}-{uuid.uuid4().hex[:6]}"
        check_name(self.name + f"-vm{spec.vms}", "namespace")
        self.sw = f"{self.name}-sw"
        self.vm_ns = [f"{self.name}-vm{i}" for i in range(1, spec.vms + 1)]
        net = ipaddress.ip_network(spec.subnet)
        self.vm_ip = [str(net.network_address + i) for i in range(1, spec.vms + 1)]
        self.prefixlen = net.prefixlen
        self.bridges = [f"br{k}" for k in range(spec.chain)]
        self.ovs: PrivateOVS | None = None
        self.notes: list[str] = []
        self.created_ns: list[str] = []
        self.is_up = False
        self.workdir: Path | None = None

    # -- helpers ----------------------------------------------------------------------------
    @property
    def sw_prefix(self) -> list[str]:
        return ["ip", "netns", "exec", self.sw]

    def vm_prefix(self, i: int) -> list[str]:
        """Command prefix that runs a command inside VM ``i`` (1-based)."""
        return ["ip", "netns", "exec", self.vm_ns[i - 1]]

    def vif(self, i: int) -> str:
        return f"vif{i}"

    def ports(self) -> list[str]:
        """Every bridge port in the switch namespace (VIFs and link ends)."""
        return self.spec.ports()

    def _bridge_of_vm(self, i: int) -> str:
        return self.bridges[0] if i == 1 else self.bridges[-1]

    # -- build ------------------------------------------------------------------------------
    def up(self) -> "Testbed":
        for tool in ("ip", "tc", "ethtool") + (("ovs-vsctl", "ovsdb-server", "ovs-vswitchd",
                                               "ovsdb-tool", "ovs-appctl")
                                              if self.spec.bridge == "ovs" else ()):
            if not which(tool):
                raise ConfigError(f"{tool} is not installed", fix="run ./setup.sh as root")
        if os.geteuid() != 0:
            raise ConfigError("building a testbed needs root (network namespaces, veth, OVS)",
                              fix="run as root, e.g. sudo ovssim ...")
        taken = [ns for ns in self.namespaces() if Path(f"/run/netns/{ns}").exists()]
        if taken:
            raise ConfigError(f"network namespace {taken[0]} already exists", fix="choose another prefix")
        _ACTIVE[self.name] = self
        self.is_up = True
        # everything this testbed writes (OVS database, sockets, logs, tools' temp files) goes in
        # here; the state is saved before anything is built, so a SIGKILL at any point leaves a
        # record that reap_stale() can clean up from
        self.workdir = Path(tempfile.mkdtemp(prefix=f"ovssim-{self.name}-"))
        try:
            self._save_state()
            self._build()
        except BaseException:
            self.down()
            raise
        return self

    def namespaces(self) -> list[str]:
        """Every namespace this testbed creates."""
        return [self.sw] + self.vm_ns

    def detach(self) -> None:
        """Leave the testbed up after this process ends (``ovssim testbed up``); ``testbed down``
        removes it."""
        self._save_state(detached=True)
        _ACTIVE.pop(self.name, None)
        if self.ovs is not None:
            self.ovs._procs.clear()   # leave the daemons running

    def _ns_add(self, ns: str) -> None:
        run(["ip", "netns", "add", ns])
        self.created_ns.append(ns)
        run(["ip", "-n", ns, "link", "set", "lo", "up"])

    def _build(self) -> None:
        s = self.spec
        self._ns_add(self.sw)
        for ns in self.vm_ns:
            self._ns_add(ns)
        swn = ["ip", "-n", self.sw]
        # VIFs: vif<i> in the switch namespace, eth0 in the VM
        for i, ns in enumerate(self.vm_ns, start=1):
            run(swn + ["link", "add", self.vif(i), "mtu", str(s.mtu), "type", "veth", "peer",
                       "name", "eth0", "mtu", str(s.mtu), "netns", ns])
            run(["ip", "-n", ns, "addr", "add", f"{self.vm_ip[i - 1]}/{self.prefixlen}", "dev", "eth0"])
            run(["ip", "-n", ns, "link", "set", "eth0", "up"])
            run(swn + ["link", "set", self.vif(i), "up"])
            if not s.vm_tx_offload:
                run(["ip", "netns", "exec", ns, "ethtool", "-K", "eth0", "tx", "off"])
        if not s.vm_tx_offload:
            self.notes.append("transmit checksum offload off on each VM's eth0 (ethtool -K eth0 tx "
                              "off): the OVS userspace datapath receives on AF_PACKET sockets and "
                              "forwards CHECKSUM_PARTIAL frames with unfinished TCP checksums")
        if s.chain > 1 and s.link == "veth":
            for k in range(s.chain - 1):
                run(swn + ["link", "add", f"lk{k}a", "mtu", str(s.mtu), "type", "veth", "peer",
                           "name", f"lk{k}b", "mtu", str(s.mtu)])
                run(swn + ["link", "set", f"lk{k}a", "up"])
                run(swn + ["link", "set", f"lk{k}b", "up"])
        if s.bridge == "ovs":
            self._build_ovs()
        else:
            self._build_linux()

    def _build_ovs(self) -> None:
        s = self.spec
        dp = s.resolved_datapath()
        if s.vif_type == "afxdp" and dp != "netdev":
            raise ConfigError("AF_XDP ports need the userspace datapath", key="vif_type",
                              fix='set datapath = "netdev"')
        if dp == "system" and not kernel_datapath_available():
            raise ConfigError("datapath 'system' needs the openvswitch kernel module",
                              fix='use datapath = "netdev" (userspace) or modprobe openvswitch')
        if dp == "netdev":
            self.notes.append("OVS kernel module absent or not chosen: userspace 'netdev' datapath "
                              "(AF_PACKET sockets on each port)")
        self.ovs = PrivateOVS(netns=self.sw, workdir=str(self.workdir)).start()
        args = []
        for br in self.bridges:
            args += ["--", "add-br", br, "--", "set", "bridge", br, f"datapath_type={dp}"]
        for i in range(1, s.vms + 1):
            args += ["--", "add-port", self._bridge_of_vm(i), self.vif(i)]
            if s.vif_type == "afxdp":
                args += ["--", "set", "interface", self.vif(i), "type=afxdp"]
        if s.vif_type == "afxdp":
            # AF_XDP ports are polled by a PMD thread (busy-polls one core); its cycle and
            # upcall histograms are what dpif-netdev/pmd-perf-show reports
            args += ["--", "set", "Open_vSwitch", ".", "other_config:pmd-perf-metrics=true"]
            self.notes.append("VIFs are AF_XDP ports (type=afxdp): a PMD thread busy-polls them; "
                              "dpif-netdev/pmd-perf-show gives cycles per packet and us per upcall")
        for k in range(s.chain - 1):
            a, b = self.bridges[k], self.bridges[k + 1]
            if s.link == "patch":
                pa, pb = f"pt{k}a", f"pt{k}b"
                args += ["--", "add-port", a, pa, "--", "set", "interface", pa, "type=patch",
                         f"options:peer={pb}", "--", "add-port", b, pb, "--", "set", "interface",
                         pb, "type=patch", f"options:peer={pa}"]
            else:
                args += ["--", "add-port", a, f"lk{k}a", "--", "add-port", b, f"lk{k}b"]
        self.ovs.vsctl(*args)

    def _build_linux(self) -> None:
        s = self.spec
        swn = ["ip", "-n", self.sw]
        for br in self.bridges:
            run(swn + ["link", "add", br, "type", "bridge", "stp_state", "0", "forward_delay", "0"])
            run(swn + ["link", "set", br, "up"])
        for i in range(1, s.vms + 1):
            run(swn + ["link", "set", self.vif(i), "master", self._bridge_of_vm(i)])
        for k in range(s.chain - 1):
            run(swn + ["link", "set", f"lk{k}a", "master", self.bridges[k]])
            run(swn + ["link", "set", f"lk{k}b", "master", self.bridges[k + 1]])

    def wait_ready(self, timeout: float = 10.0) -> None:
        """Ping from VM1 to every other VM until it answers (bridges learn, OVS is up)."""
        import time
        deadline = time.monotonic() + timeout
        for i in range(2, self.spec.vms + 1):
            while True:
                res = run(self.vm_prefix(1) + ["ping", "-c", "1", "-W", "1", self.vm_ip[i - 1]],
                          check=False, timeout=5)
                if res.returncode == 0:
                    break
                if time.monotonic() > deadline:
                    raise ConfigError(f"testbed {self.name}: VM1 cannot reach VM{i} "
                                      f"({self.vm_ip[i - 1]}) through {self.spec.bridge}",
                                      fix="see the OVS log in the testbed's work directory")

    # -- teardown ---------------------------------------------------------------------------
    def down(self) -> None:
        """Stop OVS, delete every namespace this testbed made (and with them every device)."""
        if self.ovs is not None:
            try:
                self.ovs.stop()
            finally:
                self.ovs = None
        if self.workdir is not None:
            # by name, not by what was recorded: a signal between "ip netns add" (or a daemon's
            # start) and its bookkeeping must not leave it behind; the names are this testbed's
            # own (up() refused to start if any existed)
            teardown_saved(self._state())
        self.created_ns.clear()
        _ACTIVE.pop(self.name, None)
        self.is_up = False

    def __enter__(self):
        return self.up()

    def __exit__(self, *exc):
        self.down()
        return False

    # -- state for the CLI ------------------------------------------------------------------
    def _state(self, detached: bool = False) -> dict:
        return {"name": self.name, "spec": asdict(self.spec), "namespaces": self.namespaces(),
                "workdir": str(self.workdir), "owner_pid": os.getpid(),
                "vm_ip": self.vm_ip, "notes": self.notes, "detached": detached}

    def _save_state(self, detached: bool = False) -> None:
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        write_atomic(STATE_DIR / f"{self.name}.json", json.dumps(self._state(detached), indent=1))

    def status(self) -> dict:
        out = {"name": self.name, "bridge": self.spec.bridge, "chain": self.spec.chain,
               "link": self.spec.link, "datapath": self.spec.resolved_datapath(),
               "namespaces": list(self.created_ns), "vm_ip": self.vm_ip, "notes": self.notes}
        return out


def read_states(state_dir: Path) -> list[dict]:
    """The state files a testbed (or a UML instance) saved in ``state_dir``: only what their writer wrote,
    a dict named after its file (never a path elsewhere); unreadable files are passed over."""
    if not state_dir.exists():
        return []
    out = []
    for p in sorted(state_dir.glob("*.json")):
        try:
            st = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(st, dict) and st.get("name") == p.stem:
            out.append(st)
    return out


def saved_testbeds() -> list[dict]:
    return [st for st in read_states(STATE_DIR) if isinstance(st.get("namespaces", []), list)]


def owner_alive(state: dict) -> bool:
    """True while the process that built the testbed runs and still owns it (not detached)."""
    owner = state.get("owner_pid")
    return bool(owner) and not state.get("detached") and _pid_alive(owner)


def _pids_using(workdir: str) -> list[int]:
    """Processes whose command line names ``workdir``: the testbed's own OVS daemons (their
    sockets, database and logs are all in it), never a system OVS."""
    if not workdir or workdir in ("/", "/tmp"):
        return []
    key = workdir.encode()
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if key in proc.joinpath("cmdline").read_bytes():
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def teardown_saved(state: dict) -> None:
    """Tear down a testbed from its state: one another (killed) process built, or the rest of
    this process's own after a signal cut its bookkeeping short."""
    pids = set(_pids_using(state.get("workdir", "")))
    for ns in state.get("namespaces", []):     # traffic tools a killed collector left running
        if not Path(f"/run/netns/{ns}").exists():
            continue
        res = run(["ip", "netns", "pids", ns], check=False, timeout=10)
        pids |= {int(x) for x in res.stdout.split() if x.isdigit()}
    pids.discard(os.getpid())
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
    for pid in pids:
        _reap(pid)
    for ns in reversed(state.get("namespaces", [])):
        if Path(f"/run/netns/{ns}").exists():
            run(["ip", "netns", "del", ns], check=False)
    if state.get("workdir"):
        shutil.rmtree(state["workdir"], ignore_errors=True)
    (STATE_DIR / f"{state['name']}.json").unlink(missing_ok=True)


def _reap(pid: int, timeout: float = 5.0) -> None:
    """Wait for a killed daemon; reap it if it is our child (a ``testbed up`` in this process)."""
    import time
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                return
        except ChildProcessError:
            if not _pid_alive(pid):
                return
        time.sleep(0.05)
    try:                  # it ignored SIGTERM
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def reap_stale() -> list[str]:
    """Tear down testbeds whose owning process died without cleaning up (e.g. SIGKILL)."""
    reaped = []
    for st in saved_testbeds():
        if not st.get("detached") and not owner_alive(st):
            teardown_saved(st)
            reaped.append(st["name"])
    # scratch namespaces of a qdisc probe whose process died (qos.probe_qdiscs names them by pid)
    listing = run(["ip", "netns", "list"], check=False, timeout=10).stdout
    for ns in re.findall(rf"^({re.escape(PROBE_NS)}(\d+)-[0-9a-f]{{8}})\b", listing, re.M):
        if not _pid_alive(int(ns[1])):
            run(["ip", "netns", "del", ns[0]], check=False)
            reaped.append(ns[0])
    return reaped
