"""Views that alias instead of copying (convert/conv_shape.c split_of_slice, conv_movement.c
cat of one tensor), against torch eager; data movement is exact (tolerance 0).

- A reshape that splits dims of a unit-step slice of a dense tensor (GPT-2's q/k/v: thirds of one
  [B, L, 3 D] projection viewed as heads) is a view of the dense tensor: aligned slices (start and
  end multiples of the split's inner size), slices to the end, a dynamic batch; unaligned slices
  and merges keep the copy and stay exact. Aligned ones make no copy kernel.
- cat([empty 1-d, x]) (a decoder cache starting empty) is x itself: a permuted x, x an engine
  input returned as the output, and a dtype promotion (int64 x: a real concatenation)."""
import torch

from convtest_data import In, Node, TList, assert_close, build, rand_tensor, run


def f32(shape):
    return ("tensor", "float32", list(shape))


def copy_kernels(eng):
    """Kernels before the last (the op under test): copies of non-dense views."""
    return eng.info()["kernels"][:-1]


# input shape, slice (dim, start, end), view shape, permutation after the view, aligned
SLICES = [
    ((2, 5, 72), (2, 24, 48), (2, 5, 4, 6), (0, 2, 1, 3), True),     # GPT-2's k: the middle third
    ((3, 7, 45), (2, 30, None), (3, 7, 3, 5), (0, 2, 1, 3), True),   # the last third, end omitted
    ((1, 9, 36), (2, 0, 12), (1, 9, 2, 3, 2), None, True),           # split in three
    ((4, 6, 10), (1, 2, 6), (4, 2, 2, 10), None, True),              # a middle dim sliced and split
    ((2, 5, 72), (2, 22, 46), (2, 5, 4, 6), (0, 2, 1, 3), False),    # start not on a row of 6
    ((2, 5, 72), (2, 24, 48), (2, 5, 2, 12), None, True),
]


def sid(c):
    return "x".join(map(str, c[0])) + f"-s{c[1][1]}_{c[1][2]}-v" + "x".join(map(str, c[2]))


import pytest  # noqa: E402


@pytest.mark.parametrize("case", SLICES, ids=sid)
def test_view_of_slice(case):
    shape, (dim, start, end), vshape, perm, aligned = case
    x = In("x", "float32", list(shape))
    end_arg = end if end is not None else 2 ** 63 - 1
    sl = list(shape)
    sl[dim] = (end if end is not None else shape[dim]) - start
    s = Node("aten.slice.Tensor", [x, dim, start, end_arg, 1], [f32(sl)])
    v = Node("aten.view.default", [s, list(vshape)], [f32(vshape)])
    a = rand_tensor(shape)
    ref = a[(slice(None),) * dim + (slice(start, end),)].reshape(vshape)
    if perm:
        pshape = [vshape[p] for p in perm]
        v = Node("aten.permute.default", [v, list(perm)], [f32(pshape)])
        ref = ref.permute(*perm)
    eng = build("aten.mul.Tensor", [v, 2.0], [f32(ref.shape)])
    assert_close(run(eng, [a])[0], ref * 2.0, 0, 0, f"view of slice {sid(case)}")
    if aligned:
        assert not copy_kernels(eng), f"an aligned split of a slice still copies: {eng.info()['kernels']}"


def test_view_of_slice_dynamic_batch():
    x = In("x", "float32", ["s0", 5, 48])
    s = Node("aten.slice.Tensor", [x, 2, 16, 32, 1], [("tensor", "float32", ["s0", 5, 16])])
    v = Node("aten.view.default", [s, [-1, 5, 2, 8]], [("tensor", "float32", ["s0", 5, 2, 8])])
    eng = build("aten.mul.Tensor", [v, 3.0], [("tensor", "float32", ["s0", 5, 2, 8])], symbols=[("s0", 1, 2, 9)])
    assert not copy_kernels(eng), eng.info()["kernels"]
    for b in (1, 4, 9):
        a = rand_tensor((b, 5, 48))
        assert_close(run(eng, [a])[0], a[:, :, 16:32].reshape(b, 5, 2, 8) * 3.0, 0, 0, f"dynamic b={b}")


def test_cat_of_one_tensor_aliases():
    x, e = In("x", "float32", [2, 5, 3, 4]), In("e", "float32", [0])
    xt = Node("aten.permute.default", [x, [0, 2, 1, 3]], [f32((2, 3, 5, 4))])
    c = Node("aten.cat.default", [TList([e, xt]), -2], [f32((2, 3, 5, 4))])
    eng = build("aten.mul.Tensor", [c, 0.5], [f32((2, 3, 5, 4))])
    a = rand_tensor((2, 5, 3, 4))
    want = torch.cat([torch.empty(0), a.permute(0, 2, 1, 3)], -2) * 0.5
    assert_close(run(eng, [torch.empty(0), a])[0], want, 0, 0, "cat([empty, permuted x]) * 0.5")
    assert not [k for k in eng.info()["kernels"] if "concat" in k], eng.info()["kernels"]
    # the engine's output is its input
    eng = build("aten.cat.default", [TList([e, x]), 1], [f32((2, 5, 3, 4))])
    assert_close(run(eng, [torch.empty(0), a])[0], a, 0, 0, "cat([empty, x]) as the output")


def test_cat_of_one_tensor_promoted():
    x, e = In("x", "int64", [3, 4]), In("e", "float32", [0])
    eng = build("aten.cat.default", [TList([e, x]), 0], [f32((3, 4))])
    a = rand_tensor((3, 4), torch.int64)
    assert_close(run(eng, [torch.empty(0), a])[0], torch.cat([torch.empty(0), a], 0), 0, 0, "int64 x promoted")
