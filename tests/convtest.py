"""Differential harness for converters: one-op IR graph -> Engine -> compare with torch eager.

    from convtest import check_op, Const
    check_op("aten.add.Tensor", [x, y, 1], tol=1e-6)            # tensors become engine inputs
    check_op("aten.linear.default", [x, Const(w), Const(b)])   # Const(t): a weight in the graph

Arguments follow the ATen schema order (as the importer fills them in). Tensors are engine
inputs unless wrapped in Const; ints/floats/bools/None/str/lists become prim constants.
`check_op` computes the reference with torch.ops.aten.<op>, builds and runs the engine and
asserts max |a - b| <= atol + rtol * |b| elementwise, reporting the worst element.
"""
import numpy as np
import torch

import torchtrt_c._C as C

DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.int64: "int64", torch.int32: "int32",
          torch.bool: "bool", torch.uint8: "uint8", torch.int8: "int8"}


class Const:
    def __init__(self, t):
        self.t = t


def rand(*shape, dtype=torch.float32, low=-2.0, high=2.0, seed=None):
    """Random values, never exactly zero (so that wrong-zero results cannot pass)."""
    g = torch.Generator().manual_seed(hash((shape, seed)) & 0xFFFFFFFF)
    t = torch.rand(shape, generator=g) * (high - low) + low
    t = torch.where(t.abs() < 1e-3, torch.full_like(t, 0.5), t)
    return t.to(dtype)


def aten_op(name):
    _, op, overload = name.split(".")
    return getattr(getattr(torch.ops.aten, op), overload)


def call_aten(name, args):
    """Calls the ATen overload with args in schema order (kwarg-only ones passed by name)."""
    fn = aten_op(name)
    pos, kw = [], {}
    for a, sa in zip(args, fn._schema.arguments):
        if sa.kwarg_only:
            kw[sa.name] = a
        else:
            pos.append(a)
    return fn(*pos, **kw)


def _ttype(t, shape=None):
    return ("tensor", DTYPES[t.dtype], list(t.shape) if shape is None else shape)


def _add_arg(g, a, i, dyn):
    if isinstance(a, Const):
        t = a.t.contiguous()
        return g.add_tensor_constant(f"c{i}", DTYPES[t.dtype], list(t.shape), t.numpy() if t.dtype != torch.bfloat16 else t)
    if isinstance(a, torch.Tensor):
        shape = list(a.shape)
        if dyn and a.dim() > 0:
            shape[0] = "s0"
        return g.add_input(f"in{i}", ("tensor", DTYPES[a.dtype], shape))
    return g.add_constant(a)


class Node:
    """An inner node used as an argument: its output `index` feeds the node under test."""

    def __init__(self, op, args, out_types, index=0):
        self.op, self.args, self.out_types, self.index = op, list(args), list(out_types), index


def build(op, args, outs, dynamic=None, precision="fp32", keep=None):
    """The one-op graph and its engine. dynamic=(min, opt, max) makes dim 0 of every tensor
    input and output the symbol s0; keep: indices of the op outputs that are graph outputs."""
    g = C.Graph()
    if dynamic:
        g.add_symbol("s0", *dynamic)
    names = [_add_arg(g, a, i, bool(dynamic)) for i, a in enumerate(args)]
    otypes = []
    for o in outs:
        shape = list(o.shape)
        if dynamic and o.dim() > 0:
            shape[0] = "s0"
        otypes.append(("tensor", DTYPES[o.dtype], shape))
    res = g.add_node(op, names, otypes, name="op")
    g.set_outputs([res[i] for i in (keep if keep is not None else range(len(res)))])
    return g, C.Engine.build(g, name="test_" + op, precision=precision, cache_dir="")


def to_np(t):
    return t.detach().contiguous().numpy()


def run(engine, args, out_like):
    ins = [to_np(a) for a in args if isinstance(a, torch.Tensor)]
    outs = [np.empty(tuple(o.shape), dtype=to_np(o).dtype) for o in out_like]
    engine.execute(ins, outs)
    return [torch.from_numpy(o) for o in outs]


def assert_close(got, ref, atol, rtol, what=""):
    assert got.shape == ref.shape, f"{what}: shape {tuple(got.shape)} != {tuple(ref.shape)}"
    if ref.dtype in (torch.bool, torch.int64, torch.int32, torch.uint8, torch.int8):
        bad = (got != ref)
        assert not bad.any(), f"{what}: {int(bad.sum())} elements differ, first at {bad.nonzero()[0].tolist()}"
        return
    g, r = got.double(), ref.double()
    err = (g - r).abs()
    lim = atol + rtol * r.abs()
    nan_ok = torch.isnan(g) == torch.isnan(r)
    assert nan_ok.all(), f"{what}: NaN pattern differs"
    err = torch.where(torch.isnan(r), torch.zeros_like(err), err)
    bad = err > lim
    if bad.any():
        i = int((err - lim).argmax())
        raise AssertionError(f"{what}: max error {float(err.max()):.3g} (limit atol={atol} rtol={rtol}); worst at flat "
                             f"index {i}: got {float(g.flatten()[i])}, expected {float(r.flatten()[i])}")


def check_op(op, args, tol=1e-5, rtol=None, dynamic=None, precision="fp32", ref=None, keep=None):
    """Builds op over args, runs it, compares the outputs (all, or those in keep) with torch
    eager. Returns the engine."""
    targs = [a.t if isinstance(a, Const) else a for a in args]
    with torch.no_grad():
        r = ref(*targs) if ref else call_aten(op, targs)
    refs = list(r) if isinstance(r, (tuple, list)) else [r]
    _, e = build(op, args, refs, dynamic=dynamic, precision=precision, keep=keep)
    if keep is not None:
        refs = [refs[i] for i in keep]
    got = run(e, args, refs)
    for i, (a, b) in enumerate(zip(got, refs)):
        assert_close(a, b, tol, tol if rtol is None else rtol, f"{op} output {i}")
    return e
