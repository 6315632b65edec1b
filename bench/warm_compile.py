"""Cold and warm compile times with the per-phase profile (issue 15).

    python3 bench/warm_compile.py --models hf_bert:tiny,resnet18:tiny [--out DIR]

Per model, with a fresh engine cache directory: process 1 compiles cold, then the same model
again (warm, same process); process 2 (a new interpreter) compiles it warm from the on-disk
engine cache. Each compile prints its profile; a summary table ends the run. Compiles use
cache_built_engines=True, reuse_cached_engines=True, default settings otherwise.
Models: hf_bert / hf_gpt2 / hf_llama (bench/hf_models.py) and the tests/zoo.py names, each as
name:size (tiny or full).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from scratch_dirs import scratch_dir  # noqa: E402  (bench/: removed at exit)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _build(spec):
    name, _, size = spec.partition(":")
    size = size or "tiny"
    if name.startswith("hf_"):
        sys.path.insert(0, os.path.join(ROOT, "bench"))
        from hf_models import build_hf
        m, inp = build_hf(name, size)
    else:
        sys.path.insert(0, os.path.join(ROOT, "tests"))
        from zoo import build
        m, inp = build(name, size)
    return m, inp


_keep = []  # the previous compiled module stays referenced, as `trt = compile(...)` re-run in a notebook


def _one(spec, cache, label, first_call):
    import torch
    import torchtrt_c
    m, inp = _build(spec)
    x = inp(1)
    t = time.perf_counter()
    gm = torchtrt_c.compile(m, inputs=[x], cache_built_engines=True, reuse_cached_engines=True,
                            engine_cache_dir=cache)
    total = time.perf_counter() - t
    _keep[:] = [gm]
    prof = gm._torchtrt_c_profile
    row = {"model": spec, "run": label, "total_s": total, "phases": prof.phases,
           "engines": [{"name": e["name"], "source": e["source"], "seconds": e["seconds"]}
                       for e in prof.engines], "programs": prof.programs, "module_cache": prof.module_cache}
    if first_call:
        t = time.perf_counter()
        with torch.no_grad():
            y = gm(x)
        row["first_call_s"] = time.perf_counter() - t
        with torch.no_grad():
            ref = m(x)
        row["max_abs_err"] = float((y - ref).abs().max())
    print(str(prof), file=sys.stderr, flush=True)
    print("ROW" + json.dumps(row), flush=True)


def child(spec, cache, runs):
    for label in runs:
        _one(spec, cache, label, first_call=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="hf_bert:tiny,resnet18:tiny")
    ap.add_argument("--out", default=None, help="writes rows.json there")
    ap.add_argument("--child", default=None)
    ap.add_argument("--cache", default=None)
    ap.add_argument("--runs", default="cold,warm")
    a = ap.parse_args()
    if a.child:
        child(a.child, a.cache, a.runs.split(","))
        return
    rows = []
    for spec in a.models.split(","):
        cache = scratch_dir("ttc_warm_bench_")
        for runs in ("cold,warm (same process)", "warm (new process)"):
            r = subprocess.run([sys.executable, __file__, "--child", spec, "--cache", cache, "--runs", runs],
                               capture_output=True, text=True)
            sys.stderr.write(r.stderr[-6000:])
            if r.returncode:
                raise SystemExit(f"{spec}: child failed")
            rows += [json.loads(ln[3:]) for ln in r.stdout.splitlines() if ln.startswith("ROW")]
    print("| model | run | compile s | capture s | other phases | engines | first call s | compile + first call s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        ph = dict(r["phases"])
        cap = ph.pop("capture (torch.export)", 0.0)
        other = ", ".join(f"{k} {v:.2f}" for k, v in ph.items() if v >= 0.01)
        eng = "; ".join(f"{e['source']}" for e in r["engines"])
        print(f"| {r['model']} | {r['run']} | {r['total_s']:.2f} | {cap:.2f} | {other} | {eng} | "
              f"{r.get('first_call_s', 0):.2f} | {r['total_s'] + r.get('first_call_s', 0):.2f} |")
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "rows.json"), "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
