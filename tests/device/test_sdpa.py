"""SDPA beyond the op harness's cases: the attention cases again with the GPU kernel
families forced (TORCHTRT_C_KERNELS=gpu), the CUDA attention variants export produces
(rewritten to the fused op by the importer when only the attention is used; they have no
CPU kernel, so the reference is F.scaled_dot_product_attention), and what falls back, why.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import torchtrt_c  # noqa: E402
from convtest import assert_close, rand  # noqa: E402
from op_cases_attention import CASES, SDPA  # noqa: E402

aten = torch.ops.aten


@pytest.mark.parametrize("i", range(len(CASES[SDPA])))
def test_sdpa_cases_gpu_families(i, monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")
    CASES[SDPA][i].run(SDPA)


class _Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *a):
        return self.fn(*a)


def _qkvm(L=7, S=7, E=8):
    return (rand(2, 3, L, E, seed=1), rand(2, 3, S, E, seed=2), rand(2, 3, S, E, seed=3),
            torch.randn(2, 1, L, S, generator=torch.Generator().manual_seed(4)))


VARIANTS = {
    "efficient": (lambda q, k, v, m: aten._scaled_dot_product_efficient_attention.default(
        q, k, v, m, False, 0.0, False, scale=0.3)[0],
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=0.3)),
    "flash": (lambda q, k, v, m: aten._scaled_dot_product_flash_attention.default(q, k, v, 0.0, True, False, scale=0.3)[0],
              lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3)),
    "cudnn": (lambda q, k, v, m: aten._scaled_dot_product_cudnn_attention.default(
        q, k, v, m, False, 0.0, False, False)[0],
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m)),
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_cuda_variants_become_the_fused_op(name):
    fn, ref = VARIANTS[name]
    ins = _qkvm(L=5, S=9, E=16)
    trt = torchtrt_c.compile(_Fn(lambda *a: fn(*a) * 2), arg_inputs=list(ins), min_block_size=1)
    assert [n for n, _ in trt.named_children()] == ["_run_on_acc_0"]
    assert_close(trt(*ins), ref(*ins) * 2, 1e-5, 1e-4, f"{name} variant")


def test_cuda_variant_with_logsumexp_used_falls_back():
    def fn(q, k, v, m):
        out = aten._scaled_dot_product_efficient_attention.default(q, k, v, m, True)
        return out[0] * 2, out[1]
    gm = torchtrt_c.compile(_Fn(fn), arg_inputs=list(_qkvm()), min_block_size=1, dryrun=True)
    unsup = gm.dryrun_report.unsupported
    assert "aten._scaled_dot_product_efficient_attention.default" in unsup, unsup


def _report(fn, ins):
    return torchtrt_c.compile(_Fn(fn), arg_inputs=list(ins), min_block_size=1, dryrun=True).dryrun_report


def test_fallback_reasons():
    q, k, v, m = _qkvm()
    # training-time dropout (F.sdpa drops out whatever the module's mode): the validator says
    # no (tests/unit/test_op_table.py), SDPA is decomposed after all, and the dropout's random
    # mask is drawn in torch (native_dropout in training form: rand_like, compare, scale) rather
    # than the dropout being dropped as an inference no-op
    rep = _report(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=0.1) * 2, (q, k, v))
    assert "aten.rand_like.default" in rep.unsupported, rep.unsupported
    # k/v heads that do not divide the query heads: torch raises, nothing to compile; 4:2 is fine
    q4, k2 = rand(1, 4, 5, 8), rand(1, 2, 5, 8, seed=1)
    rep = _report(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), (q4, k2, k2))
    assert SDPA not in rep.unsupported and len(rep.engines) == 1


def test_fully_masked_rows_match_torch_cpu():
    """torch 2.13's CPU kernels give 0 for a query row whose keys are all masked (bool False
    or float -inf); the fused kernel does the same (not NaN)."""
    q, k, v, _ = _qkvm()
    m = torch.ones(2, 1, 7, 7, dtype=torch.bool)
    m[:, :, 2] = False
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
    assert (want[:, :, 2] == 0).all(), "torch changed: fully masked rows are no longer 0"
    trt = torchtrt_c.compile(_Fn(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m)),
                             arg_inputs=[q, k, v, m], min_block_size=1)
    assert_close(trt(q, k, v, m), want, 1e-5, 1e-4, "fully masked row")
