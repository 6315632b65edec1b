"""Differential tests (OpenCL engine vs torch eager) for data movement converters: cat, stack,
split.Tensor, split_with_sizes, chunk, unbind, constant_pad_nd. Data movement is exact:
tolerance 0 for every dtype (float16 too: values are copied, not computed)."""
import torch

from convtest_data import In, Node, TList, assert_close, build, rand_tensor, run


SYM = [("s0", 1, 4, 33)]
SIZES = (1, 3, 7, 33)


def test_cat_dynamic_batch_float32():
    x, y = In("x", "float32", ["s0", 3]), In("y", "float32", ["s0", 5])
    eng = build("aten.cat.default", [TList([x, y]), -1], [("tensor", "float32", ["s0", 8])], symbols=SYM)
    for n in SIZES:
        a, b = rand_tensor((n, 3)), rand_tensor((n, 5))
        assert_close(run(eng, [a, b])[0], torch.cat([a, b], -1), 0, 0, f"cat n={n}")


def test_cat_dim0_symbolic_sum():
    x, y = In("x", "float32", ["s0", 13]), In("y", "float32", ["2*s0+1", 13])
    eng = build("aten.cat.default", [TList([x, y]), 0], [("tensor", "float32", ["3*s0+1", 13])], symbols=SYM)
    for n in SIZES:
        a, b = rand_tensor((n, 13)), rand_tensor((2 * n + 1, 13))
        assert_close(run(eng, [a, b])[0], torch.cat([a, b], 0), 0, 0, f"cat dim0 n={n}")


def test_cat_many_inputs_chained_and_dtypes():
    # 6 inputs: more than one kernel's worth (4), so the kernels chain
    for dt in ("float32", "int64", "int32", "bool", "float16"):
        tdt = {"float32": torch.float32, "int64": torch.int64, "int32": torch.int32, "bool": torch.bool,
               "float16": torch.float16}[dt]
        widths = [1, 3, 7, 2, 5, 13]
        ins = [In(f"x{i}", dt, [2, 3, w]) for i, w in enumerate(widths)]
        eng = build("aten.cat.default", [TList(ins), 2], [("tensor", dt, [2, 3, sum(widths)])])
        ts = [rand_tensor((2, 3, w), tdt) for w in widths]
        if tdt == torch.int64:
            ts[0] = ts[0] + (1 << 40)  # beyond float precision: must be copied exactly
        assert_close(run(eng, ts)[0], torch.cat(ts, 2), 0, 0, f"cat6 {dt}")


def test_cat_of_permuted_view_and_mixed_dtype():
    # the first input is a transpose view (read in place through strides); int + float -> float
    x = In("x", "float32", [7, 3])
    xt = Node("aten.transpose.int", [x, 0, 1], [("tensor", "float32", [3, 7])])
    y = In("y", "int64", [3, 4])
    eng = build("aten.cat.default", [TList([xt, y]), 1], [("tensor", "float32", [3, 11])])
    a, b = rand_tensor((7, 3)), rand_tensor((3, 4), torch.int64)
    assert_close(run(eng, [a, b])[0], torch.cat([a.t(), b], 1), 0, 0, "cat of a transpose")


def test_cat_skips_empty_1d():
    x, e = In("x", "float32", [3, 5]), In("e", "float32", [0])
    eng = build("aten.cat.default", [TList([x, e, x]), 0], [("tensor", "float32", [6, 5])])
    a = rand_tensor((3, 5))
    assert_close(run(eng, [a, torch.empty(0)])[0], torch.cat([a, torch.empty(0), a], 0), 0, 0, "cat with empty")


def test_stack_dims_and_chain():
    for dim, out_shape in ((0, [5, "s0", 3]), (1, ["s0", 5, 3]), (-1, ["s0", 3, 5])):
        ins = [In(f"x{i}", "float32", ["s0", 3]) for i in range(5)]
        eng = build("aten.stack.default", [TList(ins), dim], [("tensor", "float32", out_shape)], symbols=SYM)
        for n in (1, 7):
            ts = [rand_tensor((n, 3), gen=torch.Generator().manual_seed(i + n)) for i in range(5)]
            assert_close(run(eng, ts)[0], torch.stack(ts, dim), 0, 0, f"stack dim={dim} n={n}")


def test_stack_int64():
    ins = [In(f"x{i}", "int64", [7]) for i in range(3)]
    eng = build("aten.stack.default", [TList(ins), 1], [("tensor", "int64", [7, 3])])
    ts = [rand_tensor((7,), torch.int64, -100, 100, gen=torch.Generator().manual_seed(i)) for i in range(3)]
    assert_close(run(eng, ts)[0], torch.stack(ts, 1), 0, 0, "stack int64")


def _check_multi(eng, args, want, what):
    got = run(eng, args)
    assert len(got) == len(want), f"{what}: {len(got)} outputs, {len(want)} expected"
    for i, (g, w) in enumerate(zip(got, want)):
        assert_close(g, w, 0, 0, f"{what} output {i}")


def test_split_tensor_uneven_dynamic_batch():
    x = In("x", "float32", ["s0", 7, 5])
    outs = [("tensor", "float32", ["s0", 3, 5]), ("tensor", "float32", ["s0", 3, 5]), ("tensor", "float32", ["s0", 1, 5])]
    eng = build("aten.split.Tensor", [x, 3, 1], outs, symbols=SYM)
    for n in SIZES:
        a = rand_tensor((n, 7, 5))
        _check_multi(eng, [a], torch.split(a, 3, 1), f"split n={n}")


def test_split_with_sizes_and_int32():
    for dt, tdt in (("float32", torch.float32), ("int32", torch.int32)):
        x = In("x", dt, [13, 4])
        sizes = [2, 4, 7]
        eng = build("aten.split_with_sizes.default", [x, sizes, 0], [("tensor", dt, [s, 4]) for s in sizes])
        a = rand_tensor((13, 4), tdt)
        _check_multi(eng, [a], torch.split(a, sizes, 0), f"split_with_sizes {dt}")


def test_chunk():
    x = In("x", "float32", [3, 33])
    want_shapes = [t.shape for t in torch.chunk(torch.empty(3, 33), 4, -1)]
    eng = build("aten.chunk.default", [x, 4, -1], [("tensor", "float32", list(s)) for s in want_shapes])
    a = rand_tensor((3, 33))
    _check_multi(eng, [a], torch.chunk(a, 4, -1), "chunk")


def test_unbind():
    x = In("x", "float32", ["s0", 3, 2])
    eng = build("aten.unbind.int", [x, 1], [("tensor", "float32", ["s0", 2])] * 3, symbols=SYM)
    for n in (1, 7):
        a = rand_tensor((n, 3, 2))
        _check_multi(eng, [a], torch.unbind(a, 1), f"unbind n={n}")


def test_constant_pad_nd():
    cases = [
        ([1, 2], 0.0, (3, 7)),                # last dim only
        ([1, 2, 3, 0], -1.5, (2, 3, 5)),      # two dims, non-zero fill
        ([2, 2, 1, 1, 0, 0, 0, 0], 0.25, (1, 3, 7, 7)),   # NCHW spatial pad (conv padding)
        ([-1, 2, 1, -2], 3.0, (4, 13)),       # negative pads crop
    ]
    for pad, value, shape in cases:
        want_shape = list(torch.nn.functional.pad(torch.empty(shape), pad, value=value).shape)
        x = In("x", "float32", list(shape))
        eng = build("aten.constant_pad_nd.default", [x, pad, value], [("tensor", "float32", want_shape)])
        a = rand_tensor(shape)
        want = torch.constant_pad_nd(a, pad, value)
        assert_close(run(eng, [a])[0], want, 0, 0, f"pad {pad} {shape}")


def test_constant_pad_nd_int64_dynamic():
    x = In("x", "int64", ["s0", 5])
    eng = build("aten.constant_pad_nd.default", [x, [2, 1], 7], [("tensor", "int64", ["s0", 8])], symbols=SYM)
    for n in SIZES:
        a = rand_tensor((n, 5), torch.int64, -50, 50)
        assert_close(run(eng, [a])[0], torch.constant_pad_nd(a, [2, 1], 7), 0, 0, f"pad int64 n={n}")


def test_epilogue_fused_into_concat_and_pad():
    # relu(cat(x, y)) * z: the elementwise ops become the CONCAT kernel's epilogue
    x, y, z = In("x", "float32", ["s0", 3]), In("y", "float32", ["s0", 4]), In("z", "float32", ["s0", 7])
    cat = Node("aten.cat.default", [TList([x, y]), 1], [("tensor", "float32", ["s0", 7])])
    relu = Node("aten.relu.default", [cat], [("tensor", "float32", ["s0", 7])])
    eng = build("aten.mul.Tensor", [relu, z], [("tensor", "float32", ["s0", 7])], symbols=SYM)
    assert eng.info()["fused"] >= 1, eng.info()["kernels"]
    for n in (1, 7):
        a, b, c = rand_tensor((n, 3)), rand_tensor((n, 4)), rand_tensor((n, 7))
        assert_close(run(eng, [a, b, c])[0], torch.relu(torch.cat([a, b], 1)) * c, 0, 0, f"fused cat n={n}")
    pad = Node("aten.constant_pad_nd.default", [In("p", "float32", [3, 5]), [1, 1], -2.0], [("tensor", "float32", [3, 7])])
    eng = build("aten.abs.default", [pad], [("tensor", "float32", [3, 7])])
    a = rand_tensor((3, 5))
    assert_close(run(eng, [a])[0], torch.constant_pad_nd(a, [1, 1], -2.0).abs(), 0, 0, "fused pad")
