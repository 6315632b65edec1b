"""The tensor-core attention kernels (csrc/kernels/attn_mma.cl for fp16, attn_tf32.cl for fp32
in 3xTF32; flash style on mma.sync) against torch's SDPA, with the family forced
(TORCHTRT_C_ATTN_MMA=1: on a non-NVIDIA device it runs through the PTX prelude's emulation,
which has the instructions' per-lane semantics).

fp16: inputs are fp16 in [-1, 1]; the reference is F.scaled_dot_product_attention in float32 on the
same half inputs, rounded to half. The kernel rounds the softmax weights P to half before
P V (as flash attention does) and accumulates in float32, so the tolerance is
|got - ref| <= 2e-3 + 2e-3 |ref|. Shapes are small and odd (sequence lengths 1, 7, 33, 70:
query and key tails inside a 64-row block and past one), head dims 64 and 32/80/128,
no mask / bool / float / half masks in BERT's broadcast forms, causal with L = S, L < S, L > S,
GQA, rank 3, a scale argument, and q/k/v views whose offset is not a multiple of 8 halves
(the kernel's plain-load path instead of cp.async).

fp32: inputs in [-2, 2], reference in float64, |got - ref| <= 1e-5 + 1e-4 |ref| (TF32 alone
misses it by about 8x); head dims that are multiples of 8 up to 64, non-finite values as
torch's math path gives them.
"""
import pytest
import torch
import torch.nn.functional as F

import torchtrt_c
import torchtrt_c._C as C
from convtest import assert_close, check_op, rand

SDPA = "aten.scaled_dot_product_attention.default"
ATOL = RTOL = 2e-3
# fp32 (attn_tf32.cl, 3xTF32) against float64: one TF32 product alone misses this by ~8x
F32_ATOL, F32_RTOL = 1e-5, 1e-4


@pytest.fixture
def forced(monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_ATTN_MMA", "1")
    # fp32 attention on a CPU device is otherwise a native step (backend/cpu/native_attn.c)
    monkeypatch.setenv("TORCHTRT_C_NATIVE_ATTN", "0")


def _ref64(q, k, v, m, dp, causal, scale, gqa):
    m = m if m is None or m.dtype == torch.bool else m.double()
    return F.scaled_dot_product_attention(q.double(), k.double(), v.double(), attn_mask=m, dropout_p=dp,
                                          is_causal=causal, scale=scale, enable_gqa=gqa).float()


def _ref(q, k, v, m, dp, causal, scale, gqa):
    m = m if m is None or m.dtype == torch.bool else m.float()
    return F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=m, dropout_p=dp,
                                          is_causal=causal, scale=scale, enable_gqa=gqa).half()


def _qkv(qs, ks, vs, seed):
    return [rand(*s, seed=seed + i, dtype=torch.float16) * 0.5 for i, s in enumerate((qs, ks, vs))]


def _mask(kind, shape, seed=7):
    g = torch.Generator().manual_seed(seed)
    if kind == "bool":
        m = torch.rand(shape, generator=g) > 0.3
        if shape[-2] > 1:
            m[..., 1, :] = False          # a fully masked row gives 0
        return m
    m = torch.randn(shape, generator=g)
    m = torch.where(torch.rand(shape, generator=g) < 0.2, torch.full_like(m, float("-inf")), m)
    return m.half() if kind == "half" else m


def _uses_mma(e) -> bool:
    return "attn_mma" in e.info()["source"]


def _uses_f32(e) -> bool:
    return "attn_tf32" in e.info()["source"]


# (q shape, k/v shape, head dim, mask kind and shape or None, causal, scale, gqa)
CASES = [
    ((1, 2, 1), (1, 2, 1), 64, None, False, None, False),
    ((2, 1, 7), (2, 1, 7), 64, None, False, None, False),
    ((1, 2, 70), (1, 2, 33), 64, None, False, None, False),
    ((2, 2, 33), (2, 2, 70), 64, ("bool", (2, 1, 33, 70)), False, None, False),   # HF BERT's bool mask
    ((2, 2, 70), (2, 2, 70), 64, ("float", (2, 1, 1, 70)), False, None, False),   # additive padding mask
    ((1, 2, 33), (1, 2, 33), 64, ("half", (33, 33)), False, 0.3, False),
    ((1, 2, 70), (1, 2, 70), 64, None, True, None, False),
    ((1, 1, 7), (1, 1, 33), 32, None, True, None, False),                         # causal, L < S
    ((1, 2, 70), (1, 2, 33), 32, None, True, None, False),                        # causal, L > S
    ((1, 2, 33), (1, 2, 70), 80, ("bool", (1, 2, 33, 70)), False, None, False),
    ((1, 1, 9), (1, 1, 13), 128, ("float", (1, 1, 9, 13)), False, 0.2, False),
    ((1, 4, 33), (1, 2, 33), 64, None, True, None, True),                         # GQA
    ((2, 33), (2, 70), 64, None, False, None, False),                             # rank 3
    ((33,), (7,), 64, ("bool", (33, 7)), False, None, False),                     # rank 2
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"q{c[0]}-kv{c[1]}-d{c[2]}-{c[3][0] if c[3] else 'nomask'}"
                         f"{'-causal' if c[4] else ''}{'-gqa' if c[6] else ''}")
def test_attn_mma_matches_sdpa(case, forced):
    qs, ks, e, mask, causal, scale, gqa = case
    q, k, v = _qkv(qs + (e,), ks + (e,), ks + (e,), seed=len(qs) + e)
    m = _mask(*mask) if mask else None
    eng = check_op(SDPA, [q, k, v, m, 0.0, causal, scale, gqa], tol=ATOL, rtol=RTOL, precision="fp16", ref=_ref)
    assert _uses_mma(eng), "TORCHTRT_C_ATTN_MMA=1 did not select the tensor-core kernel"


# fp32 (attn_tf32.cl): head dims that are whole k-steps of 8 up to 64; the same masks, causal
# forms, GQA and ranks
F32_CASES = [c for c in CASES if c[2] <= 64] + [
    ((2, 2, 33), (2, 2, 70), 8, ("float", (2, 1, 33, 70)), False, None, False),
    ((1, 3, 70), (1, 3, 70), 24, None, True, 0.2, False),
    ((1, 2, 65), (1, 2, 97), 48, ("bool", (1, 1, 65, 97)), False, None, False),
]


@pytest.mark.parametrize("case", F32_CASES, ids=lambda c: f"q{c[0]}-kv{c[1]}-d{c[2]}-{c[3][0] if c[3] else 'nomask'}"
                         f"{'-causal' if c[4] else ''}{'-gqa' if c[6] else ''}")
def test_attn_tf32_matches_sdpa(case, forced):
    qs, ks, e, mask, causal, scale, gqa = case
    q, k, v = (t.float() * 2 for t in _qkv(qs + (e,), ks + (e,), ks + (e,), seed=len(qs) + e))
    m = _mask(*mask) if mask else None
    m = m.float() if m is not None and m.dtype == torch.float16 else m
    eng = check_op(SDPA, [q, k, v, m, 0.0, causal, scale, gqa], tol=F32_ATOL, rtol=F32_RTOL, ref=_ref64)
    assert _uses_f32(eng), "TORCHTRT_C_ATTN_MMA=1 did not select the fp32 tensor-core kernel"


@pytest.mark.parametrize("tile", ["2x16", "8x32"])
def test_attn_tf32_tiles(tile, forced, monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_ATTN_TILE", tile)
    q, k, v = (rand(1, 2, n, 64, seed=20 + i) for i, n in enumerate((70, 33, 33)))
    m = _mask("float", (1, 1, 70, 33)).float()
    eng = check_op(SDPA, [q, k, v, m, 0.0, False, None, False], tol=F32_ATOL, rtol=F32_RTOL, ref=_ref64)
    assert _uses_f32(eng)


def test_attn_tf32_non_finite(forced):
    """inf and NaN as torch's math path treats them (softmax(q k^T * scale) v): an inf in v gives
    inf where its weight is positive (never NaN from a split's small part), a NaN in q makes its
    row NaN, -inf in k drops that key for rows where its score is -inf."""
    q, k, v = (rand(1, 2, 9, 32, seed=30 + i) for i in range(3))
    q[0, 0, 3, 5] = float("nan")
    v[0, 1, 4, 7] = float("inf")
    v[0, 0, 2, 1] = float("-inf")
    k[0, 1, 6, :] = 0.0
    k[0, 1, 6, 0] = float("-inf")
    def ref(q, k, v, *rest):
        return torch.ops.aten._scaled_dot_product_attention_math(q.double(), k.double(), v.double())[0].float()
    eng = check_op(SDPA, [q, k, v, None, 0.0, False, None, False], tol=F32_ATOL, rtol=F32_RTOL, ref=ref)
    assert _uses_f32(eng)


def test_attn_tf32_unaligned_views(forced):
    """q/k/v as strided views at offsets that are not multiples of 4 floats: plain loads."""
    x = rand(2, 37, 3 * 64 + 1, seed=3)
    m = _Sliced(64, True).eval()
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    info = _engine_info(trt)
    assert "attn_tf32" in info["source"], info["kernels"]
    with torch.no_grad():
        want = m(x.double()).float()
    assert_close(trt(x), want, F32_ATOL, F32_RTOL, "fp32 attention over unaligned views")


@pytest.mark.parametrize("tile", ["2x16", "8x32", "2x128"])
def test_attn_mma_tiles(tile, forced, monkeypatch):
    """The other tiles TORCHTRT_C_ATTN_TILE forces (the default is 4x64): key blocks smaller and
    larger than the query block, so Q's pass through the K/V space and the tails differ."""
    monkeypatch.setenv("TORCHTRT_C_ATTN_TILE", tile)
    q, k, v = _qkv((1, 2, 70, 64), (1, 2, 33, 64), (1, 2, 33, 64), seed=6)
    m = _mask("float", (1, 1, 70, 33))
    eng = check_op(SDPA, [q, k, v, m, 0.0, False, None, False], tol=ATOL, rtol=RTOL, precision="fp16", ref=_ref)
    assert _uses_mma(eng)
    q, k, v = _qkv((1, 1, 37, 32), (1, 1, 37, 32), (1, 1, 37, 32), seed=7)
    eng = check_op(SDPA, [q, k, v, None, 0.0, True, None, False], tol=ATOL, rtol=RTOL, precision="fp16", ref=_ref)
    assert _uses_mma(eng)


def test_attn_tile_knob_is_checked(forced, monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_ATTN_TILE", "3x64")
    q, k, v = _qkv((1, 1, 7, 64), (1, 1, 7, 64), (1, 1, 7, 64), seed=8)
    with pytest.raises(torchtrt_c.Error, match="TORCHTRT_C_ATTN_TILE=3x64"):
        check_op(SDPA, [q, k, v, None, 0.0, False, None, False], tol=ATOL, rtol=RTOL, precision="fp16", ref=_ref)


def test_attn_mma_dynamic_batch(forced):
    """One engine over batch 1..3 (L, S and the batch are launch arguments, not constants)."""
    q, k, v = _qkv((3, 2, 33, 64), (3, 2, 70, 64), (3, 2, 70, 64), seed=5)
    m = _mask("bool", (3, 1, 33, 70))
    eng = check_op(SDPA, [q, k, v, m, 0.0, False, None, False], tol=ATOL, rtol=RTOL, precision="fp16", ref=_ref,
                   dynamic=(1, 3, 3))
    assert _uses_mma(eng)


def _engine_info(trt):
    eng = C.Engine.deserialize(bytes(trt._run_on_acc_0.engine.numpy()), cache_dir="")
    return eng.info()


class _Sliced(torch.nn.Module):
    """q/k/v read from one [B, S, 3 * E + 1] tensor at offsets 1, 1 + E, 1 + 2E: strided views
    whose offsets are not multiples of 8 halves (no 16-byte copies)."""

    def __init__(self, e, causal):
        super().__init__()
        self.e, self.causal = e, causal

    def forward(self, x):
        b, s, _ = x.shape
        e = self.e
        q, k, v = (x[..., 1 + i * e:1 + (i + 1) * e].view(b, s, 2, e // 2).transpose(1, 2) for i in range(3))
        return F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)


@pytest.mark.parametrize("causal", [False, True])
def test_attn_mma_unaligned_views(causal, forced):
    x = rand(2, 37, 3 * 128 + 1, seed=3, dtype=torch.float16) * 0.5
    m = _Sliced(128, causal).eval()
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1, enabled_precisions={torch.float16})
    info = _engine_info(trt)
    assert "attn_mma" in info["source"], info["kernels"]
    with torch.no_grad():
        want = m(x.float()).half()
    assert_close(trt(x), want, ATOL, RTOL, "attention over unaligned views")


def test_attn_mma_not_taken_where_it_does_not_apply(forced, monkeypatch):
    # head dim 40 (not a multiple of 16), fp32 engines: the row kernel, still right
    q, k, v = _qkv((1, 2, 7, 40), (1, 2, 9, 40), (1, 2, 9, 40), seed=1)
    eng = check_op(SDPA, [q, k, v, None, 0.0, False, None, False], tol=ATOL, rtol=RTOL, precision="fp16", ref=_ref)
    assert not _uses_mma(eng)
    q, k, v = (t.float() for t in _qkv((1, 2, 7, 128), (1, 2, 9, 128), (1, 2, 9, 128), seed=2))
    eng = check_op(SDPA, [q, k, v, None, 0.0, False, None, False], tol=1e-5, rtol=1e-4)
    assert not _uses_f32(eng), "fp32 at head dim 128 (past the 3xTF32 kernel's registers)"
    q, k, v = (t.float() for t in _qkv((1, 2, 7, 36), (1, 2, 9, 36), (1, 2, 9, 36), seed=2))
    eng = check_op(SDPA, [q, k, v, None, 0.0, False, None, False], tol=1e-5, rtol=1e-4)
    assert not _uses_f32(eng), "fp32 at head dim 36 (not whole k-steps of 8)"
    # =0 turns it off where it would apply
    monkeypatch.setenv("TORCHTRT_C_ATTN_MMA", "0")
    q, k, v = _qkv((1, 2, 7, 64), (1, 2, 9, 64), (1, 2, 9, 64), seed=3)
    eng = check_op(SDPA, [q, k, v, None, 0.0, False, None, False], tol=ATOL, rtol=RTOL, precision="fp16", ref=_ref)
    assert not _uses_mma(eng)


def test_attn_mma_default_follows_the_device(monkeypatch):
    """Unforced, fp16 and fp32 engines take it exactly on NVIDIA GPUs."""
    monkeypatch.delenv("TORCHTRT_C_ATTN_MMA", raising=False)
    q, k, v = _qkv((1, 2, 7, 64), (1, 2, 9, 64), (1, 2, 9, 64), seed=4)
    eng = check_op(SDPA, [q, k, v, None, 0.0, False, None, False], tol=ATOL, rtol=RTOL, precision="fp16", ref=_ref)
    dev = eng.device
    nvidia = "nvidia" in (dev.get("vendor", "") + dev.get("platform", "")).lower() and dev.get("type") == "gpu"
    assert _uses_mma(eng) == nvidia, dev
    q, k, v = (t.float() for t in (q, k, v))
    eng = check_op(SDPA, [q, k, v, None, 0.0, False, None, False], tol=F32_ATOL, rtol=F32_RTOL, ref=_ref64)
    assert _uses_f32(eng) == nvidia, dev


@pytest.mark.parametrize("arch", ["bert", "gpt2"])
def test_attn_mma_in_hf_model(arch, forced):
    """A tiny Hugging Face BERT (padding mask: SDPA with a bool [B, 1, L, S] mask) and GPT-2
    (causal) at head dim 64, fp16, against the float32 model. Tolerance 2e-2 of max |eager|:
    weights, activations and every intermediate are half across two layers."""
    T = pytest.importorskip("transformers")
    torch.manual_seed(0)
    if arch == "bert":
        m = T.BertModel(T.BertConfig(vocab_size=100, hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=64))
    else:
        m = T.GPT2Model(T.GPT2Config(vocab_size=100, n_embd=128, n_layer=2, n_head=2, n_positions=64))
    m.eval()
    ids = torch.randint(0, 100, (2, 19), generator=torch.Generator().manual_seed(1))
    am = torch.ones(2, 19, dtype=torch.long)
    am[1, 13:] = 0
    kw = dict(input_ids=ids, attention_mask=am)
    with torch.no_grad():
        want = m(**kw).last_hidden_state
    m16 = m.half()
    trt = torchtrt_c.compile(m16, kwarg_inputs=kw, enabled_precisions={torch.float16})
    engines = [c for n, c in trt.named_children() if n.startswith("_run_on_acc")]
    srcs = [C.Engine.deserialize(bytes(c.engine.numpy()), cache_dir="").info()["source"] for c in engines]
    assert any("attn_mma" in s for s in srcs), "no engine took the tensor-core attention"
    with torch.no_grad():
        got = trt(**kw)
    got = (got.last_hidden_state if hasattr(got, "last_hidden_state") else got[0]).float()
    err = float((got - want).abs().max()) / float(want.abs().max())
    assert err <= 2e-2, f"{arch}: max error {err:.3g} relative to max |eager|"


@pytest.mark.parametrize("arch", ["bert", "vit"])
def test_attn_tf32_in_real_model(arch, forced):
    """fp32 Hugging Face BERT (padding mask, 23 tokens) and ViT (no mask, 25 patches + the class
    token), head dim 32, against eager; 1e-4 of max |eager|."""
    T = pytest.importorskip("transformers")
    torch.manual_seed(0)
    if arch == "bert":
        m = T.BertModel(T.BertConfig(vocab_size=100, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=64)).eval()
        ids = torch.randint(0, 100, (2, 23), generator=torch.Generator().manual_seed(1))
        am = torch.ones(2, 23, dtype=torch.long)
        am[1, 17:] = 0
        kw = dict(input_ids=ids, attention_mask=am)
    else:
        m = T.ViTModel(T.ViTConfig(image_size=40, patch_size=8, hidden_size=64, num_hidden_layers=2,
                                   num_attention_heads=2, intermediate_size=96)).eval()
        kw = dict(pixel_values=rand(2, 3, 40, 40, seed=4))
    with torch.no_grad():
        want = m(**kw).last_hidden_state
    trt = torchtrt_c.compile(m, kwarg_inputs=kw)
    engines = [c for n, c in trt.named_children() if n.startswith("_run_on_acc")]
    srcs = [C.Engine.deserialize(bytes(c.engine.numpy()), cache_dir="").info()["source"] for c in engines]
    assert any("attn_tf32" in s for s in srcs), "no engine took the fp32 tensor-core attention"
    with torch.no_grad():
        got = trt(**kw)
    got = got.last_hidden_state if hasattr(got, "last_hidden_state") else got[0]
    err = float((got - want).abs().max()) / float(want.abs().max())
    assert err <= 1e-4, f"{arch}: max error {err:.3g} relative to max |eager|"


@pytest.mark.parametrize("shape,heads", [((2, 37, 384), 2), ((1, 9, 768), 4)])
def test_attn_mma_reads_fused_qkv_views(shape, heads, forced):
    """GPT-2's q/k/v: slices of one projection viewed as heads (csrc/convert/conv_shape.c's
    split of a slice) reach the kernel as strided views, no copies (row stride 3E halves)."""
    B, L, E3 = shape
    E = E3 // 3

    class M(torch.nn.Module):
        def forward(self, x):
            q, k, v = (x * 2).split(E, dim=2)
            q, k, v = (t.view(B, L, heads, E // heads).transpose(1, 2) for t in (q, k, v))
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    x = rand(*shape, seed=12).half()
    m = M().eval()
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1, enabled_precisions={torch.float16})
    eng = C.Engine.deserialize(bytes(trt._run_on_acc_0.engine.numpy()), cache_dir="")
    assert _uses_mma(eng), eng.info()["kernels"]
    assert not [d for d in eng.info()["kernels"] if d.split()[1] == "elementwise:" and "mul" not in d], \
        eng.info()["kernels"]
    with torch.no_grad():
        ref = m(x.float()).half()
        assert_close(trt(x), ref, ATOL, RTOL, "fused q/k/v views into attn_mma")
