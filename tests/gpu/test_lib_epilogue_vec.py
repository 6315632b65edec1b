"""The CUDA launch path's library epilogues ("<kernel>_e" after cuBLAS) storing runs of
adjacent elements (codegen_expr.c emit_storev): 8 float16 or 4 float32 outputs per run, halved
until the run divides the output's innermost dim, one index decomposition per run, 16/8/4-byte
accesses where aligned, a bias read once per run element from its own row.

Forced cuBLAS (TORCHTRT_C_CUDA_LIBS=1) on Linear layers whose widths give every run length
(fp16: 64 -> 8, 36 -> 4, 18 -> 2, 27 -> 1; fp32: 64 -> 4, 18 -> 2, 27 -> 1), epilogues that
cuBLAS cannot take itself (erf GELU, sigmoid, a per-row scale), odd token counts, against
float64 eager: 2e-3 of max(|ref|, 1) in fp32 (TF32 off), 2e-2 in fp16.
PoCL runs the same store functions in elementwise kernels: tests/device/test_vec_store.py.
"""
import pytest
import torch

import torchtrt_c
from torchtrt_c import _C
from cudalaunch import accs, clear_knobs, close, launch_call, lib_stats, restore_tf32, why_not

DEV = torch.device("cuda", 0)
pytestmark = pytest.mark.skipif(why_not() is not None, reason=str(why_not()))


@pytest.fixture(autouse=True)
def knobs(monkeypatch):
    old = clear_knobs(monkeypatch)
    monkeypatch.setenv("TORCHTRT_C_CUDA_LIBS", "1")
    torch.backends.cuda.matmul.allow_tf32 = False
    yield
    restore_tf32(old)


class Net(torch.nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.up = torch.nn.Linear(d, h)
        self.gate = torch.nn.Linear(d, h)
        self.down = torch.nn.Linear(h, d)

    def forward(self, x, row):
        u = torch.nn.functional.gelu(self.up(x))            # bias + erf GELU
        g = torch.sigmoid(self.gate(x)) * row                # bias + sigmoid + a per-row scale
        return self.down(u * g) * 0.5 + x                    # bias, scale, residual


def _width(dt, inner):
    v = 8 if dt == torch.float16 else 4
    while v > 1 and inner % v:
        v //= 2
    return v


@pytest.mark.parametrize("dt,h", [(torch.float16, 64), (torch.float16, 36), (torch.float16, 18),
                                  (torch.float16, 27), (torch.float32, 64), (torch.float32, 18),
                                  (torch.float32, 27)])
@pytest.mark.parametrize("b,t", [(3, 17), (8, 64)])
def test_runs_match_eager(dt, h, b, t):
    torch.manual_seed(h * 31 + b * t)
    d = 40
    m = Net(d, h).eval().to(dt)
    x, row = torch.randn(b, t, d).to(dt), torch.rand(b, t, 1).to(dt)
    trt = torchtrt_c.compile(m, inputs=[x, row], min_block_size=1, enabled_precisions={dt})
    src = "".join(_C.Engine.deserialize(bytes(a.engine.numpy()), cache_dir="").info()["source"] for a in accs(trt))
    trt = trt.to(DEV)
    assert "_e(int n" in src, "no library epilogue kernels"
    assert ("_storev(int lin" in src) == (_width(dt, h) > 1 or _width(dt, d) > 1)
    xd, rd = x.to(DEV), row.to(DEV)
    outs = [launch_call(trt, xd, rd) for _ in range(3)]
    assert lib_stats(trt)["lib_calls"] >= 3 * 3
    for o in outs[1:]:
        assert torch.equal(o, outs[0]), "calls differ"
    with torch.no_grad():
        ref = m.double().to(DEV)(xd.double(), rd.double())
    close(outs[0], ref, 2e-2 if dt == torch.float16 else 2e-3, f"{dt} h={h} {b}x{t}")
