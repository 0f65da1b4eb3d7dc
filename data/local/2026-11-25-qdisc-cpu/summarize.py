"""Per-packet CPU time of each qdisc's own functions from raw/*.perf.txt and raw/*.tc.txt -> results.csv.

ns per packet = (cpu-clock samples in the qdisc's symbols) x period / packets the qdisc sent during the run.
Own symbols: the kind's functions plus its default leaf queue (HTB's pfifo leaf, TBF's bfifo).
"""
import re
from pathlib import Path

import pandas as pd

HERE = Path(__file__).parent
PERIOD_NS = 100_000
OWN = {"htb": ("htb_", "pfifo_enqueue", "qdisc_dequeue_head", "qdisc_peek_head"),
       "tbf": ("tbf_", "bfifo_enqueue", "qdisc_dequeue_head", "qdisc_peek_head"),
       "pfifo": ("pfifo_enqueue", "qdisc_dequeue_head", "qdisc_peek_head"),
       "pfifo_fast": ("pfifo_fast_",)}
LINE = re.compile(r"\s*[\d.]+%\s+(\d+)\s+\[k\]\s+(\S+)")

rows = []
for kind, prefixes in OWN.items():
    for perf in sorted((HERE / "raw").glob(f"q_{kind}_r*.perf.txt")):
        samples = sum(int(m.group(1)) for m in map(LINE.match, perf.read_text().splitlines())
                      if m and m.group(2).startswith(prefixes))
        before, after = perf.with_name(perf.name.replace(".perf.", ".tc.")).read_text().split("--- after ---")
        packets = int(re.search(r"(\d+) pkt", after).group(1)) - int(re.search(r"(\d+) pkt", before).group(1))
        rows.append({"qdisc": kind, "run": perf.name.split("_")[-1].split(".")[0], "samples": samples,
                     "packets": packets, "ns_per_packet": samples * PERIOD_NS / packets})
df = pd.DataFrame(rows)
df.to_csv(HERE / "results.csv", index=False)
print(df.groupby("qdisc")["ns_per_packet"].agg(["mean", "min", "max", "count"]).round(0))
