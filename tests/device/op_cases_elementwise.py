"""Differential cases (tests/opcase.py format) for the elementwise ops of issue 11, converters
A: bitwise and/or/xor, inverse/hyperbolic trigonometry, expm1/log1p/log10/log2, trunc,
isinf/isnan, atan2, fmod, remainder; plus cumsum (a scan kernel) and the data-dependent ops
that stay with torch (see FALLBACKS).

Tolerances: fp32 ops compare at atol = rtol = 1e-5 against torch eager (OpenCL's built-ins
are within a few ulp); integer and bool results must match exactly.
"""
from __future__ import annotations

import math

import torch

from convtest import rand
from opcase import Case

INF, NAN = math.inf, math.nan


def ints(*shape, low=-9, high=10, dtype=torch.int64, seed=0, nonzero=False):
    g = torch.Generator().manual_seed(hash((shape, low, high, seed)) & 0xFFFFFFFF)
    t = torch.randint(low, high, shape, generator=g)
    if nonzero:
        t = torch.where(t == 0, torch.ones_like(t), t)
    return t.to(dtype)


def bools(*shape, seed=0):
    g = torch.Generator().manual_seed(hash((shape, "b", seed)) & 0xFFFFFFFF)
    return torch.rand(shape, generator=g) > 0.5


def specials(*shape):
    """Random floats with inf, -inf and nan sprinkled in (isinf/isnan inputs)."""
    t = rand(*shape).flatten()
    t[0::5] = INF
    t[1::7] = -INF
    t[2::3] = NAN
    return t.reshape(shape)


def away(t, step, margin=1e-3):
    """t moved off the multiples of step where fmod/remainder jump (a rounding difference
    there flips the result by a whole step)."""
    q = t / step
    near = (q - q.round()).abs() < margin
    return torch.where(near, t + 3 * margin * step, t)


def _bitwise(op):
    T, S = f"aten.{op}.Tensor", f"aten.{op}.Scalar"
    return {
        T: [
            Case(lambda: [bools(3, 5), bools(3, 5, seed=1)], id="bool"),
            Case(lambda: [bools(2, 1, 7, 7), bools(1, 1, 7, 7, seed=1)], id="bool-broadcast-mask"),
            Case(lambda: [ints(4, 9, low=-100, high=100), ints(4, 9, low=-100, high=100, seed=1)], id="int64"),
            Case(lambda: [ints(3, 1, 5, dtype=torch.int32), ints(7, 1, dtype=torch.int32, seed=1)], id="int32-broadcast"),
            Case(lambda: [ints(13, low=0, high=255, dtype=torch.uint8), ints(13, low=0, high=255, dtype=torch.uint8, seed=2)],
                 id="uint8"),
            Case(lambda: [ints(6, 5), bools(6, 5)], id="int-bool-promote"),
            Case(lambda: [bools(2, 9, 3), bools(2, 9, 3, seed=3)], dynamic=(1, 2, 4), id="dynamic"),
        ],
        S: [
            Case(lambda: [ints(3, 5, low=-100, high=100), 6], id="int64"),
            Case(lambda: [ints(7, 3, dtype=torch.int32), -3], id="int32-negative"),
            Case(lambda: [bools(5, 11), True], id="bool-true"),
            Case(lambda: [bools(5, 11), False], id="bool-false"),
        ],
    }


def _unary(name, gen, tol=1e-5, int_input=True):
    cases = [
        Case(lambda: [gen(3, 5)], tol=tol, id="3x5"),
        Case(lambda: [gen(2, 7, 9)], tol=tol, id="2x7x9"),
        Case(lambda: [gen(1)], tol=tol, id="1"),
        Case(lambda: [gen(2, 17)], tol=tol, dynamic=(1, 2, 5), id="dynamic"),
    ]
    if int_input:
        cases.append(Case(lambda: [ints(4, 6, low=1, high=5)], tol=tol, id="int64-promotes"))
    return {f"aten.{name}.default": cases}


def _mod(name):
    """fmod / remainder: both signs of both operands, float and int, Tensor and Scalar."""
    T, S = f"aten.{name}.Tensor", f"aten.{name}.Scalar"

    def ft(*shape):
        b = rand(*shape, seed=1, low=-3, high=3)
        a = rand(*shape, low=-10, high=10)
        # keep a/b off integers: fmod/remainder jump by |b| there
        q = a / b
        a = torch.where((q - q.round()).abs() < 1e-3, a + 0.01 * b, a)
        return [a, b]

    return {
        T: [
            Case(lambda: ft(3, 5), id="float"),
            Case(lambda: ft(2, 7, 9), id="float-odd"),
            Case(lambda: [ints(5, 7, low=-20, high=20), ints(5, 7, low=-6, high=7, seed=1, nonzero=True)], id="int64-signs"),
            Case(lambda: [ints(3, 11, low=-50, high=50, dtype=torch.int32), ints(11, low=-4, high=5, seed=2, nonzero=True,
                                                                                   dtype=torch.int32)], id="int32-broadcast"),
            Case(lambda: [ints(4, 5, low=-20, high=20), rand(4, 5, low=0.5, high=3)], id="int-float-promote"),
        ],
        S: [
            Case(lambda: [away(rand(3, 5, low=-10, high=10), 0.7), 0.7], id="float-pos"),
            Case(lambda: [away(rand(9, 7, low=-10, high=10), 1.3), -1.3], id="float-neg"),
            Case(lambda: [ints(5, 7, low=-20, high=20), 3], id="int-pos"),
            Case(lambda: [ints(5, 7, low=-20, high=20), -4], id="int-neg"),
            Case(lambda: [away(rand(2, 13, low=-10, high=10), 2.5), 2.5], dynamic=(1, 2, 3), id="dynamic"),
        ],
    }


def _cumsum():
    return {
        "aten.cumsum.default": [
            Case(lambda: [rand(3, 5), 1, None], id="float-dim1"),
            Case(lambda: [rand(2, 7, 9), -1, None], id="float-last"),
            Case(lambda: [rand(7, 3, 5), 0, None], id="float-dim0"),
            Case(lambda: [rand(2, 5, 3).permute(0, 2, 1), 2, None], id="permuted-values"),
            Case(lambda: [rand(33), 0, None], tol=1e-5, id="1d"),
            Case(lambda: [ints(4, 9, low=-5, high=6), 1, None], id="int64"),
            Case(lambda: [ints(3, 7, dtype=torch.int32), 1, None], id="int32-promotes"),
            Case(lambda: [bools(2, 13), 1, None], id="bool-mask-promotes"),
            # the IR spells dtype arguments as torch ScalarType codes (6: float32)
            Case(lambda: [ints(3, 6, low=0, high=2), -1, 6], ref=lambda x, d, _: torch.cumsum(x, d, dtype=torch.float32),
                 id="dtype-arg"),
            Case(lambda: [rand(2, 11, 3), 1, None], dynamic=(1, 2, 4), id="dynamic"),
            # fp16 engine: accumulates in float, rounds once per stored element
            Case(lambda: [rand(3, 17), 1, None], tol=2e-3, rtol=2e-3, precision="fp16", id="fp16"),
        ],
    }


CASES: dict = {}
for _op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    CASES.update(_bitwise(_op))
CASES.update(_unary("acos", lambda *s: rand(*s, low=-0.99, high=0.99), int_input=False))
CASES.update(_unary("asin", lambda *s: rand(*s, low=-0.99, high=0.99), int_input=False))
CASES.update(_unary("atanh", lambda *s: rand(*s, low=-0.95, high=0.95), int_input=False))
CASES.update(_unary("acosh", lambda *s: rand(*s, low=1.01, high=8)))
CASES.update(_unary("asinh", lambda *s: rand(*s, low=-8, high=8)))
CASES.update(_unary("atan", lambda *s: rand(*s, low=-8, high=8)))
CASES.update(_unary("cosh", lambda *s: rand(*s, low=-5, high=5)))
CASES.update(_unary("sinh", lambda *s: rand(*s, low=-5, high=5)))
CASES.update(_unary("tan", lambda *s: rand(*s, low=-1.4, high=1.4)))
CASES.update(_unary("expm1", lambda *s: rand(*s, low=-3, high=3)))
CASES.update(_unary("log10", lambda *s: rand(*s, low=0.01, high=50)))
CASES.update(_unary("log1p", lambda *s: rand(*s, low=-0.9, high=20)))
CASES.update(_unary("log2", lambda *s: rand(*s, low=0.01, high=50)))
CASES.update(_unary("trunc", lambda *s: rand(*s, low=-20, high=20)))
CASES["aten.trunc.default"].append(Case(lambda: [ints(3, 7)], id="int-identity"))
for _op in ("isinf", "isnan"):
    CASES[f"aten.{_op}.default"] = [
        Case(lambda: [specials(3, 5)], id="specials"),
        Case(lambda: [specials(2, 7, 9)], id="specials-odd"),
        Case(lambda: [torch.tensor([INF, -INF, NAN, 0.0, -0.0, 3.4e38, 1e-40])], id="edges"),
        Case(lambda: [ints(4, 5)], id="int-never"),
        Case(lambda: [specials(3, 11)], dynamic=(1, 3, 4), id="dynamic"),
    ]
CASES["aten.atan2.default"] = [
    Case(lambda: [rand(3, 5), rand(3, 5, seed=1)], id="3x5"),
    Case(lambda: [rand(2, 7, 9), rand(7, 1, seed=1)], id="broadcast"),
    Case(lambda: [torch.tensor([0.0, -0.0, 1.0, -1.0, 2.0, -2.0]), torch.tensor([1.0, 1.0, 0.0, 0.0, -1.0, -1.0])],
         id="axes-and-signs"),
    Case(lambda: [ints(3, 4, nonzero=True), ints(3, 4, seed=1, nonzero=True)], id="int-promotes"),
]
# fp16 engines compute these in float from half operands (codegen.c half_op): one rounding
for _op, _gen in (("acos", lambda: rand(3, 7, low=-0.9, high=0.9)), ("expm1", lambda: rand(2, 9)),
                  ("log1p", lambda: rand(5, 3, low=0, high=9))):
    CASES[f"aten.{_op}.default"].append(Case(lambda g=_gen: [g()], tol=2e-3, rtol=2e-3, precision="fp16", id="fp16"))
CASES["aten.atan2.default"].append(Case(lambda: [rand(3, 5), rand(3, 5, seed=1)], tol=2e-3, rtol=2e-3,
                                        precision="fp16", id="fp16"))
CASES.update(_mod("fmod"))
CASES.update(_mod("remainder"))
CASES.update(_cumsum())

# Known ops that stay with torch, with the reason the partition report must show.
FALLBACKS = {
    "aten.nonzero.default": "data-dependent output shape",
    "aten.resize_.default": "in-place",
}
