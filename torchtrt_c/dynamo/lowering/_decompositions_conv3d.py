"""3-D convolution and transposed convolution (issue 33) as 2-D ones of the C core.

The core converts 1-D and 2-D convolution only (each with its OpenCL kernels, native oneDNN /
OpenBLAS steps on the CPU and GPU kernel families), and refuses a 5-D weight. The compiler then
decomposes aten.convolution.default after all (_undecomposable_fallbacks) with this function,
which rewrites only the 3-D ones (a 2-D or 1-D convolution comes back whole: NotImplemented),
so that every execution path of 2-D convolution runs 3-D ones too:

* convolution: an im2col along depth only. The input [N, C, D, H, W] is viewed depth-major
  ([N, D, C, H, W]), padded along depth, and the kd taps of each output depth are stacked next
  to their channel: [N * OD, C * KD, H, W] (channel c * KD + kd, so the groups stay contiguous
  blocks). The weight [O, C/g, KD, KH, KW] is the 2-D weight [O, C/g * KD, KH, KW] of that
  input; height and width keep their stride, padding and dilation. The output
  [N * OD, O, OH, OW] is permuted back to [N, O, OD, OH, OW] (a copy: torch's output is
  contiguous). A depth-1 kernel of stride 1 and no depth padding (R(2+1)D's spatial
  convolutions) needs no stacking; a kernel of one pixel in height and width, stride 1 and no
  spatial padding (R(2+1)D's temporal convolutions) runs on [N, C, D, H * W] with a (KD, 1)
  window and no copy at all.
* transposed convolution: a 2-D transposed convolution per input depth slice produces every
  tap's contribution ([N * D, O * KD, OH, OW], the weight [C, O/g, KD, KH, KW] read as
  [C, O/g * KD, KH, KW]); a col2im along depth adds tap kd of input depth id at output depth
  id * sd + kd * dd - pd (zero-interleaved for the stride, padded to its offset, summed over kd,
  cropped by the padding; the depth output_padding extends the end).

Weights stay constants: the reshapes of a parameter fold at import.
"""
from __future__ import annotations

import operator

import torch
import torch.fx

from ._decompositions import register_decomposition

aten = torch.ops.aten


def _three(v, default):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    if not v:
        v = [default]
    return v * 3 if len(v) == 1 else v


def _contiguous(y):
    # the output is contiguous as torch's is: the ops after it were decomposed (into views) for
    # a contiguous input before this decomposition ran
    return aten.clone.default(y, memory_format=torch.contiguous_format)


def _conv3d(x, w, bias, stride, padding, dilation, groups):
    n, c, d, h, wd = x.shape
    o, cg, kd, kh, kw = w.shape
    sd, sh, sw = stride
    pd, ph, pw = padding
    dd, dh, dw = dilation
    od = (d + 2 * pd - dd * (kd - 1) - 1) // sd + 1
    if kh == 1 and kw == 1 and sh == 1 and sw == 1 and ph == 0 and pw == 0:
        # a temporal kernel (R(2+1)D's (3, 1, 1)) over [N, C, D, H * W]: a 2-D convolution with
        # a (kd, 1) window, no copy in or out
        x2 = aten.reshape.default(x, [n, c, d, h * wd])
        w2 = aten.reshape.default(w, [o, cg, kd, 1])
        y = aten.convolution.default(x2, w2, bias, [sd, 1], [pd, 0], [dd, 1], False, [0, 0], groups)
        return aten.reshape.default(y, [n, o, od, h, wd])
    xt = aten.permute.default(x, [0, 2, 1, 3, 4])               # [N, D, C, H, W]
    if kd == 1 and sd == 1 and pd == 0:
        cols = aten.reshape.default(aten.clone.default(xt, memory_format=torch.contiguous_format), [n * d, c, h, wd])
    else:
        if pd:
            xt = aten.constant_pad_nd.default(xt, [0, 0, 0, 0, 0, 0, pd, pd], 0.0)
        taps = [aten.slice.Tensor(xt, 1, k * dd, k * dd + (od - 1) * sd + 1, sd) for k in range(kd)]
        cols = aten.stack.default(taps, 3)                       # [N, OD, C, KD, H, W]
        cols = aten.reshape.default(cols, [n * od, c * kd, h, wd])
    w2 = aten.reshape.default(w, [o, cg * kd, kh, kw])
    y = aten.convolution.default(cols, w2, bias, [sh, sw], [ph, pw], [dh, dw], False, [0, 0], groups)
    oh, ow = y.shape[2], y.shape[3]
    y = aten.reshape.default(y, [n, od, o, oh, ow])
    return _contiguous(aten.permute.default(y, [0, 2, 1, 3, 4]))


def _conv_transpose3d(x, w, bias, stride, padding, dilation, output_padding, groups):
    n, c, d, h, wd = x.shape
    ci, og, kd, kh, kw = w.shape
    o = og * groups
    sd, sh, sw = stride
    pd, ph, pw = padding
    dd, dh, dw = dilation
    opd, oph, opw = output_padding
    xt = aten.permute.default(x, [0, 2, 1, 3, 4])
    x2 = aten.reshape.default(aten.clone.default(xt, memory_format=torch.contiguous_format), [n * d, c, h, wd])
    w2 = aten.reshape.default(w, [ci, og * kd, kh, kw])
    z = aten.convolution.default(x2, w2, None, [sh, sw], [ph, pw], [dh, dw], True, [oph, opw], groups)
    oh, ow = z.shape[2], z.shape[3]
    z = aten.reshape.default(z, [n, d, o, kd, oh, ow])
    full = (d - 1) * sd + dd * (kd - 1) + 1 + opd               # depth before the padding's crop
    od = full - 2 * pd
    acc = None
    for k in range(kd):
        t = aten.select.int(z, 3, k)                             # [N, D, O, OH, OW]
        if sd > 1:                                               # input depth id at id * sd
            t = aten.constant_pad_nd.default(aten.unsqueeze.default(t, 2), [0, 0, 0, 0, 0, 0, 0, sd - 1], 0.0)
            t = aten.reshape.default(t, [n, d * sd, o, oh, ow])
        length = t.shape[1]
        start = k * dd
        keep = min(length, full - start)
        if keep < length:
            t = aten.slice.Tensor(t, 1, 0, keep)
        t = aten.constant_pad_nd.default(t, [0, 0, 0, 0, 0, 0, start, full - start - keep], 0.0)
        acc = t if acc is None else aten.add.Tensor(acc, t)
    if pd:
        acc = aten.slice.Tensor(acc, 1, pd, pd + od)
    y = aten.permute.default(acc, [0, 2, 1, 3, 4])
    if bias is not None:
        y = aten.add.Tensor(y, aten.reshape.default(bias, [1, o, 1, 1, 1]))
    return _contiguous(y)


@register_decomposition(aten.convolution.default)
def _convolution(x, w, bias, stride, padding, dilation, transposed, output_padding, groups):
    """3-D convolutions (5-D weight) as 2-D ones; every other convolution stays whole."""
    if w.dim() != 5 or x.dim() not in (4, 5):
        return NotImplemented
    if isinstance(padding, str):
        return NotImplemented
    unbatched = x.dim() == 4
    if unbatched:
        x = aten.unsqueeze.default(x, 0)
    st, pa, di = _three(stride, 1), _three(padding, 0), _three(dilation, 1)
    if transposed:
        y = _conv_transpose3d(x, w, bias, st, pa, di, _three(output_padding, 0), groups)
    else:
        y = _conv3d(x, w, bias, st, pa, di, groups)
    return aten.squeeze.dims(y, [0]) if unbatched else y


def fold_batch_norm_3d(ep) -> int:
    """Inference batch norm right after a 3-D convolution folds into the convolution's weight
    and bias, before the convolution is decomposed: the core's fold_batch_norm pass folds it
    into a convolution it sees, but after the decomposition the batch norm reads the permuted
    copy of the 2-D convolution's output and would run as elementwise passes of its own (and
    keep the ReLU after it out of the convolution's epilogue). The folded weight and bias are
    computed in the graph from the parameters alone (w * g / sqrt(v + eps), (b - m) * g /
    sqrt(v + eps) + beta), which fold_weight_computations turns into constants. Returns how
    many were folded."""
    from torch.export.graph_signature import InputKind
    consts = {s.arg.name for s in ep.graph_signature.input_specs
              if s.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR)
              and hasattr(s.arg, "name")}
    g = ep.graph_module.graph
    bn_op = aten._native_batch_norm_legit_no_training.default
    conv = aten.convolution.default
    folded = 0

    def const(a):
        return a is None or (isinstance(a, torch.fx.Node) and a.op == "placeholder" and a.name in consts)

    for bn in list(g.nodes):
        if bn.op != "call_function" or bn.target is not bn_op:
            continue
        x, gamma, beta, mean, var = bn.args[:5]
        eps = bn.args[6] if len(bn.args) > 6 else bn.kwargs.get("eps", 1e-5)
        if not (isinstance(x, torch.fx.Node) and x.op == "call_function" and x.target is conv
                and len(x.users) == 1 and len(x.args) >= 9 and not x.args[6]):
            continue
        w, b = x.args[1], x.args[2]
        wv = w.meta.get("val") if isinstance(w, torch.fx.Node) else None
        if wv is None or wv.dim() != 5 or not all(const(a) for a in (w, b, gamma, beta)) \
                or not isinstance(mean, torch.fx.Node) or not const(mean) or not const(var):
            continue
        users = list(bn.users)
        if not all(u.op == "call_function" and u.target is operator.getitem for u in users):
            continue
        if any(u.args[1] != 0 for u in users):
            continue  # the saved statistics are read: leave it
        o = wv.shape[0]
        with g.inserting_before(bn):
            scale = g.call_function(aten.rsqrt.default, (g.call_function(aten.add.Scalar, (var, eps)),))
            if gamma is not None:
                scale = g.call_function(aten.mul.Tensor, (scale, gamma))
            w2 = g.call_function(aten.mul.Tensor, (w, g.call_function(aten.reshape.default, (scale, [o, 1, 1, 1, 1]))))
            shift = g.call_function(aten.neg.default, (mean,)) if b is None else \
                g.call_function(aten.sub.Tensor, (b, mean))
            b2 = g.call_function(aten.mul.Tensor, (shift, scale))
            if beta is not None:
                b2 = g.call_function(aten.add.Tensor, (b2, beta))
            new = g.call_function(conv, (x.args[0], w2, b2) + tuple(x.args[3:]), dict(x.kwargs))
        _fake_meta(new, x, [w2, b2])
        new.meta["val"] = x.meta["val"]
        for u in users:
            u.replace_all_uses_with(new)
            g.erase_node(u)
        g.erase_node(bn)
        g.erase_node(x)
        folded += 1
    if folded:
        g.eliminate_dead_code()
        ep.graph_module.recompile()
    return folded


def _fake_meta(new, like, made):
    """meta['val'] of the weight arithmetic inserted before new (fake tensors, run on the
    inputs' fake values), and new's other metadata from the node it replaces."""
    new.meta.update({k: v for k, v in like.meta.items() if k not in ("val", "tensor_meta")})
    todo = []
    stack = list(made)
    while stack:
        n = stack.pop()
        if "val" in n.meta or n.op != "call_function":
            continue
        todo.append(n)
        stack.extend(a for a in n.all_input_nodes)
    # in the graph's order (inputs first)
    order = {n: i for i, n in enumerate(new.graph.nodes)}
    for n in sorted(todo, key=order.get):
        args = torch.fx.node.map_arg(n.args, lambda a: a.meta["val"])
        kwargs = torch.fx.node.map_arg(n.kwargs, lambda a: a.meta["val"])
        n.meta["val"] = n.target(*args, **kwargs)
