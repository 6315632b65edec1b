"""Scaled dot-product attention as a native call (backend/cpu/native_attn.c: BLAS scores and
values, a C softmax) against torch eager, each engine built twice: native (the default where the
device runs native kernels) and with TORCHTRT_C_NATIVE_ATTN=0 (the OpenCL attention kernel, read
when the engine is built). Kernel descriptions say which way each ran.

Cases: odd sizes, rank 3 and 4, L != S, float masks (with -inf, a fully masked row) and bool
masks in broadcast shapes, causal (square and rectangular), grouped-query attention, a custom
scale, q/k/v as permuted views of one projection (BERT's layout: strided rows, dense columns),
a transposed k view (strided columns: packed), an epilogue after the attention (scale + residual
add), NaN in q (its rows turn NaN), and the same engine run at two sequence lengths.
Tolerance: fp32 atol 1e-5, rtol 1e-4 (as the attention op cases)."""
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
    for v in ("TORCHTRT_C_KERNELS", "TORCHTRT_C_NATIVE", "TORCHTRT_C_NATIVE_ATTN", "TORCHTRT_C_NATIVE_EPI"):
        monkeypatch.delenv(v, raising=False)


def T(shape, dt="float32"):
    return ("tensor", dt, list(shape))


def dt_of(t):
    return "bool" if t.dtype == torch.bool else "float32"


def build(inputs, body, native, monkeypatch, symbols=()):
    settings.set(NATIVE_ATTN="1" if native else "0")
    g = C.Graph()
    for s in symbols:
        g.add_symbol(*s)
    names = {k: g.add_input(k, T(shape, dt)) for k, (shape, dt) in inputs.items()}
    g.set_outputs([body(g, names, g.add_constant)])
    e = C.Engine.build(g, name="attn", cache_dir="")
    att = [k for k in e.info()["kernels"] if " attention:" in k]
    assert len(att) == 1, e.info()["kernels"]
    if C.native_cpu()["available"]:
        assert ("(native)" in att[0]) == native, (native, att)
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


def float_mask(shape, seed):
    g = torch.Generator().manual_seed(seed)
    m = torch.randn(shape, generator=g)
    m = torch.where(torch.rand(shape, generator=g) < 0.2, torch.full_like(m, float("-inf")), m)
    if len(shape) >= 2 and shape[-2] > 1:
        m[..., 1, :] = float("-inf")    # a fully masked row: 0 out
    return m


def bool_mask(shape, seed):
    g = torch.Generator().manual_seed(seed)
    m = torch.rand(shape, generator=g) > 0.35
    if len(shape) >= 2 and shape[-2] > 1:
        m[..., 1, :] = False
    return m


CASES = [  # q shape, k shape, v shape, mask kind and shape, causal, scale, gqa
    ((2, 3, 7, 5), (2, 3, 9, 5), (2, 3, 9, 6), None, False, None, False),
    ((1, 2, 17, 33), (1, 2, 17, 33), (1, 2, 17, 33), None, True, None, False),
    ((1, 2, 5, 4), (1, 2, 9, 4), (1, 2, 9, 4), None, True, 0.3, False),
    ((3, 7, 8), (3, 11, 8), (3, 11, 3), None, False, None, False),
    ((2, 3, 7, 5), (2, 3, 9, 5), (2, 3, 9, 5), ("float", (2, 1, 1, 9)), False, None, False),
    ((2, 3, 7, 5), (2, 3, 9, 5), (2, 3, 9, 5), ("float", (7, 9)), False, None, False),
    ((2, 3, 7, 5), (2, 3, 9, 5), (2, 3, 9, 5), ("bool", (1, 3, 7, 9)), False, None, False),
    ((2, 3, 7, 5), (2, 3, 9, 5), (2, 3, 9, 5), ("bool", (2, 1, 7, 9)), False, 0.7, False),
    ((1, 6, 9, 8), (1, 2, 9, 8), (1, 2, 9, 8), None, True, None, True),
    ((2, 4, 6, 16), (2, 2, 6, 16), (2, 2, 6, 16), ("float", (2, 1, 6, 6)), False, None, True),
]


def case_id(c):
    q, k, v, m, causal, scale, gqa = c
    return "x".join(map(str, q)) + f"-S{k[-2]}" + (f"-{m[0]}{len(m[1])}" if m else "") + ("-causal" if causal else "") + \
        ("-gqa" if gqa else "") + ("-scale" if scale else "")


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_sdpa_native_and_opencl(case, monkeypatch):
    qs, ks, vs, mk, causal, scale, gqa = case
    q, k, v = rand(*qs, seed=1), rand(*ks, seed=2), rand(*vs, seed=3)
    m = None if mk is None else (float_mask if mk[0] == "float" else bool_mask)(mk[1], seed=4)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=causal, scale=scale, enable_gqa=gqa)
    inputs = {"q": (qs, "float32"), "k": (ks, "float32"), "v": (vs, "float32")}
    if m is not None:
        inputs["m"] = (m.shape, dt_of(m))

    def body(g, i, L):
        args = [i["q"], i["k"], i["v"], i["m"] if m is not None else L(None), L(0.0), L(causal), L(scale), L(gqa)]
        (y,) = g.add_node(SDPA, args, [T(ref.shape)])
        return y
    xs = [q, k, v] + ([m] if m is not None else [])
    for native in (True, False):
        check(run(build(inputs, body, native, monkeypatch), xs, ref.shape), ref, f"native={native}")


@pytest.mark.parametrize("b,l,h,e", [(1, 13, 3, 8), (2, 9, 2, 7)])
def test_projection_views_and_epilogue(b, l, h, e, monkeypatch):
    """BERT's layout: one [B, L, 2*H*E] projection split and permuted into q/v views (rows
    strided by 2*H*E), k a transposed [B, H, E, L] input (columns strided: packed), and an
    epilogue on the attention output (scale, residual add)."""
    d = h * e
    x, w, r = rand(b, l, d, seed=5), rand(2 * d, d, seed=6) / d ** 0.5, rand(b, h, l, e, seed=7)
    kt = rand(b, h, e, l, seed=8)
    qv = F.linear(x, w)
    qq, vv = (t.reshape(b, l, h, e).permute(0, 2, 1, 3) for t in qv.split(d, dim=-1))
    ref = F.scaled_dot_product_attention(qq, kt.transpose(-1, -2), vv) * 0.5 + r

    def body(g, i, L):
        (p,) = g.add_node("aten.linear.default", [i["x"], g.add_tensor_constant("w", "float32", list(w.shape), w.numpy()),
                                                  L(None)], [T((b, l, 2 * d))])
        outs = []
        for j in range(2):
            (s,) = g.add_node("aten.slice.Tensor", [p, L(2), L(j * d), L((j + 1) * d), L(1)], [T((b, l, d))])
            (s,) = g.add_node("aten.view.default", [s, L([b, l, h, e])], [T((b, l, h, e))])
            (s,) = g.add_node("aten.permute.default", [s, L([0, 2, 1, 3])], [T((b, h, l, e))])
            outs.append(s)
        (k,) = g.add_node("aten.transpose.int", [i["kt"], L(-1), L(-2)], [T((b, h, l, e))])
        (y,) = g.add_node(SDPA, [outs[0], k, outs[1], L(None), L(0.0), L(False), L(None), L(False)], [T((b, h, l, e))])
        (y,) = g.add_node("aten.mul.Tensor", [y, L(0.5)], [T((b, h, l, e))])
        (y,) = g.add_node("aten.add.Tensor", [y, i["r"], L(1)], [T((b, h, l, e))])
        return y
    inputs = {"x": ((b, l, d), "float32"), "kt": ((b, h, e, l), "float32"), "r": ((b, h, l, e), "float32")}
    for native in (True, False):
        check(run(build(inputs, body, native, monkeypatch), [x, kt, r], ref.shape), ref, f"native={native}")


def test_nan_rows_and_dynamic_length(monkeypatch):
    """A NaN in q makes its row NaN (both paths, as torch's softmax(q k^T) v; its fused CPU SDPA
    kernel drops the NaN); the same engine at two lengths."""
    def body(g, i, L):
        (y,) = g.add_node(SDPA, [i["q"], i["k"], i["v"], L(None), L(0.0), L(True), L(None), L(False)],
                          [("tensor", "float32", [1, 2, "s0", 8])])
        return y
    for native in (True, False):
        settings.set(NATIVE_ATTN="1" if native else "0")
        g = C.Graph()
        g.add_symbol("s0", 1, 16, 64)
        sh = ("tensor", "float32", [1, 2, "s0", 8])
        i = {n: g.add_input(n, sh) for n in "qkv"}
        g.set_outputs([body(g, i, g.add_constant)])
        e = C.Engine.build(g, name="attn_dyn", cache_dir="")
        for L_ in (5, 19):
            q, k, v = rand(1, 2, L_, 8, seed=L_), rand(1, 2, L_, 8, seed=L_ + 1), rand(1, 2, L_, 8, seed=L_ + 2)
            q[0, 1, 3, 2] = float("nan")
            s = (q @ k.transpose(-1, -2)) / 8 ** 0.5
            s = s.masked_fill(torch.ones(L_, L_, dtype=torch.bool).triu(1), float("-inf"))
            ref = torch.softmax(s, -1) @ v
            check(run(e, [q, k, v], ref.shape), ref, f"native={native} L={L_}")
