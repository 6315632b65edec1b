"""Whole models on the CPU device, side by side in one process, round robin: torch eager and
one torchtrt_c module run under each of several environment settings that the engines read on
every call (TORCHTRT_C_NATIVE_CONV: oneDNN or im2col + OpenBLAS convolutions) or when built
(TORCHTRT_C_NATIVE_EPI: epilogues inside the native call or as OpenCL kernels). The model's one
engine runs through Engine.execute on numpy arrays (no Python module overhead). On a shared
machine read the ratios (each round runs every variant back to back), not the absolutes.

    python bench/cpu_ab.py --models resnet18,hf_bert --batch 1 --rounds 7 [--runs 5] [--inductor]

--inductor adds torch.compile (Inductor, default options, compiled under inference_mode as
bench/run.py does) to the round robin.
"""
import argparse
import copy
import os
import statistics
import sys
import time

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests"), os.path.join(ROOT, "bench")]

import torchtrt_c  # noqa: E402
import torchtrt_c._C as C  # noqa: E402

# name: (environment while compiling, environment while running). TORCHTRT_C_NATIVE_EPI is
# read when an engine is built (one module per distinct build environment),
# TORCHTRT_C_NATIVE_CONV on every call. A third element names lowering passes turned off (a second
# compile of the model).
VARIANTS = {
    # im2col + BLAS convolutions (depthwise ones OpenCL kernels), OpenCL epilogues
    "session4": ({"TORCHTRT_C_NATIVE_EPI": "0", "TORCHTRT_C_NATIVE_CONV": "blas"}, {"TORCHTRT_C_NATIVE_CONV": "blas"}),
    "onednn": ({"TORCHTRT_C_NATIVE_EPI": "0"}, {"TORCHTRT_C_NATIVE_CONV": "dnnl"}),     # + oneDNN convolutions
    "new": ({}, {"TORCHTRT_C_NATIVE_CONV": "dnnl"}),                                    # + epilogues in the native call
    "new-blas": ({}, {"TORCHTRT_C_NATIVE_CONV": "blas"}),
    # depthwise convolutions as OpenCL kernels (decided at build), the others through oneDNN
    "dw-opencl": ({"TORCHTRT_C_NATIVE_CONV": "blas"}, {"TORCHTRT_C_NATIVE_CONV": "dnnl"}),
    # 3x3 stride-1 convolutions through oneDNN's direct kernels only, no Winograd (the end of session 7)
    "direct": ({"TORCHTRT_C_CONV_WINOGRAD": "0"}, {"TORCHTRT_C_NATIVE_CONV": "dnnl"}),
    # ... and oneDNN's Winograd kernel for them where it has one (the default again, like "new")
    "wino": ({"TORCHTRT_C_CONV_WINOGRAD": "1"}, {"TORCHTRT_C_NATIVE_CONV": "dnnl"}),
    # both of the above: the convolutions' kernels and post-ops as at the end of session 7
    "s7conv": ({"TORCHTRT_C_CONV_WINOGRAD": "0", "TORCHTRT_C_NATIVE_POST_HSWISH": "0"},
               {"TORCHTRT_C_NATIVE_CONV": "dnnl"}),
    # hardswish in C after the oneDNN convolution (bias still a post-op; the end of session 7)
    "hswish-c": ({"TORCHTRT_C_NATIVE_POST_HSWISH": "0"}, {"TORCHTRT_C_NATIVE_CONV": "dnnl"}),
    # bias + activation in C (or an OpenCL kernel) after the oneDNN convolution, not as its post-ops
    "nopost": ({"TORCHTRT_C_NATIVE_POST": "0"}, {"TORCHTRT_C_NATIVE_CONV": "dnnl"}),
    # the end of session 5: no post-ops, no native elementwise ops, pools, norms, attention or
    # math epilogue steps (cpucnn's and cpunlp's session 6 knobs all off)
    "s5": ({"TORCHTRT_C_NATIVE_POST": "0", "TORCHTRT_C_NATIVE_EW": "0", "TORCHTRT_C_NATIVE_POOL": "0",
            "TORCHTRT_C_NATIVE_EPI_MATH": "0", "TORCHTRT_C_NATIVE_ATTN": "0", "TORCHTRT_C_NATIVE_NORM": "0",
            "TORCHTRT_C_NATIVE_ELEMENTWISE": "0"}, {"TORCHTRT_C_NATIVE_CONV": "dnnl"}),
    # elementwise ops and pools (squeeze-excite's scale and average) as OpenCL kernels
    "se-opencl": ({"TORCHTRT_C_NATIVE_EW": "0", "TORCHTRT_C_NATIVE_POOL": "0"}, {"TORCHTRT_C_NATIVE_CONV": "dnnl"}),
    # max/average pooling as OpenCL kernels (decided at build)
    "pool-opencl": ({"TORCHTRT_C_NATIVE_POOL": "0"}, {"TORCHTRT_C_NATIVE_CONV": "dnnl"}),
    # exp/erf/tanh/GELU epilogue steps as OpenCL kernels after the native call (the end of session 5)
    "math-opencl": ({"TORCHTRT_C_NATIVE_EPI_MATH": "0"}, {"TORCHTRT_C_NATIVE_CONV": "dnnl"}),
    # attention as the OpenCL kernel (decided at build)
    "attn-opencl": ({"TORCHTRT_C_NATIVE_ATTN": "0"}, {"TORCHTRT_C_NATIVE_CONV": "dnnl"}),
    # layer norm as the OpenCL kernel (decided at build)
    "norm-opencl": ({"TORCHTRT_C_NATIVE_NORM": "0"}, {"TORCHTRT_C_NATIVE_CONV": "dnnl"}),
    # every activation NCHW: oneDNN reorders around each convolution (decided at build; the end
    # of session 6)
    "nchw": ({"TORCHTRT_C_NATIVE_LAYOUT": "0"}, {"TORCHTRT_C_NATIVE_CONV": "dnnl"}),
    # elementwise ops between native calls as OpenCL kernels (decided at build)
    "elem-opencl": ({"TORCHTRT_C_NATIVE_ELEMENTWISE": "0"}, {"TORCHTRT_C_NATIVE_CONV": "dnnl"}),
    # native GEMMs: OpenBLAS sgemm for all (the end of session 6), oneDNN's matmul for all
    # (decided at build; "new" is the default: oneDNN where the weights are constant)
    "gemm-blas": ({"TORCHTRT_C_NATIVE_GEMM": "blas"}, {"TORCHTRT_C_NATIVE_CONV": "dnnl"}),
    "gemm-dnnl": ({"TORCHTRT_C_NATIVE_GEMM": "dnnl"}, {"TORCHTRT_C_NATIVE_CONV": "dnnl"}),
    # attention's Q K^T and P V through OpenBLAS per head (before session 8), not one oneDNN
    # batched matmul per chunk of heads (decided at build)
    "attn-blas": ({"TORCHTRT_C_NATIVE_ATTN_GEMM": "blas"}, {"TORCHTRT_C_NATIVE_CONV": "dnnl"}),
    # a native GEMM's bias + activation (GELU, SiLU, ...) in C after oneDNN's matmul (before session 9),
    # not as the matmul's bias and post-ops (decided at build)
    "gemm-nopost": ({"TORCHTRT_C_NATIVE_GEMM_POST": "0"}, {"TORCHTRT_C_NATIVE_CONV": "dnnl"}),
    # the C steps of native calls on oneDNN's OpenMP team, not the engine's own thread pool
    # (read on each call)
    "omp-pool": ({}, {"TORCHTRT_C_NATIVE_CONV": "dnnl", "TORCHTRT_C_STEP_POOL": "omp"}),
    # the C steps of native calls (norms, epilogues, softmax, pools) on one thread (decided at build)
    "steps1": ({"TORCHTRT_C_STEP_THREADS": "1"}, {"TORCHTRT_C_NATIVE_CONV": "dnnl"}),
    # RMS norms left as pow/mean/add/rsqrt/mul (lowering pass fuse_rms_norm off: a second compile)
    "rms-unfused": ({}, {"TORCHTRT_C_NATIVE_CONV": "dnnl"}, ("fuse_rms_norm",)),
    # GPT-2's tanh GELU left as its eight ops (lowering pass fuse_gelu_tanh off: a second compile)
    "gelu-unfused": ({}, {"TORCHTRT_C_NATIVE_CONV": "dnnl"}, ("fuse_gelu_tanh",)),
    # both: the C steps as before this session's cpusteps work
    "before-steps": ({"TORCHTRT_C_STEP_THREADS": "1"}, {"TORCHTRT_C_NATIVE_CONV": "dnnl"}, ("fuse_rms_norm",)),
}


def compile_without(model, ins, disabled):
    """torchtrt_c.compile with the named lowering passes off (the compiler's lower() wrapped)."""
    from torchtrt_c.dynamo import _compiler
    orig = _compiler.lower

    def lower(imp, settings, progress):
        progress.phase("lowering")
        progress.profile.add_passes(imp.graph.lower(disabled=list(disabled)))
    _compiler.lower = lower
    try:
        return torchtrt_c.compile(copy.deepcopy(model), inputs=list(ins), min_block_size=1)
    finally:
        _compiler.lower = orig


class env:
    def __init__(self, d):
        self.d = d

    def __enter__(self):
        self.saved = {k: os.environ.get(k) for k in self.d}
        os.environ.update(self.d)

    def __exit__(self, *a):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def build(name, batch):
    if name.startswith("hf_"):
        from hf_models import build_hf
        m, make = build_hf(name, "full")
    elif name.startswith(("tv_", "timm_")):
        from vision_models import build_vision
        m, make = build_vision(name, "full")
    else:
        from zoo import build as zb
        m, make = zb(name, "full")
    torch.manual_seed(batch)
    return m.eval(), make(batch)


def timed(f, runs):
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="resnet18,hf_bert")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--runs", type=int, default=3, help="calls per variant per round (median taken)")
    ap.add_argument("--variants", default="session4,onednn,new")
    ap.add_argument("--inductor", action="store_true", help="also torch.compile (Inductor) in the round robin")
    a = ap.parse_args()
    names = [v for v in a.variants.split(",") if v]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; native {C.native_cpu()}; "
          f"load {' '.join(open('/proc/loadavg').read().split()[:3])}")
    for name in a.models.split(","):
        model, x = build(name, a.batch)
        ins = x if isinstance(x, (tuple, list)) else (x,)
        with torch.inference_mode():
            trt = torchtrt_c.compile(copy.deepcopy(model), inputs=list(ins), min_block_size=1)
            ems = [m for m in trt.modules() if hasattr(m, "engine_meta")]
            if len(ems) != 1 or any(d.sym for _, _, ds in ems[0].engine_meta.outputs for d in ds):
                print(f"{name}: {len(ems)} engines (or dynamic outputs); this tool needs exactly one static engine")
                continue
            blobs = {(): bytes(ems[0].engine.numpy())}
            for v in names:
                dis = tuple(VARIANTS[v][2]) if len(VARIANTS[v]) > 2 else ()
                if dis not in blobs:
                    other = [m for m in compile_without(model, ins, dis).modules() if hasattr(m, "engine_meta")]
                    blobs[dis] = bytes(other[0].engine.numpy())
            meta = ems[0].engine_meta
            xs = [t.contiguous().numpy() for t in ins]
            outs = [np.empty([d.add for d in ds], dtype=getattr(np, dt)) for _, dt, ds in meta.outputs]
            # one engine per distinct build environment (deserialising re-runs the code generator)
            engines = {}
            def key_of(v):
                return (tuple(sorted(VARIANTS[v][0].items())), tuple(VARIANTS[v][2]) if len(VARIANTS[v]) > 2 else ())
            for v in names:
                key = key_of(v)
                if key not in engines:
                    with env(VARIANTS[v][0]):
                        engines[key] = C.Engine.deserialize(blobs[key[1]], cache_dir="")
                    ks = engines[key].info()["kernels"]
                    print(f"  build env {dict(key[0])}{' passes off ' + ','.join(key[1]) if key[1] else ''}: "
                          f"{len(ks)} kernels, {sum('(native)' in k for k in ks)} native, "
                          f"{sum('+cl-epilogue' in k for k in ks)} with an OpenCL epilogue, "
                          f"{sum('+nhwc-out' in k for k in ks)} writing NHWC")
            fns = {"eager": (lambda: model(*ins), {})}
            if a.inductor:
                ind = torch.compile(copy.deepcopy(model))
                ind(*ins)
                fns["inductor"] = (lambda: ind(*ins), {})
            for v in names:
                e = engines[key_of(v)]
                fns[v] = ((lambda e=e: e.execute(xs, outs)), VARIANTS[v][1])
            for f, e in fns.values():
                with env(e):
                    f()
            res = {k: [] for k in fns}
            for _ in range(a.rounds):
                for k, (f, e) in fns.items():
                    with env(e):
                        res[k].append(timed(f, a.runs))
        md = {k: statistics.median(v) for k, v in res.items()}
        ratios = "  ".join(f"{k}/eager {md[k] / md['eager']:.2f}" for k in names)
        if "inductor" in md:
            ratios += "  " + "  ".join(f"{k}/inductor {md[k] / md['inductor']:.2f}" for k in names)
        best = {k: min(v) for k, v in res.items()}   # the quietest round of each: on a loaded machine
        pair = "".join(f"  {v}/{names[0]} {md[v] / md[names[0]]:.2f} (best rounds {best[v] / best[names[0]]:.2f})"
                       for v in names[1:])
        print(f"{name} batch {a.batch}: " + "  ".join(f"{k} {v:.1f} ms" for k, v in md.items()) + f"  | {ratios}{pair}"
              f"  (load {' '.join(open('/proc/loadavg').read().split()[:3])})", flush=True)


if __name__ == "__main__":
    main()
