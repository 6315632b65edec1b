"""Decompositions for spatial ops (issue 11, converters B) into ops the C core converts.

3-D pooling is separable: a window is a box, so its max (or sum) is the max (sum) over depth
of the max (sum) over height x width, and every divisor torch uses (padding counted or not,
ceil mode, adaptive windows) is a product of per-axis counts. Each 3-D pool therefore runs as
two 2-D pools of the existing kernel: one over (D, H*W) with a (kd, 1) window, one over (H, W).
"""
from __future__ import annotations

import contextlib
import math

import torch

from ._decompositions import register_decomposition

aten = torch.ops.aten


def _triple(v, default=None):
    if v is None or (isinstance(v, (list, tuple)) and len(v) == 0):
        return default
    if isinstance(v, int):
        return [v, v, v]
    v = list(v)
    return v * 3 if len(v) == 1 else v


def _pool3d_split(x):
    """x [N, C, D, H, W] or [C, D, H, W] -> ([B, 1, D, H*W], lead shape, (D, H, W))."""
    lead = list(x.shape[:-3])
    d, h, w = x.shape[-3:]
    return aten.reshape.default(x, [-1, 1, d, h * w]), lead, (d, h, w)


def _pool3d_join(y, lead, od, h, w):
    """y [B, 1, od, h*w] -> [B*od, 1, h, w] for the 2-D pass."""
    return aten.reshape.default(y, [-1, 1, h, w])


@register_decomposition(aten.avg_pool3d.default)
def _avg_pool3d(x, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
                divisor_override=None):
    k = _triple(kernel_size)
    s = _triple(stride, k)
    p = _triple(padding, [0, 0, 0])
    y, lead, (d, h, w) = _pool3d_split(x)
    # with a divisor override torch divides the plain window sum: take sums (divisor 1) per pass
    div = 1 if divisor_override else None
    y = aten.avg_pool2d.default(y, [k[0], 1], [s[0], 1], [p[0], 0], ceil_mode, count_include_pad, div)
    od = y.shape[2]
    y = _pool3d_join(y, lead, od, h, w)
    y = aten.avg_pool2d.default(y, k[1:], s[1:], p[1:], ceil_mode, count_include_pad, div)
    if divisor_override:
        y = aten.div.Tensor(y, float(divisor_override))
    return aten.reshape.default(y, lead + [od, y.shape[2], y.shape[3]])


@register_decomposition(aten.max_pool3d.default)
def _max_pool3d(x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    k = _triple(kernel_size)
    s = _triple(stride, k)
    p = _triple(padding, [0, 0, 0])
    dl = _triple(dilation, [1, 1, 1])
    y, lead, (d, h, w) = _pool3d_split(x)
    y = aten.max_pool2d.default(y, [k[0], 1], [s[0], 1], [p[0], 0], [dl[0], 1], ceil_mode)
    od = y.shape[2]
    y = _pool3d_join(y, lead, od, h, w)
    y = aten.max_pool2d.default(y, k[1:], s[1:], p[1:], dl[1:], ceil_mode)
    return aten.reshape.default(y, lead + [od, y.shape[2], y.shape[3]])


def _adaptive_avg_pool3d_impl(x, output_size):
    o = _triple(output_size)
    y, lead, (d, h, w) = _pool3d_split(x)
    o = [d if v is None else v for v in o[:1]] + [h if o[1] is None else o[1], w if o[2] is None else o[2]]
    y = aten.adaptive_avg_pool2d.default(y, [o[0], h * w])
    y = _pool3d_join(y, lead, o[0], h, w)
    y = aten.adaptive_avg_pool2d.default(y, o[1:])
    return aten.reshape.default(y, lead + o)


@register_decomposition(aten.adaptive_avg_pool3d.default)
def _adaptive_avg_pool3d(x, output_size):
    return _adaptive_avg_pool3d_impl(x, output_size)


@register_decomposition(aten._adaptive_avg_pool3d.default)
def _adaptive_avg_pool3d_(x, output_size):
    return _adaptive_avg_pool3d_impl(x, output_size)


@register_decomposition(aten._pad_circular.default)
def _pad_circular(x, pad):
    """Each padded dim becomes cat(tail, x, head); negative amounts crop."""
    nd = len(pad) // 2
    for i in range(nd):
        dim = x.dim() - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        if lo < 0:
            x = aten.slice.Tensor(x, dim, -lo, x.shape[dim])
        if hi < 0:
            x = aten.slice.Tensor(x, dim, 0, x.shape[dim] + hi)
        size = x.shape[dim]  # the wrapped parts come from the cropped centre, as in torch
        parts = []
        if lo > 0:
            parts.append(aten.slice.Tensor(x, dim, size - lo, size))
        parts.append(x)
        if hi > 0:
            parts.append(aten.slice.Tensor(x, dim, 0, hi))
        if len(parts) > 1:
            x = aten.cat.default(parts, dim)
    return x


@register_decomposition(aten.slice_scatter.default)
def _slice_scatter(x, src, dim=0, start=None, end=None, step=1):
    """step 1: cat(head, src, tail); a longer step selects from src where the position hits
    the slice (arange, floor division and a mask)."""
    dim = dim % x.dim()
    size = x.shape[dim]
    start = 0 if start is None else start
    end = size if end is None else end
    start = start + size if start < 0 else start
    end = end + size if end < 0 else end
    start, end = max(0, min(start, size)), max(0, min(end, size))
    if end <= start:
        return aten.clone.default(x)
    if step == 1:
        parts = []
        if start > 0:
            parts.append(aten.slice.Tensor(x, dim, 0, start))
        parts.append(src)
        if end < size:
            parts.append(aten.slice.Tensor(x, dim, end, size))
        return aten.cat.default(parts, dim) if len(parts) > 1 else aten.clone.default(src)
    pos = aten.arange.default(size, dtype=torch.int64, device=x.device)
    rel = aten.sub.Tensor(pos, start)
    hit = aten.logical_and.default(
        aten.logical_and.default(aten.ge.Scalar(pos, start), aten.lt.Scalar(pos, end)),
        aten.eq.Scalar(aten.sub.Tensor(rel, aten.mul.Tensor(aten.div.Tensor_mode(rel, step, rounding_mode="floor"), step)), 0))
    sel = aten.clamp.default(aten.div.Tensor_mode(rel, step, rounding_mode="floor"), 0, src.shape[dim] - 1)
    picked = aten.index_select.default(src, dim, sel)
    shape = [1] * x.dim()
    shape[dim] = size
    return aten.where.self(aten.reshape.default(hit, shape), picked, x)


def _pairwise_norm(diff, p):
    a = aten.abs.default(diff)
    if p == 0:
        return aten.sum.dim_IntList(aten._to_copy.default(aten.ne.Scalar(diff, 0), dtype=diff.dtype), [-1])
    if p == 1:
        return aten.sum.dim_IntList(a, [-1])
    if p == 2:
        return aten.sqrt.default(aten.sum.dim_IntList(aten.mul.Tensor(diff, diff), [-1]))
    if math.isinf(p):
        return aten.amax.default(a, [-1])
    return aten.pow.Tensor_Scalar(aten.sum.dim_IntList(aten.pow.Tensor_Scalar(a, p), [-1]), 1.0 / p)


@register_decomposition(aten._cdist_forward.default)
def _cdist_forward(x1, x2, p, compute_mode=None):
    """|x1[.., i, :] - x2[.., j, :]|_p over a broadcast difference (exact; torch's mm form for
    p=2 trades accuracy for speed on large inputs)."""
    diff = aten.sub.Tensor(aten.unsqueeze.default(x1, -2), aten.unsqueeze.default(x2, -3))
    return _pairwise_norm(diff, p)


@register_decomposition(aten._pdist_forward.default)
def _pdist_forward(x, p=2.0):
    """Row i's distances to rows i+1.. (torch's order), joined: n - 1 slices of the [n, n]
    distance matrix (a static row count; the cat grows with n, so n is bounded)."""
    n = x.shape[0]
    if not isinstance(n, int) or n > 128:
        return NotImplemented
    if n < 2:
        return aten.sum.dim_IntList(aten.slice.Tensor(aten.unsqueeze.default(x, 0), 1, 0, 0), [-1, -2])
    full = _cdist_forward(x, x, p)
    parts = [aten.slice.Tensor(aten.select.int(full, 0, i), 0, i + 1, n) for i in range(n - 1)]
    return aten.cat.default(parts, 0) if len(parts) > 1 else parts[0]


def _reflect(c, lo2, hi2):
    """torch's reflect_coordinates: c reflected into [lo2 / 2, hi2 / 2]."""
    if lo2 == hi2:
        return aten.mul.Tensor(c, 0.0)
    mn, span = lo2 / 2, (hi2 - lo2) / 2
    c = aten.abs.default(aten.sub.Tensor(c, mn))
    flips = aten.floor.default(aten.div.Tensor(c, span))
    extra = aten.sub.Tensor(c, aten.mul.Tensor(flips, span))
    even = aten.eq.Scalar(aten.sub.Tensor(flips, aten.mul.Tensor(aten.floor.default(aten.div.Tensor(flips, 2.0)), 2.0)), 0)
    return aten.where.self(even, aten.add.Tensor(extra, mn), aten.add.Tensor(aten.rsub.Scalar(extra, span), mn))


def _unnormalize(g, size, align_corners):
    """Source coordinate of normalised grid values g along an axis of `size` samples."""
    if align_corners:
        return aten.mul.Tensor(aten.add.Tensor(g, 1.0), (size - 1) / 2)
    return aten.div.Tensor(aten.sub.Tensor(aten.mul.Tensor(aten.add.Tensor(g, 1.0), float(size)), 1.0), 2.0)


def _pad_coord(c, size, padding_mode, align_corners):
    """torch's compute_coordinates: c reflected (padding 2) and/or clipped (1, 2) into range."""
    if padding_mode == 2:
        c = _reflect(c, 0, 2 * (size - 1)) if align_corners else _reflect(c, -1, 2 * size - 1)
    if padding_mode in (1, 2):
        c = aten.clamp.default(c, 0.0, float(size - 1))
    return c


def _grid_coord(g, size, padding_mode, align_corners):
    return _pad_coord(_unnormalize(g, size, align_corners), size, padding_mode, align_corners)


def _cubic_weights(t):
    """torch's bicubic coefficients (A = -0.75) of the taps at -1, 0, 1, 2 for fraction t."""
    A = -0.75

    def near(x):  # |x| <= 1: ((A + 2) x - (A + 3)) x^2 + 1
        return aten.add.Tensor(aten.mul.Tensor(aten.mul.Tensor(
            aten.sub.Tensor(aten.mul.Tensor(x, A + 2), A + 3), x), x), 1.0)

    def far(x):  # 1 < |x| < 2: ((A x - 5A) x + 8A) x - 4A
        return aten.sub.Tensor(aten.mul.Tensor(aten.add.Tensor(aten.mul.Tensor(
            aten.sub.Tensor(aten.mul.Tensor(x, A), 5 * A), x), 8 * A), x), 4 * A)
    return [far(aten.add.Tensor(t, 1.0)), near(t), near(aten.rsub.Scalar(t, 1.0)), far(aten.rsub.Scalar(t, 2.0))]


@register_decomposition(aten.grid_sampler_2d.default)
def _grid_sampler_2d(x, grid, interpolation_mode=0, padding_mode=0, align_corners=False):
    """Bilinear (0), nearest (1) or bicubic (2) sampling: the source positions are computed
    elementwise and the values gathered from x flattened to [N, C, H*W] with one flat index
    per tap (out of range taps read position 0 with weight 0). Bicubic, as torch: the 4 x 4
    taps around the unpadded position, each tap's coordinate padded on its own."""
    if interpolation_mode not in (0, 1, 2) or x.dim() != 4:
        return NotImplemented
    n, c, h, w = x.shape
    if not all(isinstance(v, int) for v in (c, h, w)):
        return NotImplemented
    gh, gw = grid.shape[1], grid.shape[2]
    gx, gy = aten.select.int(grid, 3, 0), aten.select.int(grid, 3, 1)  # [N, gh, gw]
    if interpolation_mode == 2:
        ux, uy = _unnormalize(gx, w, align_corners), _unnormalize(gy, h, align_corners)
    else:
        ix = _grid_coord(gx, w, padding_mode, align_corners)
        iy = _grid_coord(gy, h, padding_mode, align_corners)
    flat = aten.reshape.default(x, [n, c, h * w])

    def tap(yi, xi, wt):
        """wt * x[yi, xi] ([N, C, gh, gw]) for float positions yi, xi (whole numbers)."""
        ok = aten.logical_and.default(
            aten.logical_and.default(aten.ge.Scalar(xi, 0), aten.le.Scalar(xi, w - 1)),
            aten.logical_and.default(aten.ge.Scalar(yi, 0), aten.le.Scalar(yi, h - 1)))
        pos = aten.add.Tensor(aten.mul.Tensor(aten.clamp.default(yi, 0, h - 1), float(w)), aten.clamp.default(xi, 0, w - 1))
        pos = aten._to_copy.default(pos, dtype=torch.int64)
        pos = aten.expand.default(aten.reshape.default(pos, [n, 1, gh * gw]), [n, c, gh * gw])
        v = aten.reshape.default(aten.gather.default(flat, 2, pos), [n, c, gh, gw])
        wt = aten.where.self(ok, wt, aten.mul.Tensor(wt, 0.0)) if wt is not None else \
            aten._to_copy.default(ok, dtype=x.dtype)
        return aten.mul.Tensor(v, aten.unsqueeze.default(wt, 1))

    if interpolation_mode == 2:
        x0, y0 = aten.floor.default(ux), aten.floor.default(uy)
        wx, wy = _cubic_weights(aten.sub.Tensor(ux, x0)), _cubic_weights(aten.sub.Tensor(uy, y0))
        xs = [_pad_coord(aten.add.Tensor(x0, float(i - 1)), w, padding_mode, align_corners) for i in range(4)]
        ys = [_pad_coord(aten.add.Tensor(y0, float(j - 1)), h, padding_mode, align_corners) for j in range(4)]
        out = None
        for j in range(4):
            for i in range(4):
                # padded taps are whole numbers; torch reads them truncated (they are >= 0 where read)
                t = tap(aten.floor.default(ys[j]), aten.floor.default(xs[i]), aten.mul.Tensor(wy[j], wx[i]))
                out = t if out is None else aten.add.Tensor(out, t)
        return out
    if interpolation_mode == 1:
        return tap(aten.round.default(iy), aten.round.default(ix), None)
    x0, y0 = aten.floor.default(ix), aten.floor.default(iy)
    x1, y1 = aten.add.Tensor(x0, 1.0), aten.add.Tensor(y0, 1.0)
    wx1, wy1 = aten.sub.Tensor(ix, x0), aten.sub.Tensor(iy, y0)
    wx0, wy0 = aten.rsub.Scalar(wx1, 1.0), aten.rsub.Scalar(wy1, 1.0)
    out = tap(y0, x0, aten.mul.Tensor(wy0, wx0))
    out = aten.add.Tensor(out, tap(y0, x1, aten.mul.Tensor(wy0, wx1)))
    out = aten.add.Tensor(out, tap(y1, x0, aten.mul.Tensor(wy1, wx0)))
    return aten.add.Tensor(out, tap(y1, x1, aten.mul.Tensor(wy1, wx1)))


def _align_scale(in_size, out_size, align_corners, scale=None):
    """torch's _compute_scale without its branch on out_size > 1, which a dynamic out_size
    turns into (in - 1) / (out - 1) evaluated at run time: a ZeroDivisionError where out is 1
    (a size-1 minimum). (in - 1) / max(out - 1, 1) gives the same source positions: with one
    output position there is only index 0."""
    if align_corners and isinstance(out_size, torch.SymInt):
        return (in_size - 1.0) / torch.sym_max(out_size - 1, 1)
    return _TORCH_COMPUTE_SCALE[0](in_size, out_size, align_corners, scale)


_TORCH_COMPUTE_SCALE = []


@contextlib.contextmanager
def align_scale_for_dynamic_sizes():
    """While tracing (capture: upsample_linear1d.vec's Python kernel calls torch's
    decomposition directly) and decomposing: _align_scale in place of torch's _compute_scale."""
    from torch._decomp import decompositions as td
    if not _TORCH_COMPUTE_SCALE:
        _TORCH_COMPUTE_SCALE.append(td._compute_scale)
    saved, td._compute_scale = td._compute_scale, _align_scale
    try:
        yield
    finally:
        td._compute_scale = saved


def _register_torch(op):
    """Uses torch's own decomposition (not in export's default table) for op."""
    from torch._decomp import decomposition_table
    register_decomposition(op)(decomposition_table[op])


# Upsampling overloads that export's default table leaves whole: torch's decompositions
# (arange, index.Tensor and elementwise weights), which the core converts.
def _register_upsample():
    from torch._decomp import decomposition_table
    from ._decompositions import NATIVE_OPS, TORCHTRT_C_DECOMPOSITIONS
    for name in ("upsample_nearest1d", "upsample_nearest3d", "upsample_linear1d", "upsample_trilinear3d",
                 "upsample_bicubic2d", "_upsample_nearest_exact1d", "_upsample_nearest_exact3d"):
        packet = getattr(aten, name)
        for ov in ("default", "vec"):
            op = getattr(packet, ov, None)
            if op is not None and op in decomposition_table and op not in NATIVE_OPS \
                    and op not in TORCHTRT_C_DECOMPOSITIONS:
                _register_torch(op)


_register_upsample()

# torch 2.13's export keeps the .default overloads of the nearest family whole whatever the
# table says (they carry a Python CompositeImplicitAutograd kernel, so run_decompositions
# treats them as preservable and then never decomposes them); the bilinear one would skip our
# converter of its .vec form. Each becomes its .vec form when that computes the same thing:
# no scales, or scales that give exactly the requested output size (torch then uses 1/scale
# for the source positions in both forms).
_UPSAMPLE_ALIGN = {"upsample_linear1d", "upsample_bilinear2d", "upsample_bicubic2d", "upsample_trilinear3d"}
_UPSAMPLE_DEFAULTS = {
    getattr(aten, name).default: (getattr(aten, name).vec, name in _UPSAMPLE_ALIGN)
    for name in ("upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d", "_upsample_nearest_exact1d",
                 "_upsample_nearest_exact2d", "_upsample_nearest_exact3d", "upsample_linear1d",
                 "upsample_bilinear2d", "upsample_bicubic2d", "upsample_trilinear3d")
}


def _upsample_vec_args(node, align):
    """The .vec arguments equivalent to an upsample .default node, or None."""
    names = [a.name for a in node.target._schema.arguments]
    bound = dict(zip(names, node.args))
    bound.update(node.kwargs)
    x, size = bound["self"], list(bound["output_size"])
    mid = [bound["align_corners"]] if align else []
    scales = [bound.get(nm) for nm in names if nm.startswith("scales")]
    if all(sc is None for sc in scales):
        return tuple([x, size] + mid + [None])
    val = x.meta.get("val") if hasattr(x, "meta") else None
    if not isinstance(val, torch.Tensor) or any(sc is None for sc in scales):
        return None
    ins = list(val.shape[-len(size):])
    if not all(isinstance(i, int) and isinstance(o, int) and int(i * sc) == o for i, o, sc in zip(ins, size, scales)):
        return None
    return tuple([x, None] + mid + [[float(sc) for sc in scales]])


def retarget_upsample_defaults(gm, keep=()) -> int:
    """Rewrites upsample .default nodes into their equivalent .vec form (see above), in place,
    except ops in keep (the user runs them in torch). Returns how many changed."""
    keep = set(keep)
    changed = 0
    for n in gm.graph.nodes:
        if n.op != "call_function" or n.target not in _UPSAMPLE_DEFAULTS or n.target in keep:
            continue
        vec, align = _UPSAMPLE_DEFAULTS[n.target]
        if vec in keep:
            continue
        args = _upsample_vec_args(n, align)
        if args is None:
            continue
        n.target, n.args, n.kwargs = vec, args, {}
        changed += 1
    if changed:
        gm.recompile()
    return changed


def _count(mask, dim):
    return aten._to_copy.default(aten.sum.dim_IntList(aten._to_copy.default(mask, dtype=torch.float32), [dim]),
                                 dtype=torch.int64)


def _embedding_bag_impl(weight, indices, offsets, mode, per_sample_weights, include_last_offset, padding_idx,
                        forward_only=False):
    """torch's CPU kernel (aten/src/ATen/native/EmbeddingBag.cpp), bags as a [bags, N]
    membership matrix: sum/mean are a matmul with the looked-up rows, max a masked amax.

    Position p belongs to bag seg[p] = (number of bag starts <= p) - 1 (offset2bag: the starts
    are the offsets without the last one under include_last_offset, so the last bag runs to the
    end of indices; empty bags own nothing). Rows equal to padding_idx count for no bag. Where
    torch's kernel says, under include_last_offset, the last offset cuts the last bag short:
      - sum and mean's sum, in the fast kernels (float/half/bfloat16 weights, no padding_idx),
        which read offsets (bag b is [offsets[b], offsets[b+1])); the others use offset2bag;
      - never for max (offset2bag) nor for mean's divisor, the bag size, which for the last bag
        is len(indices) - offsets[-2] less its padded positions (so mean is not the average of
        what was summed when offsets[-1] < len(indices), as in eager).
    The auxiliary outputs follow the same kernel, in its index dtype: offset2bag is seg (empty
    for a fast sum), bag_size the sizes (zeros for sum: one per offset in the forward-only op
    under include_last_offset), max_indices the weight row of each maximum (max), else a copy
    of bag_size."""
    if indices.dim() != 1 or offsets is None or offsets.dim() != 1:
        return NotImplemented
    if per_sample_weights is not None and mode != 0:
        return NotImplemented
    pad = -1 if padding_idx is None else padding_idx
    idt = torch.promote_types(indices.dtype, offsets.dtype)  # the kernel's index dtype
    dev = indices.device
    n = indices.shape[0]
    nb = offsets.shape[0] - (1 if include_last_offset else 0)
    fast = weight.dtype in (torch.float32, torch.float16, torch.bfloat16) and pad < 0
    pos = aten.arange.default(n, dtype=torch.int64, device=dev)
    starts = aten.slice.Tensor(offsets, 0, 0, nb) if include_last_offset else offsets
    le = aten.le.Tensor(aten.unsqueeze.default(starts, 1), aten.unsqueeze.default(pos, 0))  # [nb, N]
    # counts are summed in float (exact below 2**24; integer sums have no kernel) and cast back
    seg = aten.sub.Tensor(_count(le, 0), 1)
    member = aten.eq.Tensor(aten.unsqueeze.default(seg, 0), aten.unsqueeze.default(
        aten.arange.default(nb, dtype=torch.int64, device=dev), 1))  # [nb, N]
    if pad >= 0:
        member = aten.logical_and.default(member, aten.unsqueeze.default(aten.ne.Scalar(indices, pad), 0))
    count = _count(member, 1)  # [nb]: bag_size
    zeros_b = aten.mul.Tensor(count, 0)
    rows = aten.embedding.default(weight, indices)  # [N, D]
    if mode in (0, 1):
        summed = member
        if include_last_offset and fast:
            summed = aten.logical_and.default(member, aten.lt.Tensor(
                aten.unsqueeze.default(pos, 0), aten.slice.Tensor(offsets, 0, nb, nb + 1)))
        if per_sample_weights is not None:
            rows = aten.mul.Tensor(rows, aten.unsqueeze.default(per_sample_weights, 1))
        out = aten.mm.default(aten._to_copy.default(summed, dtype=weight.dtype), rows)
        o2b = seg if mode == 1 or not fast else aten.slice.Tensor(seg, 0, 0, 0)
        if mode == 1:
            out = aten.div.Tensor(out, aten.unsqueeze.default(aten.clamp_min.default(
                aten._to_copy.default(count, dtype=weight.dtype), 1), 1))
            aux = count
        elif forward_only and include_last_offset:  # here bag_size has one entry per offset
            aux = aten.mul.Tensor(offsets, 0)
        else:
            aux = zeros_b
    else:
        masked = aten.where.self(aten.unsqueeze.default(member, 2), aten.unsqueeze.default(rows, 0),
                                 aten.full.default([], float("-inf"), dtype=weight.dtype, device=weight.device))
        nonempty = aten.unsqueeze.default(aten.gt.Scalar(count, 0), 1)
        out = aten.where.self(nonempty, aten.amax.default(masked, [1]),
                              aten.full.default([], 0.0, dtype=weight.dtype, device=weight.device))
        at = aten.argmax.default(masked, 1)  # [nb, D]: position of each maximum
        maxi = aten.where.self(nonempty, aten.index.Tensor(indices, [at]), aten.mul.Tensor(at, 0))
        return out, _as(seg, idt), _as(count, idt), _as(maxi, idt)
    return out, _as(o2b, idt), _as(aux, idt), _as(aux, idt)


def _as(t, dtype):
    return t if t.dtype == dtype else aten._to_copy.default(t, dtype=dtype)


@register_decomposition(aten.embedding_bag.default)
def _embedding_bag_default(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                           per_sample_weights=None, include_last_offset=False):
    return _embedding_bag_impl(weight, indices, offsets, mode, per_sample_weights, include_last_offset, None)


@register_decomposition(aten.embedding_bag.padding_idx)
def _embedding_bag_padding_idx(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
                               include_last_offset, padding_idx):
    if padding_idx is not None and padding_idx < 0:  # this overload counts from the end, as torch does
        padding_idx += weight.shape[0]
    return _embedding_bag_impl(weight, indices, offsets, mode, per_sample_weights, include_last_offset, padding_idx)


@register_decomposition(aten._embedding_bag.default)
def _embedding_bag_(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                    per_sample_weights=None, include_last_offset=False, padding_idx=-1):
    return _embedding_bag_impl(weight, indices, offsets, mode, per_sample_weights, include_last_offset, padding_idx)


@register_decomposition(aten._embedding_bag_forward_only.default)
def _embedding_bag_forward_only(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                                per_sample_weights=None, include_last_offset=False, padding_idx=-1):
    return _embedding_bag_impl(weight, indices, offsets, mode, per_sample_weights, include_last_offset, padding_idx,
                               forward_only=True)
