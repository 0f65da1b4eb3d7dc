#!/bin/sh
# Where the iperf3 client's CPU goes on a bare veth pair (issue 15): perf samples of the client process
# (user, kernel and the softirq work it runs in its own context) for one write size.
#     sh validation/write_size/perf_writer.sh SIZE [SECONDS]    (root; quiet machine)
set -eu
L=${1:-16384}; T=${2:-2}
A=b3tx; B=b3rx
cleanup() { ip netns del $A 2>/dev/null || true; ip netns del $B 2>/dev/null || true; }
trap cleanup EXIT
cleanup
ip netns add $A; ip netns add $B
ip link add b3v0 netns $A type veth peer name b3v1 netns $B
ip -n $A addr add 172.31.99.1/24 dev b3v0; ip -n $B addr add 172.31.99.2/24 dev b3v1
ip -n $A link set b3v0 up; ip -n $B link set b3v1 up; ip -n $A link set lo up; ip -n $B link set lo up
ip netns exec $B iperf3 -s -D -1 -I /tmp/b3_perf_server.pid
sleep 0.3
ip netns exec $A iperf3 -c 172.31.99.2 -t $((T + 2)) -l "$L" > /tmp/b3_perf_iperf_$L.txt &
sleep 1
PID=$(pgrep -n -f "iperf3 -c 172.31.99.2")
perf record -q -F 1999 -g -p "$PID" -o /tmp/b3_perf_$L.data -- sleep "$T" 2>/dev/null
wait
tail -4 /tmp/b3_perf_iperf_$L.txt | head -2
perf report -i /tmp/b3_perf_$L.data --no-children --sort symbol --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -30
