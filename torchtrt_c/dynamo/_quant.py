"""PT2E's quantized convolutions and linears as single int8 ops (issue 35).

torchao's convert_pt2e leaves a static int8 layer as

    y = conv2d(dequantize_per_tensor(xq, sx, zx), dequantize_per_channel(wq, sw, zw=0, axis 0), b, ...)
    y = linear(dequantize_per_tensor(xq, sx, zx), dequantize_per_channel(wq, sw, 0, 0), b)   # x [.., K]

with xq uint8/int8 (from a quantize_per_tensor) and wq an int8 constant. fold_qdq() rewrites
each into torch.ops.torchtrt_c.qconv2d / qlinear(xq, sx, zx, wq, sw, b, ...), whose reference
(below) is that same computation, so a segment left to torch computes exactly what the model
did. A linear over rows of more dims (a transformer's [B, S, K]) takes them as [-1, K] and gives
its [.., N] back by views. The C core runs them as integer kernels: (xq - zx) * wq accumulated in int32, then
acc * (sx * sw[c]) + b[c] in the epilogue, where a following quantize_per_tensor, ReLU or
residual add fuse as well (csrc/convert/conv_quant.c). The weights stay int8 in the engine.

A weight quantized per tensor (dequantize_per_tensor of an int8 constant, zero point 0) folds
the same way, its scale repeated for every output channel.

Patterns that do not match (non-zero weight zero points, a transposed
convolution, an input of another rank) keep their Q/DQ nodes, which engines run as elementwise
float math (dequantized in the engine, never sent to torch for that reason).

On a CPU device whose native steps are on, the int8 layers run as oneDNN's int8 convolutions
(VNNI / AMX; csrc/backend/cpu/native_qconv.c) with the epilogue as post-ops, activations u8/s8
between layers; where that library is missing (a CPU with native steps through OpenBLAS only),
the dequantized form is the faster one: its convolutions run natively in float32 while the int8
kernels would be portable OpenCL (int8_kernels() says which form a compile takes;
TORCHTRT_C_QUANT_KERNELS=int8 / dequant forces one).

PT2E *dynamic* quantization picks an activation's scale and zero point at run time
(choose_qparams.tensor) and quantizes / dequantizes with those tensors; lower_dynamic_qparams()
rewrites that into float32 aten ops with torch's arithmetic, so those models are one engine."""
from __future__ import annotations

from typing import List, Optional

import torch

_A = torch.ops.aten


@torch.library.custom_op("torchtrt_c::qconv2d", mutates_args=())
def qconv2d(x: torch.Tensor, x_scale: float, x_zero_point: int, w: torch.Tensor, w_scales: torch.Tensor,
            bias: Optional[torch.Tensor], stride: List[int], padding: List[int], dilation: List[int],
            groups: int) -> torch.Tensor:
    return _qconv2d_ref(x, x_scale, x_zero_point, w, w_scales, bias, stride, padding, dilation, groups)


def _dequant(x, x_scale, x_zero_point, w, w_scales):
    # quantized_decomposed's own arithmetic: (q.float() - zp) * scale; per channel q * scale
    xd = (x.to(torch.float32) - x_zero_point) * x_scale
    wd = (w.to(torch.float32) * w_scales.view([-1] + [1] * (w.dim() - 1))).to(torch.float32)
    return xd, wd


def _qconv2d_ref(x, x_scale, x_zero_point, w, w_scales, bias, stride, padding, dilation, groups):
    xd, wd = _dequant(x, x_scale, x_zero_point, w, w_scales)
    return torch.nn.functional.conv2d(xd, wd, bias, stride, padding, dilation, groups)


qconv2d.register_fake(_qconv2d_ref)


@torch.library.custom_op("torchtrt_c::qlinear", mutates_args=())
def qlinear(x: torch.Tensor, x_scale: float, x_zero_point: int, w: torch.Tensor, w_scales: torch.Tensor,
            bias: Optional[torch.Tensor]) -> torch.Tensor:
    return _qlinear_ref(x, x_scale, x_zero_point, w, w_scales, bias)


def _qlinear_ref(x, x_scale, x_zero_point, w, w_scales, bias):
    xd, wd = _dequant(x, x_scale, x_zero_point, w, w_scales)
    return torch.nn.functional.linear(xd, wd, bias)


qlinear.register_fake(_qlinear_ref)


def int8_kernels(settings) -> bool:
    """Whether PT2E's layers become int8 kernels (else they stay Q/DQ + float layers): yes on
    every device but a CPU with native steps and no oneDNN int8 convolution, unless
    TORCHTRT_C_QUANT_KERNELS says."""
    from torchtrt_c import settings
    force = (settings.get("QUANT_KERNELS") or "auto").strip().lower()
    if force in ("int8", "dequant"):
        return force == "int8"
    if force != "auto":
        raise ValueError(f"TORCHTRT_C_QUANT_KERNELS={force!r}: expected auto, int8 or dequant")
    if (settings.get("KERNELS") or "").strip().lower() == "gpu":
        return True
    from torchtrt_c import _C
    from torchtrt_c._devices import devices, find_device
    try:
        dev = find_device(settings.device) if settings.device is not None else None
    except Exception:
        dev = None
    if dev is None:
        devs = devices()
        dev = devs[0] if devs else None
    kind = dev.get("type") if isinstance(dev, dict) else getattr(dev, "type", None)
    if kind != "cpu":
        return True
    nat = _C.native_cpu()
    return not nat.get("available", False) or nat.get("int8") == "onednn"


def _qd(name, overload="default"):
    ns = getattr(torch.ops, "quantized_decomposed", None)
    op = getattr(ns, name, None) if ns is not None else None
    return getattr(op, overload, None) if op is not None else None


def _quantize_before_max_pool(g, q_t) -> int:
    """quantize_per_tensor(max_pool2d(y)) -> max_pool2d(quantize_per_tensor(y)) where the pool
    has no other reader: a quantize is monotone (x / s rounded, + zp, clamped; s > 0), so both
    give the same integers, and the pool then runs on 8-bit values between int8 layers (ResNet's
    stem: its convolution writes u8 instead of float32 for a float pool)."""
    mp = _A.max_pool2d.default
    done = 0
    for q in list(g.nodes):
        if q.op != "call_function" or q.target != q_t or len(q.args) < 6 or q.kwargs:
            continue
        pool = q.args[0]
        if not (isinstance(pool, torch.fx.Node) and pool.target == mp and len(pool.users) == 1 and not pool.kwargs):
            continue
        y, scale = pool.args[0], q.args[1]
        yv, qv = (y.meta.get("val") if isinstance(y, torch.fx.Node) else None), q.meta.get("val")
        if not (isinstance(scale, float) and scale > 0 and yv is not None and qv is not None):
            continue
        with g.inserting_before(pool):
            qn = g.call_function(q_t, (y,) + tuple(q.args[1:]))
        qn.meta.update(q.meta)
        qn.meta["val"] = yv.to(qv.dtype)
        pool.args = (qn,) + tuple(pool.args[1:])
        pool.meta["val"] = qv
        q.replace_all_uses_with(pool)
        g.erase_node(q)
        done += 1
    return done


def fold_qdq(ep: torch.export.ExportedProgram) -> int:
    """Rewrites PT2E's dq -> conv2d/linear <- dq(weights) layers of ep in place into
    torchtrt_c.qconv2d / qlinear; returns how many."""
    dq_t, dq_c = _qd("dequantize_per_tensor"), _qd("dequantize_per_channel")
    if dq_t is None or dq_c is None:
        return 0
    q_t = _qd("quantize_per_tensor")
    if q_t is not None and _quantize_before_max_pool(ep.graph_module.graph, q_t):
        ep.graph_module.recompile()
    from torch.export.graph_signature import InputKind
    sig = ep.graph_signature
    consts = {}
    for spec in sig.input_specs:
        if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
            t = ep.state_dict.get(spec.target) if spec.kind != InputKind.CONSTANT_TENSOR else None
            if t is None:
                t = ep.constants.get(spec.target)
            if isinstance(t, torch.Tensor):
                consts[spec.arg.name] = t
    g = ep.graph_module.graph
    done = 0
    adder = None
    for n in list(g.nodes):
        if n.op != "call_function" or n.target not in (_A.conv2d.default, _A.convolution.default, _A.linear.default):
            continue
        x, w = n.args[0], n.args[1]
        if not (isinstance(x, torch.fx.Node) and x.target == dq_t and isinstance(w, torch.fx.Node)
                and w.target in (dq_c, dq_t)):
            continue
        xq, sx, zx = x.args[0], x.args[1], x.args[2]
        if not (isinstance(sx, float) and isinstance(zx, int)):
            continue
        wq = w.args[0]
        if not (isinstance(wq, torch.fx.Node) and wq.op == "placeholder" and wq.name in consts):
            continue
        wt = consts[wq.name]
        if wt.dtype != torch.int8 or wt.dim() < 2:
            continue
        if w.target == dq_t:
            # a weight quantized per tensor (XNNPACK's per-tensor config): its one scale for
            # every output channel, the same products (q - 0) * s as torch's dequantize
            sw_f, zw_i = w.args[1], w.args[2]
            if not (isinstance(sw_f, float) and zw_i == 0):
                continue
            sw = None   # added below, once the layer matches
        else:
            sw, zw, axis = w.args[1], w.args[2], w.args[3]
            if axis != 0 or not (isinstance(sw, torch.fx.Node) and sw.op == "placeholder" and sw.name in consts):
                continue
            st = consts[sw.name]
            if st.dim() != 1 or st.shape[0] != wt.shape[0]:
                continue
            if zw is not None and not (isinstance(zw, torch.fx.Node) and zw.name in consts
                                       and not consts[zw.name].any()):
                continue
        xv = xq.meta.get("val") if isinstance(xq, torch.fx.Node) else None
        if xv is None or xv.dtype not in (torch.uint8, torch.int8):
            continue
        bias = n.args[2] if len(n.args) > 2 else n.kwargs.get("bias")
        lead = None   # a linear over [.., K] rows: the op takes them as [-1, K] (a view) and gives [.., N] back
        if n.target == _A.linear.default:
            if xv.dim() < 2 or not isinstance(xv.shape[-1], int):
                continue
            if xv.dim() > 2:
                lead = list(xv.shape[:-1])
            target, args = qlinear_op(), (xq, sx, zx, wq, sw, bias)
        else:
            if wt.dim() != 4:
                continue
            if n.target == _A.convolution.default:
                _, _, _, stride, padding, dilation, transposed, _, groups = n.args
                if transposed:
                    continue
            else:
                a = list(n.args) + [None] * (7 - len(n.args))
                stride = a[3] if a[3] is not None else [1, 1]
                padding = a[4] if a[4] is not None else [0, 0]
                dilation = a[5] if a[5] is not None else [1, 1]
                groups = a[6] if a[6] is not None else 1
            if isinstance(padding, str):
                continue
            two = lambda v: list(v) * 2 if len(v) == 1 else list(v)  # noqa: E731
            target = qconv2d_op()
            args = (xq, sx, zx, wq, sw, bias, two(stride), two(padding), two(dilation), int(groups))
        if sw is None:
            if adder is None:
                from torchtrt_c.dynamo._weight_only import _Adder
                adder = _Adder(ep, prefix="_ttc_q")
            sw = adder.add(f"{n.name}_w_scale", torch.full((wt.shape[0],), sw_f, dtype=torch.float32))
            args = args[:4] + (sw,) + args[5:]
        with g.inserting_before(n):
            if lead is not None:
                K = xv.shape[-1]
                x2 = g.call_function(_A.reshape.default, (xq, [-1, K]))
                x2.meta["val"] = xv.reshape(-1, K)
                args = (x2,) + tuple(args[1:])
            q = g.call_function(target, args)
            q.meta.update(n.meta)
            out = q
            if lead is not None:
                yv = n.meta["val"]
                q.meta["val"] = yv.reshape(-1, yv.shape[-1])
                q.meta.pop("tensor_meta", None)
                sizes = []
                for i, d in enumerate(lead):
                    if isinstance(d, int):
                        sizes.append(d)
                        continue
                    sz = g.call_function(torch.ops.aten.sym_size.int, (xq, i))
                    sz.meta["val"] = d
                    sizes.append(sz)
                out = g.call_function(_A.reshape.default, (q, sizes + [yv.shape[-1]]))
                out.meta.update(n.meta)
        n.replace_all_uses_with(out)
        g.erase_node(n)
        for d in (x, w):
            if not d.users:
                g.erase_node(d)
        done += 1
    if done:
        ep.graph_module.recompile()
    return done


def qconv2d_op():
    return torch.ops.torchtrt_c.qconv2d.default


def qlinear_op():
    return torch.ops.torchtrt_c.qlinear.default


class _Emit:
    """Inserts aten nodes before `at`, each with the fake value its op gives on its inputs'."""

    def __init__(self, g, at, fake_mode):
        self.g, self.at, self.fake = g, at, fake_mode

    def __call__(self, op, *args, **kwargs):
        with self.g.inserting_before(self.at):
            n = self.g.call_function(op, args, kwargs)
        vals = [a.meta["val"] if isinstance(a, torch.fx.Node) else a for a in args]
        with self.fake:
            n.meta["val"] = op(*vals, **kwargs)
        return n


def _run_time_qparams(e, x, qmin, qmax, eps, dtype, symmetric):
    """choose_qparams(_symmetric).tensor's (scale, zero point) as float32 0-d nodes (the zero
    point a number where it is fixed), in torch's own arithmetic (determine_qparams in
    torch/ao/quantization/utils.py): min/max of x widened to include 0, then
      affine:    scale = max((max - min) / (qmax - qmin), eps);
                 zero_point = clamp(qmin - round(min / scale), qmin, qmax)
      symmetric: scale = max(max(-min, max) / ((qmax - qmin) / 2), eps);
                 zero_point = 128 for uint8, else 0.
    torch computes all of it on 0-d float32 tensors and only then widens the scale to float64,
    which is exact: the engines' float32 loses nothing."""
    dims = list(range(x.meta["val"].dim()))
    lo = e(_A.clamp_max.default, e(_A.amin.default, x, dims), 0.0)
    hi = e(_A.clamp_min.default, e(_A.amax.default, x, dims), 0.0)
    if symmetric:
        s = e(_A.div.Tensor, e(_A.maximum.default, e(_A.neg.default, lo), hi), float(qmax - qmin) / 2)
        return e(_A.clamp_min.default, s, eps), (128 if dtype == torch.uint8 else 0)
    s = e(_A.clamp_min.default, e(_A.div.Tensor, e(_A.sub.Tensor, hi, lo), float(qmax - qmin)), eps)
    zp = e(_A.add.Tensor, e(_A.neg.default, e(_A.round.default, e(_A.div.Tensor, lo, s))), float(qmin))
    return s, e(_A.clamp.default, zp, float(qmin), float(qmax))


def lower_dynamic_qparams(gm: torch.fx.GraphModule) -> int:
    """PT2E dynamic quantization (a dynamic quantizer's convert_pt2e: choose_qparams.tensor or
    choose_qparams_symmetric.tensor, then quantize_per_tensor.tensor / dequantize_per_tensor
    .tensor on those run-time parameters) as float32 aten ops the engines run, in place;
    returns how many choose_qparams it rewrote. torch's Q/DQ of tensor parameters are the
    scalar ones on scale.item() / zero_point.item():
      quantize   = clamp(round(x * (float)(1.0 / s)) + zp, qmin, qmax) -> dtype
      dequantize = ((float)q - zp) * (float)s
    and for a float32 s, (float)(1.0 / (double)s) is float32's 1.0f / s (rounding the quotient
    to 53 bits first is innocuous for a 24-bit result: 53 >= 2 * 24 + 2). A choose_qparams
    whose results reach anything else, of a non-float32 input or feeding a dequantize to
    another dtype is left as it is (torch runs it)."""
    import operator
    chooses = {op: sym for op, sym in ((_qd("choose_qparams", "tensor"), False),
                                        (_qd("choose_qparams_symmetric", "tensor"), True)) if op}
    q_t, dq_t = _qd("quantize_per_tensor", "tensor"), _qd("dequantize_per_tensor", "tensor")
    if not chooses or q_t is None or dq_t is None:
        return 0
    g = gm.graph
    done = 0
    for c in list(g.nodes):
        if c.op != "call_function" or c.target not in chooses or c.kwargs or len(c.args) != 5:
            continue
        x, qmin, qmax, eps, dtype = c.args
        xv = x.meta.get("val") if isinstance(x, torch.fx.Node) else None
        if xv is None or xv.dtype != torch.float32 or xv.dim() == 0 or dtype not in (torch.uint8, torch.int8):
            continue
        gets = list(c.users)
        if not all(gi.target is operator.getitem and gi.args[1] in (0, 1) for gi in gets):
            continue
        scale = {gi for gi in gets if gi.args[1] == 0}
        qdq = [u for u in g.nodes if any(u in gi.users for gi in gets)]   # in graph order
        if not qdq or not all(
                u.target in (q_t, dq_t) and len(u.args) == 6 and u.args[1] in scale
                and u.args[2] in gets and u.args[2] not in scale and u.args[0] not in gets
                and (u.target == dq_t or getattr(u.args[0].meta.get("val"), "dtype", None) == torch.float32)
                and u.args[5] in (torch.uint8, torch.int8) and set(u.kwargs) <= {"out_dtype"}
                and u.kwargs.get("out_dtype") in (None, torch.float32) for u in qdq):
            continue
        e = _Emit(g, c, xv.fake_mode)
        s, zp = _run_time_qparams(e, x, qmin, qmax, eps, dtype, chooses[c.target])
        inv = None
        for u in qdq:
            e.at = u
            if u.target == q_t:
                inv = inv if inv is not None else e(_A.reciprocal.default, s)
                r = e(_A.add.Tensor, e(_A.round.default, e(_A.mul.Tensor, u.args[0], inv)), zp)
                r = e(_A.clamp.default, r, float(u.args[3]), float(u.args[4]))
                r = e(_A._to_copy.default, r, dtype=u.args[5])
            else:
                r = e(_A.sub.Tensor, e(_A._to_copy.default, u.args[0], dtype=torch.float32), zp)
                r = e(_A.mul.Tensor, r, s)
            r.meta.update({k: v for k, v in u.meta.items() if k != "val"})
            u.replace_all_uses_with(r)
            g.erase_node(u)
        for gi in gets:
            g.erase_node(gi)
        g.erase_node(c)
        done += 1
    if done:
        gm.recompile()
    return done
