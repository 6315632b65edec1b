"""Side-by-side benchmarks: torchtrt_c vs torch eager vs torch.compile (Inductor), one process.

    python bench/run.py --models resnet18,bert_base --batches 1,8 --precisions fp32
    python bench/run.py --kernels gemm,conv,elementwise      # kernel benchmarks
    python bench/run.py --partition                           # partitioner scale (1k..100k nodes)

Writes JSON + a Markdown table under --out (default bench/out/<device>-<date>/); bench/report.py
turns one or more JSON files into the Markdown table and the PNG chart of ratios.
Timing: median (and p10/p90) of --runs timed calls after --warmup calls. Compiled models are
timed end to end from tensors on the torch device of the comparison (CPU for a CPU OpenCL device,
CUDA for a GPU one); "resident" rows time the engines with inputs already in device buffers.
"""
from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import pathlib
import platform
import statistics
import sys
import tempfile
import time

import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

import torchtrt_c  # noqa: E402
from models import build  # noqa: E402  (the model zoo lives with the tests; full sizes here)

ALL_MODELS = ["resnet18", "resnet50", "mobilenet_v2", "vit_b16", "bert_base", "gpt2"]


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def timeit(fn, runs, warmup, sync):
    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    times.sort()
    q = lambda p: times[min(len(times) - 1, int(p * len(times)))]  # noqa: E731
    return {"median_ms": statistics.median(times) * 1e3, "p10_ms": q(0.1) * 1e3,
            "p90_ms": q(0.9) * 1e3, "runs": runs}


def adaptive_runs(fn, sync, budget_s, min_runs=5, max_runs=200):
    """Number of runs that fits the time budget for one configuration."""
    t0 = time.perf_counter()
    fn()
    sync()
    one = max(time.perf_counter() - t0, 1e-5)
    return int(max(min_runs, min(max_runs, budget_s / one)))


def opencl_device_info():
    devs = torchtrt_c.devices()
    idx = torchtrt_c.default_device()
    d = devs[idx] if isinstance(idx, int) else idx
    return d if isinstance(d, dict) else dict(d.__dict__) if hasattr(d, "__dict__") else {"name": str(d)}


def bench_model(name, batch, precision, args, tdev, sync):
    row = {"model": name, "batch": batch, "precision": precision, "torch_device": str(tdev)}
    model, make_input = build(name, "full")
    dtype = torch.float16 if precision == "fp16" else torch.float32
    x = make_input(batch)
    if x.is_floating_point():
        x = x.to(dtype)
    model = model.to(dtype)
    import copy
    model_dev = copy.deepcopy(model).to(tdev)  # Module.to is in place: keep a CPU copy to compile
    x_dev = x.to(tdev)
    first = lambda o: o[0] if isinstance(o, (tuple, list)) else o  # noqa: E731

    with torch.inference_mode():
        # torch eager on the matching torch device
        runs = adaptive_runs(lambda: model_dev(x_dev), sync, args.budget)
        row["eager"] = timeit(lambda: model_dev(x_dev), runs, args.warmup, sync)
        ref = first(model_dev(x_dev)).float().cpu()
        if tdev.type == "cuda":
            torch.cuda.reset_peak_memory_stats()
            model_dev(x_dev)
            sync()
            row["eager"]["peak_bytes"] = torch.cuda.max_memory_allocated()

    if not args.skip_inductor:
        try:
            t0 = time.perf_counter()
            ind = torch.compile(model_dev)
            with torch.inference_mode():
                ind(x_dev)
                sync()
                row["inductor_compile_s"] = time.perf_counter() - t0
                runs = adaptive_runs(lambda: ind(x_dev), sync, args.budget)
                row["inductor"] = timeit(lambda: ind(x_dev), runs, args.warmup, sync)
        except Exception as e:  # report, don't hide: the row says why Inductor has no number
            row["inductor_error"] = f"{type(e).__name__}: {e}"[:300]
        torch._dynamo.reset()

    # torchtrt_c: cold compile (empty engine cache), then warm (engines reused from the cache)
    cache = tempfile.mkdtemp(prefix="ttc-bench-cache-")
    prec = {torch.float16} if precision == "fp16" else {torch.float32}
    opts = dict(inputs=[x], enabled_precisions=prec, min_block_size=1, cache_built_engines=True,
                reuse_cached_engines=True, engine_cache_dir=cache,
                optimization_level=args.optimization_level)
    try:
        t0 = time.perf_counter()
        trt = torchtrt_c.compile(model, **opts)
        row["ttc_compile_cold_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        trt = torchtrt_c.compile(model, **opts)
        row["ttc_compile_warm_s"] = time.perf_counter() - t0
    except Exception as e:
        row["ttc_error"] = f"{type(e).__name__}: {e}"[:500]
        return row
    row["ttc_engines"] = sum(1 for n, _ in trt.named_children() if n.startswith("_run_on_acc"))
    row["ttc_torch_segments"] = sum(1 for n, _ in trt.named_children() if n.startswith("_run_on_gpu"))
    peak = 0
    for _, sub in trt.named_children():
        eng = getattr(sub, "engine_object", None)
        eng = eng() if callable(eng) else eng
        if eng is not None and hasattr(eng, "peak_memory"):
            peak += int(eng.peak_memory)
    row["ttc_peak_bytes"] = peak or None
    with torch.inference_mode():
        out = trt(x_dev)
        out = first(out).float().cpu()
        err = (out - ref).abs().max().item()
        row["ttc_max_abs_err"] = err
        row["ttc_max_rel_err"] = err / max(ref.abs().max().item(), 1e-12)
        runs = adaptive_runs(lambda: trt(x_dev), sync, args.budget)
        row["ttc_end_to_end"] = timeit(lambda: trt(x_dev), runs, args.warmup, sync)
        resident = getattr(torchtrt_c.runtime, "benchmark_resident", None)
        if resident is not None and row["ttc_engines"] == 1 and row["ttc_torch_segments"] == 0:
            try:
                row["ttc_resident"] = resident(trt, [x], runs=runs, warmup=args.warmup)
            except Exception as e:
                row["ttc_resident_error"] = f"{type(e).__name__}: {e}"[:300]
    e2e = row["ttc_end_to_end"]["median_ms"]
    row["ratio_ttc_over_eager"] = e2e / row["eager"]["median_ms"]
    if "inductor" in row:
        row["ratio_ttc_over_inductor"] = e2e / row["inductor"]["median_ms"]
    del trt
    gc.collect()
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(ALL_MODELS))
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--precisions", default="fp32")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--budget", type=float, default=3.0, help="seconds of timed runs per configuration")
    ap.add_argument("--skip-inductor", action="store_true")
    ap.add_argument("--optimization-level", type=int, default=3)
    ap.add_argument("--kernels", default="", help="comma list: gemm,conv,elementwise")
    ap.add_argument("--partition", action="store_true", help="partitioner scale benchmark")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)

    dev = opencl_device_info()
    is_gpu = "GPU" in str(dev.get("type", "")).upper()
    tdev = torch.device("cuda" if is_gpu and torch.cuda.is_available() else "cpu")
    sync = torch.cuda.synchronize if tdev.type == "cuda" else (lambda: None)
    meta = {
        "date": datetime.date.today().isoformat(),
        "opencl_device": dev,
        "torch_device": str(tdev),
        "torch_device_name": torch.cuda.get_device_name() if tdev.type == "cuda" else platform.processor() or platform.machine(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "torchtrt_c": torchtrt_c.__version__,
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "command": " ".join(sys.argv),
    }
    log("device:", dev, "| torch device:", tdev)
    results = {"meta": meta, "models": [], "kernels": {}, "partition": None}

    tag = ("gpu" if is_gpu else "cpu") + "-" + meta["date"]
    out = pathlib.Path(args.out or (ROOT / "bench" / "out" / tag))
    out.mkdir(parents=True, exist_ok=True)

    def save():  # after every row, so that a run cut short still leaves its results
        (out / "results.json").write_text(json.dumps(results, indent=1, default=str))

    if args.models:
        for name in [m for m in args.models.split(",") if m]:
            for prec in args.precisions.split(","):
                for b in [int(v) for v in args.batches.split(",")]:
                    log(f"== {name} batch {b} {prec}")
                    try:
                        row = bench_model(name, b, prec, args, tdev, sync)
                    except Exception as e:
                        row = {"model": name, "batch": b, "precision": prec, "error": f"{type(e).__name__}: {e}"[:500]}
                    log(json.dumps(row))
                    results["models"].append(row)
                    save()

    if args.kernels:
        import kernels as kb  # bench/kernels.py
        results["kernels"] = kb.run([k for k in args.kernels.split(",") if k], tdev, sync, args)
    if args.partition:
        import bench_partition as bp  # bench/bench_partition.py
        results["partition"] = bp.run() if hasattr(bp, "run") else None

    save()
    import report
    (out / "results.md").write_text(report.markdown([results]))
    try:
        report.chart([results], out / "ratios.png")
    except Exception as e:  # matplotlib may be missing on a remote machine; report.py redraws later
        log("chart skipped:", e)
    print(report.markdown([results]))
    log("wrote", out)


if __name__ == "__main__":
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    main()
