"""The per-row dynamic quantization around _int_mm as native steps on the CPU (issue 35): a row
max / min of a native op's result (csrc/backend/cpu/native_reduce.c) and the quantize to int8
as a native elementwise step storing 8-bit values (native_epi.c, out_q8; its int8 zero-point
leaf gathered as floats), as torchao's choose_qparams_affine / quantize_affine compute them.

The module returns the linear's result y with the row max, min, scale and quantized rows; the
reference recomputes the rest from the engine's own y (torch's linear sums in another order),
so every value compares exactly: max/min pick elements, the scale and the quantize are the same
float32 operations (round half to even, clamp, cast). A row of NaN gives NaN max/min as torch's.
Each engine is built twice, native and with TORCHTRT_C_NATIVE_ELEMENTWISE=0 (OpenCL kernels)."""
from __future__ import annotations

import pytest
import torch

import torchtrt_c
from torchtrt_c import _C, settings
from engine_kernels import kernels as _kernels


class RowQuant(torch.nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.lin = torch.nn.Linear(k, n)

    def forward(self, x, zp):
        y = self.lin(x)
        mx = torch.amax(y, -1, keepdim=True)
        mn = torch.amin(y, -1, keepdim=True)
        scale = torch.clamp(torch.maximum(-torch.minimum(mn, torch.zeros_like(mn)), torch.maximum(mx, torch.zeros_like(mx)))
                            / 127.5, min=1.1920928955078125e-07)
        q = torch.clamp(torch.round(y * (1.0 / scale)) + zp, -128, 127).to(torch.int8)
        return y, mx, mn, scale, q


def _ref(y, zp):
    mx, mn = torch.amax(y, -1, keepdim=True), torch.amin(y, -1, keepdim=True)
    scale = torch.clamp(torch.maximum(-torch.minimum(mn, torch.zeros_like(mn)), torch.maximum(mx, torch.zeros_like(mx)))
                        / 127.5, min=1.1920928955078125e-07)
    q = torch.clamp(torch.round(y * (1.0 / scale)) + zp, -128, 127).to(torch.int8)
    return mx, mn, scale, q


# x's leading dims, K, N (the reduced row length)
SHAPES = [((5,), 24, 37), ((33,), 16, 1000), ((2, 7), 48, 64), ((3,), 8, 1)]


@pytest.mark.parametrize("native", [True, False], ids=["native", "opencl"])
@pytest.mark.parametrize("lead,k,n", SHAPES, ids=[f"{'x'.join(map(str, s))}x{k}x{n}" for s, k, n in SHAPES])
def test_row_minmax_and_quantize_exact(lead, k, n, native):
    torch.manual_seed(n)
    mod = RowQuant(k, n).eval()
    x = torch.randn(*lead, k) * 3
    x.view(-1, k)[1 % x.view(-1, k).shape[0]] = float("nan")   # a NaN row (the second, or the only one)
    zp = torch.zeros(*lead, 1, dtype=torch.int8)
    with settings.override(NATIVE_ELEMENTWISE=native), torch.no_grad():
        gm = torchtrt_c.compile(mod, inputs=[x, zp], require_full_compilation=True, cache_built_engines=False,
                                reuse_cached_engines=False)
        ks = _kernels(gm)
        y, *got = gm(x, zp)
    red = [kk for kk in ks if " reduce:" in kk]
    quant = [kk for kk in ks if " elementwise:" in kk and "round" in kk]
    assert len(red) == 2 and quant, ks
    if _C.native_cpu().get("available"):
        assert all(("(native)" in kk) == native for kk in red + quant), ks
    want = _ref(y, zp)
    names = ["max", "min", "scale", "q"]
    for nm, g, w in zip(names, got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, nm
        assert torch.equal(g, w) or (g.isnan() == w.isnan()).all() and torch.equal(g[~g.isnan()], w[~w.isnan()]), \
            f"{nm}: {int((g != w).sum())} differ"
    rows = y.view(-1, n)
    assert rows[1 % rows.shape[0]].isnan().all() and got[0].view(-1)[1 % rows.shape[0]].isnan()


def test_row_quantize_ties_round_half_to_even():
    """Values on the quantize's rounding ties (k + 0.5 steps) land on the even integer, as torch's."""
    mod = RowQuant(4, 9).eval()
    with torch.no_grad():
        mod.lin.weight.zero_()
        mod.lin.bias.copy_(torch.tensor([127.5, -0.5, 0.5, 1.5, 2.5, -1.5, -2.5, 3.25, -127.5]))
    x, zp = torch.zeros(3, 4), torch.zeros(3, 1, dtype=torch.int8)
    with torch.no_grad():
        gm = torchtrt_c.compile(mod, inputs=[x, zp], require_full_compilation=True)
        y, *got = gm(x, zp)
    assert torch.equal(got[3], _ref(y, zp)[3])
    assert got[3][0].tolist() == [127, -0, 0, 2, 2, -2, -2, 3, -128]
