"""Compares regenerated ARMv7 counts (regenerate.sh's armv7_counts.txt: one line per run,
"N BITS MODE alu mul ldst branch total") with COUNTS in python/veil/he/taco/armv7.py, read as
a literal (no import of Veil needed). Prints each run's counts beside the committed ones and
the per-operation difference; exit status 1 unless every number is equal.

Licensed under the Apache License, Version 2.0."""

import ast
import sys

CLASSES = ("alu", "mul", "ldst", "branch", "total")
RUNS = {"setup": "setup", "enc": "enc10", "dec": "dec10"}


def committed(path):
    tree = ast.parse(open(path).read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "COUNTS" for t in node.targets):
            return ast.literal_eval(node.value)
    raise SystemExit(f"compare_armv7: no COUNTS literal in {path}")


def main(regen_path, armv7_path):
    want = committed(armv7_path)
    got = {}
    for line in open(regen_path):
        n, bits, mode, *nums = line.split()
        key = (int(n), tuple(int(b) for b in bits.split(",")))
        got.setdefault(key, {})[RUNS[mode]] = tuple(int(x) for x in nums)
    same = True
    for key, runs in want.items():
        for run, w in runs.items():
            g = got.get(key, {}).get(run)
            if g is None:
                print(f"{key} {run}: not regenerated")
                same = False
                continue
            eq = g == w
            same &= eq
            print(f"{key[0]} {','.join(map(str, key[1]))} {run}: {'equal' if eq else 'DIFFERS'}  "
                  f"regenerated {g}  committed {w}")
        if all(r in got.get(key, {}) for r in runs):
            for op in ("enc", "dec"):
                g = [(got[key][f"{op}10"][i] - got[key]["setup"][i]) / 10 for i in range(5)]
                w = [(runs[f"{op}10"][i] - runs["setup"][i]) / 10 for i in range(5)]
                rel = ", ".join(f"{c} {a / b - 1:+.2%}" if b else f"{c} -" for c, a, b in zip(CLASSES, g, w))
                print(f"    one {op}: {rel}")
    print("armv7: every count equal" if same else "armv7: counts DIFFER from the committed ones")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
