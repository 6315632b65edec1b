"""Where the time goes on a CPU OpenCL device: every convolution / linear layer of a zoo model as
a one-kernel engine (same shape, bias + relu epilogue where the model has one), timed resident
(Engine.benchmark) beside torch eager's same layer, in one process, back to back.

    python bench/cpu_layers.py --model resnet50 [--runs 5] [--top 15] [--whole] [--ab ENV=VALUE]

Prints, per unique layer shape: count in the model, ms per call (ours, torch), ratio, and the
share of the model's summed layer time. --whole also times the whole compiled model (resident)
and eager. --ab ENV=VALUE also builds every layer with that environment variable set (e.g.
TORCHTRT_C_CONV_CPU=ocb8, the previous CPU kernel) and reports ours/that. Times are the minimum
over runs (the machine is shared: the minimum is the least disturbed run); read ratios, not
absolute numbers.
"""
import argparse
import os
import statistics
import sys
import time

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
import torchtrt_c  # noqa: E402
from convtest import Const, build  # noqa: E402
from zoo import build as build_model  # noqa: E402


def layer_shapes(model, x):
    """[(kind, key, count)]: conv (N,C,H,W,OC,k,s,p,g) and linear (M,K,N) shapes in call order."""
    seen, hooks = {}, []

    def conv_hook(m, inp, out):
        a = inp[0]
        key = ("conv", tuple(a.shape), m.out_channels, m.kernel_size, m.stride, m.padding, m.groups)
        seen[key] = seen.get(key, 0) + 1

    def lin_hook(m, inp, out):
        a = inp[0]
        key = ("linear", tuple(a.shape), m.out_features)
        seen[key] = seen.get(key, 0) + 1

    for mod in model.modules():
        if isinstance(mod, nn.Conv2d):
            hooks.append(mod.register_forward_hook(conv_hook))
        elif isinstance(mod, nn.Linear):
            hooks.append(mod.register_forward_hook(lin_hook))
    with torch.no_grad():
        model(x)
    for h in hooks:
        h.remove()
    return seen


def time_torch(fn, runs):
    fn()
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return min(ts)


def one_layer(key, runs, ab=None):
    torch.manual_seed(0)
    if key[0] == "conv":
        _, xs, oc, k, s, p, g = key
        x = torch.randn(xs)
        w = torch.randn(oc, xs[1] // g, *k) * 0.05
        b = torch.randn(oc)
        args = [x, Const(w), Const(b), list(s), list(p), [1, 1], False, [0, 0], g]
        with torch.no_grad():
            ref = torch.ops.aten.convolution.default(x, w, b, list(s), list(p), [1, 1], False, [0, 0], g)
        build_args = ("aten.convolution.default", args, [ref])
        _, e = build(*build_args)
        tfn = lambda: torch.ops.aten.convolution.default(x, w, b, list(s), list(p), [1, 1], False, [0, 0], g)  # noqa: E731
    else:
        _, xs, n = key
        x = torch.randn(xs)
        w = torch.randn(n, xs[-1]) * 0.05
        b = torch.randn(n)
        with torch.no_grad():
            ref = torch.nn.functional.linear(x, w, b)
        build_args = ("aten.linear.default", [x, Const(w), Const(b)], [ref])
        _, e = build(*build_args)
        tfn = lambda: torch.nn.functional.linear(x, w, b)  # noqa: E731
    e_ab = None
    if ab:
        var, val = ab.split("=", 1)
        old = os.environ.get(var)
        os.environ[var] = val
        try:
            _, e_ab = build(*build_args)
        finally:
            if old is None:
                os.environ.pop(var)
            else:
                os.environ[var] = old
    ours, other = [], []
    for _ in range(runs):   # interleaved, so that load changes hit both alike
        ours += e.benchmark([x.numpy()], runs=1, warmup=0)
        if e_ab is not None:
            other += e_ab.benchmark([x.numpy()], runs=1, warmup=0)
    with torch.no_grad():
        theirs = time_torch(tfn, runs)
    return min(ours), theirs, e.info()["kernels"], (min(other) if other else None)


def main():  # noqa: C901
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--whole", action="store_true")
    ap.add_argument("--ab", default=None)
    a = ap.parse_args()
    torch.set_num_threads(os.cpu_count() or 1)
    model, make = build_model(a.model, size="full")
    x = make(batch=1)
    if a.top > 0:   # --top 0: whole model only
        shapes = layer_shapes(model, x)
        rows = []
        for key, cnt in shapes.items():
            ours, theirs, kern, other = one_layer(key, a.runs, a.ab)
            rows.append((key, cnt, ours, theirs, kern, other))
        tot_o = sum(r[1] * r[2] for r in rows)
        tot_t = sum(r[1] * r[3] for r in rows)
        print(f"{a.model}: {len(rows)} unique layer shapes; summed layer time ours {tot_o:.1f} ms, torch {tot_t:.1f} ms "
              f"(ratio {tot_o / tot_t:.2f})")
        rows.sort(key=lambda r: -r[1] * r[2])
        if a.ab:
            tot_ab = sum(r[1] * r[5] for r in rows)
            print(f"  with {a.ab}: summed {tot_ab:.1f} ms; ours/that {tot_o / tot_ab:.2f}")
        for key, cnt, o, t, kern, other in rows[: a.top]:
            abs_ = f" that {other:7.2f} ms ours/that {o / other:5.2f}" if other else ""
            print(f"  x{cnt:<2d} {str(key[1:]):55s} ours {o:7.2f} ms torch {t:7.2f} ms ours/torch {o / t:5.2f}{abs_} "
                  f"share {100 * cnt * o / tot_o:4.1f}%")
    if a.whole:
        from torchtrt_c.runtime._bench import benchmark_resident
        variants = [("ours", None)] + ([(a.ab, a.ab)] if a.ab else [])
        mods = {}
        for name, env in variants:
            if env:
                var, val = env.split("=", 1)
                os.environ[var] = val
            mods[name] = torchtrt_c.compile(model, inputs=[x], min_block_size=1)
            if env:
                os.environ.pop(var)
        times = {name: [] for name, _ in variants}
        times["eager"] = []
        for _ in range(a.runs):   # interleaved
            for name, _ in variants:
                times[name] += benchmark_resident(mods[name], [x], runs=1, warmup=1)["times_ms"]
            with torch.no_grad():
                times["eager"].append(time_torch(lambda: model(x), 1))
        best = {k: min(v) for k, v in times.items()}
        print("whole model (min over interleaved runs, resident): " +
              ", ".join(f"{k} {v:.1f} ms" for k, v in best.items()) +
              f"; ours/eager {best['ours'] / best['eager']:.2f}" +
              (f"; ours/({a.ab}) {best['ours'] / best[a.ab]:.2f}" if a.ab else ""))

if __name__ == "__main__":
    main()
