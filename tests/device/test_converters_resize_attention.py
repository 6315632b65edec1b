"""Differential tests (OpenCL engine vs torch eager) for upsample_nearest2d.vec,
upsample_bilinear2d.vec and scaled_dot_product_attention.

Tolerances: nearest is a copy (exact); bilinear fp32 atol 1e-5 (4-tap weighted sum);
attention fp32 atol 1e-5 + rtol 1e-4 (online softmax sums in a different order than
torch's), fp16 engines atol 2e-2 + rtol 2e-2 (half storage of inputs and output)."""
import math

import pytest
import torch
import torch.nn.functional as F

from convtest_data import In, Node, assert_close, build, rand_tensor, run


SYM = [("s0", 1, 2, 5)]


def _up_nearest(x, size=None, scale=None):
    return torch.ops.aten.upsample_nearest2d.vec(x, size, scale)


def _up_bilinear(x, align, size=None, scale=None):
    return torch.ops.aten.upsample_bilinear2d.vec(x, size, align, scale)


NEAREST = [((1, 3, 7, 5), None, [2.0, 2.0]), ((2, 2, 7, 5), [13, 11], None), ((1, 1, 33, 13), [7, 3], None),
           ((1, 2, 3, 5), None, [1.5, 3.0])]


@pytest.mark.parametrize("shape,size,scale", NEAREST, ids=[str(c[0]) + str(c[1] or c[2]) for c in NEAREST])
def test_upsample_nearest(shape, size, scale):
    a = rand_tensor(shape)
    want = _up_nearest(a, size, scale)
    eng = build("aten.upsample_nearest2d.vec", [In("x", "float32", list(shape)), size, scale],
                [("tensor", "float32", list(want.shape))])
    assert_close(run(eng, [a])[0], want, 0, 0, f"nearest {shape} {size or scale}")


def test_upsample_nearest_dynamic_batch_uint8():
    eng = build("aten.upsample_nearest2d.vec", [In("x", "uint8", ["s0", 3, 5, 7]), None, [2.0, 3.0]],
                [("tensor", "uint8", ["s0", 3, 10, 21])], symbols=SYM)
    for n in (1, 3, 5):
        a = rand_tensor((n, 3, 5, 7), torch.uint8, 0, 255)
        assert_close(run(eng, [a])[0], _up_nearest(a, None, [2.0, 3.0]), 0, 0, f"nearest uint8 n={n}")


BILINEAR = [((1, 3, 7, 5), None, [2.0, 2.0]), ((2, 2, 7, 5), [13, 11], None), ((1, 1, 33, 13), [7, 3], None),
            ((1, 2, 3, 5), None, [1.5, 3.0]), ((1, 1, 1, 4), [3, 1], None)]


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("shape,size,scale", BILINEAR, ids=[str(c[0]) + str(c[1] or c[2]) for c in BILINEAR])
def test_upsample_bilinear(shape, size, scale, align):
    a = rand_tensor(shape)
    want = _up_bilinear(a, align, size, scale)
    eng = build("aten.upsample_bilinear2d.vec", [In("x", "float32", list(shape)), size, align, scale],
                [("tensor", "float32", list(want.shape))])
    assert_close(run(eng, [a])[0], want, 1e-5, 0, f"bilinear {shape} {size or scale} align={align}")


def test_upsample_bilinear_of_permuted_view():
    # NHWC -> NCHW permute feeding the resize: read in place through strides
    x = In("x", "float32", [1, 5, 7, 3])
    xp = Node("aten.permute.default", [x, [0, 3, 1, 2]], [("tensor", "float32", [1, 3, 5, 7])])
    eng = build("aten.upsample_bilinear2d.vec", [xp, [9, 13], False, None], [("tensor", "float32", [1, 3, 9, 13])])
    a = rand_tensor((1, 5, 7, 3))
    assert_close(run(eng, [a])[0], _up_bilinear(a.permute(0, 3, 1, 2), False, [9, 13]), 1e-5, 0, "bilinear of permute")


def _sdpa_graph(qs, ks, vs, mask=None, causal=False, scale=None, precision="fp32", dt="float32", symbols=()):
    args = [In("q", dt, qs), In("k", dt, ks), In("v", dt, vs), mask, 0.0, causal, scale, False]
    out = list(qs[:-1]) + [vs[-1]]
    return build("aten.scaled_dot_product_attention.default", args, [("tensor", dt, out)], symbols=symbols,
                 precision=precision)


ATTN_SHAPES = [((1, 2, 7, 8), (1, 2, 13, 8), (1, 2, 13, 8)), ((2, 3, 33, 16), (2, 3, 33, 16), (2, 3, 33, 5)),
               ((1, 1, 1, 3), (1, 1, 3, 3), (1, 1, 3, 7)), ((3, 5, 4), (3, 9, 4), (3, 9, 4))]


@pytest.mark.parametrize("qs,ks,vs", ATTN_SHAPES, ids=[str(s[0]) for s in ATTN_SHAPES])
def test_sdpa_plain_and_scale(qs, ks, vs):
    q, k, v = rand_tensor(qs, low=-1, high=1), rand_tensor(ks, low=-1, high=1), rand_tensor(vs, low=-1, high=1)
    eng = _sdpa_graph(list(qs), list(ks), list(vs))
    assert_close(run(eng, [q, k, v])[0], F.scaled_dot_product_attention(q, k, v), 1e-5, 1e-4, f"sdpa {qs}")
    eng = _sdpa_graph(list(qs), list(ks), list(vs), scale=0.3)
    assert_close(run(eng, [q, k, v])[0], F.scaled_dot_product_attention(q, k, v, scale=0.3), 1e-5, 1e-4, "sdpa scale")


def test_sdpa_causal_dynamic_seq():
    eng = _sdpa_graph([2, 4, "s0", 8], [2, 4, "s0", 8], [2, 4, "s0", 8], causal=True,
                      symbols=[("s0", 1, 8, 33)])
    for L in (1, 7, 33):
        q, k, v = (rand_tensor((2, 4, L, 8), gen=torch.Generator().manual_seed(L + i)) for i in range(3))
        want = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        assert_close(run(eng, [q, k, v])[0], want, 1e-5, 1e-4, f"sdpa causal L={L}")


def test_sdpa_causal_rectangular():
    q, k, v = rand_tensor((1, 2, 5, 4)), rand_tensor((1, 2, 9, 4)), rand_tensor((1, 2, 9, 4))
    eng = _sdpa_graph([1, 2, 5, 4], [1, 2, 9, 4], [1, 2, 9, 4], causal=True)
    assert_close(run(eng, [q, k, v])[0], F.scaled_dot_product_attention(q, k, v, is_causal=True), 1e-5, 1e-4,
                 "sdpa causal L<S")


def test_sdpa_bool_mask_broadcast():
    q, k, v = rand_tensor((2, 3, 7, 8)), rand_tensor((2, 3, 13, 8)), rand_tensor((2, 3, 13, 8))
    m = torch.rand(2, 1, 1, 13, generator=torch.Generator().manual_seed(1)) > 0.3   # BERT-style key padding
    m[..., 0] = True
    eng = _sdpa_graph([2, 3, 7, 8], [2, 3, 13, 8], [2, 3, 13, 8], mask=In("m", "bool", [2, 1, 1, 13]))
    assert_close(run(eng, [q, k, v, m])[0], F.scaled_dot_product_attention(q, k, v, attn_mask=m), 1e-5, 1e-4,
                 "sdpa bool mask")


def test_sdpa_float_mask_with_inf():
    q, k, v = rand_tensor((1, 2, 7, 8)), rand_tensor((1, 2, 7, 8)), rand_tensor((1, 2, 7, 8))
    m = rand_tensor((7, 7), low=-2, high=2)
    m[:, 3] = -math.inf
    eng = _sdpa_graph([1, 2, 7, 8], [1, 2, 7, 8], [1, 2, 7, 8], mask=In("m", "float32", [7, 7]))
    assert_close(run(eng, [q, k, v, m])[0], F.scaled_dot_product_attention(q, k, v, attn_mask=m), 1e-5, 1e-4,
                 "sdpa float mask")


def test_sdpa_of_permuted_views():
    # the usual [B, L, H, E] -> [B, H, L, E] transposes feed the kernel without copies
    x = [In(n, "float32", [2, 7, 3, 8]) for n in "qkv"]
    views = [Node("aten.permute.default", [t, [0, 2, 1, 3]], [("tensor", "float32", [2, 3, 7, 8])]) for t in x]
    eng = build("aten.scaled_dot_product_attention.default", views + [None, 0.0, False, None, False],
                [("tensor", "float32", [2, 3, 7, 8])])
    q, k, v = (rand_tensor((2, 7, 3, 8), gen=torch.Generator().manual_seed(i)) for i in range(3))
    want = F.scaled_dot_product_attention(*(t.permute(0, 2, 1, 3) for t in (q, k, v)))
    assert_close(run(eng, [q, k, v])[0], want, 1e-5, 1e-4, "sdpa of permutes")


def test_sdpa_fp16_engine():
    q, k, v = (rand_tensor((1, 2, 13, 16), gen=torch.Generator().manual_seed(i), low=-1, high=1).half() for i in range(3))
    eng = _sdpa_graph([1, 2, 13, 16], [1, 2, 13, 16], [1, 2, 13, 16], precision="fp16", dt="float16")
    want = F.scaled_dot_product_attention(q.float(), k.float(), v.float()).half()
    assert_close(run(eng, [q, k, v])[0], want, 2e-2, 2e-2, "sdpa fp16")


def test_sdpa_rejects_dropout():
    with pytest.raises(Exception, match="dropout"):
        build("aten.scaled_dot_product_attention.default",
              [In("q", "float32", [1, 2, 3]), In("k", "float32", [1, 2, 3]), In("v", "float32", [1, 2, 3]), None, 0.1,
               False, None, False], [("tensor", "float32", [1, 2, 3])])
