"""Library convolution (torchtrt_c's cuDNN step, csrc/backend/cuda/cudnn.c) against our own
convolution kernels in the CUDA launch path, each as a fraction of torch's conv2d time, per
zoo convolution shape (ResNet-50's distinct layers, MobileNetV2's and ConvNeXt-T's depthwise
ones) at batch 32.

    python bench/cudnn_ab.py [--batch 32] [--modes fp16,tf32,fp32] [--runs 20] [--no-engine]

Per shape and mode, in one process, round robin over 5 rounds of --runs back-to-back calls
timed by CUDA events on torch's stream (median round):
- torch: F.conv2d on NCHW tensors (cudnn.benchmark on, allow_tf32 as the mode says);
- lib_nchw / lib_nhwc: _C.cudnn_conv_run on NCHW / NHWC (channels-last) tensors, algorithm
  timed once by cudnnFindConvolutionForwardAlgorithmEx (what the engine step would do);
- ours: a one-convolution engine (no bias) through _C.cuda_launch_new / cuda_launch_run,
  the kernels torchtrt_c generates (TORCHTRT_C_CUDA_LIBS=0; fp16 engine, or fp32 with
  tf32_conv as the mode); ours_lib: the same engine with its convolution as the cuDNN step
  (TORCHTRT_C_CUDA_LIBS=1: the engine path, its host work included).
x_of_torch = torch ms / that ms (1.0: as fast as torch; above: faster). *_graph_ms: the same
calls recorded as one CUDA graph and replayed (GPU time without host overhead); *_host_us:
host time per call. Every output is checked against torch's. Prints a dict per row and a
markdown table.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

import torchtrt_c._C as C
from cuda_events import events_ms as _events

# (Cin, Cout, k, stride, pad, H, groups)
RESNET50 = [
    (3, 64, 7, 2, 3, 224, 1),
    (64, 64, 1, 1, 0, 56, 1), (64, 64, 3, 1, 1, 56, 1), (64, 256, 1, 1, 0, 56, 1), (256, 64, 1, 1, 0, 56, 1),
    (256, 128, 1, 1, 0, 56, 1), (128, 128, 3, 2, 1, 56, 1), (128, 512, 1, 1, 0, 28, 1), (256, 512, 1, 2, 0, 56, 1),
    (512, 128, 1, 1, 0, 28, 1), (128, 128, 3, 1, 1, 28, 1),
    (512, 256, 1, 1, 0, 28, 1), (256, 256, 3, 2, 1, 28, 1), (256, 1024, 1, 1, 0, 14, 1), (512, 1024, 1, 2, 0, 28, 1),
    (1024, 256, 1, 1, 0, 14, 1), (256, 256, 3, 1, 1, 14, 1),
    (1024, 512, 1, 1, 0, 14, 1), (512, 512, 3, 2, 1, 14, 1), (512, 2048, 1, 1, 0, 7, 1), (1024, 2048, 1, 2, 0, 14, 1),
    (2048, 512, 1, 1, 0, 7, 1), (512, 512, 3, 1, 1, 7, 1),
]
DEPTHWISE = [  # MobileNetV2 and ConvNeXt-T
    (32, 32, 3, 1, 1, 112, 32), (144, 144, 3, 2, 1, 56, 144), (192, 192, 3, 1, 1, 28, 192), (960, 960, 3, 1, 1, 7, 960),
    (96, 96, 7, 1, 3, 56, 96), (384, 384, 7, 1, 3, 14, 384), (768, 768, 7, 1, 3, 7, 768),
]
MODES = {"fp16": (torch.float16, False), "tf32": (torch.float32, True), "fp32": (torch.float32, False)}
NAMES = {torch.float32: "float32", torch.float16: "float16"}


def _graph(fn, runs):
    """fn's calls recorded once as a CUDA graph of `runs` calls: replays time the GPU alone."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(runs):
            fn()
    g.replay()
    torch.cuda.synchronize()
    return g


def _host_us(fn, runs):
    """Host microseconds per call (no waiting: the GPU may lag behind)."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(runs):
        fn()
    t = (time.perf_counter() - t0) / runs
    torch.cuda.synchronize()
    return t * 1e6


def _lib(x, w, dtype, tf32, nhwc, stride, pad, groups, oh, ow):
    mf = torch.channels_last if nhwc else torch.contiguous_format
    xs, ws = x.contiguous(memory_format=mf), w.contiguous(memory_format=mf)
    n, c, h, wd = x.shape
    k, _, kh, kw = w.shape
    d = (NAMES[dtype], tf32, nhwc, n, c, h, wd, k, groups, kh, kw, stride, stride, pad, pad, 1, 1, oh, ow)
    nb, info = C.cudnn_conv_prepare(d, torch.cuda.current_device(), True)
    y = torch.empty((n, k, oh, ow), dtype=dtype, device="cuda", memory_format=mf)
    wsp = torch.empty(max(nb, 1), dtype=torch.uint8, device="cuda")
    dev = torch.cuda.current_device()
    args = (d, dev, xs.data_ptr(), ws.data_ptr(), y.data_ptr(), wsp.data_ptr(), nb)
    keep = (xs, ws, wsp)

    def run():
        C.cudnn_conv_run(*args, torch.cuda.current_stream().cuda_stream)
        return keep

    return run, y, info


def _engine(x, w, dtype, tf32, stride, pad, groups, oh, ow, libs="0"):
    """A one-convolution engine in the CUDA launch path; libs: TORCHTRT_C_CUDA_LIBS for its
    build (0: our kernels, 1: the cuDNN step)."""
    old = os.environ.get("TORCHTRT_C_CUDA_LIBS")
    os.environ["TORCHTRT_C_CUDA_LIBS"] = libs
    try:
        return _engine_built(x, w, dtype, tf32, stride, pad, groups, oh, ow)
    finally:
        if old is None:
            os.environ.pop("TORCHTRT_C_CUDA_LIBS", None)
        else:
            os.environ["TORCHTRT_C_CUDA_LIBS"] = old


def _engine_built(x, w, dtype, tf32, stride, pad, groups, oh, ow):
    g = C.Graph()
    n, c, h, wd = x.shape
    xi = g.add_input("x", ("tensor", NAMES[dtype], [n, c, h, wd]))
    wi = g.add_tensor_constant("w", NAMES[dtype], list(w.shape), w.cpu().contiguous().numpy())
    args = [xi, wi, g.add_constant(None), g.add_constant([stride, stride]), g.add_constant([pad, pad]),
            g.add_constant([1, 1]), g.add_constant(False), g.add_constant([0, 0]), g.add_constant(groups)]
    (y,) = g.add_node("aten.convolution.default", args, [("tensor", NAMES[dtype], [n, w.shape[0], oh, ow])])
    g.set_outputs([y])
    eng = C.Engine.build(g, name="conv", cache_dir="", precision="fp16" if dtype == torch.float16 else "fp32",
                         tf32_conv=tf32)
    cap, why = C.cuda_launch_new(eng, torch.cuda.current_device())
    if cap is None:
        raise RuntimeError(f"CUDA launch refused: {why}")
    out = torch.empty((n, w.shape[0], oh, ow), dtype=dtype, device="cuda")
    nb = C.cuda_launch_arena(cap, [(n, c, h, wd)])
    arena = torch.empty(max(nb, 1), dtype=torch.uint8, device="cuda")
    args = (cap, [x.data_ptr()], [(n, c, h, wd)], [out.data_ptr()], arena.data_ptr(), nb)
    keep = (eng, arena)

    def run():
        why = C.cuda_launch_run(*args, torch.cuda.current_stream().cuda_stream)
        if why is not None:
            raise RuntimeError(why)
        return keep

    fam = eng.info()["kernels"][0] if eng.info().get("kernels") else "?"
    run.stats = lambda: C.cuda_launch_stats(cap)
    return run, out, str(fam)[:40]


def row(shape, mode, batch, runs, engine):
    cin, cout, k, s, p, h, g = shape
    dtype, tf32 = MODES[mode]
    gen = torch.Generator().manual_seed(cin * 31 + cout * 7 + k + h)
    x = torch.randn(batch, cin, h, h, generator=gen).to(dtype).cuda()
    w = (torch.randn(cout, cin // g, k, k, generator=gen) * (cin // g * k * k) ** -0.5).to(dtype).cuda()
    oh = (h + 2 * p - k) // s + 1
    r = {"mode": mode, "batch": batch, "layer": f"{cin}->{cout} k{k} s{s} g{g} {h}x{h}"}
    fl = 2.0 * batch * cout * oh * oh * (cin // g) * k * k
    prev = torch.backends.cudnn.allow_tf32, torch.backends.cudnn.benchmark
    torch.backends.cudnn.allow_tf32, torch.backends.cudnn.benchmark = tf32, True
    try:
        ref = torch.nn.functional.conv2d(x, w, None, s, p, 1, g)
        fns = {"torch": lambda: torch.nn.functional.conv2d(x, w, None, s, p, 1, g)}
        outs = {}
        for nhwc in (False, True):
            fn, y, info = _lib(x, w, dtype, tf32, nhwc, s, p, g, oh, oh)
            key = "lib_nhwc" if nhwc else "lib_nchw"
            fns[key], outs[key] = fn, y
            r[key + "_algo"] = f"{info['algo']}/{info['math']} {info['us']:.0f}us"
        if engine:
            for key, libs in (("ours", "0"), ("ours_lib", "1")):
                try:
                    fn, y, fam = _engine(x, w, dtype, tf32, s, p, g, oh, oh, libs)
                    fns[key], outs[key] = fn, y
                    r[key + "_kernel"] = fam
                except Exception as ex:  # an engine this path cannot run: say so, go on
                    r[key + "_error"] = str(ex)[:200]
        for f in fns.values():
            f(), f()
        torch.cuda.synchronize()
        graphs = {}
        for k_, f in fns.items():
            try:
                graphs[k_] = _graph(f, runs)
            except Exception as ex:  # a call that cannot be recorded: say so, go on
                r[k_ + "_graph_error"] = str(ex)[:120]
        ms = {k_: [] for k_ in fns}
        gms = {k_: [] for k_ in graphs}
        for _ in range(5):
            for k_, f in fns.items():
                ms[k_].append(_events(f, runs))
                if k_ in graphs:
                    gms[k_].append(_events(graphs[k_].replay, 1) / runs)
        for k_, f in fns.items():
            r[k_ + "_host_us"] = round(_host_us(f, runs), 1)
            if hasattr(f, "stats"):
                st = f.stats()
                r[k_ + "_lib"] = f"{st.get('lib_calls', 0)}/{st.get('calls', 0)}"
        for k_, v in gms.items():
            r[k_ + "_graph_ms"] = round(statistics.median(v), 4)
        for k_, y in outs.items():
            e = float((y.double() - ref.double()).abs().max() / ref.double().abs().max())
            r[k_ + "_err"] = round(e, 6)
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cudnn.benchmark = prev
    t = statistics.median(ms["torch"])
    r["torch_ms"] = round(t, 4)
    r["torch_TFLOPs"] = round(fl / t / 1e9, 1)
    for k_ in fns:
        if k_ != "torch":
            m = statistics.median(ms[k_])
            r[k_ + "_ms"] = round(m, 4)
            r[k_ + "_x_of_torch"] = round(t / m, 3)
    return r


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--modes", default="fp16,tf32,fp32")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--no-engine", action="store_true")
    ap.add_argument("--shapes", default="all", help="all, resnet50 or depthwise")
    a = ap.parse_args(argv)
    ok, why, ver = C.cudnn_available()
    if not ok:
        raise SystemExit(f"cuDNN unavailable: {why}")
    shapes = (RESNET50 if a.shapes in ("all", "resnet50") else []) + (DEPTHWISE if a.shapes in ("all", "depthwise") else [])
    rows = []
    for mode in [m for m in a.modes.split(",") if m]:
        for sh in shapes:
            try:
                r = row(sh, mode, a.batch, a.runs, not a.no_engine)
            except Exception as ex:
                r = {"mode": mode, "layer": str(sh), "error": str(ex)[:300]}
            rows.append(r)
            print(r, flush=True)
    print(f"\ncuDNN {ver}, torch {torch.__version__}, {torch.cuda.get_device_name()}, batch {a.batch}")
    print("| mode | layer | torch ms | torch TFLOP/s | lib NCHW x of torch | lib NHWC x of torch | ours x of torch |"
          " engine+cuDNN x of torch | graphs: torch ms | lib NCHW | lib NHWC | ours | engine+cuDNN |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['mode']} | {r['layer']} | error: {r['error'][:80]} |")
            continue
        print(f"| {r['mode']} | {r['layer']} | {r['torch_ms']} | {r['torch_TFLOPs']} | {r.get('lib_nchw_x_of_torch')} | "
              f"{r.get('lib_nhwc_x_of_torch')} | {r.get('ours_x_of_torch', '-')} | {r.get('ours_lib_x_of_torch', '-')} | "
              f"{r.get('torch_graph_ms', '-')} | {r.get('lib_nchw_graph_ms', '-')} | {r.get('lib_nhwc_graph_ms', '-')} | "
              f"{r.get('ours_graph_ms', '-')} | {r.get('ours_lib_graph_ms', '-')} |")
    return rows


if __name__ == "__main__":
    main()
