"""Where an engine's time goes: each kernel's device time (OpenCL profiling events), by kernel
family and the slowest kernels, beside the resident total and torch eager on the same device.

    python bench/kernel_profile.py --models bert_base --batch 1 --precision fp32 [--top 15] [--json F]
    (zoo models, hf_* from hf_models.py, tv_*/timm_* from vision_models.py)

Timing: runtime.profile_engines (mean over --runs after --warmup, launch gaps excluded) and
runtime.benchmark_resident (wall clock: launches + one clFinish). Speed is measured here, never
asserted in tests.
"""
from __future__ import annotations

import argparse
import collections
import copy
import json
import pathlib
import statistics
import sys
import time

import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import torchtrt_c  # noqa: E402
from zoo import build  # noqa: E402
from hf_models import HF_MODELS, build_hf  # noqa: E402
from vision_models import VISION_MODELS, build_vision  # noqa: E402
from run import opencl_device_info  # noqa: E402
from torchtrt_c.runtime import benchmark_resident, profile_engines  # noqa: E402


def eager_ms(model, x, runs=30):
    cuda = x.is_cuda
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    with torch.inference_mode():
        for _ in range(3):
            model(x)
        sync()
        ts = []
        for _ in range(runs):
            t0 = time.perf_counter()
            model(x)
            sync()
            ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def cuda_path_profile(trt, x, runs):
    """Per kernel name, device ms per call of the compiled module called with CUDA tensors (the
    engines' PTX launched through the CUDA driver), from torch.profiler's CUDA activity."""
    from torch.profiler import ProfilerActivity, profile
    xc = x.to("cuda")
    with torch.inference_mode():
        for _ in range(3):
            trt(xc)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(runs):
                trt(xc)
            torch.cuda.synchronize()
    out = collections.defaultdict(float)
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA:
            out[ev.name] += ev.device_time / 1e3 / runs   # us -> ms, per call
    return dict(out)


def profile_model(name, batch, precision, args):
    builder = build_hf if name in HF_MODELS else build_vision if name in VISION_MODELS else build
    master, make_input = builder(name, args.size)
    dtype = torch.float16 if precision == "fp16" else torch.float32
    torch.manual_seed(batch)
    x = make_input(batch)
    if x.is_floating_point():
        x = x.to(dtype)
    model = copy.deepcopy(master).to(dtype=dtype)
    prec = {torch.float16} if precision == "fp16" else {torch.float32}
    t0 = time.perf_counter()
    trt = torchtrt_c.compile(model, inputs=[x], enabled_precisions=prec, min_block_size=1,
                             optimization_level=args.optimization_level)
    compile_s = time.perf_counter() - t0
    dev = opencl_device_info()
    tdev = torch.device("cuda" if "GPU" in str(dev.get("type", "")).upper() and torch.cuda.is_available() else "cpu")
    eager = eager_ms(copy.deepcopy(master).to(device=tdev, dtype=dtype), x.to(tdev))
    res = benchmark_resident(trt, [x], runs=args.runs, warmup=args.warmup)
    rows = profile_engines(trt, [x], runs=args.runs, warmup=args.warmup)
    total = sum(r["ms"] for r in rows)
    by_kind = collections.defaultdict(lambda: [0.0, 0])
    for r in rows:
        by_kind[r["kind"]][0] += r["ms"]
        by_kind[r["kind"]][1] += 1
    print(f"\n== {name} batch {batch} {precision}: compile {compile_s:.1f} s; resident {res['median_ms']:.3f} ms "
          f"(kernels {total:.3f} ms device time, {len(rows)} kernels); eager on {tdev} {eager:.3f} ms")
    print(f"{'family':<14}{'kernels':>8}{'ms':>10}{'share':>8}")
    for kind, (ms, n) in sorted(by_kind.items(), key=lambda kv: -kv[1][0]):
        print(f"{kind:<14}{n:>8}{ms:>10.3f}{100 * ms / max(total, 1e-12):>7.1f}%")
    print(f"slowest {args.top}:")
    for r in rows[:args.top]:
        print(f"  {r['ms'] * 1e3:9.1f} us  {r['kernel'][:110]}")
    cuda_rows = cuda_path_profile(trt, x, args.runs) if args.cuda_path and tdev.type == "cuda" else None
    if cuda_rows is not None:
        e2e = eager_ms(trt, x.to(tdev), runs=max(args.runs, 30))
        ctot = sum(cuda_rows.values())
        print(f"CUDA launch path (CUDA tensors in/out): end to end {e2e:.3f} ms, kernels {ctot:.3f} ms device time "
              f"(torch.profiler), {len(cuda_rows)} distinct kernel names; OpenCL events sum {total:.3f} ms")
        ocl = collections.defaultdict(float)
        for r in rows:
            ocl[r["kernel"].split()[0].split("(")[0]] += r["ms"]
        names = sorted(set(cuda_rows) | set(ocl), key=lambda k: -abs(cuda_rows.get(k, 0) - ocl.get(k, 0)))
        print(f"  {'kernel':<24}{'OpenCL us':>11}{'CUDA us':>11}")
        for k in names[:args.top]:
            print(f"  {k[:24]:<24}{ocl.get(k, 0) * 1e3:>11.1f}{cuda_rows.get(k, 0) * 1e3:>11.1f}")
    return {"model": name, "batch": batch, "precision": precision, "compile_s": compile_s,
            "resident_ms": res["median_ms"], "kernel_ms": total, "eager_ms": eager, "torch_device": str(tdev),
            "device": dev.get("name"),
            "by_kind": {k: v[0] for k, v in by_kind.items()}, "kernels": rows}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="bert_base")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--precision", default="fp32", choices=["fp32", "fp16"])
    ap.add_argument("--size", default="full", choices=["full", "tiny"])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--optimization-level", type=int, default=3)
    ap.add_argument("--cuda-path", action="store_true",
                    help="also time each kernel in the CUDA launch path (CUDA tensors; torch.profiler)")
    ap.add_argument("--json", default=None, help="also write the per-kernel rows here")
    args = ap.parse_args(argv)
    out = []
    for name in [m for m in args.models.split(",") if m]:
        out.append(profile_model(name, args.batch, args.precision, args))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
