"""A real user-mode-Linux 6.1 instance: qdisc modules, the OVS kernel datapath, clean-up.

Boots Debian's ``linux.uml`` (./setup.sh installs it); skipped, with the reason, where
it cannot run (not root, package missing).  About 30 s in all.
"""
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ovssim.collect.uml.instance import IO, UmlInstance, reap_stale, saved_instances
from ovssim.collect.uml.kernel import unavailable_reason

why = unavailable_reason()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(why is not None, reason=f"UML unavailable: {why}")]

ROOT = Path(__file__).resolve().parents[2]

# two namespaces joined by the OVS kernel datapath (datapath_type=system); SFQ on the
# receiver's port, put on by tc, so the kernel autoloads sch_sfq through our modprobe wrapper
SCRIPT = textwrap.dedent("""\
    set -e
    uname -r
    D=/run/ovs; mkdir -p $D
    export OVS_RUNDIR=$D OVS_DBDIR=$D OVS_LOGDIR=$D
    ovsdb-tool create $D/conf.db /usr/share/openvswitch/vswitch.ovsschema
    ovsdb-server $D/conf.db --remote=punix:$D/db.sock --pidfile --detach --log-file
    ovs-vsctl --db=unix:$D/db.sock --no-wait init
    ovs-vswitchd unix:$D/db.sock --pidfile --detach --log-file
    for i in 1 2; do
      ip netns add umltest-vm$i
      ip link add vif$i type veth peer name eth0 netns umltest-vm$i
      ip -n umltest-vm$i addr add 10.99.0.$i/24 dev eth0
      ip -n umltest-vm$i link set eth0 up; ip link set vif$i up
    done
    ovs-vsctl --db=unix:$D/db.sock add-br br0 -- set bridge br0 datapath_type=system \\
      -- add-port br0 vif1 -- add-port br0 vif2
    tc qdisc replace dev vif2 root sfq
    ip netns exec umltest-vm1 ping -c 20 -i 0.02 -W 2 10.99.0.2
    tc -s qdisc show dev vif2
    ovs-dpctl show
    ovs-appctl -t $D/ovs-vswitchd.$(cat $D/ovs-vswitchd.pid).ctl upcall/show
    """)


def test_instance_runs_sfq_and_the_ovs_kernel_datapath_and_leaves_the_host_unchanged():
    netns_before = set(os.listdir("/run/netns")) if os.path.isdir("/run/netns") else set()
    inst = UmlInstance(purpose="test")
    t0 = time.monotonic()
    inst.start(["sh", f"{IO}/t.sh"], files={"t.sh": SCRIPT}, cwd=str(ROOT))
    res = inst.wait(timeout=120)
    leaks = inst.leaks()
    pgid = inst.proc.pid
    inst.stop(grace=0)
    wall = time.monotonic() - t0
    out = res.stdout
    assert res.returncode == 0, res.stderr
    assert out.startswith("6.1."), out          # a real 6.1 kernel, not the host's
    # ping through the kernel datapath: every echo answered, the first ones as upcalls
    assert re.search(r"20 packets transmitted, 20 received", out), out
    m = re.search(r"lookups: hit:(\d+) missed:(\d+) lost:(\d+)", out)
    assert m and int(m.group(2)) > 0 and int(m.group(3)) == 0, out   # upcalls handled, none lost
    assert int(m.group(1)) > 0, out                                   # later packets hit the cache
    # the sfq module was loaded from the package's folder, and SFQ carried the replies
    sfq = re.search(r"qdisc sfq .*\n\s*Sent \d+ bytes (\d+) pkt", out)
    assert sfq and int(sfq.group(1)) >= 20, out
    # nothing left behind: no instance process, no state file, no namespace, no write into
    # the host's /run, /tmp, OVS folders
    assert leaks == []
    time.sleep(0.2)
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)
    assert inst.name not in {s["name"] for s in saved_instances()}
    netns_after = set(os.listdir("/run/netns")) if os.path.isdir("/run/netns") else set()
    assert not {n for n in netns_after - netns_before if n.startswith("umltest")}
    print(f"UML boot + OVS kernel datapath + ping: {wall:.1f} s")


def gone(probe, timeout: float) -> bool:
    """True once ``probe`` (os.kill / os.killpg with signal 0) finds no process, within ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            probe()
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


def test_sigkill_of_the_owner_takes_the_instance_down(tmp_path):
    """The collector is SIGKILLed while its instance runs: the kernel kills the instance
    (PR_SET_PDEATHSIG); the next start removes the state file and work folder left."""
    code = textwrap.dedent(f"""\
        import sys, time
        from ovssim.collect.uml import instance as m
        m.MIN_UPTIME_S = 0
        i = m.UmlInstance(purpose="test-kill")
        i.start(["sleep", "600"], min_uptime=0)
        print(i.name, i.proc.pid, i.workdir, flush=True)
        time.sleep(600)
        """)
    owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    line = owner.stdout.readline().split()
    assert len(line) == 3, "the owner did not start its instance"
    name, pgid, workdir = line[0], int(line[1]), Path(line[2])
    os.kill(pgid, 0)                       # the instance runs
    owner.send_signal(signal.SIGKILL)
    owner.wait()
    # the kernel process itself dies with its owner
    assert gone(lambda: os.kill(pgid, 0), 15), "the UML kernel survived its owner's SIGKILL"
    assert name in reap_stale()             # its helper processes and files go at the next start
    # (killed helpers are reaped by pid 1, not us)
    assert gone(lambda: os.killpg(pgid, 0), 10), "UML helper processes survived reap_stale"
    assert not workdir.exists()
    assert name not in {s["name"] for s in saved_instances()}


CAMPAIGN = """\
[campaign]
name = "umlterm"
repetitions = 4
duration = "1s"
cooldown = "0.5s"
[testbed]
bridge = "linux"
[[workload]]
name = "ping"
tool = "ping"
count = 20
interval = "20ms"
[[matrix]]
bridge = ["linux"]
workload = ["ping"]
"""


def uml_processes(name: str) -> set[int]:
    """linux.uml processes of instance ``name`` (its work folder is in their command line)."""
    return {int(p) for p in subprocess.run(["pgrep", "-f", f"linux.uml .*/ovssim-{name}-"], capture_output=True,
                                           text=True).stdout.split()}


def test_sigterm_of_the_collector_then_resume(tmp_path):
    """SIGTERM during `ovssim collect --kernel uml`: exit 130, the instance and its files gone, the
    finished runs kept; --resume completes the campaign without duplicates."""
    camp = tmp_path / "umlterm.toml"
    camp.write_text(CAMPAIGN)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "ovssim", "collect", str(camp), "--kernel", "uml", "--out", str(out)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    journal = out / "runs.jsonl"
    deadline = time.monotonic() + 120
    while not (journal.exists() and journal.read_text().count("\n") >= 1):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read() if proc.poll() else "slow"
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 130
    name = re.search(r"UML instance (\S+)", proc.stdout.read()).group(1)
    deadline = time.monotonic() + 5
    while uml_processes(name) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not uml_processes(name)
    assert not [s for s in saved_instances() if s.get("purpose") == "campaign umlterm"]
    done = journal.read_text().count("\n")
    assert 1 <= done < 4
    res = subprocess.run(cmd + ["--resume"], cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"runs: 4 in the campaign, {done} done before" in res.stdout
    ids = [json.loads(line)["run_id"] for line in journal.read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 4
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["machine"]["kernel"].startswith("6.1.") and meta["testbed_kernel"]["kind"] == "user-mode-linux"
    assert all(s["host_paths_leaked"] == [] for s in meta["uml_sessions"])
