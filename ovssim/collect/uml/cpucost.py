"""What a UML instance's one CPU spends per system call, per process switch and per forwarded packet (issue 22).

``python -m ovssim.collect.uml.cpucost OUT`` boots one instance, builds the campaign's Linux-bridge testbed
(:data:`ovssim.collect.uml.window.TESTBED`, no qdisc on ``vif2``), compiles :data:`BENCH` with the host's gcc
inside it and runs, one at a time, nothing else running:

* ``sys``: ``getppid()`` N times (a system call that does nothing: in UML every one traps through ptrace
  from the process's host process to the UML kernel's and back);
* ``pipe``: two processes passing one byte back and forth over two pipes (a round trip = two writes, two
  reads and two switches between UML processes);
* ``fwd``: UDP datagrams from ``w-vm1`` to ``w-vm2`` across the bridge, K every 10 ms sent with one
  ``sendmmsg`` (no system call per datagram), for K in :data:`RATES`, the receiver (a) never reading
  (its socket full: the datagrams cross veth, bridge, veth, IP and UDP and are dropped at the socket --
  the kernel's path alone) and (b) reading each datagram with ``recv`` (+ a wake-up and a system call
  per datagram);
* ``idle``/``wake``: the idle instance, then a process woken by its timer every 10, 2 and 1 ms that does
  nothing else -- what a wake-up from idle costs;
* ``contend``: 200 pings between the namespaces alone, beside a user-mode busy loop and beside a loop of
  ``getppid()`` calls.

/proc/stat before and after each step.  The kernel is CONFIG_NO_HZ_IDLE with tick-based accounting
(/usr/share/doc/user-mode-linux/config.gz): the idle time is measured, the busy time only sampled by the
tick, which a short busy spell after idle never sees, so a step's ``busy_share`` is 1 - idle / elapsed.

``--strace``: the campaign's load with ``strace -c -f`` on both iperf3 ends (their system calls per segment).
``--hostcpu``: the campaign's load while the host sums the CPU time of the instance's host processes
(:func:`host_cpu`): UML's busy share against the host's count over the same span.

``--calls``: the campaign's whole load (with ping and iperf 2's thin UDP flow) and each of its tools' wake-ups
and read/write calls from /proc, without strace; then again with strace -c on ping and iperf 2 (:data:`CALLS`).
``--wakes``: a reader woken per 1,448-byte datagram every 650 us, not reading, with recv() and with iperf3's
server loop (:data:`WAKES`): what a wake-up and its system calls cost.

Output: ``raw-TAG.txt``, ``results-TAG.json``, ``metadata-TAG.json`` (TAG ``cpucost``, ``strace``, ``hostcpu``,
``calls``, ``wakes``).
"""
from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

import numpy as np

from .collect import run_probe, store_probe
from .window import TESTBED, htb_leaf

RATES = (0, 1, 5, 10, 20)       # datagrams per 10 ms
SECONDS = 5
LENGTH = 64                  # UDP payload bytes

BENCH = textwrap.dedent(r"""
    #define _GNU_SOURCE
    #include <arpa/inet.h>
    #include <stdio.h>
    #include <stdlib.h>
    #include <string.h>
    #include <sys/socket.h>
    #include <sys/syscall.h>
    #include <sys/wait.h>
    #include <sys/select.h>
    #include <time.h>
    #include <unistd.h>
    static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
    int main(int argc, char **argv) {
        const char *m = argv[1];
        if (!strcmp(m, "sys")) {
            long n = atol(argv[2]); double t = now();
            for (long i = 0; i < n; i++) syscall(SYS_getppid);
            printf("sys_us %.3f\n", (now() - t) / n * 1e6); return 0;
        }
        if (!strcmp(m, "spin") || !strcmp(m, "sysloop")) {   /* SECONDS: a user-mode loop, or getppid() back to back */
            double end = now() + atof(argv[2]); long n = 0; int sys = !strcmp(m, "sysloop");
            volatile unsigned long x = 0;
            while (1) { for (int i = 0; i < 1000; i++) { if (sys) syscall(SYS_getppid); else x += i; } n += 1000; if (now() >= end) break; }
            printf("%s_iterations %ld\n", m, n); return 0;
        }
        if (!strcmp(m, "pipe")) {
            long n = atol(argv[2]); int a[2], b[2]; char c = 0;
            if (pipe(a) || pipe(b)) return 1;
            pid_t p = fork();
            if (p == 0) { for (long i = 0; i < n; i++) { if (read(a[0], &c, 1) != 1) _exit(1); if (write(b[1], &c, 1) != 1) _exit(1); } _exit(0); }
            double t = now();
            for (long i = 0; i < n; i++) { if (write(a[1], &c, 1) != 1) return 1; if (read(b[0], &c, 1) != 1) return 1; }
            printf("pipe_rt_us %.3f\n", (now() - t) / n * 1e6); waitpid(p, 0, 0); return 0;
        }
        if (!strcmp(m, "send")) {          /* send DST K SECONDS LEN [PERIOD_US]: K datagrams every period (10 ms), one sendmmsg */
            int k = atoi(argv[3]); double secs = atof(argv[4]); int len = atoi(argv[5]);
            long period = argc > 6 ? atol(argv[6]) * 1000 : 10000000;
            int s = socket(AF_INET, SOCK_DGRAM, 0); struct sockaddr_in d = {0};
            d.sin_family = AF_INET; d.sin_port = htons(9000); inet_pton(AF_INET, argv[2], &d.sin_addr);
            if (connect(s, (void *)&d, sizeof d)) return 1;
            static char buf[2000]; struct mmsghdr mm[64]; struct iovec io[64];
            for (int i = 0; i < 64; i++) { io[i].iov_base = buf; io[i].iov_len = len; memset(&mm[i], 0, sizeof mm[i]); mm[i].msg_hdr.msg_iov = &io[i]; mm[i].msg_hdr.msg_iovlen = 1; }
            struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); long sent = 0; long ticks = (long)(secs * 1e9 / period);
            for (long j = 0; j < ticks; j++) {
                t.tv_nsec += period; if (t.tv_nsec >= 1000000000) { t.tv_nsec -= 1000000000; t.tv_sec++; }
                clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, 0);
                if (k > 0) { int r = sendmmsg(s, mm, k, 0); if (r > 0) sent += r; }
            }
            printf("sent %ld\n", sent); return 0;
        }
        if (!strcmp(m, "recv") && argc > 3 && !strcmp(argv[3], "loop")) {
            /* recv SECONDS loop: iperf3's server loop -- pselect(), two clock reads, read() until EAGAIN */
            double secs = atof(argv[2]);
            int s = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0); struct sockaddr_in a = {0};
            a.sin_family = AF_INET; a.sin_port = htons(9000);
            if (bind(s, (void *)&a, sizeof a)) return 1;
            double end = now() + secs; long got = 0, wakes = 0, reads = 0; char buf[2000];
            while (now() < end) {
                fd_set r; FD_ZERO(&r); FD_SET(s, &r); struct timespec ts = {0, 200000000}, t1, t2;
                if (pselect(s + 1, &r, 0, 0, &ts, 0) <= 0) continue;
                wakes++; clock_gettime(CLOCK_MONOTONIC, &t1); clock_gettime(CLOCK_MONOTONIC, &t2);
                while (1) { reads++; if (read(s, buf, sizeof buf) <= 0) break; got++; }
            }
            printf("received %ld wakes %ld reads %ld\n", got, wakes, reads); return 0;
        }
        if (!strcmp(m, "recv")) {          /* recv SECONDS read|noread */
            double secs = atof(argv[2]); int rd = !strcmp(argv[3], "read");
            int s = socket(AF_INET, SOCK_DGRAM, 0); struct sockaddr_in a = {0};
            a.sin_family = AF_INET; a.sin_port = htons(9000);
            int one = 2048; if (!rd) setsockopt(s, SOL_SOCKET, SO_RCVBUF, &one, sizeof one);
            if (bind(s, (void *)&a, sizeof a)) return 1;
            struct timeval tv = {0, 200000}; setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
            double end = now() + secs; long got = 0; char buf[2000];
            if (!rd) { while (now() < end) usleep(200000); }
            else while (now() < end) { if (recv(s, buf, sizeof buf, 0) > 0) got++; }
            printf("received %ld\n", got); return 0;
        }
        return 2;
    }
    """)

# the probe's C program compiled inside the instance (BENCH_C: :data:`BENCH`), and the kernel's version with a
# first exchange between the namespaces (ARP) before anything is timed
BUILD = textwrap.dedent("""\
    set +e
    cat > /tmp/b.c <<'EOF'
    BENCH_C
    EOF
    gcc -O2 -o /tmp/b /tmp/b.c || { echo "== gcc failed"; exit 1; }
    """)
WARM = textwrap.dedent("""\
    set +e
    echo "== kernel $(uname -r)"
    ip netns exec w-vm1 ping -c 3 -i 0.2 -q 10.97.0.2 >/dev/null
    """)

SCRIPT = TESTBED + BUILD + textwrap.dedent("""\
    echo "== kernel $(uname -r)"
    echo "== hz $(getconf CLK_TCK)"
    echo "== preempt $(uname -v)"
    ip netns exec w-vm1 ping -c 3 -i 0.2 -q 10.97.0.2 >/dev/null
    cpu() { echo "== cpu $1 $(cut -d' ' -f1 /proc/uptime) $(head -1 /proc/stat)"; }
    sleep 1
    for rep in 1 2 3; do
      cpu sys$rep.0; echo "== step sys$rep $(/tmp/b sys 20000)"; cpu sys$rep.1
      cpu pipe$rep.0; echo "== step pipe$rep $(/tmp/b pipe 5000)"; cpu pipe$rep.1
    done
    # the instance idle, then a process woken by its timer every 10, 2 and 1 ms doing nothing else (one
    # clock_nanosleep per wake-up): what a wake-up from idle costs the CPU
    for rep in 1 2; do
      cpu idle$rep.0; sleep SECS; cpu idle$rep.1; echo "== step idle$rep"
      for p in 10000 2000 1000; do
        cpu wake$p-$rep.0; S=$(/tmp/b send 127.0.0.1 0 SECS LEN $p); cpu wake$p-$rep.1; echo "== step wake$p-$rep $S"
      done
    done
    for rep in 1 2; do
      for bg in none spin sysloop; do
        [ $bg = none ] || { ip netns exec w-vm2 /tmp/b $bg 3 > /tmp/bg.txt & }
        sleep 0.1
        ip netns exec w-vm1 ping -c 200 -i 0.01 10.97.0.2 > /tmp/ping.txt
        wait
        echo "== contend $rep $bg $(cat /tmp/bg.txt 2>/dev/null) rtts $(grep -o 'time=[0-9.]*' /tmp/ping.txt | cut -d= -f2 | tr '\\n' ' ')"
        rm -f /tmp/bg.txt
      done
    done
    for mode in noread read; do
      for k in RATES; do
        ip netns exec w-vm2 /tmp/b recv SECS.5 $mode > /tmp/r.txt &
        R=$!
        sleep 0.2
        cpu fwd-$mode-$k.0
        S=$(ip netns exec w-vm1 /tmp/b send 10.97.0.2 $k SECS LEN)
        cpu fwd-$mode-$k.1
        wait $R
        echo "== step fwd-$mode-$k $S $(cat /tmp/r.txt)"
        echo "== drops fwd-$mode-$k $(ip netns exec w-vm2 cat /proc/net/snmp | grep '^Udp:' | tail -1)"
      done
    done
    echo "== end"
    """)


# how many system calls the campaign's iperf3 ends make per segment (strace -c -f inside the instance): the
# campaign's load (4 CUBIC flows through the 20 Mbit/s HTB class, pfifo_fast leaf) for 4 s
STRACE = TESTBED + WARM + textwrap.dedent("""\
    ip netns exec w-vm2 strace -c -f -o /tmp/srv.txt iperf3 -s -1 > /dev/null 2>&1 &
    sleep 1
    ip netns exec w-vm1 strace -c -f -o /tmp/cli.txt iperf3 -c 10.97.0.2 -P 4 -C cubic -t 4 -J > /tmp/iperf.json
    wait
    echo "== iperf"; python3 -c "
    import json; d = json.load(open('/tmp/iperf.json')); e = d['end']
    print('bytes', e['sum_received']['bytes'], 'seconds', e['sum_received']['seconds'])"
    echo "== strace server"; cat /tmp/srv.txt
    echo "== strace client"; cat /tmp/cli.txt
    echo "== end"
    """)


# the campaign's load (data/campaigns/uml-schedulers.toml: 4 iperf3 CUBIC flows through the 20 Mbit/s HTB class,
# ping every 10 ms) with /proc/stat and the wall clock at its start and end, for the host's view of the same span
HOSTCPU = TESTBED + WARM + textwrap.dedent("""\
    mark() { echo "== mark $1 $(date +%s.%N) $(cut -d' ' -f1 /proc/uptime) $(head -1 /proc/stat)"; }
    sleep 1
    mark idle0; sleep 4; mark idle1
    ip netns exec w-vm2 iperf3 -s -1 -D
    sleep 0.5
    ip netns exec w-vm1 iperf3 -c 10.97.0.2 -P 4 -C cubic -t 8 -J > /tmp/iperf.json &
    IP=$!
    (sleep 1; ip netns exec w-vm1 ping -c 600 -i 0.01 -q 10.97.0.2 > /tmp/ping.txt) &
    sleep 2; mark load0; sleep 5; mark load1
    wait
    echo "== iperf"; python3 -c "
    import json; d = json.load(open('/tmp/iperf.json')); e = d['end']
    print('throughput', e['sum_received']['bits_per_second'], 'cpu', e['cpu_utilization_percent'])"
    echo "== end"
    """)


# the campaign's whole load (data/campaigns/uml-schedulers.toml: 4 iperf3 CUBIC flows through the 20 Mbit/s HTB
# class, pfifo_fast leaf; from 1 s ping every 10 ms and iperf2's thin UDP flow, 1 Mbit/s of 1470 B) without
# strace: over 5 s of it, each task's wake-ups (/proc/PID/task/TID/status voluntary_ctxt_switches), read() and
# write() calls (/proc/PID/task/TID/io syscr, syscw: every vfs_read / vfs_write, EAGAIN ones too) and the
# CPU's busy share; getppid()'s cost just before and after.  Then the same load again with strace -c -f on
# ping and on iperf2's ends (rate-paced tools: their calls per probe or datagram, not their rate, are taken)
CALLS = TESTBED + BUILD + WARM + textwrap.dedent("""\
    sleep 1
    for r in 1 2 3; do echo "== step sysbefore$r $(/tmp/b sys 20000)"; done
    tasks() {    # every task's name, wake-ups and read/write calls: two greps in all (forks are dear in UML)
      grep -H -E '^(Name|voluntary_ctxt_switches|nonvoluntary_ctxt_switches):' /proc/[0-9]*/task/*/status | sed "s/^/== task $1 /"
      grep -H -E '^sysc[rw]:' /proc/[0-9]*/task/*/io | sed "s/^/== task $1 /"
    }
    mark() { echo "== mark $1 $(cut -d' ' -f1 /proc/uptime) $(head -1 /proc/stat)"; tasks $1; }
    load() {     # ST set: strace -c -f on ping and iperf2's ends
      ip netns exec w-vm2 iperf3 -s -1 > /dev/null 2>&1 &
      ip netns exec w-vm2 ${ST:+strace -c -f -o /tmp/st-iperf2-server.txt} iperf -s -u -p 5001 -e > /tmp/iperf2s.txt 2>&1 &
      sleep 0.5
      ip netns exec w-vm1 iperf3 -c 10.97.0.2 -P 4 -C cubic -t 8 -J > /tmp/iperf.json &
      IP=$!
      sleep 1
      ip netns exec w-vm1 ${ST:+strace -c -f -o /tmp/st-ping.txt} ping -n -D -c 300 -i 0.01 -s 56 10.97.0.2 > /tmp/ping.txt 2>&1 &
      ip netns exec w-vm1 ${ST:+strace -c -f -o /tmp/st-iperf2-client.txt} iperf -c 10.97.0.2 -u -p 5001 -b 1000000 -l 1470 -t 7 -e > /tmp/iperf2c.txt 2>&1 &
    }
    stop() {     # iperf2's server runs until stopped (strace, if any, first: it prints its table on SIGINT)
      for p in $(pgrep -x strace); do kill -INT $p; done; sleep 0.5
      for p in $(pgrep -x iperf); do kill $p; done; wait
    }
    load
    sleep 1; mark load0; sleep 5; mark load1
    wait $IP; sleep 1.5; stop
    echo "== iperf"; python3 -c "
    import json; d = json.load(open('/tmp/iperf.json')); e = d['end']
    print('throughput', e['sum_received']['bits_per_second'], 'segments', e['sum_received']['bytes'] / 1448, 'seconds', e['sum_received']['seconds'])"
    echo "== ping $(tail -1 /tmp/ping.txt)"
    for r in 1 2 3; do echo "== step sysafter$r $(/tmp/b sys 20000)"; done
    sleep 1
    ST=1 load
    wait $IP; sleep 1.5; stop
    for f in /tmp/st-*.txt; do echo "== strace ${f#/tmp/st-}"; cat $f; done
    echo "== ping-strace $(tail -1 /tmp/ping.txt)"
    echo "== iperf2 client"; tail -4 /tmp/iperf2c.txt
    echo "== end"
    """)


# a reader woken by each datagram at the campaign's frame rate (1,448 B every 650 us across the bridge, no
# qdisc), three ways: not reading (the kernel's path and the sender alone), a blocking recv() per datagram
# (a wake-up and one call), and iperf3's server loop (a wake-up and its five calls: pselect6, two clock reads,
# read, read -> EAGAIN); /proc/stat around each 5 s step, twice, getppid() before
WAKES = TESTBED + BUILD + WARM + textwrap.dedent("""\
    cpu() { echo "== cpu $1 $(cut -d' ' -f1 /proc/uptime) $(head -1 /proc/stat)"; }
    sleep 1
    for rep in 1 2; do
      cpu sys$rep.0; echo "== step sys$rep $(/tmp/b sys 20000)"; cpu sys$rep.1
      cpu idle$rep.0; sleep 5; cpu idle$rep.1; echo "== step idle$rep"
      for mode in noread read loop; do
        ip netns exec w-vm2 /tmp/b recv 5.5 $mode > /tmp/r.txt &
        R=$!
        sleep 0.2
        cpu $mode$rep.0
        S=$(ip netns exec w-vm1 /tmp/b send 10.97.0.2 1 5 1448 650)
        cpu $mode$rep.1
        wait $R
        echo "== step $mode$rep $S $(cat /tmp/r.txt)"
      done
    done
    echo "== end"
    """)


def run_wakes(out: Path, log=print) -> dict:
    """A reader woken per datagram at the campaign's frame rate (:data:`WAKES`, no qdisc): ``*-wakes.*``."""
    return _run_load(out, "wakes", WAKES.replace("QDISC", ":"), parse,
                     "the CPU of a reader's wake-up and its system calls", log)


# the collector's speed benchmark (ovssim/collect/state.py veth_pingpong: ping -f -q -c 20000 over a veth pair
# between two namespaces, 3 times) beside getppid() timed in the same instance, alternately: how the system
# call's cost relates to the state figure every campaign records (metadata.json machine_state)
PINGPONG = WARM + BUILD + textwrap.dedent("""\
    ip netns add pp1; ip netns add pp2
    ip -n pp1 link add eth0 type veth peer name eth0 netns pp2
    ip -n pp1 addr add 10.254.0.1/30 dev eth0; ip -n pp2 addr add 10.254.0.2/30 dev eth0
    for n in pp1 pp2; do ip -n $n link set lo up; ip -n $n link set eth0 up; done
    ip netns exec pp1 ping -c 3 -i 0.2 -q 10.254.0.2 >/dev/null
    for rep in 1 2 3; do
      echo "== step sys$rep $(/tmp/b sys 20000)"
      echo "== pingpong $rep $(ip netns exec pp1 ping -f -q -c 20000 10.254.0.2 | grep -o '[0-9]* received.*time [0-9]*ms')"
    done
    echo "== end"
    """)


def parse_pingpong(text: str) -> dict:
    """getppid()'s cost per run (``steps``, as :func:`parse` has them) and the ping-pong's echoes per second."""
    out = parse(text)
    out["pingpong_per_s"] = [int(n) / (int(ms) / 1000.0) for n, ms in
                             re.findall(r"^== pingpong \d+ (\d+) received.*time (\d+)ms", text, re.M)]
    return out


def run_pingpong(out: Path, log=print) -> dict:
    """The collector's ping-pong speed figure beside getppid()'s cost (:data:`PINGPONG`): ``*-pingpong.*``."""
    return _run_load(out, "pingpong", PINGPONG, parse_pingpong, "getppid() beside the speed benchmark", log)


def parse_calls(text: str) -> dict:
    """Per task of the load's tools (pid/tid comm) the wake-ups and read/write calls over the load's ~5 s
    (``load0`` -> ``load1``), the CPU's busy share over it (1 - idle / elapsed), getppid()'s cost before and
    after, and each strace -c table by name (calls per system call)."""
    out: dict = {"getppid_us": {}, "tasks": {}, "strace": {}}
    for name, us in re.findall(r"^== step (sys\w+) sys_us ([\d.]+)", text, re.M):
        out["getppid_us"][name] = float(us)
    marks = {}
    for name, up, rest in re.findall(r"^== mark (\w+) ([\d.]+) cpu\s+([\d ]+)$", text, re.M):
        marks[name] = (float(up), [int(x) for x in rest.split()])
    if "load0" in marks and "load1" in marks:
        (u0, j0), (u1, j1) = marks["load0"], marks["load1"]
        out["seconds"] = u1 - u0
        out["busy_share"] = 1.0 - (j1[3] + j1[4] - j0[3] - j0[4]) / (100.0 * (u1 - u0))
    per: dict = {}
    for mk, pid, tid, key, val in re.findall(r"^== task (\w+) /proc/(\d+)/task/(\d+)/\w+:(\w+):\s+(\S+)$", text, re.M):
        per.setdefault(f"{pid}/{tid}", {}).setdefault(mk, {})[key] = val
    names = {"voluntary_ctxt_switches": "voluntary", "nonvoluntary_ctxt_switches": "nonvoluntary",
             "syscr": "syscr", "syscw": "syscw"}
    for k, v in per.items():
        a, b = v.get("load0"), v.get("load1")
        if a and b and a.get("Name") in ("iperf3", "iperf", "ping") and a.get("Name") == b.get("Name"):
            out["tasks"][f"{k} {a['Name']}"] = {n: int(b[key]) - int(a[key]) for key, n in names.items()
                                               if key in a and key in b}
    for f, block in re.findall(r"^== strace (\S+)\n(.*?)(?=^== )", text, re.M | re.S):
        calls = {}
        for line in block.splitlines():
            g = line.split()
            if len(g) >= 5 and g[0].replace(".", "").isdigit() and g[-1] != "total":
                calls[g[-1]] = int(g[3])
        out["strace"][f] = calls
    m = re.search(r"^throughput ([\d.e+]+) segments ([\d.e+]+) seconds ([\d.]+)", text, re.M)
    if m:
        out["throughput"], out["segments"], out["load_seconds"] = (float(m.group(i)) for i in (1, 2, 3))
    for tag in ("ping", "ping-strace"):
        m = re.search(rf"^== {tag} (.*)$", text, re.M)
        out[tag.replace("-", "_")] = m.group(1) if m else None
    return out


def _run_load(out: Path, tag: str, body: str, parse, purpose: str, log=print, timeout: float = 300) -> dict:
    """Boot an instance, run ``body`` (its testbed's qdisc the campaign's HTB class with a pfifo_fast leaf,
    the probe's C program in it) and store ``raw-TAG.txt``, ``results-TAG.json`` (``parse``) and
    ``metadata-TAG.json`` in ``out``."""
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    body = body.replace("QDISC", htb_leaf("pfifo_fast")).replace("BENCH_C", BENCH.strip())
    res, leaks, kernel = run_probe(out, body, name=tag, timeout=timeout, log=log, purpose=purpose)
    return store_probe(out, tag, res, marker="== end", parse=parse, script=f"cpucost.py {tag.upper()}",
                       kernel=kernel, leaks=leaks, host_loadavg=Path("/proc/loadavg").read_text().split()[:3])


def run_calls(out: Path, log=print) -> dict:
    """The campaign's load, each task's wake-ups and calls (:data:`CALLS`): ``*-calls.*``."""
    return _run_load(out, "calls", CALLS, parse_calls, "counting the load's wake-ups and system calls", log)


# sockperf ping-pong of 14-byte messages (the uml-ovs-kernel campaign's tcp_rr, and over UDP) across the bridge,
# no qdisc, 3 s each: its half round trips and messages without strace, then again with strace -c -f on both ends
# (the calls each transaction makes: which of them lie on a message's path); getppid() before and after
RR = TESTBED + BUILD + WARM + textwrap.dedent("""\
    sleep 1
    for r in 1 2 3; do echo "== step sysbefore$r $(/tmp/b sys 20000)"; done
    for proto in tcp udp; do
      T=""; [ $proto = tcp ] && T="--tcp"
      for st in "" strace; do
        ip netns exec w-vm2 ${st:+strace -c -f -o /tmp/st-server-$proto.txt} sockperf server -i 10.97.0.2 -p 11111 $T \
          > /dev/null 2>&1 &
        S=$!; sleep 1
        echo "== rr$st $proto $(ip netns exec w-vm1 ${st:+strace -c -f -o /tmp/st-client-$proto.txt} sockperf \
          ping-pong -i 10.97.0.2 -p 11111 -t 3 -m 14 $T 2>&1 | grep -E 'Valid Duration|Summary' | tr '\\n' ' ')"
        kill -INT $S; sleep 1; pkill -x sockperf; wait $S 2>/dev/null
      done
    done
    for r in 1 2 3; do echo "== step sysafter$r $(/tmp/b sys 20000)"; done
    for f in /tmp/st-*.txt; do echo "== strace ${f#/tmp/st-}"; cat $f; done
    echo "== end"
    """)


def parse_rr(text: str) -> dict:
    """getppid()'s cost (``getppid_us``) and each strace -c table (``strace``, as :func:`parse_calls`), and per
    protocol and mode (``rr``: plain, ``rrstrace``: traced) sockperf's run time, messages received and
    half-RTT summary (us)."""
    out = parse_calls(text)
    out["rr"] = {}
    for mode, proto, rest in re.findall(r"^== (rr|rrstrace) (tcp|udp) (.*)$", text, re.M):
        d = {}
        m = re.search(r"RunTime=([\d.]+) sec; SentMessages=(\d+); ReceivedMessages=(\d+)", rest)
        if m:
            d["seconds"], d["sent"], d["received"] = float(m.group(1)), int(m.group(2)), int(m.group(3))
        m = re.search(r"Latency is ([\d.]+) usec", rest)
        if m:
            d["half_rtt_us"] = float(m.group(1))
        out["rr"][f"{mode} {proto}"] = d
    return out


def run_rr(out: Path, log=print) -> dict:
    """sockperf ping-pong's round trips and its ends' system calls per transaction (:data:`RR`): ``*-rr.*``."""
    return _run_load(out, "rr", RR.replace("QDISC", ":"), parse_rr,
                     "sockperf ping-pong's system calls per transaction", log)


def host_cpu(session: int, per_thread: dict | None = None) -> float:
    """CPU seconds of every host process in the instance's session (its kernel and one process per UML
    process, the exited ones through their parent's cutime/cstime), from the host's /proc.  ``per_thread``,
    if given, gets each thread's (user, system) seconds by "pid/tid comm" (the kernel's threads apart)."""
    import os
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            head, tail = (d / "stat").read_text().rsplit(")", 1)
            f = tail.split()
        except OSError:
            continue
        if int(f[3]) == session:                    # field 6: session id
            total += sum(int(x) for x in f[11:15]) / tick     # utime stime cutime cstime
            if per_thread is not None:
                for t in (d / "task").iterdir():
                    try:
                        th, tt = (t / "stat").read_text().rsplit(")", 1)
                        g = tt.split()
                    except OSError:
                        continue
                    # utime, stime of the thread; the process's reaped children's in its first thread's row
                    per_thread[f"{d.name}/{t.name} {th.split('(', 1)[1]}"] = (
                        int(g[11]) / tick + (int(g[13]) / tick if t.name == d.name else 0.0),
                        int(g[12]) / tick + (int(g[14]) / tick if t.name == d.name else 0.0))
    return total


def run_hostcpu(out: Path, log=print) -> dict:
    """The campaign's load inside the instance (:data:`HOSTCPU`) while the host samples the instance's
    processes' CPU time every 0.1 s: UML's own busy share (/proc/stat) against the host CPU its processes
    used over the same spans.  ``*-hostcpu.*``."""
    import json
    import threading
    import time
    from datetime import datetime, timezone
    from ...atomic import write_atomic
    from .collect import PROJECT_ROOT, write_raw
    from .instance import IO, UmlInstance
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    body = HOSTCPU.replace("QDISC", htb_leaf("pfifo_fast"))
    inst = UmlInstance(keep=[str(out)], purpose="the host's view of the instance's CPU under the campaign's load")
    inst.start(["sh", f"{IO}/hostcpu.sh"], files={"hostcpu.sh": body}, cwd=str(PROJECT_ROOT))
    samples, stop = [], threading.Event()

    threads: list = []          # (time, per-thread times), every sample

    def sample():
        while not stop.is_set():
            per: dict = {}
            samples.append((time.time(), host_cpu(inst.proc.pid, per)))
            threads.append((samples[-1][0], per))
            stop.wait(0.1)
    th = threading.Thread(target=sample, daemon=True)
    th.start()
    try:
        res = inst.wait(timeout=200)
        leaks = inst.leaks()
    finally:
        stop.set()
        th.join()
        inst.stop(grace=0)
    write_raw(out / "raw-hostcpu.txt", res)
    marks = {}
    for name, wall, up, rest in re.findall(r"^== mark (\w+) ([\d.]+) ([\d.]+) cpu\s+([\d ]+)$", res.stdout, re.M):
        j = [int(x) for x in rest.split()]
        marks[name] = {"wall": float(wall), "uptime": float(up), "jiffies": j}
    ts = np.array([t for t, _ in samples])
    cs = np.array([c for _, c in samples])
    spans = {}
    for ph in ("idle", "load"):
        a, b = marks.get(f"{ph}0"), marks.get(f"{ph}1")
        if not a or not b or not ts.size:
            continue
        el = b["uptime"] - a["uptime"]
        idle = (b["jiffies"][3] + b["jiffies"][4] - a["jiffies"][3] - a["jiffies"][4]) / 100.0
        host = float(np.interp(b["wall"], ts, cs) - np.interp(a["wall"], ts, cs))
        ticks = sum(b["jiffies"]) - sum(a["jiffies"])
        spans[ph] = {"seconds": el, "uml_busy_share": 1.0 - idle / el, "host_cpu_share": host / el,
                     "uml_busy_ticks_share": (ticks - 100 * idle) / max(1e-9, ticks)}
        # each host thread's user and system seconds over the span (the samples nearest its ends)
        i0 = int(np.argmin(abs(ts - a["wall"])))
        i1 = int(np.argmin(abs(ts - b["wall"])))
        t0, t1 = threads[i0][1], threads[i1][1]
        spans[ph]["threads"] = {k: [round(v[0] - t0.get(k, (0, 0))[0], 3), round(v[1] - t0.get(k, (0, 0))[1], 3)]
                                for k, v in t1.items() if v != t0.get(k)}
        spans[ph]["threads_span"] = ts[i1] - ts[i0]
    m = re.search(r"^throughput ([\d.e+]+) cpu (.*)$", res.stdout, re.M)
    results = {"spans": spans, "marks": marks, "throughput": float(m.group(1)) if m else None,
               "iperf_cpu": m.group(2) if m else None, "host_samples": samples}
    write_atomic(out / "results-hostcpu.json", json.dumps(results, indent=1))
    meta = {"created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "script": "ovssim/collect/uml/cpucost.py HOSTCPU",
            "host_loadavg": Path("/proc/loadavg").read_text().split()[:3], "host_paths_leaked": leaks,
            "testbed_kernel": {"kind": "user-mode-linux", "version": inst.kernel.version, "cpus": 1}}
    write_atomic(out / "metadata-hostcpu.json", json.dumps(meta, indent=1))
    return results


def script() -> str:
    return (SCRIPT.replace("QDISC", ":").replace("BENCH_C", BENCH.strip())
            .replace("RATES", " ".join(map(str, RATES))).replace("SECS", str(SECONDS)).replace("LEN", str(LENGTH)))


def parse(text: str) -> dict:
    """Per step: its figures and the /proc/stat ticks it took (busy = all but idle and iowait)."""
    cpu = {}
    for tag, up, rest in re.findall(r"^== cpu (\S+) ([\d.]+) cpu\s+([\d ]+)$", text, re.M):
        j = [int(x) for x in rest.split()]
        cpu[tag] = (float(up), sum(j) - j[3] - j[4], j)
    steps = {}
    for name, rest in re.findall(r"^== step (\S+) ?(.*)$", text, re.M):
        nums = dict(zip(rest.split()[0::2], (float(x) for x in rest.split()[1::2])))
        a, b = cpu.get(f"{name}.0"), cpu.get(f"{name}.1")
        if a and b:
            nums["seconds"] = b[0] - a[0]
            nums["busy_ticks"] = b[1] - a[1]
            nums["ticks"] = sum(b[2]) - sum(a[2])
            nums["fields"] = [y - x for x, y in zip(a[2], b[2])]
            # CONFIG_NO_HZ_IDLE: idle time is measured (the nohz idle sleep time), busy time only sampled by
            # the tick, and a short busy spell after idle gets no tick at all: busy = elapsed - idle
            nums["busy_share"] = 1.0 - (nums["fields"][3] + nums["fields"][4]) / (100.0 * nums["seconds"])
        steps[name] = nums
    contend = [{"rep": int(r), "background": bg, "info": info.strip(),
                "rtt_ms": [float(x) for x in rtts.split()]}
               for r, bg, info, rtts in re.findall(r"^== contend (\d+) (\w+) (.*?)rtts (.*)$", text, re.M)]
    return {"steps": steps, "contend": contend, "kernel": (re.findall(r"^== kernel (.*)$", text, re.M) or [""])[0],
            "uname_v": (re.findall(r"^== preempt (.*)$", text, re.M) or [""])[0]}


def run(out: Path, log=print) -> dict:
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    res, leaks, kernel = run_probe(out, script(), name="cpucost", timeout=300, log=log,
                                   purpose="the instance's CPU cost per system call, switch and packet")
    return store_probe(out, "cpucost", res, marker="== end", parse=parse, script="cpucost.py", kernel=kernel,
                       leaks=leaks, host_loadavg=Path("/proc/loadavg").read_text().split()[:3])


def run_strace(out: Path, log=print) -> dict:
    """The iperf3 ends' system calls under the campaign's load (:data:`STRACE`): ``*-strace.*``."""
    return _run_load(out, "strace", STRACE, parse_strace,
                     "counting the iperf3 ends' system calls under the campaign's load", log, timeout=200)


def parse_strace(text: str) -> dict:
    """Segments received (bytes / 1448) and each end's system calls by name (strace -c's table)."""
    m = re.search(r"^bytes (\d+) seconds ([\d.]+)", text, re.M)
    out: dict = {"bytes": int(m.group(1)) if m else None, "seconds": float(m.group(2)) if m else None}
    for end in ("server", "client"):
        block = text.split(f"== strace {end}\n", 1)[-1].split("\n== ", 1)[0] if f"== strace {end}" in text else ""
        calls = {}
        for line in block.splitlines():
            f = line.split()
            if len(f) >= 5 and f[0].replace(".", "").isdigit() and f[-1] != "total":
                calls[f[-1]] = int(f[3])
        out[end] = calls
    return out


if __name__ == "__main__":
    import json
    if len(sys.argv) > 2 and sys.argv[2] == "--reparse":      # results-*.json anew from the raw files
        from ...atomic import write_atomic
        from .collect import read_raw
        for raw in sorted(Path(sys.argv[1]).glob("raw-*.txt")):
            tag = raw.stem[len("raw-"):]
            parsed = (parse_strace if tag.startswith("strace") else parse_calls if tag.startswith("calls")
                      else parse_rr if tag.startswith("rr")
                      else parse_pingpong if tag.startswith("pingpong") else parse)(read_raw(raw))
            write_atomic(raw.with_name(f"results-{tag}.json"), json.dumps(parsed, indent=1))
            print("wrote", raw.with_name(f"results-{tag}.json"))
        sys.exit(0)
    if len(sys.argv) > 2 and sys.argv[2] == "--hostcpu":
        r = run_hostcpu(Path(sys.argv[1]))
        print(json.dumps({k: v for k, v in r.items() if k != "host_samples"}, indent=1))
        sys.exit(0)
    if len(sys.argv) > 2 and sys.argv[2] == "--pingpong":
        r = run_pingpong(Path(sys.argv[1]))
        print(json.dumps({"sys_us": [v["sys_us"] for v in r["steps"].values()], "pingpong_per_s": r["pingpong_per_s"]}))
        sys.exit(0)
    if len(sys.argv) > 2 and sys.argv[2] == "--wakes":
        print(json.dumps(run_wakes(Path(sys.argv[1]))["steps"], indent=1))
        sys.exit(0)
    if len(sys.argv) > 2 and sys.argv[2] == "--calls":
        r = run_calls(Path(sys.argv[1]))
        print(json.dumps({k: v for k, v in r.items() if k != "strace"}, indent=1))
        sys.exit(0)
    if len(sys.argv) > 2 and sys.argv[2] == "--strace":
        print(json.dumps(run_strace(Path(sys.argv[1])), indent=1))
        sys.exit(0)
    if len(sys.argv) > 2 and sys.argv[2] == "--rr":
        r = run_rr(Path(sys.argv[1]))
        print(json.dumps({"rr": r["rr"], "getppid_us": r["getppid_us"], "strace": r["strace"]}, indent=1))
        sys.exit(0)
    r = run(Path(sys.argv[1]))
    print(json.dumps(r["steps"], indent=1))
