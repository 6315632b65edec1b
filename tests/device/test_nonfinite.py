"""NaN, +-inf, +-0 and denormals through every converter, against torch eager.

Each case builds one ATen node into an engine (convtest.check_op) whose float inputs hold,
at seeded random places, NaN, +inf, -inf, +0, -0 and denormals (+-1e-40) among ordinary
values. check_op's assert_close requires the NaN pattern to match exactly, +-inf to match
(inf - inf is NaN, so a wrong inf fails the tolerance) and the finite values to be within
the tolerance (1e-4 absolute and relative: GEMM, convolution and reductions sum in another
order than torch; elementwise ops are also covered tightly by tests/test_mathfn.py).
Torch's semantics are the reference: maximum/minimum/clamp/relu/hardtanh and max pooling
propagate NaN, amax/amin propagate it, argmax/argmin return the first NaN's index.
Some references are not eager's CPU kernels, which disagree with torch's own definitions there:
GELU(+inf) is +inf (torch's vectorised CPU kernel gives NaN, its scalar path +inf), and
attention follows torch's math path, softmax(q k^T * scale) v (a NaN in q makes its row NaN;
the CPU flash kernel drops it and returns finite values), var_mean is var and mean (its
Welford kernel makes the mean of a row holding an inf NaN), and fmod/remainder divisors hold
no denormals (torch's vectorised fmod overflows a / 1e-40 into NaN).

The fast subset runs by default; the whole sweep is marked slow. When the core lists its
converters (`_C.ops()`), the sweep also checks that every converter with float data has a
case here (or a reason in NO_FLOAT_DATA).
"""
import math
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import torchtrt_c._C as C  # noqa: E402
from convtest import Const, check_op  # noqa: E402

try:
    HAVE_DEVICE = bool(C.devices())
except Exception:  # noqa: BLE001
    HAVE_DEVICE = False
pytestmark = pytest.mark.skipif(not HAVE_DEVICE, reason="no OpenCL device")

INF, NAN = math.inf, math.nan
SPECIALS = [NAN, INF, -INF, 0.0, -0.0, 1e-40, -1e-40]
TOL = 1e-4


def nf(*shape, seed=0, frac=0.15, low=-2.0, high=2.0, specials=SPECIALS):
    """Random values in [low, high) with about `frac` of them replaced by the special values
    (each special at least once when the tensor is large enough)."""
    g = torch.Generator().manual_seed(hash((shape, seed)) & 0xFFFFFFFF)
    t = torch.rand(shape, generator=g) * (high - low) + low
    n = t.numel()
    k = max(len(specials), int(n * frac)) if n >= len(specials) else n
    idx = torch.randperm(n, generator=g)[:k]
    vals = torch.tensor(specials)[torch.arange(k) % len(specials)]
    t.view(-1)[idx] = vals
    return t


def one_nan(*shape, seed=0):
    """Finite random values with a single NaN (reductions: one NaN poisons its whole row)."""
    return nf(*shape, seed=seed, frac=0.0, specials=[NAN])


def _sdpa_ref(q, k, v, *rest):
    return torch.ops.aten._scaled_dot_product_attention_math(q, k, v)[0]


def _gelu_ref(x, approximate="none"):
    return torch.where(x == INF, x, F.gelu(x, approximate=approximate))


A = lambda: nf(3, 17, seed=1)   # noqa: E731
B = lambda: nf(3, 17, seed=2)   # noqa: E731
# divisors without denormals: torch's vectorised fmod divides first (a / 1e-40 overflows) and
# returns NaN where fmod's exact answer is a tiny number
NODEN = lambda: nf(3, 17, seed=2, specials=[NAN, INF, -INF, 0.0, -0.0])   # noqa: E731


def _var_mean_ref(x, dim, correction, keepdim):
    """var_mean by its definition: torch's Welford kernel gives a NaN mean for a row with one
    inf, where mean() gives the inf"""
    return (torch.var(x, dim, correction=correction, keepdim=keepdim), torch.mean(x, dim, keepdim=keepdim))

UNARY = ["neg", "abs", "exp", "log", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "erf", "floor", "ceil", "round",
         "sign", "relu", "silu", "sigmoid", "tanh", "hardswish", "hardsigmoid", "log_sigmoid", "acos",
         "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh", "tan", "expm1", "log10", "log1p", "log2", "trunc",
         "isinf", "isnan"]
BINARY_T = ["mul.Tensor", "div.Tensor", "pow.Tensor_Tensor", "maximum.default",
            "minimum.default", "eq.Tensor", "ne.Tensor", "lt.Tensor", "le.Tensor", "gt.Tensor", "ge.Tensor"]

# (op, args builder, extra check_op keywords); ids are unique by position
CASES = [(f"aten.{u}.default", lambda: [A()], {}) for u in UNARY]
CASES += [(f"aten.{b}", lambda: [A(), B()], {}) for b in BINARY_T]
CASES += [
    ("aten.add.Tensor", lambda: [A(), B(), 1], {}),
    ("aten.sub.Tensor", lambda: [A(), B(), 1], {}),
    ("aten.add.Scalar", lambda: [A(), INF, 1], {}),
    ("aten.mul.Scalar", lambda: [A(), 0.0], {}),
    ("aten.sub.Scalar", lambda: [A(), NAN, 1], {}),
    ("aten.div.Scalar", lambda: [A(), 0.0], {}),
    ("aten.rsub.Scalar", lambda: [A(), -INF, 1], {}),
    ("aten.pow.Tensor_Scalar", lambda: [A(), 0.5], {}),
    ("aten.pow.Tensor_Scalar", lambda: [A(), 2], {}),
    ("aten.div.Tensor_mode", lambda: [A(), B(), "floor"], {}),
    ("aten.div.Tensor_mode", lambda: [A(), B(), "trunc"], {}),
    ("aten.eq.Scalar", lambda: [A(), NAN], {}),
    ("aten.ne.Scalar", lambda: [A(), INF], {}),
    ("aten.lt.Scalar", lambda: [A(), -INF], {}),
    ("aten.le.Scalar", lambda: [A(), 0.0], {}),
    ("aten.ge.Scalar", lambda: [A(), -0.0], {}),
    ("aten.atan2.default", lambda: [A(), B()], {}),
    ("aten.fmod.Tensor", lambda: [A(), NODEN()], {}),
    ("aten.fmod.Scalar", lambda: [A(), 1.5], {}),
    ("aten.remainder.Tensor", lambda: [A(), NODEN()], {}),
    ("aten.remainder.Scalar", lambda: [A(), -1.5], {}),
    ("aten.masked_fill.Tensor", lambda: [A(), B() > 0, torch.tensor(INF)], {}),
    ("aten.gt.Scalar", lambda: [A(), 0.0], {}),
    ("aten.where.self", lambda: [A() > 0, A(), B()], {}),
    ("aten.masked_fill.Scalar", lambda: [A(), B() > 0, NAN], {}),
    ("aten.clamp.default", lambda: [A(), -0.5, 0.5], {}),
    ("aten.clamp.default", lambda: [A(), None, 0.0], {}),
    ("aten.clamp_min.default", lambda: [A(), 0.0], {}),
    ("aten.clamp_max.default", lambda: [A(), 6.0], {}),
    ("aten.hardtanh.default", lambda: [A(), -1.0, 1.0], {}),
    ("aten.hardtanh.default", lambda: [A(), 0.0, 6.0], {}),   # relu6
    ("aten.leaky_relu.default", lambda: [A(), 0.1], {}),
    ("aten.gelu.default", lambda: [A(), "none"], {"ref": _gelu_ref}),
    ("aten.gelu.default", lambda: [A(), "tanh"], {"ref": _gelu_ref}),
    ("aten.elu.default", lambda: [A(), 1.0, 1.0, 1.0], {}),
    ("aten.softplus.default", lambda: [A(), 1.0, 20.0], {}),
    # reductions: one row per special value and rows with a single NaN
    ("aten.sum.dim_IntList", lambda: [nf(6, 9, seed=3), [1], False, None], {}),
    ("aten.sum.default", lambda: [nf(5, 7, seed=4), None], {}),
    ("aten.mean.dim", lambda: [nf(6, 9, seed=5), [1], True, None], {}),
    ("aten.mean.dim", lambda: [nf(6, 9, seed=5), [0], False, None], {}),
    ("aten.mean.default", lambda: [one_nan(5, 7, seed=48), None], {}),
    ("aten.var.dim", lambda: [nf(6, 9, seed=49), [1], True, False], {}),
    ("aten.var_mean.correction", lambda: [nf(6, 9, seed=50), [1], 1, True], {"ref": _var_mean_ref}),
    ("aten.cumsum.default", lambda: [nf(4, 9, seed=51), 1, None], {}),
    ("aten.cumprod.default", lambda: [nf(4, 9, seed=52, low=0.5, high=1.5), 1, None], {}),
    ("aten.logcumsumexp.default", lambda: [nf(4, 9, seed=53), 1], {}),
    ("aten.sort.default", lambda: [nf(4, 9, seed=52), 1, False], {"keep": [0]}),
    ("aten.sort.stable", lambda: [nf(4, 9, seed=54), True, 1, True], {"keep": [0]}),
    ("aten.topk.default", lambda: [nf(4, 9, seed=53), 3, 1, True, True], {"keep": [0]}),
    ("aten.amax.default", lambda: [nf(6, 9, seed=6), [1], False], {}),
    ("aten.amax.default", lambda: [one_nan(5, 33, seed=7), [1], False], {}),
    ("aten.amin.default", lambda: [nf(6, 9, seed=8), [0], False], {}),
    ("aten.var.correction", lambda: [nf(6, 9, seed=9), [1], 1, True], {}),
    ("aten.argmax.default", lambda: [nf(6, 9, seed=10), 1, False], {}),
    ("aten.argmax.default", lambda: [one_nan(5, 33, seed=11), 1, False], {}),
    ("aten.argmin.default", lambda: [nf(6, 9, seed=12), 0, False], {}),
    ("aten.max.dim", lambda: [nf(6, 9, seed=13), 1, False], {}),
    ("aten.prod.dim_int", lambda: [nf(6, 9, seed=14), 1, False, None], {}),
    ("aten._softmax.default", lambda: [nf(6, 9, seed=15), 1, False], {}),
    ("aten._softmax.default", lambda: [one_nan(7, 130, seed=16), 1, False], {}),
    ("aten.softmax.int", lambda: [nf(4, 5, 6, seed=17), 1, None], {}),
    ("aten._log_softmax.default", lambda: [nf(6, 9, seed=18), 1, False], {}),
    ("aten.log_softmax.int", lambda: [one_nan(4, 5, 6, seed=19), 0, None], {}),
    ("aten.layer_norm.default", lambda: [one_nan(5, 16, seed=20), [16], Const(torch.rand(16)), Const(torch.rand(16)),
                                         1e-5, False], {}),
    ("aten.layer_norm.default", lambda: [nf(5, 16, seed=21, frac=0.05), [16], None, None, 1e-5, False], {}),
    ("aten.native_layer_norm.default", lambda: [one_nan(5, 16, seed=22), [16], Const(torch.rand(16)),
                                                Const(torch.rand(16)), 1e-5], {"keep": [0]}),
    ("aten.rms_norm.default", lambda: [one_nan(5, 16, seed=60), [16], Const(torch.rand(16)), 1e-6], {}),
    ("aten.rms_norm.default", lambda: [nf(5, 16, seed=61, frac=0.05), [16], None, None], {}),
    ("aten.group_norm.default", lambda: [one_nan(2, 6, 4, 4, seed=23), 3, Const(torch.rand(6)), Const(torch.rand(6)),
                                         1e-5, False], {}),
    ("aten.native_group_norm.default", lambda: [one_nan(2, 6, 4, 4, seed=24), Const(torch.rand(6)),
                                                Const(torch.rand(6)), 2, 6, 16, 3, 1e-5], {"keep": [0]}),
    ("aten.batch_norm.default", lambda: [nf(2, 4, 5, 5, seed=25), Const(torch.rand(4)), Const(torch.rand(4)),
                                         Const(torch.randn(4)), Const(torch.rand(4) + 0.5), False, 0.1, 1e-5, False], {}),
    ("aten._native_batch_norm_legit_no_training.default",
     lambda: [nf(2, 4, 5, 5, seed=26), Const(torch.rand(4)), Const(torch.rand(4)), Const(torch.randn(4)),
              Const(torch.rand(4) + 0.5), 0.1, 1e-5], {"keep": [0]}),
    # pooling
    ("aten.max_pool2d.default", lambda: [nf(2, 3, 8, 9, seed=27), [2, 2], [2, 2], [0, 0], [1, 1], False], {}),
    ("aten.max_pool2d.default", lambda: [nf(1, 2, 7, 7, seed=28), [3, 3], [1, 1], [1, 1], [1, 1], False], {}),
    ("aten.max_pool2d_with_indices.default", lambda: [nf(2, 3, 8, 8, seed=29), [2, 2], [2, 2], [0, 0], [1, 1], False],
     {"keep": [0]}),
    ("aten.avg_pool2d.default", lambda: [nf(2, 3, 8, 9, seed=30), [2, 2], [2, 2], [0, 0], False, True, None], {}),
    ("aten.adaptive_avg_pool2d.default", lambda: [nf(2, 3, 8, 9, seed=31), [3, 2]], {}),
    ("aten._adaptive_avg_pool2d.default", lambda: [nf(2, 3, 7, 7, seed=32), [1, 1]], {}),
    # GEMM and convolution (fused epilogues are covered by test_conv_relu_nan_count_compiled)
    ("aten.mm.default", lambda: [nf(5, 7, seed=33, frac=0.05), torch.rand(7, 6)], {}),
    ("aten.bmm.default", lambda: [nf(2, 5, 7, seed=34, frac=0.05), torch.rand(2, 7, 6)], {}),
    ("aten.addmm.default", lambda: [nf(6, seed=35, frac=0.3), nf(5, 7, seed=36, frac=0.05), torch.rand(7, 6), 1, 1], {}),
    ("aten.linear.default", lambda: [nf(5, 33, seed=37, frac=0.02), Const(torch.rand(9, 33)), Const(torch.rand(9))],
     {}),
    ("aten.matmul.default", lambda: [nf(3, 5, 7, seed=38, frac=0.03), torch.rand(7, 4)], {}),
    ("aten.convolution.default", lambda: [nf(1, 3, 9, 9, seed=39, frac=0.01), Const(torch.rand(4, 3, 3, 3)),
                                          Const(torch.rand(4)), [1, 1], [1, 1], [1, 1], False, [0, 0], 1], {}),
    ("aten.conv2d.default", lambda: [nf(1, 4, 8, 8, seed=40, frac=0.02), Const(torch.rand(4, 1, 3, 3)), None,
                                     [1, 1], [1, 1], [1, 1], 4], {}),
    ("aten.conv1d.default", lambda: [nf(1, 3, 20, seed=41, frac=0.03), Const(torch.rand(5, 3, 3)), Const(torch.rand(5)),
                                     [1], [0], [1], 1], {}),
    ("aten.scaled_dot_product_attention.default",
     lambda: [one_nan(1, 2, 6, 8, seed=42), torch.rand(1, 2, 6, 8), torch.rand(1, 2, 6, 8), None, 0.0,
              False, None, False], {"ref": _sdpa_ref}),
    # data movement: values pass through untouched
    ("aten.constant_pad_nd.default", lambda: [nf(2, 5, 6, seed=43), [1, 2], NAN], {}),
    ("aten.index_select.default", lambda: [nf(6, 5, seed=44), 0, torch.tensor([5, 0, 2])], {}),
    ("aten.embedding.default", lambda: [Const(nf(10, 4, seed=45)), torch.tensor([[1, 9, 3]]), -1, False, False], {}),
    ("aten.upsample_nearest2d.vec", lambda: [nf(1, 2, 4, 5, seed=46), [8, 10], None], {}),
    ("aten.upsample_bilinear2d.vec", lambda: [nf(1, 2, 4, 5, seed=47, frac=0.05), [7, 9], False, None], {}),
    ("aten.clone.default", lambda: [A(), None], {}),
    # scatter with a reduction: NaN and inf combine as in torch (amax/amin keep a NaN once seen)
    *[("aten.scatter_reduce.two",
       lambda red=red, incl=incl: [nf(4, 6, seed=48), 0, torch.randint(0, 4, (7, 6), generator=torch.Generator()
                                                                         .manual_seed(48)),
                                   nf(7, 6, seed=49), red, incl], {})
      for red in ("sum", "prod", "mean", "amax", "amin") for incl in (True, False)],
]
CASE_IDS = [f"{op}#{i}" for i, (op, _, _) in enumerate(CASES)]

FAST = {"aten.relu.default", "aten.maximum.default", "aten.minimum.default", "aten.clamp.default",
        "aten.hardtanh.default", "aten.leaky_relu.default", "aten.hardsigmoid.default", "aten.hardswish.default",
        "aten.gelu.default", "aten.amax.default", "aten.argmax.default", "aten.max_pool2d.default",
        "aten._softmax.default", "aten.layer_norm.default", "aten.linear.default", "aten.convolution.default",
        "aten.exp.default", "aten.log.default", "aten.erf.default", "aten.tanh.default"}

# Converted ops with no float data to poison (creation, shape-only, randomness, side effects)
NO_FLOAT_DATA = {
    "creation": ["aten.arange.default", "aten.arange.start", "aten.arange.start_step", "aten.full.default",
                 "aten.zeros.default", "aten.ones.default", "aten.full_like.default", "aten.zeros_like.default",
                 "aten.ones_like.default", "aten.scalar_tensor.default", "aten.rand.default", "aten.randn.default",
                 "aten.bernoulli.p"],
    "moves or indexes values without arithmetic (their op cases cover them)": [
        "aten._to_copy.default", "aten.cat.default", "aten.index_put.default", "aten.nonzero.default",
        "aten.resize_.default", "aten.scatter.src", "aten.scatter.value"],
    "integer or bool only": ["aten.bitwise_and.Scalar", "aten.bitwise_and.Tensor", "aten.bitwise_or.Scalar",
                             "aten.bitwise_or.Tensor", "aten.bitwise_xor.Scalar", "aten.bitwise_xor.Tensor",
                             "aten.logical_and.default", "aten.logical_or.default", "aten.logical_xor.default",
                             "aten.logical_not.default", "aten.bitwise_not.default",
                             "aten._int_mm.default"],   # int8 x int8 -> int32 (torchao's dynamic int8)
}


def _run(op, args, kw):
    kw = dict(kw)
    tol = kw.pop("tol", TOL)
    check_op(op, args(), tol=tol, **kw)


@pytest.mark.parametrize("i", [i for i, c in enumerate(CASES) if c[0] in FAST],
                         ids=[CASE_IDS[i] for i, c in enumerate(CASES) if c[0] in FAST])
def test_nonfinite_fast(i):
    _run(*CASES[i])


@pytest.mark.slow
@pytest.mark.parametrize("i", [i for i, c in enumerate(CASES) if c[0] not in FAST],
                         ids=[CASE_IDS[i] for i, c in enumerate(CASES) if c[0] not in FAST])
def test_nonfinite_sweep(i):
    _run(*CASES[i])


@pytest.mark.slow
def test_sweep_covers_every_converter():
    if not hasattr(C, "ops"):
        pytest.skip("_C.ops() (the converter list) is not in this build")
    names = {o["name"] for o in C.ops() if o["converter"] and o["kind"] == "aten"}
    covered = {op for op, _, _ in CASES} | {o for v in NO_FLOAT_DATA.values() for o in v}
    views = {n for n in names if any(k in n for k in ("view", "reshape", "permute", "transpose", ".t.", "expand",
                                                      "squeeze", "flatten", "slice", "select", "split", "chunk",
                                                      "unbind", "stack", "contiguous", "detach", "alias", "dropout",
                                                      "lift_fresh", "_assert", "sym_", "_print", "prim.", "copy_",
                                                      "gather", "index.Tensor", "to.dtype"))}
    missing = sorted(n for n in names if n.startswith("aten.") and n not in covered and n not in views)
    assert not missing, f"converters with no non-finite case: {missing}"


def test_conv_relu_nan_count_compiled():
    """The report that started this: conv + relu with one NaN pixel, compiled end to end (the
    relu fused into the convolution's epilogue) keeps every NaN eager produces."""
    import torchtrt_c

    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                            torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.ReLU6()).eval()
    x = torch.rand(1, 3, 12, 12)
    x[0, 1, 5, 6] = NAN
    x[0, 2, 0, 0] = INF
    with torch.no_grad():
        ref = m(x)
        trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
        got = trt(x)
    n_ref, n_got = int(torch.isnan(ref).sum()), int(torch.isnan(got).sum())
    assert n_ref > 0
    assert n_got == n_ref, f"NaN count: compiled {n_got}, eager {n_ref}"
    torch.testing.assert_close(got, ref, atol=1e-4, rtol=1e-4, equal_nan=True)
