"""Differential tests (OpenCL engine vs torch eager) for indexing converters: embedding,
index_select, gather, index.Tensor (tensor indices, None-padded lists as torch.export makes
them). Indexing copies values: tolerance 0 for every dtype."""
import pytest
import torch

from convtest_data import Const, In, Node, TList, assert_close, build, rand_tensor, run


SYM = [("s0", 1, 4, 33)]


def _idx(shape, high, dtype=torch.int64, seed=0, negative=False):
    g = torch.Generator().manual_seed(seed)
    low = -high if negative else 0
    return torch.randint(low, high, shape, generator=g).to(dtype)


@pytest.mark.parametrize("idt", ["int64", "int32"])
def test_embedding_dynamic(idt):
    w = rand_tensor((33, 13))
    ids = In("ids", idt, ["s0", 7])
    eng = build("aten.embedding.default", [Const(w), ids, -1, False, False], [("tensor", "float32", ["s0", 7, 13])],
                symbols=SYM)
    for n in (1, 3, 33):
        ix = _idx((n, 7), 33, getattr(torch, idt), seed=n)
        assert_close(run(eng, [ix])[0], torch.nn.functional.embedding(ix, w), 0, 0, f"embedding n={n}")


def test_embedding_float16_weight_and_1d_ids():
    w = rand_tensor((7, 5)).half()
    ids = In("ids", "int64", [13])
    eng = build("aten.embedding.default", [Const(w), ids, -1, False, False], [("tensor", "float16", [13, 5])],
                precision="fp16")
    ix = _idx((13,), 7, seed=3)
    assert_close(run(eng, [ix])[0], torch.nn.functional.embedding(ix, w), 0, 0, "embedding fp16")


def test_index_select_dims_and_dtypes():
    for dt, tdt in (("float32", torch.float32), ("int64", torch.int64), ("float16", torch.float16)):
        for dim in (0, 1, -1):
            x = In("x", dt, [7, 3, 5])
            n_sel = 4
            size = (7, 3, 5)[dim]
            want_shape = [7, 3, 5]
            want_shape[dim] = n_sel
            eng = build("aten.index_select.default", [x, dim, In("i", "int64", [n_sel])],
                        [("tensor", dt, want_shape)])
            a = rand_tensor((7, 3, 5), tdt)
            ix = _idx((n_sel,), size, seed=dim + 5)
            assert_close(run(eng, [a, ix])[0], torch.index_select(a, dim, ix), 0, 0, f"index_select {dt} dim={dim}")


def test_index_select_of_transposed_view():
    x = In("x", "float32", [5, 9])
    xt = Node("aten.transpose.int", [x, 0, 1], [("tensor", "float32", [9, 5])])
    eng = build("aten.index_select.default", [xt, 0, In("i", "int64", [3])], [("tensor", "float32", [3, 5])])
    a, ix = rand_tensor((5, 9)), torch.tensor([8, 0, 4])
    assert_close(run(eng, [a, ix])[0], a.t()[ix], 0, 0, "index_select of a transpose")


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather(dim):
    x = In("x", "float32", [7, 13])
    ishape = [3, 13] if dim == 0 else [7, 5]
    eng = build("aten.gather.default", [x, dim, In("i", "int64", ishape), False], [("tensor", "float32", ishape)])
    a = rand_tensor((7, 13))
    ix = _idx(tuple(ishape), a.shape[dim], seed=11, negative=False)
    assert_close(run(eng, [a, ix])[0], torch.gather(a, dim, ix), 0, 0, f"gather dim={dim}")


def test_gather_int64_dynamic():
    x = In("x", "int64", ["s0", 13])
    eng = build("aten.gather.default", [x, 1, In("i", "int32", ["s0", 3]), False], [("tensor", "int64", ["s0", 3])],
                symbols=SYM)
    for n in (1, 7, 33):
        a = rand_tensor((n, 13), torch.int64, -1000, 1000) * (1 << 33)
        ix = _idx((n, 3), 13, torch.int32, seed=n)
        assert_close(run(eng, [a, ix])[0], torch.gather(a, 1, ix.long()), 0, 0, f"gather int64 n={n}")


INDEX_CASES = [
    # (x shape, index list (shape or None), description)
    ((7, 5), [(3,)], "x[i]"),
    ((7, 5, 3), [None, (2, 4)], "x[:, i] (None-padded, adjacent)"),
    ((7, 5, 3), [(4,), (4,)], "x[i, j] (adjacent pair)"),
    ((7, 5, 3), [(2, 1), (1, 3)], "x[i, j] broadcast"),
    ((7, 5, 3), [(4,), None, (4,)], "x[i, :, k] (separated: index dims first)"),
    ((3, 7, 5, 2), [None, (6,), (1,)], "x[:, i, j] broadcast within"),
]


@pytest.mark.parametrize("xshape,idx,desc", INDEX_CASES, ids=[c[2] for c in INDEX_CASES])
def test_index_tensor(xshape, idx, desc):
    a = rand_tensor(xshape)
    # negative indices count from the end
    ins = {d: _idx(s, xshape[d], seed=d + 1, negative=True) for d, s in enumerate(idx) if s is not None}
    want = torch.ops.aten.index.Tensor(a, [ins.get(d) for d in range(len(idx))])
    items = [None if s is None else In(f"i{d}", "int64", list(s)) for d, s in enumerate(idx)]
    eng = build("aten.index.Tensor", [In("x", "float32", list(xshape)), TList(items)],
                [("tensor", "float32", list(want.shape))])
    assert_close(run(eng, [a] + list(ins.values()))[0], want, 0, 0, desc)


def test_index_tensor_dynamic_rows():
    x = In("x", "float32", ["s0", 13])
    eng = build("aten.index.Tensor", [x, TList([None, In("j", "int64", [5])])], [("tensor", "float32", ["s0", 5])],
                symbols=SYM)
    for n in (1, 3, 33):
        a, j = rand_tensor((n, 13)), _idx((5,), 13, seed=2)
        assert_close(run(eng, [a, j])[0], a[:, j], 0, 0, f"x[:, j] n={n}")


def test_index_rejects_bool_mask():
    g_ok = True
    try:
        build("aten.index.Tensor", [In("x", "float32", [4, 3]), TList([In("m", "bool", [4])])],
              [("tensor", "float32", [2, 3])])
        g_ok = False
    except Exception as e:  # the validator says no: the node would stay in torch
        assert "mask" in str(e) or "bool" in str(e), str(e)
    assert g_ok, "a boolean mask index must not be converted (data-dependent shape)"
