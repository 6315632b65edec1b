"""Kernel benchmarks: one-op engines beside torch on the same device, in one run.

    python bench/run.py --models "" --kernels gemm,conv,elementwise

- gemm: square mm 256..4096 and the zoo's transformer shapes (BERT-base linear layers at batch
  1 and 32), fp32 and fp16 engines, GFLOP/s beside torch.mm / F.linear in the same precision.
- gemm_tiles: every SIMT (fp32) and tensor-core (fp16) GEMM candidate forced in turn on a few
  shapes (the data behind csrc/engine/tune.c's untuned choice).
- conv: ResNet-50's distinct convolution layers (--batches, --precisions), GFLOP/s beside torch's
  conv (cuDNN on CUDA); fp16 rows give the fraction of cuDNN and the family each layer ran.
- elementwise: a fused elementwise chain and a row reduction, GB/s beside a device-to-device
  copy measured in the same run (OpenCL clEnqueueCopyBuffer and torch clone).
Engine times use Engine.benchmark (inputs already in device buffers, launches + one clFinish
per run); torch times synchronise after every call.
"""
from __future__ import annotations

import pathlib
import statistics
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
from convtest import Const, build  # noqa: E402


def _time_torch(fn, sync, runs, warmup=3):
    for _ in range(warmup):
        fn()
    sync()
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        sync()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def _time_engine(engine, ins, outs, runs, warmup=3):
    """Median seconds per run of engine with its inputs resident in device buffers
    (Engine.benchmark: kernel launches + one clFinish per run, no host transfers)."""
    np_in = [i.contiguous().numpy() for i in ins]
    ts = engine.benchmark(np_in, runs=runs, warmup=warmup)
    return statistics.median(ts) / 1e3, "resident"


def _runs_for(flops_or_bytes, per_s):
    return int(max(5, min(100, 2e9 / max(flops_or_bytes, 1))))


GEMM_SQUARE = [(n, n, n) for n in (256, 512, 1024, 2048, 4096)]
# the zoo's transformer shapes (M, N, K): BERT-base at seq 128, batch 1 and 32
GEMM_TRANSFORMER = [(128, 768, 768), (128, 3072, 768), (128, 768, 3072),
                    (4096, 768, 768), (4096, 2304, 768), (4096, 3072, 768), (4096, 768, 3072)]


def _gemm_engine(m, n, k, prec, linear):
    """A one-GEMM engine and its torch twin on the host. linear: x @ W^T + b with W a
    weight constant (how the zoo's transformers reach the GEMM); else mm of two inputs.
    prec "tf32": an fp32 engine built with tf32_matmul."""
    dt = torch.float16 if prec == "fp16" else torch.float32
    if prec == "tf32":
        from torchtrt_c import _C
        g, _ = (build("aten.linear.default", [torch.randn(m, k), Const(torch.randn(n, k) / k ** 0.5),
                                              Const(torch.randn(n))], [torch.empty(m, n)])
                if linear else build("aten.mm.default", [torch.randn(m, k), torch.randn(k, n)], [torch.empty(m, n)]))
        eng = _C.Engine.build(g, name="gemm", cache_dir="", tf32_matmul=True)
        x, w, bias = torch.randn(m, k), torch.randn(n, k) / k ** 0.5, torch.randn(n)
        if linear:
            return eng, [x], (x, w, bias)
        b = torch.randn(k, n)
        return eng, [x, b], (x, b)
    if linear:
        x, w, bias = torch.randn(m, k), torch.randn(n, k) / k ** 0.5, torch.randn(n)
        ref = torch.nn.functional.linear(x, w, bias)
        _, eng = build("aten.linear.default", [x, Const(w), Const(bias)], [ref], precision=prec)
        return eng, [x], (x.to(dt), w.to(dt), bias.to(dt))
    a, b = torch.randn(m, k).to(dt), torch.randn(k, n).to(dt)
    _, eng = build("aten.mm.default", [a, b], [(a.float() @ b.float()).to(dt)], precision=prec)
    return eng, [a, b], (a, b)


def _gemm_row(tdev, sync, m, n, k, prec, linear):
    eng, ins, tt = _gemm_engine(m, n, k, prec, linear)
    flops = 2.0 * m * n * k
    runs = _runs_for(flops, 1e9)
    t_e, mode = _time_engine(eng, ins, None, runs)
    dev = [t.to(tdev) for t in tt]
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"   # torch's TF32 beside ours
    try:
        if linear:
            t_t = _time_torch(lambda: torch.nn.functional.linear(*dev), sync, runs)
        else:
            t_t = _time_torch(lambda: torch.mm(*dev), sync, runs)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev
    # of_cublas: the fraction of torch's (cuBLAS on CUDA) speed, 1.0 = as fast
    return {"op": "linear" if linear else "mm", "precision": prec, "M": m, "N": n, "K": k,
            "ttc_GFLOPs": flops / t_e / 1e9, "torch_GFLOPs": flops / t_t / 1e9,
            "ratio": t_t / t_e, "of_cublas": round(t_t / t_e, 3), "tile": list(eng.info()["tiles"].values()),
            "ttc_timing": mode}


def gemm(tdev, sync, args):
    """Square mm and the transformer shapes as linear layers, fp32 and fp16 engines (fp16:
    half inputs for mm; fp32 weights kept as declared for linear, as compiled models have),
    and with --precisions ...,tf32 fp32 engines built with tf32_matmul beside torch's TF32.
    of_cublas = torch time / engine time (the fraction of cuBLAS on CUDA).
    torch runs the same op in the engine's precision on tdev. The tile column is the
    engine's choice (untuned unless optimization_level >= 3 built it; see tune.c)."""
    rows = []
    precs = [p for p in getattr(args, "precisions", "fp32,fp16").split(",") if p] or ["fp32"]
    for prec in sorted(set(precs) | {"fp16"}, reverse=True):
        for (m, n, k) in GEMM_SQUARE:
            rows.append(_gemm_row(tdev, sync, m, n, k, prec, False))
            print(rows[-1], file=sys.stderr, flush=True)
        for (m, n, k) in GEMM_TRANSFORMER:
            rows.append(_gemm_row(tdev, sync, m, n, k, prec, True))
            print(rows[-1], file=sys.stderr, flush=True)
    return rows


def gemm_tiles(tdev, sync, args):
    """Every runnable GEMM candidate (TORCHTRT_C_GEMM_TILE) on a few shapes: the data behind
    the untuned heuristic in csrc/engine/tune.c."""
    import os

    rows = []
    shapes = [(1, 768, 768), (128, 768, 768), (128, 3072, 768), (128, 768, 3072), (1024, 1024, 1024),
              (4096, 3072, 768), (4096, 768, 3072)]
    # SIMT candidates for fp32 engines, tensor-core ones for fp16 (indices of codegen.c's table)
    for prec, tiles in (("fp32", range(3, 9)), ("fp16", range(9, 17))):
        for (m, n, k) in shapes:
            for tile in tiles:
                os.environ["TORCHTRT_C_GEMM_TILE"] = str(tile)
                try:
                    row = _gemm_row(tdev, sync, m, n, k, prec, True)
                except Exception as e:
                    row = {"precision": prec, "M": m, "N": n, "K": k, "tile": tile, "error": str(e)[:120]}
                finally:
                    del os.environ["TORCHTRT_C_GEMM_TILE"]
                rows.append(row)
                print(row, file=sys.stderr, flush=True)
    return rows


RESNET50_CONVS = [  # (Cin, Cout, k, stride, pad, H): every distinct convolution of ResNet-50 (v1.5)
    (3, 64, 7, 2, 3, 224),
    (64, 64, 1, 1, 0, 56), (64, 64, 3, 1, 1, 56), (64, 256, 1, 1, 0, 56), (256, 64, 1, 1, 0, 56),
    (256, 128, 1, 1, 0, 56), (128, 128, 3, 2, 1, 56), (128, 512, 1, 1, 0, 28), (256, 512, 1, 2, 0, 56),
    (512, 128, 1, 1, 0, 28), (128, 128, 3, 1, 1, 28),
    (512, 256, 1, 1, 0, 28), (256, 256, 3, 2, 1, 28), (256, 1024, 1, 1, 0, 14), (512, 1024, 1, 2, 0, 28),
    (1024, 256, 1, 1, 0, 14), (256, 256, 3, 1, 1, 14),
    (1024, 512, 1, 1, 0, 14), (512, 512, 3, 2, 1, 14), (512, 2048, 1, 1, 0, 7), (1024, 2048, 1, 2, 0, 14),
    (2048, 512, 1, 1, 0, 7), (512, 512, 3, 1, 1, 7),
]


def _conv_engine(x, w, s, p, prec, mma=None):
    """A one-convolution engine (fp16: half input and weights, as a .half() model has); mma:
    TORCHTRT_C_CONV_MMA for its build (None: the natural choice)."""
    import os

    dt = torch.float16 if prec == "fp16" else torch.float32
    ref = torch.nn.functional.conv2d(x, w, None, s, p).to(dt)
    old = os.environ.pop("TORCHTRT_C_CONV_MMA", None)
    if mma is not None:
        os.environ["TORCHTRT_C_CONV_MMA"] = mma
    try:
        _, eng = build("aten.convolution.default", [x.to(dt), Const(w.to(dt)), None, [s, s], [p, p], [1, 1], False,
                                                    [0, 0], 1], [ref], precision=prec)
    finally:
        os.environ.pop("TORCHTRT_C_CONV_MMA", None)
        if old is not None:
            os.environ["TORCHTRT_C_CONV_MMA"] = old
    src = eng.info()["source"]
    fam = ("mma_tf32" if "#define CONV_TF32 1" in src else "mma" if "#define CONV_TF32 0" in src else
           eng.info()["kernels"][0].split(":")[0].split(" ")[1])
    return eng, fam


def conv(tdev, sync, args):
    """ResNet-50's convolutions beside torch's conv on the same device, at the batches of
    --batches (default 1 and 32) and in the engine precisions of --precisions. fp32: on CUDA,
    cuDNN runs with TF32 allowed (its default for convolution) and without. fp16: half input
    and weights on both sides; frac_cudnn is torch's time over the engine's (1.0: as fast as
    cuDNN); family is what the engine ran (mma: the tensor-core convolution, gemm: 1x1 stride-1
    layers as a tensor-core GEMM, conv2d: the CUDA-core kernels); alt_us is the other choice
    (tensor-core convolution forced for 1x1 stride-1 layers, switched off for the others)."""
    rows = []
    cudnn = torch.backends.cudnn
    tf32_default = cudnn.allow_tf32
    batches = [int(b) for b in str(getattr(args, "batches", "1,32") or "1,32").split(",") if b]
    precs = [p for p in str(getattr(args, "precisions", "fp32") or "fp32").split(",") if p in ("fp32", "fp16")]
    for prec in precs or ["fp32"]:
        for batch in batches:
            for (cin, cout, k, s, p, h) in RESNET50_CONVS:
                x = torch.randn(batch, cin, h, h)
                w = torch.randn(cout, cin, k, k) * 0.05
                eng, fam = _conv_engine(x, w, s, p, prec)
                ho = (h + 2 * p - k) // s + 1
                flops = 2.0 * batch * cout * ho * ho * cin * k * k
                runs = _runs_for(flops, 1e9)
                dt = torch.float16 if prec == "fp16" else torch.float32
                t_e, mode = _time_engine(eng, [x.to(dt)], None, runs)
                del eng
                xd, wd = x.to(dt).to(tdev), w.to(dt).to(tdev)
                row = {"precision": prec, "batch": batch, "layer": f"{cin}->{cout} k{k} s{s} {h}x{h}", "family": fam,
                       "ttc_us": t_e * 1e6, "ttc_GFLOPs": flops / t_e / 1e9}
                if prec == "fp16":
                    alt, afam = _conv_engine(x, w, s, p, prec, "1" if fam == "gemm" else "0")
                    row["alt_family"], row["alt_us"] = afam, _time_engine(alt, [x.to(dt)], None, runs)[0] * 1e6
                    del alt
                    t_t = _time_torch(lambda: torch.nn.functional.conv2d(xd, wd, None, s, p), sync, runs)
                    row["torch_us"], row["torch_GFLOPs"], row["frac_cudnn"] = t_t * 1e6, flops / t_t / 1e9, t_t / t_e
                for tf32 in (() if prec == "fp16" else (True, False) if tdev.type == "cuda" else (tf32_default,)):
                    cudnn.allow_tf32 = tf32
                    t_t = _time_torch(lambda: torch.nn.functional.conv2d(xd, wd, None, s, p), sync, runs)
                    sfx = ("_tf32" if tf32 else "_fp32") if tdev.type == "cuda" else ""
                    row[f"torch{sfx}_us"] = t_t * 1e6
                    row[f"torch{sfx}_GFLOPs"] = flops / t_t / 1e9
                    row[f"ratio{sfx}"] = t_t / t_e
                cudnn.allow_tf32 = tf32_default
                row["ttc_timing"] = mode
                rows.append(row)
                print(rows[-1], file=sys.stderr, flush=True)
    return rows


def _ew_graph(n, dtype):
    """relu(x * 2 + 1) over n elements: one fused kernel that reads x once and writes once."""
    from torchtrt_c import _C

    g = _C.Graph()
    t = ("tensor", dtype, [n])
    xi = g.add_input("x", t)
    a = g.add_node("aten.mul.Tensor", [xi, g.add_constant(2.0)], [t])[0]
    b = g.add_node("aten.add.Tensor", [a, g.add_constant(1.0), g.add_constant(1)], [t])[0]
    c = g.add_node("aten.relu.default", [b], [t])[0]
    g.set_outputs([c])
    return g


def elementwise(tdev, sync, args):
    """Fused elementwise chain and row reduction in GB/s (bytes read + written), beside a
    device-to-device copy of the same bytes on the OpenCL device (clEnqueueCopyBuffer) and
    on the torch device (Tensor.clone), all measured in this run."""
    from torchtrt_c import _C

    rows = []
    gpu = tdev.type == "cuda"
    sizes = (1 << 20, 1 << 24, 1 << 26) if gpu else (1 << 20, 1 << 23)
    runs = 50 if gpu else 10

    def copy_gbs(nbytes):  # both sides of a copy of nbytes: read + write
        cl = statistics.median(_C.Engine.benchmark_copy(nbytes, runs=runs, warmup=3)) / 1e3
        src = torch.empty(nbytes // 4, device=tdev)
        tt = _time_torch(lambda: src.clone(), sync, runs)
        return 2 * nbytes / cl / 1e9, 2 * nbytes / tt / 1e9

    for n in sizes:
        x = torch.randn(n)
        eng = _C.Engine.build(_ew_graph(n, "float32"), name="fused_ew", cache_dir="")
        out = torch.empty(n)
        eng.execute([x.numpy()], [out.numpy()])
        err = (out - torch.relu(x * 2 + 1)).abs().max().item()
        t_e, mode = _time_engine(eng, [x], [out], runs)
        xd = x.to(tdev)
        t_torch = _time_torch(lambda: torch.relu(xd * 2 + 1), sync, runs)
        cl_copy, torch_copy = copy_gbs(4 * n)
        nbytes = 2 * 4 * n
        rows.append({"kernel": "relu(x*2+1) fused", "elements": n, "MB_moved": nbytes / 1e6,
                     "ttc_GBs": nbytes / t_e / 1e9, "opencl_copy_GBs": cl_copy,
                     "ttc_vs_copy": (nbytes / t_e / 1e9) / cl_copy, "torch_eager_GBs": nbytes / t_torch / 1e9,
                     "torch_copy_GBs": torch_copy, "max_abs_err": err, "ttc_timing": mode})
        print(rows[-1], file=sys.stderr, flush=True)
        # row reduction: sum over the last dim of (n/1024, 1024): reads n, writes n/1024
        xr = x.view(n // 1024, 1024)
        ref = xr.sum(-1)
        _, eng = build("aten.sum.dim_IntList", [xr, [-1], False, None], [ref])
        got = torch.empty_like(ref)
        eng.execute([xr.numpy()], [got.numpy()])
        err = (got - ref).abs().max().item()
        t_e, mode = _time_engine(eng, [xr], [ref], runs)
        xrd = xr.to(tdev)
        t_torch = _time_torch(lambda: xrd.sum(-1), sync, runs)
        nbytes = 4 * n + 4 * (n // 1024)
        rows.append({"kernel": "sum(dim=-1), rows of 1024", "elements": n, "MB_moved": nbytes / 1e6,
                     "ttc_GBs": nbytes / t_e / 1e9, "opencl_copy_GBs": cl_copy,
                     "ttc_vs_copy": (nbytes / t_e / 1e9) / cl_copy, "torch_eager_GBs": nbytes / t_torch / 1e9,
                     "torch_copy_GBs": torch_copy, "max_abs_err": err, "ttc_timing": mode})
        print(rows[-1], file=sys.stderr, flush=True)
    return rows


KINDS = {"elementwise": elementwise, "gemm": gemm, "conv": conv, "gemm_tiles": gemm_tiles}


def run(kinds, tdev, sync, args, late=None, save=None, out=None):
    """Runs the named kernel sets into out (dict kind -> rows), calling save() after each;
    a set not started before late() turns true is recorded as skipped."""
    out = {} if out is None else out
    for k in kinds:
        if k not in KINDS:
            raise ValueError(f"unknown kernel set {k!r}; known: {', '.join(KINDS)}")
        if late is not None and late():
            out[k] = [{"skipped": "deadline reached"}]
        else:
            try:
                out[k] = KINDS[k](tdev, sync, args)
            except Exception as e:  # one failing set must not lose the others
                out[k] = [{"error": f"{type(e).__name__}: {e}"[:300]}]
        if save is not None:
            save()
    return out
