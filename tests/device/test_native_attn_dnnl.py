"""Native attention's GEMMs as oneDNN batched matmuls (backend/cpu/native_attn.c bgemm_chunk: one
call per chunk of heads for Q K^T and one for P V) against torch eager, each engine built with
the default (oneDNN where it loads) and with TORCHTRT_C_NATIVE_ATTN_GEMM=blas (OpenBLAS per
head, read when the engine is built); with oneDNN loaded the default must have called it.

Cases: odd sizes; chunks of whole batch items, and chunks of a few heads of one item (scores
of one head past the chunk size) with and without grouped-query attention (the k/v head
broadcast over the group); causal (square and rectangular); float and bool masks; q/k/v as
strided views of one [B, L, 3 * D] projection (GPT-2's layout); a NaN in q (its row NaN).
Also: the C steps on the engine's own pool (default) and on oneDNN's OpenMP team
(TORCHTRT_C_STEP_POOL=omp, read on each call) give the same bits.
Tolerance: fp32 atol 1e-5, rtol 1e-4 (as test_native_attn.py)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import torchtrt_c._C as C
from convtest import rand
from torchtrt_c import settings

SDPA = "aten.scaled_dot_product_attention.default"


@pytest.fixture(autouse=True)
def plain_env(monkeypatch):
    for v in ("TORCHTRT_C_KERNELS", "TORCHTRT_C_NATIVE", "TORCHTRT_C_NATIVE_ATTN", "TORCHTRT_C_NATIVE_ATTN_GEMM",
              "TORCHTRT_C_STEP_POOL", "TORCHTRT_C_STEP_THREADS"):
        monkeypatch.delenv(v, raising=False)
    if not C.native_cpu()["available"] or not C.native_cpu()["attention"]:
        pytest.skip("the device runs no native attention")


def T(shape, dt="float32"):
    return ("tensor", dt, list(shape))


def onednn_calls():
    return C.native_cpu()["gemm_onednn_calls"]


def onednn_loaded():
    return C.native_cpu()["gemm"] == "onednn"


def build(inputs, body, lib, monkeypatch):
    if lib == "blas":
        settings.set(NATIVE_ATTN_GEMM="blas")
    else:
        settings.set(NATIVE_ATTN_GEMM=None)
    g = C.Graph()
    names = {k: g.add_input(k, T(shape, dt)) for k, (shape, dt) in inputs.items()}
    g.set_outputs([body(g, names, g.add_constant)])
    e = C.Engine.build(g, name="attn", cache_dir="")
    att = [k for k in e.info()["kernels"] if " attention:" in k]
    assert len(att) == 1 and "(native)" in att[0], e.info()["kernels"]
    return e


def run(e, xs, out_shape):
    out = np.full(tuple(out_shape), np.nan, np.float32)
    e.execute([np.ascontiguousarray(x.numpy()) for x in xs], [out])
    return out


def check(out, ref, what, atol=1e-5, rtol=1e-4):
    ref = ref.numpy()
    nan_ref, nan_out = np.isnan(ref), np.isnan(out)
    assert (nan_ref == nan_out).all(), f"{what}: NaN in {int(nan_out.sum())} outputs, reference {int(nan_ref.sum())}"
    err = np.where(nan_ref, 0, np.abs(out - ref))
    lim = atol + rtol * np.abs(np.where(nan_ref, 0, ref))
    assert (err <= lim).all(), f"{what}: max abs error {err.max()} at {np.unravel_index(err.argmax(), err.shape)}"


def both_ways(inputs, body, xs, ref, monkeypatch):
    for lib in ("dnnl", "blas"):
        e = build(inputs, body, lib, monkeypatch)
        before = onednn_calls()
        check(run(e, xs, ref.shape), ref, f"attention GEMMs {lib}")
        called = onednn_calls() > before
        if lib == "blas":
            assert not called, "TORCHTRT_C_NATIVE_ATTN_GEMM=blas still called oneDNN"
        elif onednn_loaded():
            assert called, "oneDNN is loaded but the attention did not call it"


# q shape, k shape, v shape, mask (kind, shape), causal, gqa. 301 x 301 scores (362 KB) pass the
# 1 MB chunk at three heads: chunks of heads within one batch item.
CASES = [
    ((3, 5, 37, 24), (3, 5, 37, 24), (3, 5, 37, 24), None, True, False),
    ((2, 3, 7, 5), (2, 3, 9, 5), (2, 3, 9, 6), None, False, False),
    ((2, 3, 5, 8), (2, 3, 11, 8), (2, 3, 11, 8), None, True, False),
    ((3, 7, 13), (3, 11, 13), (3, 11, 3), None, False, False),
    ((2, 3, 7, 5), (2, 3, 9, 5), (2, 3, 9, 5), ("float", (2, 1, 7, 9)), False, False),
    ((2, 3, 7, 5), (2, 3, 9, 5), (2, 3, 9, 5), ("bool", (1, 3, 1, 9)), False, False),
    ((2, 6, 9, 8), (2, 2, 9, 8), (2, 2, 9, 8), None, True, True),
    ((1, 6, 301, 16), (1, 6, 301, 16), (1, 6, 301, 16), None, True, False),
    ((2, 6, 301, 8), (2, 2, 301, 8), (2, 2, 301, 8), ("float", (2, 1, 301, 301)), False, True),
]


def case_id(c):
    q, k, v, m, causal, gqa = c
    return "x".join(map(str, q)) + f"-S{k[-2]}" + (f"-{m[0]}" if m else "") + ("-causal" if causal else "") + \
        ("-gqa" if gqa else "")


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_sdpa_onednn_and_blas(case, monkeypatch):
    qs, ks, vs, mk, causal, gqa = case
    q, k, v = rand(*qs, seed=1), rand(*ks, seed=2), rand(*vs, seed=3)
    m = None
    if mk is not None:
        g = torch.Generator().manual_seed(4)
        if mk[0] == "float":
            m = torch.randn(mk[1], generator=g)
            m = torch.where(torch.rand(mk[1], generator=g) < 0.2, torch.full_like(m, float("-inf")), m)
        else:
            m = torch.rand(mk[1], generator=g) > 0.35
        m[..., 0, :] = float("-inf") if mk[0] == "float" else False   # a fully masked row: 0 out
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=causal, enable_gqa=gqa)
    inputs = {"q": (qs, "float32"), "k": (ks, "float32"), "v": (vs, "float32")}
    if m is not None:
        inputs["m"] = (tuple(m.shape), "bool" if m.dtype == torch.bool else "float32")

    def body(g, i, L):
        args = [i["q"], i["k"], i["v"], i["m"] if m is not None else L(None), L(0.0), L(causal), L(None), L(gqa)]
        return g.add_node(SDPA, args, [T(ref.shape)])[0]
    both_ways(inputs, body, [q, k, v] + ([m] if m is not None else []), ref, monkeypatch)


@pytest.mark.parametrize("b,l,h,e", [(2, 19, 3, 8), (1, 128, 4, 16)])
def test_gpt2_layout_causal_nan(b, l, h, e, monkeypatch):
    """q, k, v sliced from one [B, L, 3 * H * E] input and permuted into heads (rows strided by
    3 * H * E), causal, with a NaN in q (its row turns NaN in both ways)."""
    d = h * e
    x = rand(b, l, 3 * d, seed=9)
    x[0, 2, 1] = float("nan")   # q of batch 0, query 2, head 0
    q, k, v = (t.reshape(b, l, h, e).permute(0, 2, 1, 3) for t in x.split(d, dim=-1))
    s = (q @ k.transpose(-1, -2)) / e ** 0.5
    s = s.masked_fill(torch.ones(l, l, dtype=torch.bool).triu(1), float("-inf"))
    ref = torch.softmax(s, -1) @ v

    def body(g, i, L):
        parts = []
        for j in range(3):
            (p,) = g.add_node("aten.slice.Tensor", [i["x"], L(2), L(j * d), L((j + 1) * d), L(1)], [T((b, l, d))])
            (p,) = g.add_node("aten.view.default", [p, L([b, l, h, e])], [T((b, l, h, e))])
            (p,) = g.add_node("aten.permute.default", [p, L([0, 2, 1, 3])], [T((b, h, l, e))])
            parts.append(p)
        return g.add_node(SDPA, parts + [L(None), L(0.0), L(True), L(None), L(False)], [T((b, h, l, e))])[0]
    both_ways({"x": ((b, l, 3 * d), "float32")}, body, [x], ref, monkeypatch)


def test_step_pool_same_bits(monkeypatch):
    """A layer norm and an attention large enough to split among the step threads: the same bits
    on the engine's own pool (default) and on oneDNN's OpenMP team."""
    settings.set(STEP_THREADS="2")
    shape = (4, 96, 512)
    g = C.Graph()
    x = g.add_input("x", T(shape))
    L = g.add_constant
    w = g.add_tensor_constant("w", "float32", [512], rand(512, seed=3).numpy())
    (y,) = g.add_node("aten.layer_norm.default", [x, L([512]), w, L(None), L(1e-5), L(False)], [T(shape)])
    (y,) = g.add_node("aten.view.default", [y, L([4, 96, 8, 64])], [T((4, 96, 8, 64))])
    (y,) = g.add_node("aten.permute.default", [y, L([0, 2, 1, 3])], [T((4, 8, 96, 64))])
    (y,) = g.add_node(SDPA, [y, y, y, L(None), L(0.0), L(True), L(None), L(False)], [T((4, 8, 96, 64))])
    g.set_outputs([y])
    e = C.Engine.build(g, name="pool", cache_dir="")
    xs = [rand(*shape, seed=11).numpy()]
    outs = {}
    for pool in ("omp", "own"):
        if pool == "omp":
            settings.set(STEP_POOL="omp")
        else:
            settings.set(STEP_POOL=None)
        outs[pool] = np.empty((4, 8, 96, 64), np.float32)
        e.execute(xs, [outs[pool]])
    assert np.isfinite(outs["own"]).all()
    diff = outs["omp"] != outs["own"]
    assert not diff.any(), f"{int(diff.sum())} outputs differ between the OpenMP team and the own pool"


def test_gqa_with_strided_q(monkeypatch):
    """Grouped-query attention with q a permuted [B, L, H, E] input (its heads' rows not evenly
    spaced: Q K^T goes head by head through the BLAS, P V through oneDNN), causal."""
    b, l, h, hk, e = 2, 11, 6, 2, 8
    qt, k, v = rand(b, l, h, e, seed=21), rand(b, hk, l, e, seed=22), rand(b, hk, l, e, seed=23)
    ref = F.scaled_dot_product_attention(qt.permute(0, 2, 1, 3), k, v, is_causal=True, enable_gqa=True)

    def body(g, i, L):
        (q,) = g.add_node("aten.permute.default", [i["q"], L([0, 2, 1, 3])], [T((b, h, l, e))])
        return g.add_node(SDPA, [q, i["k"], i["v"], L(None), L(0.0), L(True), L(None), L(True)], [T(ref.shape)])[0]
    inputs = {"q": ((b, l, h, e), "float32"), "k": ((b, hk, l, e), "float32"), "v": ((b, hk, l, e), "float32")}
    both_ways(inputs, body, [qt, k, v], ref, monkeypatch)
