"""Side-by-side benchmarks: torchtrt_c vs torch eager vs torch.compile (Inductor), one process.

    python bench/run.py --models resnet18,bert_base --batches 1,8,32 --precisions fp32,fp16
    python bench/run.py --models hf_bert,hf_gpt2,hf_llama      # transformers' own models (hf_models.py)
    python bench/run.py --models tv_resnet50,timm_mobilevit_s  # torchvision/timm models (vision_models.py)
    python bench/run.py --models "" --kernels elementwise,gemm,conv   # kernel benchmarks
    python bench/run.py --models "" --partition                       # partitioner, 1k..100k nodes
    bench/cpu_run.sh / bench/gpu_run.sh PART                          # the recorded runs

Writes results.json (after every row, so a run cut short keeps what it measured), results.md
and ratios.png (when matplotlib is there) under --out (default bench/out/<cpu|gpu>-<date>/);
bench/report.py merges several results.json into one set of tables and a chart.

What each column measures (median, p10-p90 over timed runs after --warmup calls; each timed
configuration runs until --budget seconds are spent, between --min-runs and --max-runs calls):
- eager / inductor: the model on the torch device matching the OpenCL device (CPU for a CPU
  OpenCL device, CUDA for a GPU one; default torch settings, so cuDNN convolutions may use
  TF32), inputs already on that device, synchronised after each call.
- ttc end to end: the compiled module called with tensors on that same torch device. On NVIDIA
  the engines' PTX runs on torch's stream through the CUDA driver (docs/cuda.md); where
  it cannot, on a GPU whose driver shares memory with CUDA inputs and outputs are copied device
  to device; elsewhere through the host. The row's cuda_path says which.
- from host (GPU only, when there is no torch segment): eager moves the host input to CUDA and the
  output back; torchtrt_c is called with the host tensor (engines read and write host memory).
- ttc resident: runtime.benchmark_resident: each engine with its inputs already on the device:
  with CUDA tensors the path a call with them takes (CUDA launch, shared memory or host staging:
  the result's "paths"), with host tensors its kernel sequence on OpenCL buffers (launches + one
  clFinish); plus any torch fallback segment timed on its recorded inputs. On a CPU OpenCL device engines read host memory directly, so resident
  differs from end to end only by the Python/op overhead and output allocation.
- compile cold: empty engine and program cache (fresh directory), in a process that has already
  compiled a tiny model once (one-time import costs excluded); the OpenCL driver's own caches
  (PoCL's kcache, NVIDIA's ComputeCache) are left as they are; warm: the same compile again,
  engines reused from that cache.
- peak memory: ttc = sum of the engines' reported device memory (constants + intermediate
  arena); eager on CUDA = torch.cuda.max_memory_allocated over one call (weights included);
  eager on CPU = growth of the process's peak RSS during one call (weights excluded).
"""
from __future__ import annotations

import argparse
import copy
import datetime
import gc
import glob
import json
import os
import pathlib
import platform
import statistics
import sys
import time

import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import torchtrt_c  # noqa: E402
from zoo import build  # noqa: E402  (the model zoo lives with the tests; full sizes here)

from hf_models import HF_MODELS, build_hf  # noqa: E402  (transformers models, random weights)
from vision_models import VISION_MODELS, build_vision  # noqa: E402  (torchvision/timm, random weights)
from scratch_dirs import scratch_dir  # noqa: E402  (bench/: removed at exit)

ALL_MODELS = ["resnet18", "resnet50", "mobilenet_v2", "vit_b16", "bert_base", "gpt2"] + HF_MODELS + VISION_MODELS


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def stats(times_s, runs=None):
    ts = sorted(times_s)
    q = lambda p: ts[min(len(ts) - 1, int(p * len(ts)))]  # noqa: E731
    return {"median_ms": statistics.median(ts) * 1e3, "p10_ms": q(0.1) * 1e3, "p90_ms": q(0.9) * 1e3,
            "runs": runs or len(ts)}


def measure(fn, sync, args):
    """Warm-up calls, then timed calls until --budget seconds are spent (within min/max runs)."""
    for _ in range(args.warmup):
        fn()
    sync()
    times, start = [], time.perf_counter()
    while len(times) < args.max_runs and (len(times) < args.min_runs or time.perf_counter() - start < args.budget):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return stats(times)


def _vm_kib(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return None


def rss_growth_bytes(fn):
    """Growth of peak RSS over the current RSS during fn() (Linux; None elsewhere)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS
        base = _vm_kib("VmRSS")
        fn()
        return max(0, _vm_kib("VmHWM") - base) * 1024
    except (OSError, TypeError):
        return None


def opencl_device_info():
    devs = torchtrt_c.devices()
    idx = torchtrt_c.default_device()
    d = devs[idx] if isinstance(idx, int) else idx
    return d if isinstance(d, dict) else dict(d.__dict__) if hasattr(d, "__dict__") else {"name": str(d)}


def engine_modules(trt):
    from torchtrt_c.runtime import EngineModule
    return [m for _, m in trt.named_children() if isinstance(m, EngineModule)]


def compile_profile(gm):
    """The compile's per-phase profile (torchtrt_c/dynamo/_profile.py) as plain data."""
    prof = getattr(gm, "_torchtrt_c_profile", None)
    return prof.as_dict() if prof is not None else None


def engines_peak_bytes(trt):
    from torchtrt_c.runtime import ENGINES
    total = 0
    for sub in engine_modules(trt):
        eng, _ = ENGINES.get(sub.engine_meta.id, sub.engine)
        total += int(eng.peak_memory)
    return total or None


def check_placement(model, tdev, dtype):
    """Every parameter and buffer on tdev, floating ones in dtype: else the eager/Inductor side
    would not be measuring what the row says."""
    bad = [n for n, t in list(model.named_parameters()) + list(model.named_buffers())
           if t.device.type != tdev.type or (t.is_floating_point() and t.dtype != dtype)]
    if bad:
        raise RuntimeError(f"model copy not on {tdev}/{dtype}: {bad[:5]}")


_MASTERS = {}


def master_model(name, size):
    """The fp32 CPU model, built once per process (ResNet-50/GPT-2 init takes seconds)."""
    if (name, size) not in _MASTERS:
        builder = build_hf if name in HF_MODELS else build_vision if name in VISION_MODELS else build
        _MASTERS[(name, size)] = builder(name, size)
    return _MASTERS[(name, size)]


class RowBudget:
    """Optional parts of a row (Inductor, resident timing) are skipped once a row has run for
    --row-budget seconds, so that one slow configuration cannot eat a whole device lease."""

    def __init__(self, seconds):
        self.seconds, self.t0 = seconds, time.perf_counter()

    def left(self):
        return self.seconds <= 0 or time.perf_counter() - self.t0 < self.seconds


def warm_process(args, tdev, sync):
    """One throwaway compile per compiler on a tiny model, so that one-time process costs
    (imports, tracing machinery, OpenCL context) do not land in the first row's compile times."""
    m = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU()).eval()
    x = torch.randn(2, 16)
    with torch.inference_mode():
        if not args.skip_inductor:
            try:
                md = copy.deepcopy(m).to(tdev)
                torch.compile(md)(x.to(tdev))
                sync()
            except Exception as e:
                log("inductor warm-up failed:", e)
            torch._dynamo.reset()
        torchtrt_c.compile(m, inputs=[x], min_block_size=1, engine_cache_dir=scratch_dir("ttc-warm-"))(x)


def bench_model(name, batch, precision, args, tdev, sync):
    budget = RowBudget(args.row_budget)
    row = {"model": name, "batch": batch, "precision": precision, "torch_device": str(tdev)}
    if args.size != "full":
        row["size"] = args.size
    master, make_input = master_model(name, args.size)
    dtype = torch.float16 if precision == "fp16" else torch.float32
    torch.manual_seed(batch)
    x = make_input(batch)
    if x.is_floating_point():
        x = x.to(dtype)
    # deepcopy before every .to: Module.to converts in place. model: CPU copy that torchtrt_c
    # compiles; model_dev: the eager/Inductor copy on the torch device.
    model = copy.deepcopy(master).to(dtype=dtype)
    model_dev = copy.deepcopy(master).to(device=tdev, dtype=dtype)
    check_placement(model_dev, tdev, dtype)
    x_dev = x.to(tdev)
    first = lambda o: o[0] if isinstance(o, (tuple, list)) else o  # noqa: E731

    with torch.inference_mode():
        row["eager"] = measure(lambda: model_dev(x_dev), sync, args)
        ref = first(model_dev(x_dev)).float().cpu()
        if tdev.type == "cuda":
            sync()
            torch.cuda.reset_peak_memory_stats()
            model_dev(x_dev)
            sync()
            row["eager_peak_bytes"] = torch.cuda.max_memory_allocated()
        else:
            row["eager_peak_bytes"] = rss_growth_bytes(lambda: model_dev(x_dev))

    if args.skip_inductor:
        row["inductor_error"] = "skipped (--skip-inductor)"
    elif not budget.left():
        row["inductor_error"] = f"skipped: row budget {args.row_budget:.0f} s spent"
    else:
        ind = None
        try:
            t0 = time.perf_counter()
            ind = torch.compile(model_dev)
            with torch.inference_mode():
                ind(x_dev)
                sync()
                row["inductor_compile_s"] = time.perf_counter() - t0
                row["inductor"] = measure(lambda: ind(x_dev), sync, args)
        except Exception as e:  # report, don't hide: the row says why Inductor has no number
            row["inductor_error"] = f"{type(e).__name__}: {e}"[:300]
        del ind
        torch._dynamo.reset()

    # torchtrt_c: cold compile (empty engine + program cache), then warm (engines reused)
    cache = scratch_dir("ttc-bench-cache-")
    prec = {torch.float16} if precision == "fp16" else {torch.float32}
    opts = dict(inputs=[x], enabled_precisions=prec, min_block_size=1, cache_built_engines=True,
                reuse_cached_engines=True, engine_cache_dir=cache,
                optimization_level=args.optimization_level)
    try:
        t0 = time.perf_counter()
        trt = torchtrt_c.compile(model, **opts)
        row["ttc_compile_cold_s"] = time.perf_counter() - t0
        row["ttc_compile_cold_profile"] = compile_profile(trt)
        if not args.warm_batches or batch in args.warm_batches:
            t0 = time.perf_counter()
            trt = torchtrt_c.compile(model, **opts)
            row["ttc_compile_warm_s"] = time.perf_counter() - t0
            row["ttc_compile_warm_profile"] = compile_profile(trt)
    except Exception as e:
        row["ttc_error"] = f"{type(e).__name__}: {e}"[:500]
        return row
    # torch fallback segments hold the CPU copy's weights: run them on the torch device, as a
    # user passing tensors on that device would.
    trt = trt.to(tdev)
    kids = [n for n, _ in trt.named_children()]
    row["ttc_engines"] = sum(1 for n in kids if n.startswith("_run_on_acc"))
    row["ttc_torch_segments"] = sum(1 for n in kids if n.startswith("_run_on_gpu"))
    row["ttc_peak_bytes"] = engines_peak_bytes(trt)
    with torch.inference_mode():
        out = first(trt(x_dev)).float().cpu()
        err = (out - ref).abs().max().item()
        row["ttc_max_abs_err"] = err
        row["ttc_max_rel_err"] = err / max(ref.abs().max().item(), 1e-12)
        row["ttc_end_to_end"] = measure(lambda: trt(x_dev), sync, args)
        if tdev.type == "cuda":  # shared CUDA/OpenCL memory or host staging, and why
            row["cuda_path"] = torchtrt_c.runtime.cuda_path()
        if tdev.type == "cpu":
            row["ttc_rss_growth_bytes"] = rss_growth_bytes(lambda: trt(x_dev))
    e2e = row["ttc_end_to_end"]["median_ms"]
    if budget.left():
        runs = int(max(args.min_runs, min(args.max_runs, args.budget * 1e3 / max(e2e, 1e-3))))
        try:
            r = torchtrt_c.runtime.benchmark_resident(trt, [x_dev], runs=runs, warmup=args.warmup)
            r.pop("times_ms", None)
            row["ttc_resident"] = r
        except Exception as e:
            row["ttc_resident_error"] = f"{type(e).__name__}: {e}"[:300]
    else:
        row["ttc_resident_error"] = f"skipped: row budget {args.row_budget:.0f} s spent"
    with torch.inference_mode():
        if tdev.type != "cpu" and row["ttc_torch_segments"] == 0 and budget.left():
            # from host tensors: inputs start on the host and outputs end there, for both sides
            # (the compiled module then skips the CUDA hops; torch segments would need CUDA inputs)
            try:
                row["eager_from_host"] = measure(lambda: first(model_dev(x.to(tdev))).cpu(), sync, args)
                row["ttc_from_host"] = measure(lambda: first(trt(x)), sync, args)
                row["ratio_from_host"] = row["ttc_from_host"]["median_ms"] / row["eager_from_host"]["median_ms"]
            except Exception as e:
                row["from_host_error"] = f"{type(e).__name__}: {e}"[:300]
    for key, base in (("eager", "eager"), ("inductor", "inductor")):
        if base in row:
            row[f"ratio_ttc_over_{key}"] = e2e / row[base]["median_ms"]
            if "ttc_resident" in row:
                row[f"ratio_resident_over_{key}"] = row["ttc_resident"]["median_ms"] / row[base]["median_ms"]
    row["row_s"] = time.perf_counter() - budget.t0
    del trt
    torchtrt_c.runtime.ENGINES.clear()  # the runtime keeps engines by id; free this row's device memory
    gc.collect()
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(ALL_MODELS))
    ap.add_argument("--size", default="full", choices=["full", "tiny"],
                    help="zoo sizes: full (the real architectures) or tiny (for checking the harness)")
    ap.add_argument("--batches", default="1,8,32")
    ap.add_argument("--precisions", default="fp32")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--budget", type=float, default=2.0, help="seconds of timed calls per measured configuration")
    ap.add_argument("--min-runs", type=int, default=5)
    ap.add_argument("--max-runs", type=int, default=200)
    ap.add_argument("--row-budget", type=float, default=0,
                    help="seconds per row after which Inductor/resident parts are skipped (0: no limit)")
    ap.add_argument("--deadline", type=float, default=0,
                    help="seconds after start when no new row/kernel set is started (0: none); rows left "
                         "are recorded as skipped")
    ap.add_argument("--order", default="model", choices=["model", "batch"],
                    help="row order: model (model, precision, batch) or batch (batch, model, precision)")
    ap.add_argument("--warm-batches", default="",
                    help="batch sizes whose rows also time a warm compile (default: all)")
    ap.add_argument("--skip-done", default="",
                    help="comma list of results JSON files (globs welcome): rows measured there without "
                         "error are not run again (to finish a matrix that an earlier run cut short)")
    ap.add_argument("--skip-inductor", action="store_true")
    ap.add_argument("--optimization-level", type=int, default=3)
    ap.add_argument("--kernels", default="", help="comma list of elementwise,gemm,conv")
    ap.add_argument("--partition", action="store_true", help="partitioner scale benchmark (1k..100k nodes)")
    ap.add_argument("--tag", default="", help="label stored in the results (e.g. 'gpu part 1')")
    ap.add_argument("--out", default=None, help="directory for results.json/.md/.png (or a path ending in .json)")
    args = ap.parse_args(argv)
    args.warm_batches = [int(v) for v in args.warm_batches.split(",") if v]
    start = time.perf_counter()
    late = lambda: args.deadline > 0 and time.perf_counter() - start > args.deadline  # noqa: E731

    dev = opencl_device_info()
    is_gpu = "GPU" in str(dev.get("type", "")).upper()
    tdev = torch.device("cuda" if is_gpu and torch.cuda.is_available() else "cpu")
    sync = torch.cuda.synchronize if tdev.type == "cuda" else (lambda: None)
    now = datetime.datetime.now(datetime.timezone.utc)
    meta = {
        "date": now.date().isoformat(),
        "time_utc": now.strftime("%H:%M"),
        "tag": args.tag,
        "opencl_device": dev,
        "torch_device": str(tdev),
        "torch_device_name": torch.cuda.get_device_name() if tdev.type == "cuda" else platform.processor() or platform.machine(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "torchtrt_c": torchtrt_c.__version__,
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "command": " ".join(["bench/run.py"] + sys.argv[1:]),
        "settings": {k: getattr(args, k) for k in ("size", "order", "warm_batches", "warmup", "budget", "min_runs", "max_runs", "row_budget",
                                                   "optimization_level")},
    }
    log("device:", dev.get("name"), "| torch device:", tdev)
    results = {"meta": meta, "models": [], "kernels": {}, "partition": None}

    if args.out and args.out.endswith(".json"):
        json_path = pathlib.Path(args.out)
        out = json_path.parent
    else:
        out = pathlib.Path(args.out or (ROOT / "bench" / "out" / (("gpu" if is_gpu else "cpu") + "-" + meta["date"])))
        json_path = out / "results.json"
    out.mkdir(parents=True, exist_ok=True)

    def save():  # after every row, so that a run cut short still leaves its results
        results["meta"]["elapsed_s"] = round(time.perf_counter() - start, 1)
        json_path.write_text(json.dumps(results, indent=1, default=str))

    # quick parts first, so that a deadline only ever cuts model rows
    if args.kernels:
        import kernels as kb  # bench/kernels.py
        kb.run([k for k in args.kernels.split(",") if k], tdev, sync, args, late=late, save=save,
               out=results["kernels"])
        save()
    if args.partition:
        import bench_partition as bp  # bench/bench_partition.py
        results["partition"] = bp.run()
        save()

    models = [m for m in args.models.split(",") if m]
    if models:
        warm_process(args, tdev, sync)
    precisions = [p for p in args.precisions.split(",") if p]
    batches = [int(v) for v in args.batches.split(",") if v]
    if args.order == "batch":  # every model at the first batch size, then the next size...
        rows = [(n, p, b) for b in batches for n in models for p in precisions]
    else:
        rows = [(n, p, b) for n in models for p in precisions for b in batches]
    done = set()
    for pattern in [p for p in args.skip_done.split(",") if p]:
        for path in sorted(glob.glob(pattern)):
            for r in json.loads(pathlib.Path(path).read_text()).get("models") or []:
                if "error" not in r and "ttc_error" not in r:
                    done.add((r["model"], r["precision"], r["batch"]))
    if done:
        rows = [r for r in rows if r not in done]
        log(f"{len(done)} rows already measured in --skip-done files; {len(rows)} to run")
    for name, prec, b in rows:
        if late():
            row = {"model": name, "batch": b, "precision": prec,
                   "error": f"skipped: --deadline {args.deadline:.0f} s reached"}
        else:
            log(f"== {name} batch {b} {prec}  (t={time.perf_counter() - start:.0f}s)")
            try:
                row = bench_model(name, b, prec, args, tdev, sync)
            except Exception as e:
                row = {"model": name, "batch": b, "precision": prec, "error": f"{type(e).__name__}: {e}"[:500]}
            gc.collect()
            if tdev.type == "cuda":
                torch.cuda.empty_cache()
        log(json.dumps(row))
        results["models"].append(row)
        save()
    _MASTERS.clear()

    save()
    import report
    md = report.markdown([results])
    (out / (json_path.stem + ".md")).write_text(md)
    try:
        report.chart([results], out / (json_path.stem + "-ratios.png"))
    except ImportError as e:  # matplotlib may be missing on a remote machine; report.py redraws later
        log("chart skipped:", e)
    print(md)
    log(f"wrote {json_path} ({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
