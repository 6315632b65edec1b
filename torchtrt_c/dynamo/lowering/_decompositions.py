"""Decompositions applied in Python over the exported program, before import into the C IR.

The table is torch.export's default (core ATen) table, minus the ops the C core converts
natively (kept whole: one linear is faster than mm + add + views), minus what the user
disables, plus what the user enables from torch's full table, plus our own registry.

    @register_decomposition(torch.ops.aten.square.default)
    def square(x): return torch.ops.aten.mul.Tensor(x, x)

    torch_disabled_decompositions.add(torch.ops.aten.silu.default)   # keep silu whole
    torch_enabled_decompositions.add(torch.ops.aten.hardswish.default)  # decompose it
"""
from __future__ import annotations

from typing import Callable, Dict

import torch

aten = torch.ops.aten

# Our own decompositions (op -> fn); they win over torch's.
TORCHTRT_C_DECOMPOSITIONS: Dict[torch._ops.OpOverload, Callable] = {}

# User knobs (seeds/001): ops in these sets are decomposed with torch's decomposition /
# kept whole, on top of the defaults below.
torch_enabled_decompositions: set = set()
torch_disabled_decompositions: set = set()

# Ops the C core converts whole; torch's default table would break them up.
NATIVE_OPS = {
    aten.linear.default, aten.layer_norm.default, aten.matmul.default,
    aten.scaled_dot_product_attention.default, aten.silu.default, aten.hardswish.default,
    aten.hardsigmoid.default, aten.softplus.default, aten.log_sigmoid.default,
    aten.group_norm.default, aten.adaptive_avg_pool2d.default, aten.softmax.int,
    aten.log_softmax.int, aten.clamp_min.default, aten.clamp_max.default, aten.rsub.Scalar,
    aten.masked_fill.Scalar, aten.masked_fill.Tensor, aten.t.default, aten.transpose.int,
    aten.squeeze.dim, aten.stack.default, aten.split.Tensor, aten.unbind.int,
    aten._unsafe_view.default,
}


def _overloads(op):
    if isinstance(op, torch._ops.OpOverloadPacket):
        return [getattr(op, o) for o in op.overloads()]
    return [op]


def register_decomposition(op, registry: Dict = None):
    """Decorator: registers fn as the decomposition of op (an OpOverload, or a packet for all
    its overloads)."""
    reg = TORCHTRT_C_DECOMPOSITIONS if registry is None else registry

    def deco(fn):
        for o in _overloads(op):
            if o in reg:
                raise ValueError(f"a torchtrt_c decomposition for {o} is already registered")
            reg[o] = fn
        return fn
    return deco


def get_decompositions(keep=(), decompose=()):
    """The table for ExportedProgram.run_decompositions. keep: ops to leave whole in addition
    (e.g. torch_executed_ops, so the partitioner sees them); decompose: native ops to break up
    anyway (e.g. after the C core said it cannot convert them)."""
    from torch._decomp import decomposition_table
    table = torch.export.default_decompositions()
    keep_ops = set()
    for op in list(NATIVE_OPS) + list(torch_disabled_decompositions) + list(keep):
        keep_ops.update(_overloads(op))
    for op in decompose:
        keep_ops.discard(op)
    for op in keep_ops:
        table.pop(op, None)
    for op in torch_enabled_decompositions:
        for o in _overloads(op):
            if o in decomposition_table:
                table[o] = decomposition_table[o]
            elif o not in TORCHTRT_C_DECOMPOSITIONS:
                raise ValueError(f"torch_enabled_decompositions: torch has no decomposition for {o}")
    for o, fn in TORCHTRT_C_DECOMPOSITIONS.items():
        if o not in keep_ops:
            table[o] = fn
    return table


@register_decomposition(aten.square.default)
def _square(x):
    return aten.mul.Tensor(x, x)


@register_decomposition(aten.addcmul.default)
def _addcmul(x, t1, t2, value=1):
    return aten.add.Tensor(x, aten.mul.Tensor(aten.mul.Tensor(t1, t2), value))


# ---------------------------------------------------------------- FX passes before import
_RESHAPES = {aten.view.default, aten.reshape.default, aten._unsafe_view.default}


def infer_single_symbolic_size(gm) -> int:
    """view/reshape sizes with exactly one symbolic entry (view(x, [s0, 8]) after a dynamic
    batch) get -1 there instead: the size then needs no aten.sym_size.int from another
    segment, and the sym_size nodes usually die. Returns how many nodes changed."""
    import torch.fx
    changed = 0
    for n in gm.graph.nodes:
        if n.op != "call_function" or n.target not in _RESHAPES or len(n.args) < 2:
            continue
        size = n.args[1]
        if not isinstance(size, (list, tuple)):
            continue
        sym = [i for i, d in enumerate(size) if isinstance(d, torch.fx.Node)]
        if len(sym) != 1 or any(isinstance(d, int) and d == -1 for d in size):
            continue
        new = list(size)
        new[sym[0]] = -1
        n.args = (n.args[0], new) + tuple(n.args[2:])
        changed += 1
    if changed:
        gm.graph.eliminate_dead_code()
        gm.recompile()
    return changed

from . import _decompositions_spatial  # noqa: E402,F401  (registers issue-11 spatial decompositions)
