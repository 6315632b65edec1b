"""The C steps of native calls alone, one engine per step, built with TORCHTRT_C_STEP_THREADS=1
and with the default (the online CPUs), run side by side in one process, round robin
(Engine.execute on numpy). Shapes are those of BERT-base / Llama at sequence 128 (b1, b8) and
of EfficientNet-B0's head. On a shared machine read the ratios, with the load beside them.

    python bench/cpu_steps.py [--rounds 15] [--runs 5] [--steps layer_norm,rms_norm,...]
    python bench/cpu_steps.py --ab TORCHTRT_C_NATIVE_ATTN_GEMM=blas --steps attention_gpt2_b8
    (--ab: the default build against one built with that variable set, instead of 1 step thread)
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT]

import torchtrt_c._C as C  # noqa: E402


def T(shape):
    return ("tensor", "float32", list(shape))


def layer_norm(g, L, x, const, shape):
    n = shape[-1]
    w, b = const(torch.rand(n)), const(torch.rand(n))
    return g.add_node("aten.layer_norm.default", [x, L([n]), w, b, L(1e-5), L(False)], [T(shape)])[0]


def rms_norm(g, L, x, const, shape):
    red = tuple(shape[:-1]) + (1,)
    (p,) = g.add_node("aten.pow.Tensor_Scalar", [x, L(2)], [T(shape)])
    (m,) = g.add_node("aten.mean.dim", [p, L([-1]), L(True), L(None)], [T(red)])
    (a,) = g.add_node("aten.add.Tensor", [m, L(1e-6), L(1)], [T(red)])
    (r,) = g.add_node("aten.rsqrt.default", [a], [T(red)])
    (y,) = g.add_node("aten.mul.Tensor", [x, r], [T(shape)])
    return g.add_node("aten.mul.Tensor", [const(torch.rand(shape[-1])), y], [T(shape)])[0]


def linear_gelu(g, L, x, const, shape):
    k, n = shape[-1], 4 * shape[-1]
    out = tuple(shape[:-1]) + (n,)
    (y,) = g.add_node("aten.linear.default", [x, const(torch.randn(n, k) / k ** 0.5), const(torch.rand(n))], [T(out)])
    return g.add_node("aten.gelu.default", [y, L("none")], [T(out)])[0]


def attention(g, L, x, const, shape):
    return g.add_node("aten.scaled_dot_product_attention.default", [x, x, x, L(None), L(0.0), L(False), L(None),
                                                                     L(False)], [T(shape)])[0]


def attention_qkv(g, L, x, const, shape, causal=True):
    """GPT-2's attention: q, k, v sliced from one [B, S, 3 * D] projection, viewed as heads and
    permuted (strided operands), causal."""
    B, S, D3 = shape
    D, H = D3 // 3, 12
    parts = []
    for i in range(3):
        (p,) = g.add_node("aten.slice.Tensor", [x, L(2), L(i * D), L((i + 1) * D), L(1)], [T((B, S, D))])
        (p,) = g.add_node("aten.view.default", [p, L([B, S, H, D // H])], [T((B, S, H, D // H))])
        (p,) = g.add_node("aten.permute.default", [p, L([0, 2, 1, 3])], [T((B, H, S, D // H))])
        parts.append(p)
    return g.add_node("aten.scaled_dot_product_attention.default", parts + [L(None), L(0.0), L(causal), L(None),
                                                                            L(False)], [T((B, H, S, D // H))])[0]


def attention_gqa(g, L, x, const, shape):
    """Llama's grouped-query attention: 12 query heads over k/v of 4 heads (here the first 4
    heads of x), causal."""
    B, H, S, E = shape
    (kv,) = g.add_node("aten.slice.Tensor", [x, L(1), L(0), L(H // 3), L(1)], [T((B, H // 3, S, E))])
    return g.add_node("aten.scaled_dot_product_attention.default", [x, kv, kv, L(None), L(0.0), L(True), L(None),
                                                                    L(True)], [T(shape)])[0]


def global_pool(g, L, x, const, shape):
    return g.add_node("aten.adaptive_avg_pool2d.default", [x, L([1, 1])], [T(shape[:2] + (1, 1))])[0]


STEPS = {  # name: (builder, input shape, output shape)
    "layer_norm_b1": (layer_norm, (1, 128, 768), (1, 128, 768)),
    "layer_norm_b8": (layer_norm, (8, 128, 768), (8, 128, 768)),
    "rms_norm_b1": (rms_norm, (1, 128, 768), (1, 128, 768)),
    "rms_norm_b8": (rms_norm, (8, 128, 768), (8, 128, 768)),
    "linear_gelu_b1": (linear_gelu, (1, 128, 768), (1, 128, 3072)),
    "linear_gelu_b8": (linear_gelu, (8, 128, 768), (8, 128, 3072)),
    "attention_b1": (attention, (1, 12, 128, 64), (1, 12, 128, 64)),
    "attention_b8": (attention, (8, 12, 128, 64), (8, 12, 128, 64)),
    "attention_gpt2_b1": (attention_qkv, (1, 128, 2304), (1, 12, 128, 64)),
    "attention_gpt2_b8": (attention_qkv, (8, 128, 2304), (8, 12, 128, 64)),
    "attention_gqa_b1": (attention_gqa, (1, 12, 128, 64), (1, 12, 128, 64)),
    "attention_gqa_b8": (attention_gqa, (8, 12, 128, 64), (8, 12, 128, 64)),
    "global_pool_b8": (global_pool, (8, 1280, 7, 7), (8, 1280)),
}


def build(name, threads, ab=None):
    fn, shape, oshape = STEPS[name]
    old = os.environ.get("TORCHTRT_C_STEP_THREADS")
    old_ab = (ab[0], os.environ.get(ab[0])) if ab else None
    if threads:
        os.environ["TORCHTRT_C_STEP_THREADS"] = str(threads)
    else:
        os.environ.pop("TORCHTRT_C_STEP_THREADS", None)
    if ab:
        os.environ[ab[0]] = ab[1]
    try:
        torch.manual_seed(0)   # the same constants in both engines
        g = C.Graph()
        x = g.add_input("x", T(shape))
        n = [0]

        def const(t):
            n[0] += 1
            return g.add_tensor_constant(f"c{n[0]}", "float32", list(t.shape), t.contiguous().numpy())
        y = fn(g, g.add_constant, x, const, shape)
        if name.startswith("global_pool"):
            (y,) = g.add_node("aten.view.default", [y, g.add_constant(list(oshape))], [T(oshape)])
        g.set_outputs([y])
        g.lower()
        return C.Engine.build(g, name=name, cache_dir="")
    finally:
        if old is None:
            os.environ.pop("TORCHTRT_C_STEP_THREADS", None)
        else:
            os.environ["TORCHTRT_C_STEP_THREADS"] = old
        if old_ab and old_ab[1] is None:
            os.environ.pop(old_ab[0], None)
        elif old_ab:
            os.environ[old_ab[0]] = old_ab[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", default=",".join(STEPS))
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--ab", default=None, metavar="ENV=VALUE",
                    help="compare the default build with one built under ENV=VALUE (instead of 1 step thread)")
    a = ap.parse_args()
    ab = tuple(a.ab.split("=", 1)) if a.ab else None
    base = a.ab if ab else "1 thread"
    print(f"native {C.native_cpu()}; load {open('/proc/loadavg').read().split()[:3]}")
    for name in a.steps.split(","):
        _, shape, oshape = STEPS[name]
        x = [np.random.default_rng(0).standard_normal(shape).astype(np.float32)]
        engines = {base: build(name, None, ab) if ab else build(name, 1), "default": build(name, None)}
        outs = {k: np.empty(oshape, np.float32) for k in engines}
        for k, e in engines.items():
            e.execute(x, [outs[k]])
        same = np.array_equal(outs[base].view(np.uint32), outs["default"].view(np.uint32))
        ref = outs[base].astype(np.float64)
        err = float(np.abs(outs["default"] - ref).max() / max(np.abs(ref).max(), 1e-30))
        res = {k: [] for k in engines}
        for _ in range(a.rounds):
            for k, e in engines.items():
                ts = []
                for _ in range(a.runs):
                    t = time.perf_counter()
                    e.execute(x, [outs[k]])
                    ts.append(time.perf_counter() - t)
                res[k].append(statistics.median(ts) * 1e3)
        md = {k: statistics.median(v) for k, v in res.items()}
        print(f"{name}: {base} {md[base]:.3f} ms, default {md['default']:.3f} ms, "
              f"default/{base} {md['default'] / md[base]:.2f}, same bits {same} (max rel diff {err:.1e}); "
              f"load {open('/proc/loadavg').read().split()[0]}", flush=True)


if __name__ == "__main__":
    main()
