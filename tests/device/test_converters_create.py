"""Differential tests (OpenCL engine vs torch eager) for creation converters: arange (three
overloads), full, zeros, ones, full_like, zeros_like, ones_like, scalar_tensor. Results are
exact (tolerance 0), float arange included (values computed in double, as torch does).
A created tensor is added to a random input so that the engine's output is never constant."""
import pytest
import torch

from convtest_data import In, Node, assert_close, build, rand_tensor, run


SYM = [("s0", 1, 4, 33)]

ARANGE_CASES = [
    ("aten.arange.default", [13], torch.arange(13)),
    ("aten.arange.start", [-3, 7], torch.arange(-3, 7)),
    ("aten.arange.start_step", [2, 33, 3], torch.arange(2, 33, 3)),
    ("aten.arange.start_step", [0.5, 3.75, 0.25], torch.arange(0.5, 3.75, 0.25)),
    ("aten.arange.start_step", [7, -6, -2], torch.arange(7, -6, -2)),
]


@pytest.mark.parametrize("op,args,want", ARANGE_CASES, ids=[f"{c[0].split('.')[-1]}{c[1]}" for c in ARANGE_CASES])
def test_arange(op, args, want):
    dt = "float32" if want.dtype == torch.float32 else "int64"
    n = want.shape[0]
    # arange(...) + x: the engine needs an input; x is random
    ar = Node(op, list(args) + [None, None, None, False], [("tensor", dt, [n])])
    eng = build("aten.add.Tensor", [ar, In("x", dt, [n]), 1], [("tensor", dt, [n])])
    x = rand_tensor((n,), want.dtype)
    assert_close(run(eng, [x])[0], want + x, 0, 0, f"{op}{args}")


def test_arange_int32_output_alone():
    ar = Node("aten.arange.start", [1, 8, None, None, None, False], [("tensor", "int32", [7])])
    eng = build("aten.mul.Tensor", [ar, In("x", "int32", [7])], [("tensor", "int32", [7])])
    x = rand_tensor((7,), torch.int32, -9, 9)
    assert_close(run(eng, [x])[0], torch.arange(1, 8, dtype=torch.int32) * x, 0, 0, "arange int32")


@pytest.mark.parametrize("dt", ["float32", "int64", "bool"])
def test_full_zeros_ones(dt):
    tdt = {"float32": torch.float32, "int64": torch.int64, "bool": torch.bool}[dt]
    shape = [3, 7]
    x = rand_tensor(tuple(shape), tdt)
    for op, args, want in (
        ("aten.full.default", [shape, 2.5 if dt == "float32" else 3], torch.full(shape, 2.5 if dt == "float32" else 3, dtype=tdt)),
        ("aten.zeros.default", [shape], torch.zeros(shape, dtype=tdt)),
        ("aten.ones.default", [shape], torch.ones(shape, dtype=tdt)),
    ):
        made = Node(op, args + [None, None, None, False], [("tensor", dt, shape)])
        if dt == "bool":   # logical_xor keeps bools: x ^ full
            eng = build("aten.logical_xor.default", [made, In("x", dt, shape)], [("tensor", dt, shape)])
            assert_close(run(eng, [x])[0], torch.logical_xor(want, x), 0, 0, f"{op} {dt}")
        else:
            eng = build("aten.sub.Tensor", [made, In("x", dt, shape), 1], [("tensor", dt, shape)])
            assert_close(run(eng, [x])[0], want - x, 0, 0, f"{op} {dt}")


def test_like_ops_dynamic_and_alone():
    # as engine outputs of their own (no consumer to fold into), with a symbolic batch
    for op, args, fill in (("aten.full_like.default", [-1.25], -1.25), ("aten.zeros_like.default", [], 0.0),
                           ("aten.ones_like.default", [], 1.0)):
        x = In("x", "float32", ["s0", 5])
        eng = build(op, [x] + args + [None, None, None, False, None], [("tensor", "float32", ["s0", 5])],
                    symbols=SYM)
        for n in (1, 7, 33):
            a = rand_tensor((n, 5))
            assert_close(run(eng, [a])[0], torch.full((n, 5), fill), 0, 0, f"{op} n={n}")


def test_full_like_dtype_override():
    x = In("x", "float32", [4, 3])
    eng = build("aten.full_like.default", [x, 9, None, None, None, False, None],
                [("tensor", "float32", [4, 3])])
    assert_close(run(eng, [rand_tensor((4, 3))])[0], torch.full((4, 3), 9.0), 0, 0, "full_like")


def test_scalar_tensor():
    st = Node("aten.scalar_tensor.default", [0.75, None, None, None, False], [("tensor", "float32", [])])
    eng = build("aten.mul.Tensor", [In("x", "float32", [3, 13]), st], [("tensor", "float32", [3, 13])])
    x = rand_tensor((3, 13))
    assert_close(run(eng, [x])[0], x * 0.75, 0, 0, "scalar_tensor")


def test_full_runtime_sizes():
    # sizes computed at run time (issue 11): the output's dims come from the IR type, which the
    # importer takes from torch's symbolic sizes; the size-list argument itself is never read
    for op, args, fill in (("aten.zeros.default", [], 0.0), ("aten.ones.default", [], 1.0),
                           ("aten.full.default", [-2.5], -2.5)):
        z = Node(op, [[1, 4]] + args + [None, None, None, False], [("tensor", "float32", ["s0", 4])])
        eng = build("aten.add.Tensor", [z, In("x", "float32", ["s0", 4]), 1], [("tensor", "float32", ["s0", 4])],
                    symbols=SYM)
        for n in (1, 6, 33):
            x = rand_tensor((n, 4))
            assert_close(run(eng, [x])[0], x + fill, 0, 0, f"{op} n={n}")


def test_arange_symbolic_length():
    # arange(0, s0) and arange(3, 3 + 2*s0, 2) from the element index (issue 11)
    for args, ref in (([0, 1], lambda n: torch.arange(n)), ([3, 1, 2], lambda n: torch.arange(3, 3 + 2 * n, 2))):
        op = "aten.arange.start" if len(args) == 2 else "aten.arange.start_step"
        ar = Node(op, list(args) + [None, None, None, False], [("tensor", "int64", ["s0"])])
        eng = build("aten.add.Tensor", [ar, In("x", "int64", ["s0"]), 1], [("tensor", "int64", ["s0"])], symbols=SYM)
        for n in (1, 9, 33):
            x = rand_tensor((n,), torch.int64, -9, 9)
            assert_close(run(eng, [x])[0], ref(n) + x, 0, 0, f"{op}{args} n={n}")
