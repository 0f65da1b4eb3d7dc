#!/usr/bin/env bash
# Per-packet CPU time of a qdisc's own functions: UDP flood through a veth in netns this script creates,
# perf cpu-clock sampling (10 us period) of the whole machine, samples in the qdisc's symbols x period / packets.
set -u
K=$1; REP=$2; OUT=${OUTDIR:-/tmp}/q_${K}_${REP}
A=t3qa; B=t3qb
ip netns del $A 2>/dev/null; ip netns del $B 2>/dev/null
ip netns add $A; ip netns add $B
ip link add t3va netns $A type veth peer name t3vb netns $B
ip -n $A addr add 172.31.250.1/30 dev t3va; ip -n $B addr add 172.31.250.2/30 dev t3vb
ip -n $A link set t3va up; ip -n $B link set t3vb up; ip -n $A link set lo up; ip -n $B link set lo up
case $K in
  htb) ip netns exec $A tc qdisc add dev t3va root handle 1: htb default 10
       ip netns exec $A tc class add dev t3va parent 1: classid 1:10 htb rate 10gbit ceil 10gbit ;;
  tbf) ip netns exec $A tc qdisc add dev t3va root tbf rate 10gbit burst 1mb latency 50ms ;;
  *)   ip netns exec $A tc qdisc add dev t3va root $K ;;
esac
ip netns exec $B iperf3 -s -1 -p 5299 >/dev/null 2>&1 &
SP=$!
sleep 0.5
ip netns exec $A tc -s qdisc show dev t3va > $OUT.tc0
perf record -q -a -e cpu-clock -c ${PERIOD:-100000} -o $OUT.data -- ip netns exec $A iperf3 -u -c 172.31.250.2 -p 5299 -l 64 -b 0 -t 3 >/dev/null 2>&1
ip netns exec $A tc -s qdisc show dev t3va > $OUT.tc1
kill $SP 2>/dev/null; wait $SP 2>/dev/null
ip netns del $A; ip netns del $B
perf report -q -i $OUT.data --stdio --sort sym -n 2>/dev/null > $OUT.rep
