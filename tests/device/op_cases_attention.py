"""Differential cases for attention: aten.scaled_dot_product_attention.default over its whole
torch 2.13 schema (q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa) in the fused
ATTENTION kernel, and the backend variant export produces on CPU through the compile path.

Shapes are odd where they can be (L, S, head dims 7/33), masks come in every broadcast shape
([B,1,1,S], [B,1,L,S], [1,H,L,S], [L,S], [1,S]; torch refuses rank 1), bool and float, with fully masked rows (torch's
CPU kernels give 0 there, and so do we). fp32: atol 1e-5, rtol 1e-4; fp16 engines: 2e-3
against the fp32 result rounded to half.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from convtest import rand  # noqa: E402
from opcase import Case, ModelCase  # noqa: E402

SDPA = "aten.scaled_dot_product_attention.default"


def _qkv(qs, ks, vs, seed=0, dtype=torch.float32):
    return [rand(*qs, seed=seed, dtype=dtype), rand(*ks, seed=seed + 1, dtype=dtype), rand(*vs, seed=seed + 2, dtype=dtype)]


def _bool_mask(shape, seed=0, dead_row=True):
    g = torch.Generator().manual_seed(seed)
    m = torch.rand(shape, generator=g) > 0.35
    if dead_row and len(shape) >= 2 and shape[-2] > 1:
        m[..., 1, :] = False            # a fully masked row
    return m


def _float_mask(shape, seed=0, dead_row=True):
    g = torch.Generator().manual_seed(seed)
    m = torch.randn(shape, generator=g)
    m = torch.where(torch.rand(shape, generator=g) < 0.2, torch.full_like(m, float("-inf")), m)
    if dead_row and len(shape) >= 2 and shape[-2] > 1:
        m[..., 1, :] = float("-inf")
    return m


def sdpa(qs, ks, vs, mask=None, causal=False, scale=None, gqa=False, seed=0):
    """A Case for SDPA(q, k, v) of these shapes; mask: a callable giving the mask tensor."""
    def args():
        return _qkv(qs, ks, vs, seed) + [mask() if mask else None, 0.0, causal, scale, gqa]
    return Case(args, tol=1e-5, rtol=1e-4)


def _ref_half(q, k, v, m, dp, causal, scale, gqa):
    m = m if m is None or m.dtype == torch.bool else m.float()
    return F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=m, dropout_p=dp,
                                          is_causal=causal, scale=scale, enable_gqa=gqa).half()


def sdpa_fp16(qs, ks, vs, mask=None, causal=False, gqa=False, seed=0):
    def args():
        q, k, v = (t * 0.5 for t in _qkv(qs, ks, vs, seed, dtype=torch.float16))
        return [q, k, v, mask() if mask else None, 0.0, causal, None, gqa]
    return Case(args, tol=2e-3, precision="fp16", ref=_ref_half)


B, H, L, S = 2, 3, 7, 13
CASES = {
    SDPA: [
        # plain, several head dims (dense vector path at 8/64, scalar path at 7/33), E != EV
        sdpa((B, H, L, 8), (B, H, S, 8), (B, H, S, 8)),
        sdpa((1, 2, 5, 33), (1, 2, 9, 33), (1, 2, 9, 7)),
        sdpa((1, 2, 17, 64), (1, 2, 31, 64), (1, 2, 31, 64)),
        sdpa((3, 5, 7), (3, 9, 7), (3, 9, 4)),                          # rank 3
        sdpa((1, 1, 1, 3), (1, 1, 3, 3), (1, 1, 3, 5)),                 # L = 1
        sdpa((B, H, L, 8), (B, H, S, 8), (B, H, S, 8), scale=0.3),
        # bool masks of every broadcast shape (each with a fully masked row where L > 1)
        sdpa((B, H, L, 8), (B, H, S, 8), (B, H, S, 8), mask=lambda: _bool_mask((B, 1, 1, S), dead_row=False)),
        sdpa((B, H, L, 8), (B, H, S, 8), (B, H, S, 8), mask=lambda: _bool_mask((B, 1, L, S))),
        sdpa((B, H, L, 8), (B, H, S, 8), (B, H, S, 8), mask=lambda: _bool_mask((1, H, L, S))),
        sdpa((B, H, L, 7), (B, H, S, 7), (B, H, S, 7), mask=lambda: _bool_mask((L, S))),
        sdpa((B, H, L, 8), (B, H, S, 8), (B, H, S, 8), mask=lambda: _bool_mask((1, S), dead_row=False)),
        sdpa((B, H, L, 8), (B, H, S, 8), (B, H, S, 8), mask=lambda: _bool_mask((B, H, L, S))),
        # float masks (-inf entries, fully -inf rows)
        sdpa((B, H, L, 8), (B, H, S, 8), (B, H, S, 8), mask=lambda: _float_mask((B, 1, 1, S), dead_row=False)),
        sdpa((B, H, L, 33), (B, H, S, 33), (B, H, S, 33), mask=lambda: _float_mask((B, 1, L, S))),
        sdpa((B, H, L, 8), (B, H, S, 8), (B, H, S, 8), mask=lambda: _float_mask((L, S)), scale=0.2),
        # causal: square, L < S, L > S (top-left aligned, as torch)
        sdpa((B, H, L, 8), (B, H, L, 8), (B, H, L, 8), causal=True),
        sdpa((1, 2, 5, 7), (1, 2, 9, 7), (1, 2, 9, 7), causal=True),
        sdpa((1, 2, 9, 16), (1, 2, 5, 16), (1, 2, 5, 16), causal=True, scale=0.4),
        # GQA: 4 query heads over 2 and over 1 k/v heads, with masks and causal
        sdpa((B, 4, L, 8), (B, 2, S, 8), (B, 2, S, 8), gqa=True),
        sdpa((B, 4, L, 8), (B, 1, S, 8), (B, 1, S, 8), gqa=True),
        sdpa((1, 6, 9, 33), (1, 2, 9, 33), (1, 2, 9, 33), gqa=True, causal=True),
        sdpa((B, 4, L, 8), (B, 2, S, 8), (B, 2, S, 8), gqa=True, mask=lambda: _bool_mask((B, 1, L, S))),
        sdpa((B, 4, L, 64), (B, 2, S, 64), (B, 2, S, 64), gqa=True, mask=lambda: _float_mask((1, 4, L, S))),
        # plain broadcasting of batch/head dims (no GQA): k/v batch 1, k/v head 1, q of lower rank
        sdpa((B, H, L, 8), (1, H, S, 8), (1, H, S, 8)),
        sdpa((B, H, L, 8), (B, 1, S, 8), (B, 1, S, 8)),
        sdpa((H, L, 8), (B, H, S, 8), (B, H, S, 8)),
        sdpa((1, H, L, 8), (B, H, S, 8), (B, H, S, 8), mask=lambda: _bool_mask((B, 1, L, S))),
        # dynamic batch (dim 0 of every tensor is the symbol)
        Case(lambda: _qkv((3, 2, 7, 8), (3, 2, 11, 8), (3, 2, 11, 8)) + [_bool_mask((3, 1, 1, 11), dead_row=False),
                                                                          0.0, False, None, False],
             tol=1e-5, rtol=1e-4, dynamic=(1, 3, 4)),
        # fp16 engines
        sdpa_fp16((1, 2, 13, 16), (1, 2, 13, 16), (1, 2, 13, 16)),
        sdpa_fp16((B, H, L, 7), (B, H, S, 7), (B, H, S, 7), mask=lambda: _bool_mask((B, 1, L, S))),
        sdpa_fp16((B, 4, L, 64), (B, 2, S, 64), (B, 2, S, 64), gqa=True, causal=True),
        sdpa_fp16((B, H, L, 8), (B, H, S, 8), (B, H, S, 8), mask=lambda: _float_mask((L, S)).half()),
    ],
    # export's CPU form of SDPA, through the compile path (decomposed to the fused op; the
    # logsumexp output, when used, is computed exactly)
    "aten._scaled_dot_product_flash_attention_for_cpu.default": [
        ModelCase(lambda q, k, v: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default(
            q, k, v, 0.0, True, scale=0.3)[0], lambda: tuple(_qkv((2, 3, 7, 8), (2, 3, 7, 8), (2, 3, 7, 8))),
            tol=1e-5, rtol=1e-4),
        ModelCase(lambda q, k, v, m: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default(
            q, k, v, attn_mask=m), lambda: tuple(_qkv((2, 3, 5, 33), (2, 3, 9, 33), (2, 3, 9, 33)))
            + (_float_mask((2, 1, 5, 9), dead_row=False),), tol=1e-5, rtol=1e-4),
    ],
}
