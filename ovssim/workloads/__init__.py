"""Traffic tools, named and configured like the real ones (iperf, netperf, ping)."""
