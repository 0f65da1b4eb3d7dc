#!/bin/sh
# The skbs Linux builds from iperf3's writes on a bare veth pair, and why (issue 15).
#
# Two namespaces of our own (b3tx, b3rx) joined by one veth pair, offloads as the kernel sets them;
# for each write size, one iperf3 -c run of DURATION s, then per run:
#   skb size   = the sender veth's tx_bytes / tx_packets (a GSO skb counts once, as veth_xmit counts it)
#   nstat      = the sender namespace's TcpExt counters over the run (TCPAutoCorking: tcp_push held a tail;
#                TCPBacklogCoalesce: ACKs merged in the owned socket's backlog, tcp_add_backlog;
#                DelayedACKs, TCPOrigDataSent)
#   ss         = cwnd, unacked, notsent of the sending socket sampled every 0.2 s
#   iperf3     = throughput and both ends' CPU (-J: cpu_utilization_percent)
# Root only; run it on a quiet machine (load shown first).
#     sh validation/write_size/measure_veth.sh [DURATION] [SIZES...]   (default 3 s, 131072 16384 4096)
set -eu
DUR=${1:-3}; shift 2>/dev/null || true
SIZES=${*:-131072 16384 4096}
A=b3tx; B=b3rx
cleanup() { [ -s /tmp/b3_iperf_server.pid ] && kill "$(cat /tmp/b3_iperf_server.pid)" 2>/dev/null; rm -f /tmp/b3_iperf_server.pid
           ip netns del $A 2>/dev/null || true; ip netns del $B 2>/dev/null || true; }
trap cleanup EXIT
cleanup
ip netns add $A; ip netns add $B
ip link add b3v0 netns $A type veth peer name b3v1 netns $B
ip -n $A addr add 172.31.99.1/24 dev b3v0; ip -n $B addr add 172.31.99.2/24 dev b3v1
ip -n $A link set b3v0 up; ip -n $B link set b3v1 up; ip -n $A link set lo up; ip -n $B link set lo up
echo "uptime: $(uptime)"
echo "kernel: $(uname -r); sender veth features: $(ip netns exec $A ethtool -k b3v0 | grep -E '^(tcp-segmentation-offload|generic-receive-offload|tx-checksumming):' | tr '\n' ' ')"
ip netns exec $B iperf3 -s -D -I /tmp/b3_iperf_server.pid     # our own server, stopped by its pid
for L in $SIZES; do
  sleep 0.3
  tb0=$(ip netns exec $A cat /sys/class/net/b3v0/statistics/tx_bytes)
  tp0=$(ip netns exec $A cat /sys/class/net/b3v0/statistics/tx_packets)
  ip netns exec $A nstat -n >/dev/null
  ip netns exec $A iperf3 -c 172.31.99.2 -t "$DUR" -l "$L" -J > /tmp/b3_iperf_$L.json &
  IP=$!
  sleep 0.5
  : > /tmp/b3_ss_$L.txt
  i=0; while [ $i -lt $(( (DUR - 1) * 5 )) ]; do
    ip netns exec $A ss -tin dst 172.31.99.2 | grep -oE 'cwnd:[0-9]+|unacked:[0-9]+|notsent:[0-9]+' | tr '\n' ' ' >> /tmp/b3_ss_$L.txt
    echo >> /tmp/b3_ss_$L.txt; sleep 0.2; i=$((i + 1)); done
  wait $IP
  tb1=$(ip netns exec $A cat /sys/class/net/b3v0/statistics/tx_bytes)
  tp1=$(ip netns exec $A cat /sys/class/net/b3v0/statistics/tx_packets)
  ns=$(ip netns exec $A nstat -a 2>/dev/null | awk '/TcpExtTCPAutoCorking|TcpExtTCPBacklogCoalesce|TcpExtDelayedACKs|TcpExtTCPOrigDataSent|TcpOutSegs|TcpInSegs/ {printf "%s=%s ", $1, $2}')
  thr=$(python3 -c "import json;d=json.load(open('/tmp/b3_iperf_$L.json'));e=d['end'];c=e['cpu_utilization_percent'];print(f\"{e['sum_received']['bits_per_second']/1e6:.0f} Mbit/s cpu host {c['host_total']:.0f}% remote {c['remote_total']:.0f}%\")")
  echo "-l $L: $thr; skb $(( (tb1 - tb0) / (tp1 - tp0) )) B mean over $((tp1 - tp0)) skbs; $ns"
  echo "   ss (every 0.2 s): $(sort /tmp/b3_ss_$L.txt | uniq -c | sort -rn | head -4 | tr -s ' ' | tr '\n' ';')"
done
