"""Cold compile side by side with Inductor, with torchtrt_c's per-phase profile (issue 15).

    python3 bench/cold_compile.py --models hf_bert,resnet18 [--batch 1] [--precision fp32]
        [--cold-driver] [--no-inductor] [--warm] [--out results.json]

Each model runs in a process of its own, with fresh cache directories: TORCHTRT_C_CACHE_DIR
(program binaries, tuning) and the engine cache for torchtrt_c, TORCHINDUCTOR_CACHE_DIR and
TRITON_CACHE_DIR for Inductor. --cold-driver also empties the OpenCL driver's own caches
(POCL_CACHE_DIR; NVIDIA's ComputeCache through CUDA_CACHE_PATH), which a first compile on a
fresh machine meets. Before timing, each compiler compiles a tiny model once (imports and
one-time process costs stay out of the numbers). Inductor's time is torch.compile plus its
first call (where it compiles); torchtrt_c's is torchtrt_c.compile (engines built, programs
compiled). --warm also times torchtrt_c's second compile in the same process.
Models: hf_bert / hf_gpt2 / hf_llama (bench/hf_models.py), tv_* / timm_* (vision_models.py),
or a tests/zoo.py name (resnet18, bert_base, ...); name:tiny for the small configuration.
Env passes through, e.g. TORCHTRT_C_BUILD_THREADS=1 to build programs one at a time, or
TORCHTRT_C_TUNE=full (every GEMM candidate timed, as before the shortlist) for the tuning A/B;
TORCHTRT_C_KERNELS=gpu runs the GPU kernel families (and their tuning) on a CPU device.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import subprocess
import sys
import time
from scratch_dirs import scratch_dir  # noqa: E402  (bench/: removed at exit)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _median_ms(fn, sync, runs):
    for _ in range(3):
        fn()
    sync()
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        sync()
        ts.append(time.perf_counter() - t)
    return sorted(ts)[len(ts) // 2] * 1e3


def _child(spec, args):
    # ROOT last: a PYTHONPATH naming another tree's torchtrt_c wins (cold_compile_ab.py --script)
    sys.path[:0] = [os.path.join(ROOT, "tests"), os.path.join(ROOT, "bench")]
    sys.path.append(ROOT)
    import torch
    import torchtrt_c
    name, _, size = spec.partition(":")
    size = size or "full"
    from hf_models import HF_MODELS, build_hf
    from vision_models import VISION_MODELS, build_vision
    if name in HF_MODELS:
        m, make = build_hf(name, size)
    elif name in VISION_MODELS:
        m, make = build_vision(name, size)
    else:
        from zoo import build
        m, make = build(name, size)
    dtype = torch.float16 if args.precision == "fp16" else torch.float32
    x = make(args.batch)
    if x.is_floating_point():
        x = x.to(dtype)
    m = m.eval().to(dtype=dtype)
    gpu = "GPU" in str(torchtrt_c._C.devices()[torchtrt_c._C.default_device()].get("type", "")).upper()
    tdev = torch.device("cuda" if gpu and torch.cuda.is_available() else "cpu")
    sync = torch.cuda.synchronize if tdev.type == "cuda" else (lambda: None)
    row = {"model": spec, "batch": args.batch, "precision": args.precision, "torch_device": str(tdev)}
    # one tiny compile each: imports, tracing machinery, OpenCL context
    tiny = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU()).eval()
    tx = torch.randn(2, 16)
    with torch.inference_mode():
        if not args.no_inductor:
            torch.compile(copy.deepcopy(tiny).to(tdev))(tx.to(tdev))
            sync()
            torch._dynamo.reset()
        torchtrt_c.compile(tiny, inputs=[tx], min_block_size=1,
                           engine_cache_dir=scratch_dir("ttc-cold-warmup-", args.tmp))(tx)
        if not args.no_inductor:
            md, xd = copy.deepcopy(m).to(tdev), x.to(tdev)
            t = time.perf_counter()
            ind = torch.compile(md)
            ind(xd)
            sync()
            row["inductor_compile_s"] = time.perf_counter() - t
            if args.time_runs:
                row["inductor_ms"] = _median_ms(lambda: ind(xd), sync, args.time_runs)
            del ind, md
            torch._dynamo.reset()
    prec = {torch.float16} if args.precision == "fp16" else {torch.float32}
    opts = dict(inputs=[x], enabled_precisions=prec, min_block_size=1, cache_built_engines=True,
                reuse_cached_engines=True, engine_cache_dir=scratch_dir("ttc-cold-engines-", args.tmp))
    if args.no_engine_cache:  # the settings' defaults: no engine cache, no module cache
        opts.update(cache_built_engines=False, reuse_cached_engines=False)
    if args.optimization_level is not None:
        opts["optimization_level"] = args.optimization_level
    t = time.perf_counter()
    gm = torchtrt_c.compile(m, **opts)
    row["ttc_compile_cold_s"] = time.perf_counter() - t
    prof = gm._torchtrt_c_profile
    row["ttc_cold_profile"] = prof.as_dict()
    print(f"==== {spec} b{args.batch} {args.precision}: torchtrt_c cold {row['ttc_compile_cold_s']:.2f}s, "
          f"Inductor {row.get('inductor_compile_s', float('nan')):.2f}s", flush=True)
    print(prof, flush=True)
    if args.first_call:  # the call right after the compile (meets whatever it left running)
        with torch.inference_mode():
            t = time.perf_counter()
            gm(x.to(tdev))
            sync()
            row["ttc_first_call_s"] = time.perf_counter() - t
        print(f"first call {row['ttc_first_call_s']:.3f}s", flush=True)
    if args.time_runs:
        xd = x.to(tdev)
        g2 = gm.to(tdev) if tdev.type == "cuda" else gm
        with torch.inference_mode():
            row["ttc_ms"] = _median_ms(lambda: g2(xd), sync, args.time_runs)
        print(f"latency: torchtrt_c {row['ttc_ms']:.3f} ms, Inductor {row.get('inductor_ms', float('nan')):.3f} ms",
              flush=True)
    if args.check:
        with torch.inference_mode():
            ref, out = m(x), gm(x)
        ref = ref[0] if isinstance(ref, (tuple, list)) else ref
        out = out[0] if isinstance(out, (tuple, list)) else out
        err = ((out.float() - ref.float()).abs().max() / ref.float().abs().max().clamp_min(1e-6)).item()
        row["max_rel_err"] = err
        print(f"max rel err vs eager {err:.2e}", flush=True)
    if args.warm:
        t = time.perf_counter()
        gm = torchtrt_c.compile(m, **opts)
        row["ttc_compile_warm_s"] = time.perf_counter() - t
        row["ttc_warm_profile"] = gm._torchtrt_c_profile.as_dict()
        print(f"warm: {row['ttc_compile_warm_s']:.2f}s; {gm._torchtrt_c_profile.summary()}", flush=True)
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="hf_bert,resnet18")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--precision", default="fp32", choices=["fp32", "fp16"])
    ap.add_argument("--optimization-level", type=int, default=None)
    ap.add_argument("--cold-driver", action="store_true", help="also empty the OpenCL driver's kernel caches")
    ap.add_argument("--no-inductor", action="store_true")
    ap.add_argument("--warm", action="store_true")
    ap.add_argument("--no-engine-cache", action="store_true",
                    help="compile with the default settings (no engine/module cache) instead of the bench's cached ones")
    ap.add_argument("--first-call", action="store_true", help="also time the first call after the compile")
    ap.add_argument("--check", action="store_true", help="compare the compiled module's output with eager")
    ap.add_argument("--time-runs", type=int, default=0,
                    help="also time this many calls of each compiled module (median ms; 0: no)")
    ap.add_argument("--out", default=None, help="results JSON")
    ap.add_argument("--keep", action="store_true",
                    help="keep each model's cache directories (default: removed after it; ~0.5 GB for GPT-2)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--tmp", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        row = _child(args.child, args)
        with open(args.out, "w") as f:
            json.dump(row, f)
        return 0
    rows = []
    for spec in [s for s in args.models.split(",") if s]:
        tmp = scratch_dir("ttc-cold-")
        env = dict(os.environ)
        env["TORCHTRT_C_CACHE_DIR"] = os.path.join(tmp, "ttc")
        env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(tmp, "inductor")
        env["TRITON_CACHE_DIR"] = os.path.join(tmp, "triton")
        if args.cold_driver:
            env["POCL_CACHE_DIR"] = os.path.join(tmp, "pocl")
            env["CUDA_CACHE_PATH"] = os.path.join(tmp, "nvcache")
        out = os.path.join(tmp, "row.json")
        cmd = [sys.executable, os.path.abspath(__file__), "--child", spec, "--out", out, "--batch", str(args.batch),
               "--precision", args.precision, "--tmp", tmp]
        for flag in ("no_inductor", "warm", "check", "no_engine_cache", "first_call"):
            if getattr(args, flag):
                cmd.append("--" + flag.replace("_", "-"))
        if args.optimization_level is not None:
            cmd += ["--optimization-level", str(args.optimization_level)]
        if args.time_runs:
            cmd += ["--time-runs", str(args.time_runs)]
        t = time.perf_counter()
        rc = subprocess.call(cmd, env=env)
        if rc != 0 or not os.path.exists(out):
            rows.append({"model": spec, "error": f"child exited {rc}"})
            print(f"==== {spec}: child exited {rc}", flush=True)
            continue
        with open(out) as f:
            row = json.load(f)
        row["process_s"] = time.perf_counter() - t
        if not args.keep:  # the child has exited: its engine cache writes are on disk
            shutil.rmtree(tmp, ignore_errors=True)
        rows.append(row)
    print("\n| model | batch | prec | ttc cold s | inductor s | ttc/inductor | ttc warm s | ttc ms | inductor ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['model']} | | | {r['error']} | | | |")
            continue
        c, i = r["ttc_compile_cold_s"], r.get("inductor_compile_s")
        fmt = lambda v, f: "" if v is None else f.format(v)  # noqa: E731
        print(f"| {r['model']} | {r['batch']} | {r['precision']} | {c:.2f} | {fmt(i, '{:.2f}')} | "
              f"{fmt(None if i is None else c / i, '{:.2f}')} | {fmt(r.get('ttc_compile_warm_s'), '{:.2f}')} | "
              f"{fmt(r.get('ttc_ms'), '{:.3f}')} | {fmt(r.get('inductor_ms'), '{:.3f}')} |")
    # tuning and program counts (issue 15: TORCHTRT_C_TUNE=full vs the default fast shortlist)
    print("\n| model | GEMMs | shapes timed | candidates timed | from tuning cache | left to heuristic (cap) | "
          "tune s | programs compiled (tuning's included) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            continue
        p = r["ttc_cold_profile"]
        t = p["engine_totals"]
        print(f"| {r['model']} | {t['gemms']} | {t['tune_timed']} | {t['tune_candidates']} | {t['tune_cached']} | "
              f"{t.get('tune_capped', 0)} | {t['tune_s']:.2f} | {p['programs'].get('compiled', '')} |")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"command": " ".join(sys.argv), "env": {k: v for k, v in os.environ.items()
                                                            if k.startswith("TORCHTRT_C_")}, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
