"""Differential cases for the converters the core had before the op harness: elementwise,
activations, casts, creation, reductions, softmax/norms, convolution/pooling, matmul,
indexing, views, data movement and the inference no-ops. Several shapes each, odd sizes
(the CPU kernels are vectorised in blocks of 4/8), a dynamic batch where the converter
takes one. Arguments follow the ATen schema (see tests/opcase.py); ops whose arguments are
lists of tensors (cat, stack, index.Tensor) go through the compile path as ModelCases.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from convtest import Const, rand  # noqa: E402
from opcase import Case, ModelCase  # noqa: E402

A = "aten."
SHAPES = [(3, 5), (2, 7, 9), (1, 13)]
DYN = (1, 3, 5)


def pos(*shape, seed=None):
    return rand(*shape, low=0.1, high=3.0, seed=seed)


def boolt(*shape, seed=0):
    return rand(*shape, seed=seed) > 0


def ints(*shape, low=-5, high=6, seed=0, dtype=torch.int64):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(low, high, shape, generator=g, dtype=dtype)


def cases(fn, shapes=SHAPES, dyn=True, dyn_fn=None, **kw):
    """One Case per shape (args = fn(shape)), plus a dynamic-batch one on the first shape
    (dyn_fn(shape) when given: dim 0 of every tensor becomes the batch symbol)."""
    out = [Case(lambda s=s: fn(s), **kw) for s in shapes]
    if dyn:
        out.append(Case(lambda s=shapes[0]: (dyn_fn or fn)(s), dynamic=DYN, **kw))
    return out


def same(s):
    """Two operands of shape s (for the dynamic variant of broadcasting binaries)."""
    return [rand(*s), rand(*s, seed=1)]


CASES = {}

# ---- elementwise binary (broadcasting second operands, Scalar overloads) ----
for name, extra in [("add", [2]), ("sub", [0.5]), ("mul", []), ("div", [])]:
    CASES[A + name + ".Tensor"] = cases(lambda s, e=extra: [rand(*s), rand(*s[1:], seed=1)] + e,
                                        dyn_fn=lambda s, e=extra: same(s) + e) + [
        Case(lambda e=extra: [rand(2, 1, 9), rand(2, 7, 1, seed=2)] + e)]
    CASES[A + name + ".Scalar"] = cases(lambda s, e=extra, n=name: [rand(*s), 0.75] + (e and [3] if n in ("add", "sub") else []))
CASES[A + "add.Tensor"].append(Case(lambda: [ints(3, 5), ints(3, 5, seed=1), 1]))
CASES[A + "rsub.Scalar"] = cases(lambda s: [rand(*s), 1.5, 2])
CASES[A + "div.Tensor_mode"] = (cases(lambda s: [rand(*s) * 5, rand(*s, seed=1), "trunc"])
                                 + cases(lambda s: [rand(*s) * 5, rand(*s, seed=1), "floor"], dyn=False))
CASES[A + "pow.Tensor_Scalar"] = cases(lambda s: [pos(*s), 2.5], tol=2e-5) + [Case(lambda: [rand(3, 5), 2])]
CASES[A + "pow.Tensor_Tensor"] = cases(lambda s: [pos(*s), rand(*s[1:], seed=1)], tol=2e-5,
                                       dyn_fn=lambda s: [pos(*s), rand(*s, seed=1)])
for name in ("maximum", "minimum"):
    CASES[A + name + ".default"] = cases(lambda s: [rand(*s), rand(*s[1:], seed=1)], dyn_fn=same)
for name in ("eq", "ne", "lt", "le", "gt", "ge"):
    # rounding to halves makes equal elements likely (eq/ne/le/ge see both outcomes)
    CASES[A + name + ".Tensor"] = cases(lambda s: [(rand(*s) * 2).round() / 2, (rand(*s[1:], seed=1) * 2).round() / 2],
                                        dyn_fn=lambda s: [(t * 2).round() / 2 for t in same(s)])
    CASES[A + name + ".Scalar"] = cases(lambda s: [(rand(*s) * 2).round() / 2, 0.5]) + [Case(lambda: [ints(7, 9), 1])]
for name in ("logical_and", "logical_or", "logical_xor"):
    CASES[A + name + ".default"] = cases(lambda s: [boolt(*s), boolt(*s, seed=1)]) + [
        Case(lambda: [rand(3, 5), boolt(3, 5)])]
CASES[A + "logical_not.default"] = cases(lambda s: [boolt(*s)]) + [Case(lambda: [(rand(3, 5) * 2).round()])]
CASES[A + "bitwise_not.default"] = [Case(lambda: [boolt(3, 5)]), Case(lambda: [ints(2, 7, 9)]),
                                    Case(lambda: [ints(1, 13, dtype=torch.int32)], dynamic=DYN)]
CASES[A + "where.self"] = cases(lambda s: [boolt(*s[1:], seed=3), rand(*s), rand(*s, seed=1)],
                               dyn_fn=lambda s: [boolt(*s, seed=3), rand(*s), rand(*s, seed=1)])
CASES[A + "masked_fill.Scalar"] = cases(lambda s: [rand(*s), boolt(*s[1:], seed=3), -1.5],
                                       dyn_fn=lambda s: [rand(*s), boolt(*s, seed=3), -1.5])
CASES[A + "masked_fill.Tensor"] = cases(lambda s: [rand(*s), boolt(*s, seed=3), rand(seed=4)])
CASES[A + "clamp.default"] = cases(lambda s: [rand(*s), -0.5, 0.75]) + [Case(lambda: [rand(2, 7, 9), None, 0.3]),
                                                                        Case(lambda: [rand(2, 7, 9), -0.3, None])]
CASES[A + "clamp_min.default"] = cases(lambda s: [rand(*s), -0.25])
CASES[A + "clamp_max.default"] = cases(lambda s: [rand(*s), 0.25])
CASES[A + "hardtanh.default"] = cases(lambda s: [rand(*s), -1.0, 0.5])

# ---- elementwise unary and activations ----
UNARY = {"neg": rand, "abs": rand, "exp": rand, "log": pos, "sqrt": pos, "rsqrt": pos, "reciprocal": rand,
         "sin": rand, "cos": rand, "erf": rand, "floor": rand, "ceil": rand, "round": rand, "sign": rand,
         "relu": rand, "silu": rand, "sigmoid": rand, "tanh": rand, "hardswish": lambda *s: rand(*s, low=-4, high=4),
         "hardsigmoid": lambda *s: rand(*s, low=-4, high=4), "log_sigmoid": rand}
for name, gen in UNARY.items():
    CASES[A + name + ".default"] = cases(lambda s, g=gen: [g(*s)], tol=2e-5)
CASES[A + "neg.default"].append(Case(lambda: [ints(3, 5)]))
CASES[A + "abs.default"].append(Case(lambda: [ints(2, 7, 9)]))
CASES[A + "leaky_relu.default"] = cases(lambda s: [rand(*s), 0.2])
CASES[A + "gelu.default"] = cases(lambda s: [rand(*s), "none"], tol=2e-5) + cases(lambda s: [rand(*s), "tanh"], tol=2e-5, dyn=False)
CASES[A + "elu.default"] = cases(lambda s: [rand(*s), 1.3, 1.0, 0.7], tol=2e-5)
CASES[A + "softplus.default"] = cases(lambda s: [rand(*s) * 4, 2.0, 3.0], tol=2e-5)

# ---- casts ----


def _to(dt):
    return lambda x, *rest: x.to(dt)


CASES[A + "_to_copy.default"] = [
    Case(lambda: [rand(3, 5), "float16", None, None, None, False, None], ref=_to(torch.float16), tol=1e-3),
    Case(lambda: [rand(2, 7, 9) * 4, "int64", None, None, None, False, None], ref=_to(torch.int64)),
    Case(lambda: [ints(1, 13), "float32", None, None, None, False, None], ref=_to(torch.float32), dynamic=DYN),
    Case(lambda: [rand(2, 7, 9), "bool", None, None, None, False, None], ref=_to(torch.bool)),
]
CASES[A + "to.dtype"] = [
    Case(lambda: [rand(3, 5) * 4, "int32", False, False, None], ref=_to(torch.int32)),
    Case(lambda: [boolt(2, 7, 9), "float32", False, False, None], ref=_to(torch.float32), dynamic=DYN),
]

# ---- creation (no tensor input, or a template tensor) ----
TAIL4 = [None, None, None, False]          # dtype, layout, device, pin_memory
CASES[A + "arange.default"] = [Case(lambda: [7] + TAIL4), Case(lambda: [13.0] + TAIL4)]
CASES[A + "arange.start"] = [Case(lambda: [2, 11] + TAIL4), Case(lambda: [-3, 4] + TAIL4)]
CASES[A + "arange.start_step"] = [Case(lambda: [1, 12, 3] + TAIL4), Case(lambda: [0.5, 3.0, 0.25] + TAIL4),
                                  Case(lambda: [10, 1, -2] + TAIL4)]
CASES[A + "full.default"] = [Case(lambda: [[3, 5], 2.5] + TAIL4), Case(lambda: [[2, 7, 9], 4] + TAIL4)]
CASES[A + "zeros.default"] = [Case(lambda: [[3, 5]] + TAIL4), Case(lambda: [[1, 13, 3]] + TAIL4)]
CASES[A + "ones.default"] = [Case(lambda: [[3, 5]] + TAIL4), Case(lambda: [[2, 7, 9]] + TAIL4)]
CASES[A + "full_like.default"] = cases(lambda s: [rand(*s), 9] + TAIL4 + [None]) + [Case(lambda: [ints(3, 5), 2.0] + TAIL4 + [None])]
CASES[A + "zeros_like.default"] = cases(lambda s: [rand(*s)] + TAIL4 + [None])
CASES[A + "ones_like.default"] = cases(lambda s: [rand(*s)] + TAIL4 + [None]) + [Case(lambda: [ints(2, 7)] + TAIL4 + [None])]
CASES[A + "scalar_tensor.default"] = [Case(lambda: [2.5] + TAIL4), Case(lambda: [-3.0] + TAIL4)]

# ---- reductions ----
R3 = [(3, 5, 7), (2, 9, 13), (1, 4, 33)]
CASES[A + "sum.dim_IntList"] = (cases(lambda s: [rand(*s), [1], False, None], R3)
                               + cases(lambda s: [rand(*s), [0, 2], True, None], R3, dyn=False))
CASES[A + "sum.default"] = cases(lambda s: [rand(*s), None], R3, dyn=False, tol=1e-4)
CASES[A + "mean.dim"] = (cases(lambda s: [rand(*s), [-1], True, None], R3)
                         + cases(lambda s: [rand(*s), [0, 1], False, None], R3, dyn=False))
CASES[A + "mean.default"] = cases(lambda s: [rand(*s), None], R3, dyn=False)
CASES[A + "amax.default"] = cases(lambda s: [rand(*s), [2], False], R3) + [Case(lambda: [rand(3, 5, 7), [0, 1], True])]
CASES[A + "amin.default"] = cases(lambda s: [rand(*s), [1], True], R3) + [Case(lambda: [rand(3, 5, 7), [0, 2], False])]
CASES[A + "var.correction"] = cases(lambda s: [rand(*s), [1], 1, False], R3) + [Case(lambda: [rand(2, 9, 13), [0, 2], 0, True])]
CASES[A + "var.dim"] = cases(lambda s: [rand(*s), [2], True, False], R3) + [Case(lambda: [rand(2, 9, 13), [1], False, True])]
CASES[A + "var_mean.correction"] = cases(lambda s: [rand(*s), [1], 1, False], R3) + [
    Case(lambda: [rand(2, 9, 13), [2], 0, True])]
CASES[A + "argmax.default"] = cases(lambda s: [rand(*s), 1, False], R3) + [Case(lambda: [rand(2, 9, 13), -1, True])]
CASES[A + "argmin.default"] = cases(lambda s: [rand(*s), 2, True], R3) + [Case(lambda: [rand(2, 9, 13), 0, False])]
CASES[A + "max.dim"] = cases(lambda s: [rand(*s), 1, False], R3) + [Case(lambda: [rand(2, 9, 13), -1, True])]
CASES[A + "prod.dim_int"] = cases(lambda s: [rand(*s, low=0.5, high=1.5), 1, False, None], R3, tol=1e-4)

# ---- softmax and normalisation ----
CASES[A + "_softmax.default"] = cases(lambda s: [rand(*s) * 3, -1, False], R3) + [Case(lambda: [rand(3, 5, 7), 1, False])]
CASES[A + "_log_softmax.default"] = cases(lambda s: [rand(*s) * 3, -1, False], R3) + [Case(lambda: [rand(3, 5, 7), 0, False])]
CASES[A + "softmax.int"] = cases(lambda s: [rand(*s) * 3, 2, None], R3)
CASES[A + "log_softmax.int"] = cases(lambda s: [rand(*s) * 3, 1, None], R3)
CASES[A + "layer_norm.default"] = [
    Case(lambda: [rand(3, 5, 33), [33], Const(rand(33, seed=1)), Const(rand(33, seed=2)), 1e-5, True], tol=1e-4),
    Case(lambda: [rand(2, 5, 7), [5, 7], None, None, 1e-5, True], tol=1e-4),
    Case(lambda: [rand(3, 13), [13], Const(rand(13, seed=3)), None, 1e-6, True], tol=1e-4, dynamic=DYN),
]
CASES[A + "native_layer_norm.default"] = [
    Case(lambda: [rand(3, 5, 33), [33], Const(rand(33, seed=1)), Const(rand(33, seed=2)), 1e-5], tol=1e-4, keep=[0]),
    Case(lambda: [rand(2, 7, 9), [9], None, None, 1e-5], tol=1e-4, keep=[0]),
]
CASES[A + "rms_norm.default"] = [
    Case(lambda: [rand(3, 5, 33), [33], Const(rand(33, seed=1)), 1e-6], tol=1e-4),
    # eps None: the input dtype's epsilon (bfloat16's is 2^-7, not float32's)
    Case(lambda: [rand(2, 7), [7], None, None], tol=1e-4, bf16_float_ref=False),
    Case(lambda: [rand(2, 3, 5, 9), [9], Const(rand(9, seed=2)), 1e-5], tol=1e-4),
    Case(lambda: [rand(3, 13), [13], Const(rand(13, seed=3)), 1e-6], tol=1e-4, dynamic=DYN),
]
CASES[A + "group_norm.default"] = [
    Case(lambda: [rand(2, 6, 5, 7), 3, Const(rand(6, seed=3)), Const(rand(6, seed=4)), 1e-5, True], tol=1e-4),
    Case(lambda: [rand(1, 4, 9), 2, None, None, 1e-5, True], tol=1e-4),
]
CASES[A + "native_group_norm.default"] = [
    Case(lambda: [rand(2, 6, 5, 7), Const(rand(6, seed=3)), Const(rand(6, seed=4)), 2, 6, 35, 3, 1e-5], tol=1e-4, keep=[0]),
    Case(lambda: [rand(3, 4, 9), None, None, 3, 4, 9, 2, 1e-5], tol=1e-4, keep=[0]),
]


def _bn(c, seed=0):
    return [Const(rand(c, seed=seed)), Const(rand(c, seed=seed + 1)), Const(rand(c, seed=seed + 2)),
            Const(pos(c, seed=seed + 3))]


CASES[A + "batch_norm.default"] = [
    Case(lambda: [rand(2, 5, 7, 9)] + _bn(5) + [False, 0.1, 1e-5, True], tol=1e-4),
    Case(lambda: [rand(3, 3, 11)] + _bn(3, 7) + [False, 0.1, 1e-3, True], tol=1e-4, dynamic=DYN),
]
CASES[A + "_native_batch_norm_legit_no_training.default"] = [
    Case(lambda: [rand(2, 5, 7, 9)] + _bn(5) + [0.1, 1e-5], tol=1e-4, keep=[0]),
    Case(lambda: [rand(3, 3, 11)] + _bn(3, 7) + [0.1, 1e-5], tol=1e-4, keep=[0]),
]

# ---- convolution and pooling ----
CASES[A + "convolution.default"] = [
    Case(lambda: [rand(2, 3, 9, 11), Const(rand(5, 3, 3, 3, seed=1)), Const(rand(5, seed=2)), [1, 1], [1, 1], [1, 1],
                  False, [0, 0], 1], tol=1e-4),
    Case(lambda: [rand(1, 6, 13, 7), Const(rand(6, 2, 3, 1, seed=1)), None, [2, 1], [0, 1], [1, 1], False, [0, 0], 3],
         tol=1e-4),
    Case(lambda: [rand(3, 4, 8, 8), Const(rand(4, 1, 3, 3, seed=1)), Const(rand(4, seed=2)), [1, 1], [2, 2], [2, 2],
                  False, [0, 0], 4], tol=1e-4, dynamic=DYN),
]
CASES[A + "conv2d.default"] = [
    Case(lambda: [rand(2, 3, 9, 11), Const(rand(5, 3, 3, 3, seed=1)), Const(rand(5, seed=2)), [1, 1], [1, 1], [1, 1], 1],
         tol=1e-4),
    Case(lambda: [rand(1, 4, 7, 7), Const(rand(8, 2, 1, 1, seed=1)), None, [2, 2], [0, 0], [1, 1], 2], tol=1e-4),
]
CASES[A + "conv1d.default"] = [
    Case(lambda: [rand(2, 3, 17), Const(rand(5, 3, 3, seed=1)), None, [2], [1], [1], 1], tol=1e-4),
    Case(lambda: [rand(1, 4, 9), Const(rand(4, 1, 5, seed=1)), Const(rand(4, seed=2)), [1], [2], [1], 4], tol=1e-4),
]
def _bytes(*shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    lo, hi = (-128, 128) if dtype == torch.int8 else (0, 256)
    return torch.randint(lo, hi, shape, generator=g).to(dtype)


CASES[A + "max_pool2d.default"] = [
    Case(lambda: [rand(2, 3, 9, 11), [3, 3], [2, 2], [1, 1], [1, 1], False]),
    Case(lambda: [rand(1, 2, 8, 7), [2, 2], [2, 2], [0, 0], [1, 1], True]),
    Case(lambda: [rand(3, 2, 7, 7), [3, 3], [1, 1], [1, 1], [1, 1], False], dynamic=DYN),
    # 8-bit values (PT2E's stem pools u8 after its quantize moved before the pool): exact
    Case(lambda: [_bytes(2, 5, 9, 11, dtype=torch.uint8), [3, 3], [2, 2], [1, 1], [1, 1], False], tol=0,
         id="uint8"),
    Case(lambda: [_bytes(1, 3, 8, 7, dtype=torch.int8, seed=1), [2, 3], [2, 1], [1, 1], [1, 2], True], tol=0,
         id="int8"),
]
CASES[A + "max_pool2d_with_indices.default"] = [
    Case(lambda: [rand(2, 3, 9, 11), [3, 3], [2, 2], [1, 1], [1, 1], False], keep=[0]),
    Case(lambda: [rand(1, 2, 8, 7), [2, 2], [2, 2], [0, 0], [1, 1], False], keep=[0]),
]
CASES[A + "avg_pool2d.default"] = [
    Case(lambda: [rand(2, 3, 9, 11), [3, 3], [2, 2], [1, 1], False, True, None]),
    Case(lambda: [rand(1, 2, 8, 7), [2, 3], [2, 1], [1, 1], True, False, None]),
    Case(lambda: [rand(3, 2, 7, 7), [2, 2], [2, 2], [0, 0], False, True, None], dynamic=DYN),
]
CASES[A + "adaptive_avg_pool2d.default"] = [Case(lambda: [rand(2, 3, 9, 11), [1, 1]]), Case(lambda: [rand(1, 2, 8, 12), [4, 3]])]
CASES[A + "_adaptive_avg_pool2d.default"] = [Case(lambda: [rand(2, 3, 9, 11), [3, 5]]),
                                             Case(lambda: [rand(3, 2, 7, 7), [1, 1]], dynamic=DYN)]

# ---- matmul family ----
CASES[A + "mm.default"] = [Case(lambda: [rand(5, 7), rand(7, 9, seed=1)], tol=1e-4),
                           Case(lambda: [rand(1, 33), Const(rand(33, 3, seed=1))], tol=1e-4),
                           Case(lambda: [rand(3, 8), Const(rand(8, 5, seed=1))], tol=1e-4, dynamic=DYN)]
CASES[A + "bmm.default"] = [Case(lambda: [rand(2, 5, 7), rand(2, 7, 9, seed=1)], tol=1e-4),
                            Case(lambda: [rand(3, 1, 13), rand(3, 13, 4, seed=1)], tol=1e-4, dynamic=DYN)]
CASES[A + "addmm.default"] = [Case(lambda: [rand(9), rand(5, 7), rand(7, 9, seed=1), 0.5, 2.0], tol=1e-4),
                              Case(lambda: [Const(rand(3, 4)), rand(3, 11), Const(rand(11, 4, seed=1)), 1, 1], tol=1e-4)]
CASES[A + "linear.default"] = [Case(lambda: [rand(3, 7), Const(rand(5, 7, seed=1)), Const(rand(5, seed=2))], tol=1e-4),
                               Case(lambda: [rand(2, 9, 33), Const(rand(3, 33, seed=1)), None], tol=1e-4),
                               Case(lambda: [rand(3, 6), Const(rand(3, 6, seed=1)), Const(rand(3))], tol=1e-4, dynamic=DYN)]
CASES[A + "matmul.default"] = [Case(lambda: [rand(2, 5, 7), rand(2, 7, 9, seed=1)], tol=1e-4),
                               Case(lambda: [rand(2, 3, 5, 7), rand(7, 6, seed=1)], tol=1e-4),
                               Case(lambda: [rand(9, 7), rand(7, 5, seed=1)], tol=1e-4)]

# ---- indexing ----
CASES[A + "embedding.default"] = [Case(lambda: [Const(rand(11, 7)), ints(3, 5, low=0, high=11), -1, False, False]),
                                  Case(lambda: [Const(rand(20, 13)), ints(2, low=0, high=20), -1, False, False])]
CASES[A + "index_select.default"] = [Case(lambda: [rand(5, 7), 0, ints(4, low=0, high=5)]),
                                     Case(lambda: [rand(2, 9, 3), 1, ints(6, low=0, high=9)])]
CASES[A + "gather.default"] = [Case(lambda: [rand(5, 7), 1, ints(5, 3, low=0, high=7), False]),
                               Case(lambda: [rand(4, 3, 6), 0, ints(2, 3, 6, low=0, high=4), False])]
CASES[A + "index.Tensor"] = [
    ModelCase(lambda x, i: x[i], lambda: (rand(5, 7), ints(4, low=-5, high=5))),
    ModelCase(lambda x, i, j: x[:, i, j], lambda: (rand(2, 6, 9), ints(3, 4, low=0, high=6), ints(4, low=0, high=9, seed=1))),
]

# ---- views ----
CASES[A + "view.default"] = [Case(lambda: [rand(2, 3, 4), [6, 4]]), Case(lambda: [rand(3, 5, 7), [-1, 35]], dynamic=DYN)]
CASES[A + "reshape.default"] = [Case(lambda: [rand(2, 3, 4), [4, 6]]), Case(lambda: [rand(3, 5, 7), [-1, 7, 5]], dynamic=DYN)]
CASES[A + "_unsafe_view.default"] = [Case(lambda: [rand(2, 3, 4), [24]]), Case(lambda: [rand(7, 5), [5, 7]])]
CASES[A + "permute.default"] = [Case(lambda: [rand(2, 3, 5), [2, 0, 1]]), Case(lambda: [rand(3, 5, 7, 2), [0, 3, 1, 2]], dynamic=DYN)]
CASES[A + "transpose.int"] = [Case(lambda: [rand(2, 3, 5), 0, 2]), Case(lambda: [rand(3, 5, 7), -1, -2], dynamic=DYN)]
CASES[A + "t.default"] = [Case(lambda: [rand(5, 7)]), Case(lambda: [rand(9)])]
CASES[A + "expand.default"] = [Case(lambda: [rand(3, 1), [2, 3, 5], False]), Case(lambda: [rand(3, 1, 7), [3, 5, 7], False],
                                                                                   dynamic=DYN)]
CASES[A + "squeeze.dim"] = [Case(lambda: [rand(3, 1, 5), 1]), Case(lambda: [rand(3, 5), 1])]
CASES[A + "squeeze.dims"] = [Case(lambda: [rand(1, 3, 1, 5), [0, 2]]), Case(lambda: [rand(3, 1, 5, 1), [1, -1]], dynamic=DYN)]
CASES[A + "squeeze.default"] = [Case(lambda: [rand(1, 3, 1, 5)]), Case(lambda: [rand(7, 1)])]
CASES[A + "unsqueeze.default"] = [Case(lambda: [rand(3, 5), 1]), Case(lambda: [rand(3, 5), -1], dynamic=DYN)]
CASES[A + "flatten.using_ints"] = [Case(lambda: [rand(2, 3, 4, 5), 1, -1]), Case(lambda: [rand(3, 3, 4, 5), 1, 2], dynamic=DYN)]
CASES[A + "slice.Tensor"] = [Case(lambda: [rand(2, 3, 9), 2, 1, 8, 2]), Case(lambda: [rand(3, 7, 5), 1, -4, None, 1], dynamic=DYN),
                             Case(lambda: [rand(9, 4), 0, 2, 100, 3])]
CASES[A + "select.int"] = [Case(lambda: [rand(2, 3, 5), 1, -1]), Case(lambda: [rand(3, 7, 5), 2, 3], dynamic=DYN)]

# ---- data movement ----
CASES[A + "cat.default"] = [
    ModelCase(lambda a, b: torch.cat([a, b], 1), lambda: (rand(3, 5), rand(3, 7, seed=1))),
    ModelCase(lambda a, b, c: torch.cat([a, b, c], 0), lambda: (rand(2, 3, 5), rand(1, 3, 5, seed=1), rand(4, 3, 5, seed=2))),
]
CASES[A + "stack.default"] = [
    ModelCase(lambda a, b: torch.stack([a, b], 1), lambda: (rand(3, 5), rand(3, 5, seed=1))),
    ModelCase(lambda a, b, c: torch.stack([a, b, c], -1), lambda: (rand(2, 7), rand(2, 7, seed=1), rand(2, 7, seed=2))),
]
CASES[A + "split.Tensor"] = [Case(lambda: [rand(3, 11), 3, 1]), Case(lambda: [rand(7, 5), 2, 0])]
CASES[A + "split_with_sizes.default"] = [Case(lambda: [rand(9, 4), [2, 3, 4], 0]), Case(lambda: [rand(3, 7, 2), [5, 2], 1])]
CASES[A + "chunk.default"] = [Case(lambda: [rand(3, 10), 4, -1]), Case(lambda: [rand(7, 3), 3, 0])]
CASES[A + "unbind.int"] = [Case(lambda: [rand(3, 4, 5), 1]), Case(lambda: [rand(2, 7), 0])]
CASES[A + "constant_pad_nd.default"] = [Case(lambda: [rand(3, 5), [1, 2], 0.5]),
                                        Case(lambda: [rand(2, 3, 4, 5), [1, 0, 2, 1], 0]),
                                        Case(lambda: [rand(3, 7), [-1, 2], -3.0], dynamic=DYN)]
CASES[A + "upsample_nearest2d.vec"] = [Case(lambda: [rand(2, 3, 5, 7), [10, 14], None]),
                                       Case(lambda: [rand(1, 2, 4, 3), None, [2.0, 3.0]]),
                                       Case(lambda: [rand(3, 2, 5, 5), [7, 9], None], dynamic=DYN)]
CASES[A + "upsample_bilinear2d.vec"] = [Case(lambda: [rand(2, 3, 5, 7), [9, 13], False, None]),
                                        Case(lambda: [rand(1, 2, 4, 3), [7, 5], True, None]),
                                        Case(lambda: [rand(1, 2, 4, 3), None, False, [2.0, 2.0]])]

# ---- identities at inference ----
CASES[A + "dropout.default"] = [Case(lambda: [rand(3, 5), 0.5, False]), Case(lambda: [rand(2, 7, 9), 0.1, False], dynamic=DYN)]
CASES[A + "clone.default"] = [Case(lambda: [rand(3, 5), None]), Case(lambda: [ints(2, 7, 9), None], dynamic=DYN)]
CASES[A + "contiguous.default"] = [Case(lambda: [rand(3, 5), "contiguous_format"], ref=lambda x, f: x.contiguous())]
CASES[A + "detach.default"] = [Case(lambda: [rand(3, 5)]), Case(lambda: [rand(2, 7, 9)], dynamic=DYN)]
CASES[A + "alias.default"] = [Case(lambda: [rand(3, 5)]), Case(lambda: [boolt(2, 7)])]
CASES[A + "lift_fresh_copy.default"] = [Case(lambda: [rand(3, 5)]), Case(lambda: [rand(2, 7, 9)])]
