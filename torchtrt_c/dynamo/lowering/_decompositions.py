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
    if aten.scaled_dot_product_attention.default in set(decompose):
        # torch's own breaks it into the CPU flash op, whose decomposition above is SDPA again
        table[aten.scaled_dot_product_attention.default] = _sdpa_math
    return table


def _sdpa_math(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """SDPA as matmuls and a softmax, for a graph whose SDPA the C core cannot take whole (key
    and value lengths it cannot prove equal, dropout). F.scaled_dot_product_attention drops out
    whatever the module's mode: so does this (native_dropout in training form; its random mask
    stays in torch)."""
    if enable_gqa and k.shape[-3] != q.shape[-3]:
        k = aten.repeat_interleave.self_int(k, q.shape[-3] // k.shape[-3], -3)
        v = aten.repeat_interleave.self_int(v, q.shape[-3] // v.shape[-3], -3)
    sc = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    p = aten._softmax.default(_sdpa_scores(q, k, attn_mask, is_causal, sc), -1, False)
    if dropout_p > 0:
        p = aten.native_dropout.default(p, dropout_p, True)[0]
    return aten.matmul.default(p, v)


@register_decomposition(aten.square.default)
def _square(x):
    return aten.mul.Tensor(x, x)


@register_decomposition(aten.pow.Scalar)
def _pow_scalar(base, exponent):
    # a number to a tensor's power (positional encodings: temperature ** (2 * i / d)): the
    # tensor-tensor power with the base as a 0-d tensor of the result's dtype (torch's own
    # promotion: 2 ** int tensor stays int, 2.0 ** int tensor is float)
    dtype = torch.result_type(base, exponent)
    b = aten.scalar_tensor.default(base, dtype=dtype, device=exponent.device)
    return aten.pow.Tensor_Tensor(b, aten._to_copy.default(exponent, dtype=dtype) if exponent.dtype != dtype else exponent)


@register_decomposition(aten.addcmul.default)
def _addcmul(x, t1, t2, value=1):
    return aten.add.Tensor(x, aten.mul.Tensor(aten.mul.Tensor(t1, t2), value))


@register_decomposition(aten._scaled_dot_product_flash_attention_for_cpu.default)
def _sdpa_flash_for_cpu(q, k, v, dropout_p=0.0, is_causal=False, *, attn_mask=None, scale=None):
    """(attention, logsumexp) of what export produces for SDPA on CPU: the attention is the
    fused SDPA op; the logsumexp of the scores (dead, and removed, unless used) is math.
    torch 2.13's own decomposition returns the [L, S] weights as output 1 instead. The
    logsumexp is float32 for float16/bfloat16 inputs too, as torch's kernel gives it (computed
    from the inputs in float32)."""
    out = aten.scaled_dot_product_attention.default(q, k, v, attn_mask, dropout_p, is_causal, scale=scale)
    sc = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    if q.dtype in (torch.float16, torch.bfloat16):
        q = aten._to_copy.default(q, dtype=torch.float32)
        k = aten._to_copy.default(k, dtype=torch.float32)
    return out, aten.logsumexp.default(_sdpa_scores(q, k, attn_mask, is_causal, sc), [-1])


def _sdpa_scores(q, k, attn_mask, is_causal, scale):
    """SDPA's scores q k^T * scale with its causal cut and mask (-inf where masked out)."""
    s = aten.mul.Tensor(aten.matmul.default(q, aten.transpose.int(k, -2, -1)), scale)
    if is_causal:
        keep = aten.tril.default(aten.ones.default([q.shape[-2], k.shape[-2]], dtype=torch.bool, device=q.device))
        s = aten.masked_fill.Scalar(s, aten.logical_not.default(keep), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            s = aten.masked_fill.Scalar(s, aten.logical_not.default(attn_mask), float("-inf"))
        else:
            s = aten.add.Tensor(s, attn_mask)
    return s


# ---------------------------------------------------------------- issue 11: converters A
# Composites of Torch-TensorRT's converter list, written in ops the C core converts.
# Their differential cases (ModelCase) are in tests/device/op_cases_decomp.py.

def _dims(x, dim):
    """dim (None, an int or a list) as a list of non-negative dims of x."""
    if dim is None:
        return list(range(x.dim()))
    ds = [dim] if isinstance(dim, int) else list(dim)
    if not ds:
        return list(range(x.dim()))
    return [d % max(x.dim(), 1) for d in ds]


@register_decomposition(aten.min.default)
def _min_all(x):
    return aten.amin.default(x, list(range(x.dim())), False)


@register_decomposition(aten.max.default)
def _max_all(x):
    return aten.amax.default(x, list(range(x.dim())), False)


@register_decomposition(torch.ops.prims.sum.default)
def _prims_sum(inp, dims, *, output_dtype=None):
    return aten.sum.dim_IntList(inp, list(dims) if dims else [], dtype=output_dtype)


@register_decomposition(aten.native_dropout.default)
def _native_dropout(x, p, train):
    # at inference (train false, or p == 0) the output is the input and the mask all true; in
    # training (train true or None) torch's decomposition draws the mask (rand), which stays
    # with torch
    if train is not False and p != 0:
        # (torch's own decomposition takes None for false; its kernel, and so eager, for true)
        mask = aten.gt.Scalar(aten.rand_like.default(x), p)
        return aten.mul.Tensor(aten.mul.Tensor(mask, x), 1.0 / (1.0 - p) if p < 1 else 0.0), mask
    return aten.clone.default(x), aten.full.default(list(x.shape), True, dtype=torch.bool, device=x.device)


@register_decomposition(aten.empty.memory_format)
def _empty(size, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    # any contents are empty()'s contents: zeros, which an engine makes (torch.empty has no kernel
    # of ours, and a program reads its values only after writing them)
    return aten.full.default(list(size), 0, dtype=dtype or torch.get_default_dtype(), device=device)


@register_decomposition(aten.min.dim)
def _min_dim(x, dim, keepdim=False):
    return aten.amin.default(x, [dim], keepdim), aten.argmin.default(x, dim, keepdim)


def _any(x, dims, keepdim):
    # exact in float: max over 0/1 values
    nz = aten._to_copy.default(aten.ne.Scalar(x, 0), dtype=torch.float32)
    return aten.gt.Scalar(aten.amax.default(nz, dims, keepdim), 0)


@register_decomposition(aten.any.default)
def _any_all(x):
    return _any(x, list(range(x.dim())), False)


@register_decomposition(aten.any.dim)
def _any_dim(x, dim, keepdim=False):
    return _any(x, _dims(x, dim), keepdim)


@register_decomposition(aten.any.dims)
def _any_dims(x, dim=None, keepdim=False):
    return _any(x, _dims(x, dim), keepdim)


@register_decomposition(aten.copy.default)
def _copy(self, src, non_blocking=False):
    # the result has self's shape and dtype and src's values (broadcast)
    return aten._to_copy.default(aten.expand.default(src, list(self.shape)), dtype=self.dtype)


@register_decomposition(aten._reshape_copy.default)
def _reshape_copy(x, size):
    return aten._to_copy.default(aten.reshape.default(x, size), dtype=x.dtype)


@register_decomposition(aten.flip.default)
def _flip(x, dims):
    for d in _dims(x, dims) if dims else []:
        n = x.shape[d]
        idx = aten.arange.start_step(n - 1, -1, -1, dtype=torch.int64)
        x = aten.index_select.default(x, d, idx)
    return x


# engines hold tensors of at most this many dims (csrc/ir/ir.h TTC_MAX_RANK)
MAX_RANK = 8


def _repeat_stage_rank(reps, merge):
    """The rank of _repeat_stage's expanded view."""
    if not merge:
        return len(reps) + sum(r != 1 for r in reps)
    rank, run = 0, False
    for r in reps:
        rank, run = (rank + (not run), True) if r == 1 else (rank + 2, False)
    return rank


def _repeat_stage(x, shape, reps):
    """One view + expand + copy: each repeated dim i (reps[i] != 1) is viewed as [1, s_i] and
    expanded to [r_i, s_i]. Dims not repeated stay as they are, or where that passes MAX_RANK
    each run of them is merged into one dim (a product of two dynamic dims then keeps the
    node in torch, with the importer's reason)."""
    merge = _repeat_stage_rank(reps, False) > MAX_RANK
    inter, expd, run = [], [], None
    for r, s in zip(reps, shape):
        if r == 1:
            if merge:
                run = s if run is None else run * s
            else:
                inter.append(s)
                expd.append(s)
            continue
        if run is not None:
            inter.append(run)
            expd.append(run)
            run = None
        inter += [1, s]
        expd += [r, s]
    if run is not None:
        inter.append(run)
        expd.append(run)
    y = aten.expand.default(aten.reshape.default(x, inter), expd)
    return aten.reshape.default(aten._to_copy.default(y, dtype=x.dtype), [r * s for r, s in zip(reps, shape)])


@register_decomposition(aten.repeat.default)
def _repeat(x, repeats):
    # x viewed as [1, s0, 1, s1, ...], expanded to [r0, s0, r1, s1, ...], merged pairwise. Only
    # the repeated dims are split out, and where even that passes MAX_RANK dims (a 5-D repeat
    # of every dim is 10-D) the dims are repeated in stages, each within MAX_RANK.
    reps = list(repeats)
    shape = [1] * (len(reps) - x.dim()) + list(x.shape)
    if len(reps) > x.dim():
        x = aten.reshape.default(x, shape)
    todo = [i for i, r in enumerate(reps) if r != 1]
    if not todo:
        return aten._to_copy.default(x, dtype=x.dtype)
    while todo:
        stage = [1] * len(reps)
        for i in list(todo):
            trial = list(stage)
            trial[i] = reps[i]
            if i != todo[0] and min(_repeat_stage_rank(trial, False), _repeat_stage_rank(trial, True)) > MAX_RANK:
                break
            stage = trial
        todo = [i for i in todo if stage[i] == 1]
        x = _repeat_stage(x, shape, stage)
        shape = [r * s for r, s in zip(stage, shape)]
    return x


@register_decomposition(aten.diagonal.default)
def _diagonal(x, offset=0, dim1=0, dim2=1):
    # the other dims first, then (dim1, dim2) flattened: the diagonal is a strided slice
    r = x.dim()
    d1, d2 = dim1 % r, dim2 % r
    rest = [d for d in range(r) if d not in (d1, d2)]
    rows, cols = x.shape[d1], x.shape[d2]
    n = max(0, min(rows, cols - offset)) if offset >= 0 else max(0, min(rows + offset, cols))
    y = aten.permute.default(x, rest + [d1, d2])
    y = aten.reshape.default(aten._to_copy.default(y, dtype=x.dtype), [x.shape[d] for d in rest] + [rows * cols])
    start = offset if offset >= 0 else -offset * cols
    return aten.slice.Tensor(y, -1, start, start + (n - 1) * (cols + 1) + 1 if n else start, cols + 1)


@register_decomposition(aten.as_strided.default)
def _as_strided(x, size, stride, storage_offset=None):
    # static strides over x's dense storage: a gather at offset + sum(i_d * stride_d)
    if not x.is_contiguous():
        return NotImplemented
    off = storage_offset if storage_offset is not None else 0
    idx = None
    for d, (n, st) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[d] = n
        term = aten.reshape.default(aten.arange.start_step(0, n * st, st, dtype=torch.int64) if st else
                                    aten.mul.Scalar(aten.arange.default(n, dtype=torch.int64), 0), shape)
        idx = term if idx is None else aten.add.Tensor(idx, term)
    if idx is None:
        return aten.reshape.default(aten.slice.Tensor(aten.reshape.default(x, [-1]), 0, off, off + 1), [])
    idx = aten.add.Tensor(aten.expand.default(idx, list(size)), off)
    flat = aten.index_select.default(aten.reshape.default(x, [-1]), 0, aten.reshape.default(idx, [-1]))
    return aten.reshape.default(flat, list(size))


@register_decomposition(aten._prelu_kernel.default)
def _prelu_kernel(x, weight):
    return aten.where.self(aten.gt.Scalar(x, 0), x, aten.mul.Tensor(weight, x))


@register_decomposition(aten.native_batch_norm.default)
def _native_batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps):
    if training and running_mean is None and running_var is None and x.dim() > 1:
        # batch statistics and no running ones to update: a pure function of x (weight
        # standardisation normalises a weight this way: timm's StdConv2d, NF-Nets), computed in
        # float as torch does, every result in x's dtype
        dims = [0] + list(range(2, x.dim()))
        xf = x if x.dtype == torch.float32 else aten._to_copy.default(x, dtype=torch.float32)
        var, mean = aten.var_mean.correction(xf, dims, correction=0, keepdim=True)
        rstd = aten.rsqrt.default(aten.add.Scalar(var, eps))
        out = aten.mul.Tensor(aten.sub.Tensor(xf, mean), rstd)
        shape = [1] * x.dim()
        shape[1] = x.shape[1]
        if weight is not None:
            out = aten.mul.Tensor(out, aten.reshape.default(weight, shape))
        if bias is not None:
            out = aten.add.Tensor(out, aten.reshape.default(bias, shape))
        res = (out, aten.squeeze.dims(mean, dims), aten.squeeze.dims(rstd, dims))
        if x.dtype != torch.float32:
            res = tuple(aten._to_copy.default(t, dtype=x.dtype) for t in res)
        return res
    if training or running_mean is None or running_var is None:
        return NotImplemented
    return aten._native_batch_norm_legit_no_training.default(x, weight, bias, running_mean, running_var,
                                                             momentum, eps)


@register_decomposition(aten._native_batch_norm_legit.default)
def _native_batch_norm_legit(x, weight, bias, running_mean, running_var, training, momentum, eps):
    if training:
        return NotImplemented
    return aten._native_batch_norm_legit_no_training.default(x, weight, bias, running_mean, running_var,
                                                             momentum, eps)


@register_decomposition(aten._native_batch_norm_legit_functional.default)
def _native_batch_norm_legit_functional(x, weight, bias, running_mean, running_var, training, momentum, eps):
    # export's functional form of the op above: the running stats come back unchanged in eval
    if training:
        return NotImplemented
    out, mean, invstd = aten._native_batch_norm_legit_no_training.default(x, weight, bias, running_mean,
                                                                          running_var, momentum, eps)
    return out, mean, invstd, running_mean, running_var


@register_decomposition(aten._native_batch_norm_legit_no_training.default)
def _bn_no_training(x, weight, bias, running_mean, running_var, momentum, eps):
    """Batch norm with statistics or parameters that are not constants (computed in the graph,
    or graph inputs): the core's converter folds constants only and says no; the compiler then
    decomposes the op after all (_undecomposable_fallbacks) into this elementwise form. The
    auxiliary outputs are empty in eval, as torch's."""
    shape = [1] * x.dim()
    if x.dim() > 1:
        shape[1] = x.shape[1]

    def per_channel(t):
        return aten.reshape.default(t, shape)
    y = aten.mul.Tensor(aten.sub.Tensor(x, per_channel(running_mean)),
                        per_channel(aten.rsqrt.default(aten.add.Tensor(running_var, eps))))
    if weight is not None:
        y = aten.mul.Tensor(y, per_channel(weight))
    if bias is not None:
        y = aten.add.Tensor(y, per_channel(bias))
    empty = aten.full.default([0], 0.0, dtype=x.dtype, device=x.device)
    return y, empty, empty


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


def localize_sym_sizes(gm) -> int:
    """An op that reads a symbolic size (aten.sym_size.int) of a tensor it does not take reads
    it from one of its own tensor inputs instead, where one has a dim with the same value:
    view(k_proj, [sym_size(input_ids, 0), sym_size(input_ids, 1), -1, 16]) reads both from
    k_proj. Engines bind tensors only, so a size computed in another segment would send the op
    (and what depends on it) to torch; read locally it stays in its engine (Gemma-2's attention,
    whose shared sizes also feed a torch-side arange). Returns how many sizes were re-read."""
    import torch.fx
    size_op = aten.sym_size.int
    g = gm.graph
    changed = 0
    for u in list(g.nodes):
        if u.op != "call_function" or u.target is size_op:
            continue
        ins = u.all_input_nodes
        tensors = [a for a in ins if isinstance(a.meta.get("val"), torch.Tensor)]
        if not tensors:
            continue
        repl = {}
        for s in ins:
            if s.op != "call_function" or s.target is not size_op or s.args[0] in tensors:
                continue
            v = s.meta.get("val")
            if not isinstance(v, torch.SymInt):
                continue
            expr = v.node.expr
            found = next(((t, d) for t in tensors for d, dim in enumerate(t.meta["val"].shape)
                          if isinstance(dim, torch.SymInt) and dim.node.expr == expr), None)
            if found is None:
                continue
            t, d = found
            with g.inserting_before(u):
                new = g.call_function(size_op, (t, d))
            new.meta.update({k: v_ for k, v_ in s.meta.items() if k != "val"})
            new.meta["val"] = t.meta["val"].shape[d]
            repl[s] = new
        if repl:
            u.args = torch.fx.node.map_arg(u.args, lambda a: repl.get(a, a))
            u.kwargs = torch.fx.node.map_arg(u.kwargs, lambda a: repl.get(a, a))
            changed += len(repl)
    if changed:
        g.eliminate_dead_code()
        gm.recompile()
    return changed


from . import _decompositions_spatial  # noqa: E402,F401  (registers issue-11 spatial decompositions)
from . import _decompositions_select  # noqa: E402,F401  (scatter reductions, pooling with indices)
from . import _decompositions_math  # noqa: E402,F401  (clamp.Tensor, round.decimals, vector norms, instance-norm statistics, unfold)
from . import _decompositions_conv3d  # noqa: E402,F401  (3-D convolution and transposed convolution as 2-D ones)
