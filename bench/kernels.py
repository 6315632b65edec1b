"""Kernel benchmarks: one-op engines beside torch on the same device, in one run.

    python bench/run.py --models "" --kernels gemm,conv,elementwise

- gemm: square sizes 256..4096 and the zoo's transformer shapes, GFLOP/s beside torch.mm.
- conv: ResNet-50's distinct convolution layers (batch 1 and 8), GFLOP/s beside torch's conv.
- elementwise: a fused elementwise chain and a row reduction, GB/s beside a device copy.
Engine times use Engine.benchmark (inputs already in device buffers, one sync per run) when
the binding has it; otherwise they include the host round trip, and the row says so.
"""
from __future__ import annotations

import pathlib
import statistics
import sys
import time

import numpy as np
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
    np_in = [i.contiguous().numpy() for i in ins]
    np_out = [np.empty(tuple(o.shape), dtype=o.numpy().dtype) for o in outs]
    if hasattr(engine, "benchmark"):
        ts = engine.benchmark(np_in, np_out, runs=runs, warmup=warmup)
        return statistics.median(ts), "resident"
    for _ in range(warmup):
        engine.execute(np_in, np_out)
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        engine.execute(np_in, np_out)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), "host round trip"


def _runs_for(flops_or_bytes, per_s):
    return int(max(5, min(100, 2e9 / max(flops_or_bytes, 1))))


def gemm(tdev, sync, args):
    rows = []
    shapes = [(n, n, n) for n in (256, 512, 1024, 2048, 4096)]
    shapes += [(128, 768, 768), (128, 3072, 768), (128, 768, 3072), (1024, 768, 768), (4096, 3072, 768)]
    for (m, n, k) in shapes:
        a, b = torch.randn(m, k), torch.randn(k, n)
        ref = a @ b
        _, eng = build("aten.mm.default", [a, b], [ref])
        flops = 2.0 * m * n * k
        runs = _runs_for(flops, 1e9)
        t_e, mode = _time_engine(eng, [a, b], [ref], runs)
        ad, bd = a.to(tdev), b.to(tdev)
        t_t = _time_torch(lambda: torch.mm(ad, bd), sync, runs)
        rows.append({"M": m, "N": n, "K": k, "ttc_GFLOPs": flops / t_e / 1e9, "torch_GFLOPs": flops / t_t / 1e9,
                     "ratio": (flops / t_e) / (flops / t_t), "ttc_timing": mode})
        print(rows[-1], file=sys.stderr, flush=True)
    return rows


RESNET50_CONVS = [  # (Cin, Cout, k, stride, pad, H)
    (3, 64, 7, 2, 3, 224), (64, 64, 1, 1, 0, 56), (64, 64, 3, 1, 1, 56), (64, 256, 1, 1, 0, 56),
    (256, 128, 1, 1, 0, 56), (128, 128, 3, 2, 1, 56), (128, 512, 1, 1, 0, 28), (512, 256, 1, 1, 0, 28),
    (256, 256, 3, 2, 1, 28), (256, 1024, 1, 1, 0, 14), (1024, 512, 1, 1, 0, 14), (512, 512, 3, 2, 1, 14),
    (512, 2048, 1, 1, 0, 7),
]


def conv(tdev, sync, args):
    rows = []
    for batch in (1, 8):
        for (cin, cout, k, s, p, h) in RESNET50_CONVS:
            x = torch.randn(batch, cin, h, h)
            w = torch.randn(cout, cin, k, k) * 0.05
            ref = torch.nn.functional.conv2d(x, w, None, s, p)
            _, eng = build("aten.convolution.default", [x, Const(w), None, [s, s], [p, p], [1, 1], False, [0, 0], 1], [ref])
            ho = ref.shape[2]
            flops = 2.0 * batch * cout * ho * ho * cin * k * k
            runs = _runs_for(flops, 1e9)
            t_e, mode = _time_engine(eng, [x], [ref], runs)
            xd, wd = x.to(tdev), w.to(tdev)
            t_t = _time_torch(lambda: torch.nn.functional.conv2d(xd, wd, None, s, p), sync, runs)
            rows.append({"batch": batch, "layer": f"{cin}->{cout} k{k} s{s} {h}x{h}", "ttc_GFLOPs": flops / t_e / 1e9,
                         "torch_GFLOPs": flops / t_t / 1e9, "ratio": t_t / t_e, "ttc_timing": mode})
            print(rows[-1], file=sys.stderr, flush=True)
    return rows


def elementwise(tdev, sync, args):
    from torchtrt_c import _C

    rows = []
    for n in (1 << 20, 1 << 24):
        x = torch.randn(n)
        # fused chain: relu(x * 2 + 1) -> one kernel reading x once and writing once
        g = _C.Graph()
        xi = g.add_input("x", ("tensor", "float32", [n]))
        two, one = g.add_constant(2.0), g.add_constant(1.0)
        t = ("tensor", "float32", [n])
        a = g.add_node("aten.mul.Tensor", [xi, two], [t])[0]
        b = g.add_node("aten.add.Tensor", [a, one, g.add_constant(1)], [t])[0]
        c = g.add_node("aten.relu.default", [b], [t])[0]
        g.set_outputs([c])
        eng = _C.Engine.build(g, name="fused_ew", cache_dir="")
        out = torch.empty(n)
        runs = 50
        t_e, mode = _time_engine(eng, [x], [out], runs)
        xd = x.to(tdev)
        t_copy = _time_torch(lambda: xd.clone(), sync, runs)
        t_torch = _time_torch(lambda: torch.relu(xd * 2 + 1), sync, runs)
        nbytes = 2 * 4 * n
        rows.append({"kernel": "relu(x*2+1) fused", "elements": n, "ttc_GBs": nbytes / t_e / 1e9,
                     "torch_eager_GBs": nbytes / t_torch / 1e9, "device_copy_GBs": nbytes / t_copy / 1e9,
                     "ttc_timing": mode})
        print(rows[-1], file=sys.stderr, flush=True)
        # row reduction: sum over the last dim of (n/1024, 1024)
        xr = x.view(n // 1024, 1024)
        ref = xr.sum(-1)
        _, eng = build("aten.sum.dim_IntList", [xr, [-1], False, None], [ref])
        t_e, mode = _time_engine(eng, [xr], [ref], runs)
        xrd = xr.to(tdev)
        t_torch = _time_torch(lambda: xrd.sum(-1), sync, runs)
        nbytes = 4 * n
        rows.append({"kernel": "sum(dim=-1) rows of 1024", "elements": n, "ttc_GBs": nbytes / t_e / 1e9,
                     "torch_eager_GBs": nbytes / t_torch / 1e9, "device_copy_GBs": 2 * 4 * n / t_copy / 1e9,
                     "ttc_timing": mode})
        print(rows[-1], file=sys.stderr, flush=True)
    return rows


def run(kinds, tdev, sync, args):
    out = {}
    for k in kinds:
        out[k] = {"gemm": gemm, "conv": conv, "elementwise": elementwise}[k](tdev, sync, args)
    return out
