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

import math
from typing import Callable, Dict

import torch

aten = torch.ops.aten

# Our own decompositions (op -> fn); they win over torch's.
TORCHTRT_C_DECOMPOSITIONS: Dict[torch._ops.OpOverload, Callable] = {}

# User knobs (seeds/001): ops in these sets are decomposed with torch's decomposition /
# kept whole, on top of the defaults below.
torch_enabled_decompositions: set = set()
torch_disabled_decompositions: set = set()

def _aten_overload(name: str):
    """"aten.add.Tensor" -> torch.ops.aten.add.Tensor (None if this torch lacks it)."""
    ns, op, overload = name.split(".")
    packet = getattr(getattr(torch.ops, ns), op, None)
    return getattr(packet, overload, None) if packet is not None else None


# Ops with a converter that torch's default table may still break up: it rewrites each into
# another overload we also convert, and the partitioner, fusion and tuned kernels were
# validated on that form (convolution, not conv1d/conv2d; arange.start_step; full/full_like;
# max_pool2d_with_indices; sum.dim_IntList; var.correction; squeeze.dims; sym_size via
# the shape env). Names, not overloads, so that a torch without one still imports.
DECOMPOSED_ANYWAY = {
    "aten.conv1d.default", "aten.conv2d.default", "aten.arange.default", "aten.arange.start",
    "aten.ones.default", "aten.zeros.default", "aten.ones_like.default", "aten.zeros_like.default",
    "aten.max_pool2d.default", "aten.sum.default", "aten.var.dim", "aten.squeeze.default",
    "aten.detach.default", "aten.sym_size.int",
}

# Ops the importer rewrites rather than the C table: the CUDA attention ops become
# aten.scaled_dot_product_attention.default when only their output 0 is used
# (torchtrt_c/dynamo/_importer.py); otherwise they fall back to torch whole.
# (_scaled_dot_product_flash_attention_for_cpu has a decomposition below instead.)
IMPORTER_OPS = {
    "aten._scaled_dot_product_flash_attention.default",
    "aten._scaled_dot_product_efficient_attention.default",
    "aten._scaled_dot_product_cudnn_attention.default",
}


def native_ops() -> set:
    """Ops kept whole through decomposition: every ATen op with a converter in the C core's
    op table (_C.ops()), minus DECOMPOSED_ANYWAY, plus IMPORTER_OPS."""
    from torchtrt_c import _C
    names = {o["name"] for o in _C.ops() if o["converter"] and o["kind"] == "aten"}
    names = (names - DECOMPOSED_ANYWAY) | IMPORTER_OPS
    return {op for op in map(_aten_overload, sorted(names)) if op is not None}


# The C core converts these whole; torch's default table would break them up
# (one linear is faster than mm + add + views).
NATIVE_OPS = native_ops()


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


@register_decomposition(aten._scaled_dot_product_flash_attention_for_cpu.default)
def _sdpa_flash_for_cpu(q, k, v, dropout_p=0.0, is_causal=False, *, attn_mask=None, scale=None):
    """(attention, logsumexp) of what export produces for SDPA on CPU: the attention is the
    fused SDPA op; the logsumexp of the scores (dead, and removed, unless used) is math.
    torch 2.13's own decomposition returns the [L, S] weights as output 1 instead."""
    out = aten.scaled_dot_product_attention.default(q, k, v, attn_mask, dropout_p, is_causal, scale=scale)
    sc = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    s = aten.mul.Tensor(aten.matmul.default(q, aten.transpose.int(k, -2, -1)), sc)
    if is_causal:
        keep = aten.tril.default(aten.ones.default([q.shape[-2], k.shape[-2]], dtype=torch.bool))
        s = aten.masked_fill.Scalar(s, aten.logical_not.default(keep), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            s = aten.masked_fill.Scalar(s, aten.logical_not.default(attn_mask), float("-inf"))
        else:
            s = aten.add.Tensor(s, attn_mask)
    return out, aten.logsumexp.default(s, [-1])


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
