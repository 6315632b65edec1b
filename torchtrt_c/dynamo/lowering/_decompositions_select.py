"""Decompositions for the scatter-reduce family and pooling with indices (issue 11) into ops
the C core converts.

Every scatter with a reduction becomes aten.scatter_reduce.two, which the core converts
whole (one kernel: each output element combines the updates that land on it):
scatter_add is its sum with x, scatter(reduce="add"/"multiply") its sum/prod with x, a scalar
value is a constant src, and index_reduce is scatter_reduce with the index repeated along the
other dims.

Pooling with indices: the windows are strided slices of the input padded with -inf, stacked
in the order torch scans a window, so that argmax (first maximum) over the stack is torch's
choice of index; the index is then the flat input position of that window element.
Adaptive max pooling: separable slices and amax for the values (see _adaptive_max_pool2d).
"""
from __future__ import annotations

import torch

from ._decompositions import register_decomposition

aten = torch.ops.aten

_LEGACY_REDUCE = {"add": "sum", "multiply": "prod"}


@register_decomposition(aten.scatter_add.default)
def _scatter_add(x, dim, index, src):
    return aten.scatter_reduce.two(x, dim, index, src, "sum", include_self=True)


@register_decomposition(aten.scatter.reduce)
def _scatter_reduce_legacy(x, dim, index, src, *, reduce):
    if reduce not in _LEGACY_REDUCE:
        return NotImplemented
    return aten.scatter_reduce.two(x, dim, index, src, _LEGACY_REDUCE[reduce], include_self=True)


@register_decomposition(aten.scatter.value_reduce)
def _scatter_value_reduce(x, dim, index, value, *, reduce):
    if reduce not in _LEGACY_REDUCE:
        return NotImplemented
    src = aten.full.default(list(index.shape), value, dtype=x.dtype, device=x.device)
    return aten.scatter_reduce.two(x, dim, index, src, _LEGACY_REDUCE[reduce], include_self=True)


@register_decomposition(aten.index_reduce.default)
def _index_reduce(x, dim, index, source, reduce, *, include_self=True):
    """x[.., index[j], ..] (op)= source[.., j, ..]: the same as scatter_reduce with index
    broadcast over source's other dims."""
    dim = dim % max(x.dim(), 1)
    if source.dim() == 0 or x.dim() == 0:
        return NotImplemented
    shape = [1] * source.dim()
    shape[dim] = index.shape[0]
    idx = aten.expand.default(aten.reshape.default(index, shape), list(source.shape))
    return aten.scatter_reduce.two(x, dim, idx, source, reduce, include_self=include_self)


# ---------------------------------------------------------------- pooling with indices

def _ntuple(v, n, default=None):
    if v is None or (isinstance(v, (list, tuple)) and len(v) == 0):
        return default
    if isinstance(v, int):
        return [v] * n
    v = list(v)
    return v * n if len(v) == 1 else v


def _pool_out(size, k, s, p, d, ceil):
    """torch's pooling output size along one axis."""
    eff = d * (k - 1) + 1
    num = size + 2 * p - eff
    if ceil:
        o = -(-num // s) + 1
        if (o - 1) * s >= size + p:  # the last window must start inside the input or left padding
            o -= 1
    else:
        o = num // s + 1
    return o


def max_pool_with_indices(x, n, kernel_size, stride, padding, dilation, ceil_mode):
    """(values, indices) of max_pool{n}d_with_indices over the last n dims of x, as torch's CPU
    kernel computes them: the first maximum of a window in (d, h, w) order, an index into the
    flattened spatial dims of the input. Static spatial sizes only."""
    k = _ntuple(kernel_size, n)
    s = _ntuple(stride, n, k)
    p = _ntuple(padding, n, [0] * n)
    dl = _ntuple(dilation, n, [1] * n)
    sizes = list(x.shape[-n:])
    if not all(isinstance(v, int) for v in sizes) or x.dtype not in (torch.float32, torch.float16):
        return NotImplemented
    outs = [_pool_out(sizes[i], k[i], s[i], p[i], dl[i], ceil_mode) for i in range(n)]
    # pad: left p, right enough for the last window (ceil mode may reach past p)
    pads = []
    for i in reversed(range(n)):
        need = (outs[i] - 1) * s[i] + dl[i] * (k[i] - 1) + 1
        pads += [p[i], max(0, need - sizes[i] - p[i])]
    xp = aten.constant_pad_nd.default(x, pads, float("-inf")) if any(pads) else x
    lead = x.dim() - n
    taps = []

    def walk(i, start):  # window elements in scan order: the last axis fastest
        if i == n:
            taps.append(start)
            return
        for j in range(k[i]):
            walk(i + 1, start + [j * dl[i]])
    walk(0, [])
    views = []
    for start in taps:
        v = xp
        for i in range(n):
            v = aten.slice.Tensor(v, lead + i, start[i], start[i] + (outs[i] - 1) * s[i] + 1, s[i])
        views.append(aten.unsqueeze.default(v, -1))
    stack = aten.cat.default(views, -1) if len(views) > 1 else views[0]
    values = aten.amax.default(stack, [-1])
    tap = aten.argmax.default(stack, -1)  # [.., o1, .., on]: which window element
    # flat input position = sum_i (o_i * s_i - p_i + off_i(tap)) * stride_i
    idx = None
    mult = 1
    for i in reversed(range(n)):
        shape = [1] * n
        shape[i] = outs[i]
        base = aten.reshape.default(aten.arange.start_step(-p[i], -p[i] + outs[i] * s[i], s[i], dtype=torch.int64),
                                    shape)
        # the tap's offset along axis i: (tap // prod(k[i+1:])) % k[i] * dl[i]
        inner = 1
        for j in range(i + 1, n):
            inner *= k[j]
        off = aten.mul.Tensor(aten.remainder.Scalar(aten.div.Tensor_mode(tap, inner, rounding_mode="floor"), k[i]),
                              dl[i])
        term = aten.mul.Tensor(aten.add.Tensor(off, base), mult)
        idx = term if idx is None else aten.add.Tensor(idx, term)
        mult *= sizes[i]
    return values, idx


@register_decomposition(aten.max_pool3d_with_indices.default)
def _max_pool3d_with_indices(x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """The values come from the separable max_pool3d decomposition (the windowed stack is dead
    code, and removed, when the indices are not used)."""
    from ._decompositions_spatial import _max_pool3d
    r = max_pool_with_indices(x, 3, kernel_size, stride, padding, dilation, ceil_mode)
    if r is NotImplemented:
        return r
    return _max_pool3d(x, kernel_size, stride, padding, dilation, ceil_mode), r[1]


@register_decomposition(aten.max_pool2d_with_indices.default)
def _max_pool2d_with_indices(x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """Only used when the core cannot take the op whole (its indices are used): the compiler
    then decomposes it after all (see _undecomposable_fallbacks)."""
    return max_pool_with_indices(x, 2, kernel_size, stride, padding, dilation, ceil_mode)


def _adaptive_windows(n, o):
    """torch's adaptive windows along an axis: [floor(i n / o), ceil((i + 1) n / o))."""
    return [((i * n) // o, -(-((i + 1) * n) // o)) for i in range(o)]


@register_decomposition(aten.adaptive_max_pool2d.default)
def _adaptive_max_pool2d(x, output_size):
    """Values: a window's max is separable, so one amax per output column over its slice of W,
    then one per output row over its slice of H. Indices (dead code unless used): windows of
    equal size are a max pool with indices; otherwise, for small outputs, each cell's argmax
    over its flattened window, made a flat index into the input's H x W."""
    oh, ow = list(output_size)
    h, w = x.shape[-2], x.shape[-1]
    if not all(isinstance(v, int) for v in (h, w, oh, ow)) or x.dtype not in (torch.float32, torch.float16):
        return NotImplemented
    vals = x
    for axis, n, o in ((-1, w, ow), (-2, h, oh)):
        if n == o:
            continue
        parts = [aten.amax.default(aten.slice.Tensor(vals, axis, s, e), [axis], True) for s, e in _adaptive_windows(n, o)]
        vals = aten.cat.default(parts, axis) if len(parts) > 1 else parts[0]
    if h % oh == 0 and w % ow == 0:
        k = [h // oh, w // ow]
        idx = max_pool_with_indices(x, 2, k, k, 0, 1, False)[1]
    elif oh * ow <= 64:
        cells = []
        for hs, he in _adaptive_windows(h, oh):
            for ws, we in _adaptive_windows(w, ow):
                win = aten.slice.Tensor(aten.slice.Tensor(x, -2, hs, he), -1, ws, we)
                flat = aten.reshape.default(win, list(x.shape[:-2]) + [(he - hs) * (we - ws)])
                a = aten.argmax.default(flat, -1, True)
                row = aten.add.Tensor(aten.div.Tensor_mode(a, we - ws, rounding_mode="floor"), hs)
                col = aten.add.Tensor(aten.remainder.Scalar(a, we - ws), ws)
                cells.append(aten.add.Tensor(aten.mul.Tensor(row, w), col))
        idx = aten.reshape.default(aten.cat.default(cells, -1) if len(cells) > 1 else cells[0],
                                   list(x.shape[:-2]) + [oh, ow])
    else:
        return NotImplemented
    return vals, idx
