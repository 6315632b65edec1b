"""Differential cases for reductions of integer and bool inputs (format: tests/opcase.py).
The REDUCE kernel accumulates these in long, never through float: values past 2^24 (int32)
and 2^53 (int64) that differ only in low bits must still order and sum exactly, sum of
int32/bool promotes to int64 as in torch, and argmax/argmin return the FIRST index of a tie
(torch refuses argmax/argmin of bool, so bool cases are amax/amin/sum and the CLIP pattern
`(ids == eos).int().argmax(-1)`).
Integer outputs compare exactly (convtest.assert_close)."""
from __future__ import annotations

import torch

from opcase import Case, ModelCase

aten = torch.ops.aten


def _big(*shape, dtype=torch.int32, seed=0):
    """Values 2^30 + small distinct-ish offsets (int32) or 2^60 + offsets (int64): a float
    accumulator would round neighbours to the same value."""
    g = torch.Generator().manual_seed(seed)
    base = 2 ** 30 if dtype == torch.int32 else 2 ** 60
    off = torch.randint(-40, 41, shape, generator=g)
    sign = torch.where(torch.rand(shape, generator=g) < 0.3, -1, 1)
    return (sign * base + off).to(dtype)


def _ties(*shape, dtype=torch.int32, seed=1, low=-3, high=4):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(low, high, shape, generator=g).to(dtype)


def _bool(*shape, seed=2, p=0.3):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(shape, generator=g) < p


def _u8(*shape, seed=3):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, shape, generator=g).to(torch.uint8)  # >127: a signed load would misorder


def _i8(*shape, seed=4):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-128, 128, shape, generator=g).to(torch.int8)


def _arg_cases():
    return [
        Case(lambda: [_big(3, 37), -1, False], id="int32_big_inner"),
        Case(lambda: [_big(5, 9, 4), 1, True], id="int32_big_mid_keepdim"),
        Case(lambda: [_big(4, 17, dtype=torch.int64), -1, False], id="int64_big_inner"),
        Case(lambda: [_big(7, 3, dtype=torch.int64), 0, False], id="int64_big_outer"),
        Case(lambda: [_ties(6, 13), -1, False], id="int32_ties_inner"),
        Case(lambda: [_ties(9, 5, 3), 0, True], id="int32_ties_outer_keepdim"),
        Case(lambda: [_ties(2, 3, 11, dtype=torch.int64), 2, False], id="int64_ties"),
        Case(lambda: [_big(5, 23), None, False], id="int32_flat"),
        Case(lambda: [_ties(3, 4, 5), None, True], id="int32_flat_keepdim_ties"),
        Case(lambda: [_u8(4, 29), -1, False], id="uint8"),
        Case(lambda: [_i8(3, 6, 7), 1, False], id="int8"),
    ]


def _minmax_cases():
    return [
        Case(lambda: [_big(3, 37), [-1], False], id="int32_big_inner"),
        Case(lambda: [_big(5, 9, 4), [0, 2], True], id="int32_big_two_dims_keepdim"),
        Case(lambda: [_big(4, 17, dtype=torch.int64), [1], False], id="int64_big"),
        Case(lambda: [_big(3, 5, 7), [], False], id="int32_all_dims"),
        Case(lambda: [_u8(4, 29), [-1], False], id="uint8"),
        Case(lambda: [_i8(3, 6, 7), [1], True], id="int8"),
        Case(lambda: [_bool(5, 19), [-1], False], id="bool"),
    ]


def _sum_dim_cases():
    return [
        Case(lambda: [_big(3, 37), [-1], False, None], id="int32_big_to_int64"),
        Case(lambda: [_big(5, 9, 4), [0, 2], True, None], id="int32_big_two_dims_keepdim"),
        Case(lambda: [_big(4, 7, dtype=torch.int64), [1], False, None], id="int64_big"),
        Case(lambda: [_u8(4, 29), [-1], False, None], id="uint8_to_int64"),
        Case(lambda: [_i8(3, 6, 7), [1], True, None], id="int8_to_int64"),
        Case(lambda: [_bool(5, 19), [-1], False, None], id="bool_count"),
        Case(lambda: [_bool(3, 4, 5), [0, 1], False, None], id="bool_two_dims"),
    ]


def _clip_pool(h, ids):
    """CLIP text's pooled-token lookup: the row of the first EOS (largest id) per sequence."""
    idx = (ids == 49407).int().argmax(-1)
    return h[torch.arange(h.shape[0]), idx]


def _clip_inputs():
    g = torch.Generator().manual_seed(5)
    ids = torch.randint(0, 1000, (3, 11), generator=g)
    ids[0, 4] = ids[0, 9] = 49407  # two EOS: the first one counts
    ids[1, 10] = 49407
    ids[2, 0] = 49407
    return torch.randn(3, 11, 8, generator=g), ids


CASES = {
    "aten.argmax.default": _arg_cases(),
    "aten.argmin.default": _arg_cases(),
    "aten.amax.default": _minmax_cases(),
    "aten.amin.default": _minmax_cases(),
    "aten.sum.dim_IntList": _sum_dim_cases(),
    "aten.sum.default": [
        Case(lambda: [_big(4, 9), None], id="int32_big_to_int64"),
        Case(lambda: [_big(3, 5, dtype=torch.int64), None], id="int64_big"),
        Case(lambda: [_bool(7, 13), None], id="bool_count"),
    ],
}
# the whole compile path (min_block_size=1): the eq/int/argmax/index chain in engines only
CASES["aten.argmax.default"].append(ModelCase(_clip_pool, _clip_inputs, id="clip_eos_pool"))
