"""Per-row verdicts of the tcp_window section: one results.json against another (a baseline run of the same code
base before a change), printing every row whose verdict or simulated value moved.

    .venv/bin/python validation/tcp_window/verdict_diff.py BASE/results.json NEW/results.json [--all]
"""
from __future__ import annotations

import argparse
import json
from collections import Counter


def rows(path: str) -> dict[str, dict]:
    with open(path) as fh:
        tb = json.load(fh)["testbeds"]["tcp_window"]
    return {r["config"]: r for r in tb["rows"]}


def group(config: str) -> str:
    cc = "bbr" if " bbr" in config else "cubic"
    metric = "mean" if "mean RTT" in config else "max" if "max RTT" in config else "thr"
    return f"{cc} {metric}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("base")
    ap.add_argument("new")
    ap.add_argument("--all", action="store_true", help="also rows whose simulated value moved but not the verdict")
    a = ap.parse_args()
    b, n = rows(a.base), rows(a.new)
    before, after = Counter(), Counter()
    for k in sorted(set(b) | set(n)):
        rb, rn = b.get(k), n.get(k)
        if rb is None or rn is None:
            print(f"{'only in ' + ('new' if rb is None else 'base'):12s} {k}")
            continue
        before[group(k)] += rb["meets"]
        after[group(k)] += rn["meets"]
        moved = abs(rn["simulated"] - rb["simulated"]) > 1e-9
        if rb["meets"] != rn["meets"] or (a.all and moved):
            tag = "GAINED" if rn["meets"] and not rb["meets"] else "LOST" if rb["meets"] and not rn["meets"] else "moved"
            print(f"{tag:7s} {k}: measured {rb['measured']:.2f}, simulated {rb['simulated']:.2f} "
                  f"({100 * rb['rel_error']:+.1f} %) -> {rn['simulated']:.2f} ({100 * rn['rel_error']:+.1f} %)")
    total = Counter()
    for k in b:
        total[group(k)] += 1
    for g in sorted(total):
        print(f"{g:10s} {before[g]:3d} -> {after[g]:3d} of {total[g]}")
    print(f"all        {sum(before.values()):3d} -> {sum(after.values()):3d} of {sum(total.values())}")


if __name__ == "__main__":
    main()
