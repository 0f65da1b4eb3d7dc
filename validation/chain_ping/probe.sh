#!/bin/bash
# Ping through N Linux bridges chained by veth pairs, at several intervals (root; namespaces cpa/cpb and
# links cbr*/cl*/cr*/cva/cvb of its own, removed at the end): what one bridge + veth hop adds to a ping's
# round trip on a hot core (0.2 ms apart) and after an idle exit (10 ms apart: the core halts between pings).
#   sudo validation/chain_ping/probe.sh N    (N = 1..4; prints one ping summary line per interval)
#   INTERVALS="0.002 0.005" sudo -E validation/chain_ping/probe.sh N    (other intervals, seconds)
N=${1:?usage: probe.sh N (bridges, 1-4)}
[ "$(id -u)" = 0 ] || { echo "probe.sh: needs root (ip netns, ip link); run it with sudo" >&2; exit 1; }
cleanup() {
  ip netns del cpa 2>/dev/null; ip netns del cpb 2>/dev/null
  for i in 1 2 3 4; do ip link del cbr$i 2>/dev/null; ip link del cl$i 2>/dev/null; done
  ip link del cva 2>/dev/null; ip link del cvb 2>/dev/null; true
}
trap cleanup EXIT INT TERM
cleanup
ip netns add cpa; ip netns add cpb
ip link add cva type veth peer name eth0 netns cpa
ip link add cvb type veth peer name eth0 netns cpb
for i in $(seq 1 "$N"); do ip link add cbr$i type bridge; ip link set cbr$i up; done
ip link set cva master cbr1; ip link set cvb master cbr"$N"
for i in $(seq 1 $((N - 1))); do
  ip link add cl$i type veth peer name cr$i
  ip link set cl$i master cbr$i; ip link set cr$i master cbr$((i + 1)); ip link set cl$i up; ip link set cr$i up
done
ip link set cva up; ip link set cvb up
for ns in cpa:1 cpb:2; do
  ip netns exec "${ns%%:*}" ip addr add 10.99.0."${ns##*:}"/24 dev eth0
  ip netns exec "${ns%%:*}" ip link set eth0 up; ip netns exec "${ns%%:*}" ip link set lo up
done
sleep 2                                   # the bridges' ports leave the listening state
ip netns exec cpa ping -c 20 -i 0.2 -q 10.99.0.2 >/dev/null
for iv in ${INTERVALS:-0.0002 0.001 0.01}; do
  c=$(python3 -c "print(int(min(2000, 2 / $iv)))")
  echo "N=$N interval=$iv $(ip netns exec cpa ping -c "$c" -i "$iv" -q 10.99.0.2 | tail -1)"
done
