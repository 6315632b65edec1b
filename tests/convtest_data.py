"""Differential harness for graph-level converter tests (helper of the test_converters_*.py
files for data movement, indexing, creation, resize and attention). It builds small IR
graphs with _C.Graph -- inputs with symbolic dims, inner nodes (views feeding the op under
test), multi-output ops -- runs them through _C.Engine on the OpenCL device and compares
with torch eager. (tests/convtest.py is the one-op harness with check_op.)

    x = In("x", "float32", ["s0", 7])                  # an engine input (dims may be symbols)
    eng = build("aten.cat.default", [TList([x, y]), 1], [("tensor", "float32", ["s0", 14])],
                symbols=[("s0", 1, 4, 33)])
    outs = run(eng, [xt, yt])                          # torch tensors out
    assert_close(outs[0], torch.cat([xt, yt], 1), atol=0, rtol=0, what="cat")

One build serves every shape within the symbol ranges (re-planned, not rebuilt), so tests
batch several shapes per build. Random inputs are never all zeros (rand_tensor).
"""
import numpy as np
import torch

from torchtrt_c import _C

TORCH_DTYPE = {
    "float32": torch.float32, "float16": torch.float16, "int64": torch.int64, "int32": torch.int32,
    "bool": torch.bool, "uint8": torch.uint8, "int8": torch.int8,
}
DTYPE_NAME = {v: k for k, v in TORCH_DTYPE.items()}


class In:
    """A graph input: name, dtype name, shape (ints or dim strings such as "s0", "2*s0")."""

    def __init__(self, name, dtype, shape):
        self.name, self.dtype, self.shape = name, dtype, list(shape)


class TList:
    """A prim.ListConstruct of tensors (In/Node/Const) or None entries (index.Tensor)."""

    def __init__(self, items):
        self.items = list(items)


class Const:
    """A tensor constant (weights) given as a torch tensor."""

    def __init__(self, t, name=None):
        self.t, self.name = t.contiguous(), name


class Node:
    """An inner node used as an argument: its output `index` feeds the node under test."""

    def __init__(self, op, args, out_types, index=0):
        self.op, self.args, self.out_types, self.index = op, list(args), list(out_types), index


def _type(t):
    return tuple(t) if isinstance(t, list) else t


def build(op, args, out_types, symbols=(), precision="fp32", name="t"):
    """Builds the engine of the graph `op(*args)` (args: In, TList, Const, Node or literals)
    whose outputs are typed out_types."""
    g = _C.Graph()
    for s in symbols:
        g.add_symbol(*s)
    counter = [0]
    seen = {}

    def conv(a):
        if isinstance(a, In):
            if a.name not in seen:
                seen[a.name] = g.add_input(a.name, ("tensor", a.dtype, a.shape))
            return seen[a.name]
        if isinstance(a, TList):
            items = [conv(x) for x in a.items]
            return g.add_node("prim.ListConstruct", items, [("list", "tensor")])[0]
        if isinstance(a, Node):
            counter[0] += 1
            nm = f"n{counter[0]}"
            names = [conv(x) for x in a.args]
            return g.add_node(a.op, names, [_type(t) for t in a.out_types], name=nm)[a.index]
        if isinstance(a, Const):
            counter[0] += 1
            arr = a.t.numpy()  # the graph keeps the buffer alive (zero-copy)
            return g.add_tensor_constant(a.name or f"w{counter[0]}", DTYPE_NAME[a.t.dtype], list(a.t.shape), arr)
        return g.add_constant(a)

    names = [conv(a) for a in args]
    outs = g.add_node(op, names, [_type(t) for t in out_types], name=name)
    g.set_outputs(outs)
    g.verify()
    return _C.Engine.build(g, name=name, precision=precision)


def run(eng, tensors):
    """Executes eng on torch tensors (converted to the bindings' dtypes) -> torch tensors."""
    arrs = [np.ascontiguousarray(t.to(TORCH_DTYPE[b["dtype"]]).numpy()) for t, b in zip(tensors, eng.inputs)]
    shapes = eng.output_shapes([tuple(a.shape) for a in arrs])
    outs = [torch.empty(tuple(s), dtype=TORCH_DTYPE[b["dtype"]]) for s, b in zip(shapes, eng.outputs)]
    eng.execute(arrs, [o.numpy() for o in outs])
    return outs


def rand_tensor(shape, dtype=torch.float32, low=-3.0, high=3.0, gen=None):
    """Random data of dtype; never all zeros (bools are about half true)."""
    gen = gen or torch.Generator().manual_seed(sum(shape) * 7919 + len(shape))
    if dtype == torch.bool:
        t = torch.rand(shape, generator=gen) > 0.5
        if t.numel():
            t.view(-1)[0] = True
        return t
    if dtype.is_floating_point:
        return (torch.rand(shape, generator=gen) * (high - low) + low).to(dtype)
    t = torch.randint(int(low), int(high) + 1, shape, generator=gen).to(dtype)
    if t.numel():
        t.view(-1)[0] = int(high)
    return t


def assert_close(got, want, atol, rtol, what):
    """Shapes and dtypes equal; values within atol + rtol*|want| (NaNs where torch has NaNs)."""
    assert tuple(got.shape) == tuple(want.shape), f"{what}: shape {tuple(got.shape)} != {tuple(want.shape)}"
    if not want.dtype.is_floating_point:
        assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
        bad = got != want
        assert not bad.any(), (f"{what}: {int(bad.sum())} of {want.numel()} elements differ, first at "
                               f"{tuple(bad.nonzero()[0].tolist())}: {got[bad][0]} vs {want[bad][0]}")
        return
    g, w = got.double(), want.double()
    nan_w = torch.isnan(w)
    assert torch.equal(torch.isnan(g), nan_w), f"{what}: NaN positions differ"
    diff = (g - w).abs()
    bad = (diff > atol + rtol * w.abs()) & ~nan_w
    if bad.any():
        i = tuple(bad.nonzero()[0].tolist())
        raise AssertionError(f"{what}: {int(bad.sum())} of {w.numel()} elements off; max abs err "
                             f"{float(diff[~nan_w].max()):.3g} (atol {atol}, rtol {rtol}); first at {i}: "
                             f"{float(g[i])} vs {float(w[i])}")
