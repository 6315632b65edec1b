"""Kernels that only copy or negate, fused away (csrc/kir/fuse.c):

- an identity copy (an fp16 engine's .to(float32) of a half intermediate, stored as half again:
  HF's RMSNorm) is no kernel: its readers read its source;
- rotate_half's negation, read only by the concatenation, is read negated by the concatenation
  (the OpenCL kernel and the CPU's native concatenation).

Each test checks the engine's kernel list and the numbers against torch eager on random inputs
of odd sizes, fp32 and fp16 engines, with the device's default kernels and with
TORCHTRT_C_KERNELS=gpu (the GPU families, run by PoCL in CI). Tolerances: fp32 1e-5 of the
largest magnitude (only the summation order of the projection differs from torch); fp16 engines
2e-2 (weights and activations rounded to half, float accumulation).
"""
import copy

import pytest
import torch
import torch.nn as nn

import torchtrt_c

TOL = {torch.float32: 1e-5, torch.float16: 2e-2}


def _info(trt):
    acc = trt._run_on_acc_0
    entry = acc.__dict__.get("_ttc_entry")
    engine = acc.__dict__["_deferred"] if acc.__dict__.get("_deferred") is not None else entry.engine
    return engine.info()


def _run(model, xs, dtype, kernels):
    """(kernel descriptions, engine outputs, float32 eager outputs of the same rounded weights)."""
    model = copy.deepcopy(model).to(dtype).eval()
    xs = [x.to(dtype) for x in xs]
    knobs = {"KERNELS": "gpu"} if kernels == "gpu" else {}
    with torchtrt_c.settings.override(**knobs):
        trt = torchtrt_c.compile(model, inputs=xs, enabled_precisions={dtype}, require_full_compilation=True,
                                 min_block_size=1)
        info = _info(trt)
        got = trt(*xs)
    with torch.no_grad():
        want = copy.deepcopy(model).float()(*[x.float() for x in xs])
    return [d.split(" ", 1)[1] for d in info["kernels"]], got, want


def _close(got, want, dtype):
    err = (got.float() - want).abs().max().item() / max(1e-6, want.abs().max().item())
    assert err <= TOL[dtype], f"differs by {err:.2e} of the largest magnitude"


class Rope(nn.Module):
    """Rotary embedding of a projection's heads, as HF's apply_rotary_pos_emb: q * cos +
    rotate_half(q) * sin, rotate_half(q) = cat(-q2, q1)."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.proj = nn.Linear(d, d, bias=False)

    def forward(self, x, cos, sin):
        b, t, d = x.shape
        q = self.proj(x).view(b, t, self.heads, d // self.heads).transpose(1, 2)
        e = q.shape[-1]
        rot = torch.cat((-q[..., e // 2:], q[..., :e // 2]), dim=-1)
        return q * cos + rot * sin


@pytest.mark.parametrize("kernels", ["default", "gpu"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("b,t,heads,e", [(2, 3, 3, 10), (1, 5, 2, 6), (3, 1, 4, 14)])
def test_rotate_half_negation_read_by_concat(b, t, heads, e, dtype, kernels):
    torch.manual_seed(b * 100 + t * 10 + e)
    d = heads * e
    x = torch.randn(b, t, d)
    ang = torch.randn(b, 1, t, e)
    kinds, got, want = _run(Rope(d, heads), [x, ang.cos(), ang.sin()], dtype, kernels)
    assert not [k for k in kinds if k.startswith("elementwise: neg")], kinds
    assert [k for k in kinds if k.startswith("concat: neg")], kinds
    _close(got, want, dtype)


class RmsNormCast(nn.Module):
    """HF's LlamaRMSNorm on a projection's half result (to float32, normalised, back to the
    input's dtype, times the weight), with a residual that reads the projection too."""

    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.weight = nn.Parameter(torch.rand(d) + 0.5)

    def forward(self, x):
        h = self.proj(x)
        y = h.to(torch.float32)
        y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + 1e-6)
        return self.weight * y.to(h.dtype) + h


@pytest.mark.parametrize("kernels", ["default", "gpu"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("shape", [(2, 3, 24), (1, 7, 40), (5, 9)])
def test_identity_copy_is_no_kernel(shape, dtype, kernels):
    torch.manual_seed(sum(shape))
    x = torch.randn(*shape)
    kinds, got, want = _run(RmsNormCast(shape[-1]), [x], dtype, kernels)
    # the casts are no kernels of their own (fp32: none to make; fp16: identity copies)
    assert not [k for k in kinds if k.startswith("elementwise: _to_copy")], kinds
    _close(got, want, dtype)


class CastOfInput(nn.Module):
    """A cast of an engine input (not dropped: only intermediates are) and a cast that is an
    engine output (kept: the output is its own memory)."""

    def forward(self, x):
        y = x.to(torch.float32)
        return y * 2.0, (x * 3.0).to(torch.float32)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
def test_casts_of_inputs_and_outputs_stay_correct(dtype):
    x = torch.randn(3, 5, 7)
    model = CastOfInput().eval()
    with torchtrt_c.settings.override(KERNELS="gpu"):
        trt = torchtrt_c.compile(model, inputs=[x.to(dtype)], enabled_precisions={dtype},
                                 require_full_compilation=True, min_block_size=1)
        got = trt(x.to(dtype))
    want = model(x.to(dtype).float())
    for g, w in zip(got, want):
        _close(g, w, dtype)
