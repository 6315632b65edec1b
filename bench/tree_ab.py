"""Whole models under two or more built source trees, round robin: each round runs one process per
tree (the order alternating between rounds); each process compiles the model with its tree's
torchtrt_c, then times the compiled module (end to end, torch tensors in and out) and torch eager
(and Inductor with --inductor) back to back, the median of --runs calls each. One process cannot
hold two builds of the extension, hence processes; eager/Inductor in the same process give each
tree's ratios at the load it saw. For a regression hunt between commits on a shared machine.

    git archive <commit> | tar -x -C /tmp/s7 && ln -s $PWD/.deps /tmp/s7/.deps && (cd /tmp/s7 && python3 setup.py -q build_ext --inplace)
    python3 bench/tree_ab.py --trees /tmp/s7,. --models tv_efficientnet_b0 --batch 8 --rounds 5 --runs 5 [--inductor]

Env passes through (TORCHTRT_C_*); --env-<i> "K=V,K=V" adds variables for tree i only.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CHILD = r"""
import json, os, statistics, sys, time, copy
root = os.getcwd()
sys.path[:0] = [root, os.path.join(root, "tests"), os.path.join(root, "bench")]
import torch, torchtrt_c
from vision_models import build_vision
name, batch, runs, ind = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
m, mk = build_vision(name, "full")
torch.manual_seed(batch)
x = mk(batch)
def med(f):
    f()
    ts = []
    for _ in range(runs):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3
with torch.inference_mode():
    trt = torchtrt_c.compile(copy.deepcopy(m), inputs=[x], min_block_size=1)
    fns = {"ttc": lambda: trt(x), "eager": lambda: m(x)}
    if ind:
        ic = torch.compile(copy.deepcopy(m)); ic(x)
        fns["inductor"] = lambda: ic(x)
    res = {k: [] for k in fns}
    for _ in range(2):   # two passes, interleaved, so that neither side has the quiet moment alone
        for k, f in fns.items():
            res[k].append(med(f))
    err = (trt(x) - m(x)).abs().max().item()
print("RESULT " + json.dumps({k: min(v) for k, v in res.items()} | {"maxerr": err}))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trees", required=True, help="comma-separated built source trees")
    ap.add_argument("--models", default="tv_efficientnet_b0")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--inductor", action="store_true")
    a, rest = ap.parse_known_args()
    trees = [os.path.abspath(t) for t in a.trees.split(",")]
    extra = {}
    for i in range(len(trees)):
        for j, r in enumerate(rest):
            if r == f"--env-{i}" and j + 1 < len(rest):
                extra[i] = dict(kv.split("=", 1) for kv in rest[j + 1].split(",") if kv)
    for model in a.models.split(","):
        res = {i: [] for i in range(len(trees))}
        for r in range(a.rounds):
            order = list(range(len(trees)))
            if r % 2:
                order.reverse()
            for i in order:
                env = dict(os.environ, PYTHONPATH=trees[i], **extra.get(i, {}))
                p = subprocess.run([sys.executable, "-c", CHILD, model, str(a.batch), str(a.runs),
                                    "1" if a.inductor else "0"], cwd=trees[i], env=env, capture_output=True, text=True)
                line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
                if p.returncode or not line:
                    print(f"  tree {trees[i]}: rc {p.returncode}: {p.stderr[-800:]}")
                    continue
                d = json.loads(line[0][7:])
                d["load"] = float(open("/proc/loadavg").read().split()[0])
                res[i].append(d)
                print(f"  round {r} tree {i}: " + "  ".join(f"{k} {v:.4g}" for k, v in d.items()), flush=True)
        print(f"{model} batch {a.batch}, medians over rounds:")
        base = None
        for i, t in enumerate(trees):
            if not res[i]:
                continue
            md = {k: statistics.median(d[k] for d in res[i]) for k in res[i][0] if k not in ("maxerr", "load")}
            rel = statistics.median(d["ttc"] / d["eager"] for d in res[i])
            reli = statistics.median(d["ttc"] / d["inductor"] for d in res[i]) if "inductor" in md else None
            line = f"  tree {i} {t}{' ' + str(extra[i]) if i in extra else ''}: " + "  ".join(
                f"{k} {v:.2f} ms" for k, v in md.items()) + f"  ttc/eager {rel:.3f}"
            if reli is not None:
                line += f"  ttc/inductor {reli:.3f}"
            if base is None:
                base = md["ttc"]
            else:
                line += f"  ttc/tree0 {md['ttc'] / base:.3f}"
            loads = [d["load"] for d in res[i]]
            print(line + f"  (load {min(loads):.1f}-{max(loads):.1f})", flush=True)


if __name__ == "__main__":
    main()
