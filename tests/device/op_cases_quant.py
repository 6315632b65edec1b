"""Differential cases for the quantized ops (format: tests/opcase.py): PT2E's Q/DQ
(torch.ops.quantized_decomposed, registered by torch itself) and aten._int_mm, the int8 x int8
-> int32 product of torchao's dynamic int8 linears. Quantized and int32 outputs compare
exactly (convtest.assert_close): the engine rounds half to even and clamps as torch does, and
_int_mm accumulates in int (sums past 2^24, where a float accumulator would round, included)."""
from __future__ import annotations

import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  (registers torch.ops.quantized_decomposed)

from convtest import Const
from opcase import Case

qd = torch.ops.quantized_decomposed
_DT = {"int8": torch.int8, "uint8": torch.uint8}


def _ties(*shape, scale, seed=0):
    """Floats at and around the rounding ties of x / scale (k + 0.5 steps, both signs), and far
    outside the range (clamped)."""
    g = torch.Generator().manual_seed(seed)
    k = torch.randint(-300, 300, shape, generator=g).float()
    half = (torch.rand(shape, generator=g) < 0.5).float() * 0.5
    return ((k + half) * scale).float()


def _q(*shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    lo, hi = (-128, 128) if dtype == torch.int8 else (0, 256)
    return torch.randint(lo, hi, shape, generator=g).to(dtype)


def _quant_ref(x, s, zp, lo, hi, dt):
    return qd.quantize_per_tensor.default(x, s, zp, lo, hi, _DT[dt])


def _dequant_ref(q, s, zp, lo, hi, dt, out_dtype):
    return qd.dequantize_per_tensor.default(q, s, zp, lo, hi, _DT[dt])


def _int_mm_ref(a, b):
    return torch.ops.aten._int_mm.default(a, b)


def _i8(*shape, seed=0, lo=-128, hi=128):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(lo, hi, shape, generator=g).to(torch.int8)


CASES = {
    "quantized_decomposed.quantize_per_tensor.default": [
        Case(lambda: [_ties(3, 5, 7, scale=0.02), 0.02, 119, 0, 255, "uint8"], ref=_quant_ref, id="u8"),
        Case(lambda: [_ties(2, 9, 13, scale=0.037, seed=1), 0.037, 0, -128, 127, "int8"], ref=_quant_ref, id="s8"),
        Case(lambda: [_ties(33, scale=0.0031, seed=2), 0.0031, 3, -127, 127, "int8"], ref=_quant_ref, id="narrow"),
        Case(lambda: [_ties(6, 11, scale=0.05, seed=3), 0.05, 7, 0, 255, "uint8"], ref=_quant_ref, dynamic=(1, 6, 12),
             id="dynamic"),
    ],
    "quantized_decomposed.dequantize_per_tensor.default": [
        Case(lambda: [_q(3, 5, 7, dtype=torch.uint8), 0.0227, 119, 0, 255, "uint8", None], ref=_dequant_ref, tol=0,
             rtol=0, id="u8"),
        Case(lambda: [_q(4, 17, dtype=torch.int8, seed=1), 0.013, -3, -128, 127, "int8", None], ref=_dequant_ref, tol=0,
             rtol=0, id="s8"),
        Case(lambda: [_q(5, 9, dtype=torch.uint8, seed=2), 0.5, 0, 0, 255, "uint8", None], ref=_dequant_ref, tol=0,
             rtol=0, dynamic=(1, 5, 9), id="dynamic"),
    ],
    "aten._int_mm.default": [
        Case(lambda: [_i8(5, 37), _i8(37, 11, seed=1)], ref=_int_mm_ref, id="odd"),
        Case(lambda: [_i8(3, 64, seed=2), Const(_i8(64, 24, seed=3))], ref=_int_mm_ref, id="const_b"),
        # |sum| up to 1300 * 128 * 128 = 2.1e7 > 2^24: a float accumulator would round
        Case(lambda: [_i8(4, 1300, seed=4, lo=-128, hi=-100), _i8(1300, 6, seed=5, lo=-128, hi=-100)],
             ref=_int_mm_ref, id="past_2_24"),
        Case(lambda: [_i8(9, 40, seed=6), Const(_i8(40, 8, seed=7))], ref=_int_mm_ref, dynamic=(1, 9, 16), id="dynamic"),
    ],
}


# PT2E's int8 layers (torchtrt_c/dynamo/_quant.py): integer kernels against the op's reference
# (torch's dequantize + float conv2d/linear). With unit scales and no bias the output is the
# int32 accumulator itself and torch's float reference sums integers exactly (|sums| < 2^24):
# tol 0. With real scales the epilogue's folded scale (x_scale * w_scale[c]) rounds differently
# from torch's two dequantizations: within 1e-5.
from torchtrt_c.dynamo import _quant  # noqa: E402,F401  (registers torch.ops.torchtrt_c.qconv2d/qlinear)


_NO_BF16 = "PT2E's int8 layers take float32 scales and bias"


def _qref(op):
    return lambda *a: getattr(torch.ops.torchtrt_c, op).default(*a)


def _scales(n, seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(n, generator=g) * 0.02 + 0.001).float()


def _bias(n, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, generator=g).float()


CASES["torchtrt_c.qconv2d.default"] = [
    Case(lambda: [_q(2, 5, 9, 11, dtype=torch.uint8), 1.0, 0, Const(_i8(7, 5, 3, 3, seed=1)),
                  Const(torch.ones(7)), None, [1, 1], [1, 1], [1, 1], 1], ref=_qref("qconv2d"), tol=0, rtol=0,
         bf16_skip=_NO_BF16, id="exact_u8"),
    Case(lambda: [_q(1, 6, 8, 7, dtype=torch.int8, seed=2), 1.0, 0, Const(_i8(8, 3, 3, 2, seed=3)),
                  Const(torch.ones(8)), None, [2, 1], [1, 0], [1, 2], 2], ref=_qref("qconv2d"), tol=0, rtol=0,
         bf16_skip=_NO_BF16, id="exact_grouped_strided"),
    Case(lambda: [_q(2, 4, 10, 9, dtype=torch.uint8, seed=4), 0.0227, 119, Const(_i8(6, 4, 3, 3, seed=5)),
                  Const(_scales(6, 6)), Const(_bias(6, 7)), [1, 1], [1, 1], [1, 1], 1], ref=_qref("qconv2d"),
         tol=1e-5, bf16_skip=_NO_BF16, id="scaled"),
    Case(lambda: [_q(3, 8, 5, 5, dtype=torch.uint8, seed=8), 0.05, 3, Const(_i8(8, 1, 3, 3, seed=9)),
                  Const(_scales(8, 10)), Const(_bias(8, 11)), [1, 1], [1, 1], [1, 1], 8], ref=_qref("qconv2d"),
         tol=1e-5, dynamic=(1, 3, 4), bf16_skip=_NO_BF16, id="depthwise_dynamic"),
]
CASES["torchtrt_c.qlinear.default"] = [
    Case(lambda: [_q(5, 37, dtype=torch.uint8), 1.0, 0, Const(_i8(11, 37, seed=1)), Const(torch.ones(11)), None],
         ref=_qref("qlinear"), tol=0, rtol=0, bf16_skip=_NO_BF16, id="exact_u8"),
    Case(lambda: [_q(3, 64, dtype=torch.uint8, seed=2), 0.0031, 7, Const(_i8(24, 64, seed=3)), Const(_scales(24, 4)),
                  Const(_bias(24, 5))], ref=_qref("qlinear"), tol=1e-5, bf16_skip=_NO_BF16, id="scaled"),
    Case(lambda: [_q(6, 33, dtype=torch.int8, seed=6), 0.02, -4, Const(_i8(10, 33, seed=7)), Const(_scales(10, 8)),
                  None], ref=_qref("qlinear"), tol=1e-5, dynamic=(1, 6, 8), bf16_skip=_NO_BF16, id="s8_dynamic"),
]

# torchtrt_c.wq_linear(x, qweight, scales, zeros, group_size, bits): weight-only int8 (per
# channel) / int4 (groups, two per byte) linears; the reference is the op's torch
# implementation (dequantize, then linear). The sums run in another order than torch's: 1e-4
# relative, 1e-3 absolute (outputs up to ~30). tests/device/test_wq_linear.py covers every path.


def _wq_ref(x, q, s, z, group, bits):
    return torch.ops.torchtrt_c.wq_linear(x, q, s, z, group, bits)


def _wq(M, N, K, group, bits, zeros, seed=0, dtype=torch.float32):
    from test_wq_linear import random_weights   # tests/device is on the harness's path
    q, s, z = random_weights(N, K, group, bits, zeros=zeros, seed=seed)
    x = (torch.rand(*M, K, generator=torch.Generator().manual_seed(seed + 100)) * 2 - 1).to(dtype)
    return [x, Const(q), Const(s), None if z is None else Const(z), group, bits]


_NO_BF16_WQ = "activations float32/float16 (the weights are int8/int4)"
CASES["torchtrt_c.wq_linear.default"] = [
    Case(lambda: _wq((1,), 37, 64, 64, 8, False), ref=_wq_ref, tol=1e-3, rtol=1e-4, bf16_skip=_NO_BF16_WQ,
         id="int8_decode"),
    Case(lambda: _wq((3,), 48, 160, 32, 8, True, seed=1), ref=_wq_ref, tol=1e-3, rtol=1e-4, bf16_skip=_NO_BF16_WQ,
         id="int8_groups_zeros"),
    Case(lambda: _wq((5,), 31, 96, 32, 4, True, seed=2), ref=_wq_ref, tol=1e-3, rtol=1e-4, bf16_skip=_NO_BF16_WQ,
         id="int4"),
    Case(lambda: _wq((2, 5), 64, 256, 64, 4, True, seed=3), ref=_wq_ref, tol=1e-3, rtol=1e-4,
         bf16_skip=_NO_BF16_WQ, id="int4_rank3"),
    Case(lambda: _wq((1,), 33, 128, 32, 4, True, seed=4, dtype=torch.float16), ref=_wq_ref, tol=2e-2, rtol=2e-2,
         precision="fp16", bf16_skip=_NO_BF16_WQ, id="int4_fp16"),
]
