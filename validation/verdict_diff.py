"""Per-row verdicts of two validation results.json files: which rows changed, and whether they now meet or miss.

    .venv/bin/python validation/verdict_diff.py OLD/results.json NEW/results.json [TESTBED-PREFIX]

A row is (testbed, config, metric); its verdict is ``meets`` (the target) and its error ``rel_error``.  Prints
every row whose verdict changed, or whose |error| moved by more than 1 point, then the count of rows meeting
their target per testbed, old -> new.  Exits 1 if a row that met its target no longer does.
"""
import json
import sys
from collections import Counter


def rows(path: str, prefix: str = "") -> dict:
    out = {}
    for name, tb in json.load(open(path))["testbeds"].items():
        if not name.startswith(prefix):
            continue
        for r in tb.get("rows", []):
            out[(name, r["config"], r["metric"])] = r
    return out


def main(old_path: str, new_path: str, prefix: str = "") -> int:
    old, new = rows(old_path, prefix), rows(new_path, prefix)
    worse = 0
    for key in sorted(old.keys() | new.keys()):
        o, n = old.get(key), new.get(key)
        if o is None or n is None:
            print(("only new " if o is None else "only old ") + " / ".join(key))
            continue
        eo, en = o.get("rel_error"), n.get("rel_error")
        moved = eo is not None and en is not None and abs(abs(en) - abs(eo)) > 0.01
        if o.get("meets") != n.get("meets") or moved:
            fmt = lambda e: "--" if e is None else f"{100 * e:+.1f}%"
            num = lambda v: "--" if v is None else f"{v:.4g}"
            print(f"{' / '.join(key)}: {fmt(eo)} -> {fmt(en)} (sim {num(o['simulated'])} -> {num(n['simulated'])}, "
                  f"measured {num(n['measured'])}); meets {o.get('meets')} -> {n.get('meets')}")
            worse += bool(o.get("meets")) and not n.get("meets")
    for label, rs in (("old", old), ("new", new)):
        c = Counter(k[0] for k, r in rs.items() if r.get("meets"))
        t = Counter(k[0] for k, r in rs.items() if r.get("meets") is not None)
        print(label, ", ".join(f"{tb} {c[tb]}/{t[tb]}" for tb in sorted(t)))
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
