"""Cold compile of two source trees side by side (issue 15): bench/cold_compile.py of each tree
in turn, one model process at a time, rounds alternating which tree goes first; per-phase
medians. Each tree must be built (python3 setup.py build_ext --inplace).

    python3 bench/cold_compile_ab.py --before /tmp/before --after . --models hf_gpt2,hf_llama --rounds 3

A before tree: `git archive <commit> | tar -x -C /tmp/before` and build it there. Env passes
through (TORCHTRT_C_*). Absolute seconds on a shared machine are noise; compare the trees.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

KEYS = ["total", "capture (torch.export)", "decompositions", "lowering", "engines + stitching", "consts", "serialize",
        "tune", "load", "first call"]


def _one(root: str, model: str, extra, script=None) -> dict:
    fd, out = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    env = dict(os.environ, PYTHONPATH=os.path.abspath(root))
    script = script or os.path.join(root, "bench", "cold_compile.py")
    subprocess.run([sys.executable, script, "--models", model, "--no-inductor",
                    "--out", out] + list(extra), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(out) as f:
        row = json.load(f)["rows"][0]
    os.unlink(out)
    if "error" in row:
        return {"error": row["error"]}
    p = row["ttc_cold_profile"]
    d = {"total": p["total_s"], **{k: v for k, v in p["phases"]}}
    b = [e["build"] for e in p["engines"] if e.get("build")]
    d["consts"] = sum(x["consts_s"] for x in b)
    d["tune"] = sum(x["tune_s"] for x in b)
    d["serialize"] = sum(e["seconds"].get("serialize", 0.0) for e in p["engines"])
    if "ttc_first_call_s" in row:
        d["first call"] = row["ttc_first_call_s"]
    with open("/proc/loadavg") as f:
        d["load"] = float(f.read().split()[0])
    return d


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", default=".")
    ap.add_argument("--models", default="hf_gpt2,hf_llama")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--script", default=None,
                    help="run this cold_compile.py for both trees (default: each tree's own), e.g. for options "
                         "the before tree's script does not have")
    ap.add_argument("extra", nargs="*", help="more cold_compile.py arguments (after --)")
    args = ap.parse_args(argv)
    trees = {"before": args.before, "after": args.after}
    rows = {}
    for r in range(args.rounds):
        for m in [s for s in args.models.split(",") if s]:
            for name in (("before", "after") if r % 2 == 0 else ("after", "before")):
                d = _one(trees[name], m, args.extra, args.script and os.path.abspath(args.script))
                print(m, name, {k: round(v, 2) if isinstance(v, float) else v for k, v in d.items()}, flush=True)
                if "error" not in d:
                    rows.setdefault((m, name), []).append(d)
    med = lambda v: sorted(v)[len(v) // 2]  # noqa: E731
    print("\n| model | tree | " + " | ".join(KEYS) + " |")
    print("|" + "---|" * (len(KEYS) + 2))
    for (m, name), v in sorted(rows.items()):
        print(f"| {m} | {name} | " + " | ".join(f"{med([d.get(k, 0.0) for d in v]):.2f}" for k in KEYS) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
