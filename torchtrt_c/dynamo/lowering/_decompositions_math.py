"""Decompositions of math ops that real models use and export keeps whole (core ATen), into
ops the C core converts: clamp with tensor bounds (cosine_similarity), round to decimals,
vector norms (F.normalize, cosine_similarity), batch norm on the input's own statistics
(instance norm), Tensor.unfold.
"""
from __future__ import annotations

import torch

from ._decompositions import register_decomposition

aten = torch.ops.aten


@register_decomposition(aten.clamp.Tensor)
def _clamp_tensor(x, min=None, max=None):
    """maximum/minimum propagate NaN from either side, as clamp does; with min > max the
    result is max, as torch's."""
    if min is not None:
        x = aten.maximum.default(x, min)
    if max is not None:
        x = aten.minimum.default(x, max)
    return x


@register_decomposition(aten.round.decimals)
def _round_decimals(x, *, decimals=0):
    """torch's own formula: round-half-even of x * 10^d, divided back (10^-d for d < 0)."""
    if decimals == 0:
        return aten.round.default(x)
    if decimals > 0:
        p = float(10 ** decimals)
        return aten.div.Tensor(aten.round.default(aten.mul.Tensor(x, p)), p)
    p = float(10 ** -decimals)
    return aten.mul.Tensor(aten.round.default(aten.div.Tensor(x, p)), p)


def _register_torch(op):
    from torch._decomp import decomposition_table
    if op in decomposition_table:
        register_decomposition(op)(decomposition_table[op])


# torch's decompositions: batch norm on the input's statistics into var_mean and elementwise
# math, unfold into an index gather
for _op in (aten._native_batch_norm_legit.no_stats, aten.unfold.default):
    _register_torch(_op)


@register_decomposition(aten.linalg_vector_norm.default)
def _vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """torch's decomposition (abs/pow/sum/amax; sqrt of the sum of squares for 2), except
    ord 0, the count of nonzeros, summed over a float mask (a bool sum has no float kernel)."""
    from torch._decomp import decomposition_table
    if ord == 0:
        dims = list(range(x.dim())) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
        out_dtype = dtype or (x.dtype if x.dtype.is_floating_point else torch.float32)
        nz = aten._to_copy.default(aten.ne.Scalar(x, 0), dtype=out_dtype)
        return aten.sum.dim_IntList(nz, dims, keepdim)
    return decomposition_table[aten.linalg_vector_norm.default](x, ord, dim, keepdim, dtype=dtype)
