"""GELU whose value is stored as half (fp16 engines): mathfn.cl's ttc_gelu_erf_h (erfc after
Abramowitz & Stegun 7.1.26, absolute error below 1.5e-7) and ttc_gelu_tanh_h (x sigmoid(2u)),
with the native reciprocal and exp on NVIDIA, the standard ones elsewhere (codegen_spell.c fl16), where float results keep
mathfn.cl's erfc-based GELU. Against float64 GELU of the same half inputs rounded to half: within
one half ulp (2^-10 relative) plus 2^-21 absolute, over [-8, 8] (torch's own float CPU GELU is off
by 0.9% at x = -4.5, where 1 + erf cancels), odd sizes, as an elementwise kernel and as a GEMM's
fused epilogue."""
import math
import re

import pytest
import torch
import torch.nn.functional as F

import torchtrt_c
import torchtrt_c._C as C
from convtest import rand


def _src(trt):
    return "".join(C.Engine.deserialize(bytes(c.engine.numpy()), cache_dir="").info()["source"]
                   for n, c in trt.named_children() if n.startswith("_run_on_acc"))


def _calls(src, fn):
    """whether an expression calls fn ("v1 = fn(v0)", "v1 = fn(((float)v0))" on half devices);
    mathfn.cl's definitions are in every program"""
    return re.search(r"= " + fn + r"\(", src) is not None


def _check(got, x, approx, what):
    want = (_gelu64(x) if approx == "none" else F.gelu(x.double(), approximate=approx)).half().double()
    err = (got.double() - want).abs()
    lim = want.abs() * 2.0 ** -10 + 2.0 ** -21
    bad = err > lim
    assert not bad.any(), (f"{what}: {int(bad.sum())} values beyond the bound; worst at "
                           f"x={float(x.flatten()[int((err - lim).argmax())]):.6g}")


class Act(torch.nn.Module):
    def __init__(self, approx):
        super().__init__()
        self.approx = approx

    def forward(self, x):
        return F.gelu(x * 1.0, approximate=self.approx)


@pytest.mark.parametrize("approx", ["none", "tanh"])
@pytest.mark.parametrize("n", [1, 37, 4099])
def test_gelu_half_elementwise(approx, n):
    x = torch.linspace(-8, 8, n).half() if n > 1 else torch.tensor([-4.5]).half()
    x = torch.cat([x, torch.tensor([float("inf"), float("-inf"), float("nan"), -0.0, 0.0]).half()])
    trt = torchtrt_c.compile(Act(approx).eval(), inputs=[x], min_block_size=1, enabled_precisions={torch.float16})
    got = trt(x)
    # GELU(+inf) = +inf (torch's vectorised CPU kernel gives NaN there, its scalar one +inf)
    want = torch.where(x == float("inf"), x, F.gelu(x.float(), approximate=approx).half())
    assert torch.equal(torch.isnan(got), torch.isnan(want)), (got[-5:], want[-5:])
    fin = torch.isfinite(want)
    assert torch.equal(got[~fin & ~torch.isnan(want)], want[~fin & ~torch.isnan(want)])
    _check(got[fin], x[fin], approx, f"gelu {approx} n={n}")
    assert _calls(_src(trt), "ttc_gelu_erf_h" if approx == "none" else "ttc_gelu_tanh_h")


@pytest.mark.parametrize("approx", ["none", "tanh"])
@pytest.mark.parametrize("shape", [(3, 7, 33), (2, 5, 5, 40)])
def test_gelu_half_gemm_epilogue(approx, shape):
    torch.manual_seed(0)
    lin = torch.nn.Linear(shape[-1], 19).eval()
    m = torch.nn.Sequential(lin, Act(approx)).half()
    x = rand(*shape, seed=3).half()
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1, enabled_precisions={torch.float16})
    with torch.no_grad():
        y = F.linear(x.float(), lin.weight.float(), lin.bias.float())
        want = F.gelu(y, approximate=approx)
    got = trt(x).float()
    # the GEMM's own rounding (fp16 inputs, float accumulation in another order) dominates
    assert float((got - want).abs().max()) <= 2e-3 + 2e-3 * float(want.abs().max())


def _gelu64(x):
    """GELU in float64 through erfc: torch's double GELU, 1 + erf, is itself 1.9% off at x = -8"""
    x = x.double()
    return 0.5 * x * torch.special.erfc(-x / math.sqrt(2.0))


def test_float_gelu_keeps_erfc_form():
    x = torch.linspace(-8, 8, 101)
    trt = torchtrt_c.compile(Act("none").eval(), inputs=[x], min_block_size=1)
    assert _calls(_src(trt), "ttc_gelu_erf") and not _calls(_src(trt), "ttc_gelu_erf_h")
    want = _gelu64(x)
    assert float(((trt(x).double() - want).abs() / want.abs().clamp_min(1e-30)).max()) < 1e-6
