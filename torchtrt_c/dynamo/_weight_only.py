"""Weight-only quantized linear layers (issue 35): the weights stay int8 or int4 in the engine and
are dequantized in the kernels' registers.

One op carries them through the pipeline, `torchtrt_c.wq_linear(x, qweight, scales, zeros,
group_size, bits)`:

    y[.., n] = sum_k x[.., k] * (q[n, k] - zeros[n, g]) * scales[n, g],   g = k // group_size

- bits 8: qweight int8 [N, K];
- bits 4: qweight uint8 [N, K / 2], weight 2j in the low nibble of byte j and 2j + 1 in the
  high one, values 0..15 (torchao's int4 range -8..7 shifted by 8, the zero points too);
- scales float [N, K / group_size]; zeros None (0) or float [N, K / group_size].

`rewrite_weight_only(ep, quantize, group_size)` puts the op into a captured program, before
decompositions:

- torchao's weight-only configurations, as torch.export leaves them:
  Int8WeightOnlyConfig (`mm(x, t(qdata).to(float)) * scale`) and IntxWeightOnlyConfig with
  int4/int8 weights, per group or per channel (`linear(x, dequantize_affine(qdata, block,
  scale, zero_point, int8, qmin, qmax), bias)`; torchao 0.18's Int4WeightOnlyConfig needs
  CUDA kernels (mslk) and does not run on the CPU: IntxWeightOnlyConfig(torch.int4, PerGroup)
  is its CPU form);
- the compile setting quantize="int8_weight_only" | "int4_weight_only": every
  `linear(x, W, bias)` with a constant float weight W (nn.Linear) is quantized here (int8
  symmetric per output channel, as torchao's Int8WeightOnlyConfig; int4 asymmetric per group
  of group_size, the min/max scheme of torchao's int4 configurations).

The op's torch implementation (dequantize, then linear) is what a torch segment runs and what
the tests compare the engines with.
"""
from __future__ import annotations

import logging
from typing import Optional

import torch

log = logging.getLogger("torchtrt_c")

QUANTIZE_CHOICES = ("int8_weight_only", "int4_weight_only")


def dequantize(qweight: torch.Tensor, scales: torch.Tensor, zeros: Optional[torch.Tensor], group_size: int,
               bits: int) -> torch.Tensor:
    """The float32 weight [N, K] the op multiplies with."""
    if bits == 4:
        lo = (qweight & 15).to(torch.float32)
        hi = (qweight >> 4).to(torch.float32)
        q = torch.stack([lo, hi], dim=-1).reshape(qweight.shape[0], -1)
    else:
        q = qweight.to(torch.float32)
    N, K = q.shape
    G = K // group_size
    q = q.reshape(N, G, group_size)
    z = zeros.to(torch.float32).reshape(N, G, 1) if zeros is not None else 0.0
    return ((q - z) * scales.to(torch.float32).reshape(N, G, 1)).reshape(N, K)


@torch.library.custom_op("torchtrt_c::wq_linear", mutates_args=())
def wq_linear(x: torch.Tensor, qweight: torch.Tensor, scales: torch.Tensor, zeros: Optional[torch.Tensor],
              group_size: int, bits: int) -> torch.Tensor:
    """x [.., K] times the dequantized weight transposed (module docstring); in x's dtype."""
    w = dequantize(qweight, scales, zeros, group_size, bits)
    return torch.nn.functional.linear(x.to(torch.float32), w.to(x.device)).to(x.dtype)


@wq_linear.register_fake
def _(x, qweight, scales, zeros, group_size, bits):
    return x.new_empty((*x.shape[:-1], qweight.shape[0]))


def pack_int4(u: torch.Tensor) -> torch.Tensor:
    """uint8 values 0..15 [N, K] (K even) -> two per byte [N, K / 2], element 2j low."""
    u = u.to(torch.uint8)
    return (u[:, 0::2] | (u[:, 1::2] << 4)).contiguous()


def quantize_int8(w: torch.Tensor):
    """Symmetric per-output-channel int8 (torchao's Int8WeightOnlyConfig): (q, scales [N, 1])."""
    w = w.detach().to(torch.float32)
    amax = w.abs().amax(dim=1, keepdim=True)
    s = torch.clamp(amax / 127.0, min=torch.finfo(torch.float32).eps)
    q = torch.clamp(torch.round(w / s), -128, 127).to(torch.int8)
    return q.contiguous(), s.contiguous()


def quantize_int4(w: torch.Tensor, group_size: int):
    """Asymmetric int4 per group of group_size along K (min/max): (packed, scales, zeros)."""
    w = w.detach().to(torch.float32)
    N, K = w.shape
    g = w.reshape(N, K // group_size, group_size)
    lo = torch.clamp(g.amin(dim=2), max=0.0)
    hi = torch.clamp(g.amax(dim=2), min=0.0)
    s = torch.clamp((hi - lo) / 15.0, min=torch.finfo(torch.float32).eps)
    z = torch.clamp(torch.round(-lo / s), 0, 15)
    q = torch.clamp(torch.round(g / s.unsqueeze(2)) + z.unsqueeze(2), 0, 15).reshape(N, K)
    return pack_int4(q), s.contiguous(), z.contiguous()


def check_quantize(quantize, group_size) -> None:
    """The settings' check: bad values raise naming the choices."""
    if quantize is not None and quantize not in QUANTIZE_CHOICES:
        raise ValueError(f"setting quantize must be None or one of {', '.join(map(repr, QUANTIZE_CHOICES))}, "
                         f"got {quantize!r}")
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 2 or group_size % 2:
        raise ValueError(f"setting quantize_group_size must be an even int >= 2, got {group_size!r}")


# ---- the rewrite ----

_A = torch.ops.aten


class _Consts:
    """Values of the program's weights and of computations on them alone (evaluated lazily)."""

    def __init__(self, ep):
        from torch.export.graph_signature import InputKind, TensorArgument
        self.ep = ep
        self.values = {}
        for spec in ep.graph_signature.input_specs:
            if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR) \
                    and isinstance(spec.arg, TensorArgument):
                t = ep.state_dict.get(spec.target) if spec.kind != InputKind.CONSTANT_TENSOR else None
                if t is None:
                    t = ep.constants.get(spec.target)
                if isinstance(t, torch.Tensor):
                    self.values[spec.arg.name] = t
        self.memo = {}

    def is_const(self, n, depth=0) -> bool:
        if not isinstance(n, torch.fx.Node):
            return True
        if n.op == "placeholder":
            return n.name in self.values
        if n.op != "call_function" or depth > 12 or not isinstance(n.target, torch._ops.OpOverload):
            return False
        if n.target._schema.is_mutable:
            return False
        return all(self.is_const(a, depth + 1) for a in n.all_input_nodes)

    def value(self, n):
        if not isinstance(n, torch.fx.Node):
            return n
        if n in self.memo:
            return self.memo[n]
        if n.op == "placeholder":
            v = self.values[n.name]
        else:
            args = torch.fx.node.map_arg(n.args, self.value)
            kwargs = torch.fx.node.map_arg(n.kwargs, self.value)
            with torch.no_grad():
                v = n.target(*args, **kwargs)
        self.memo[n] = v
        return v


def _plain(t: torch.Tensor) -> torch.Tensor:
    """A plain (not subclass) contiguous CPU copy."""
    return t.detach().cpu().contiguous().clone()


class _Adder:
    """New constant tensors of the program (placeholders of kind CONSTANT_TENSOR)."""

    def __init__(self, ep, prefix="_ttc_wq"):
        from torch.export.graph_signature import InputKind
        self.ep = ep
        self.prefix = prefix
        self.sig = ep.graph_signature
        self.g = ep.graph_module.graph
        specs = self.sig.input_specs
        self.first_user = next((i for i, s in enumerate(specs) if s.kind == InputKind.USER_INPUT), len(specs))
        phs = [n for n in self.g.nodes if n.op == "placeholder"]
        self.anchor = phs[self.first_user - 1] if self.first_user > 0 else None
        self.before = phs[0] if phs else None
        self.count = 0

    def add(self, base: str, t: torch.Tensor):
        from torch.export.graph_signature import InputKind, InputSpec, TensorArgument
        from torch._subclasses.fake_tensor import FakeTensorMode
        name = f"{self.prefix}_{self.count}_{base}"
        self.count += 1
        ctx = self.g.inserting_after(self.anchor) if self.anchor is not None else self.g.inserting_before(self.before)
        with ctx:
            ph = self.g.placeholder(name)
        fake = None
        for n in self.g.nodes:   # the program's fake mode, for the placeholder's meta
            v = n.meta.get("val")
            if isinstance(v, torch.Tensor) and hasattr(v, "fake_mode"):
                fake = v.fake_mode
                break
        fake = fake or FakeTensorMode()
        ph.meta["val"] = fake.from_tensor(t, static_shapes=True)
        self.ep.constants[name] = t
        self.sig.input_specs.insert(self.first_user, InputSpec(kind=InputKind.CONSTANT_TENSOR,
                                                               arg=TensorArgument(name=ph.name), target=name,
                                                               persistent=None))
        self.first_user += 1
        self.anchor = ph
        return ph


def _through(n, ops):
    """n, seen through a chain of the given single-input ops (returns the first other node)."""
    while isinstance(n, torch.fx.Node) and n.op == "call_function" and n.target in ops:
        n = n.args[0]
    return n


_VIEWS = {_A.view.default, _A.reshape.default, _A._unsafe_view.default}
_LAYOUT = {_A.t.default, _A.permute.default, _A.transpose.int, _A.view.default, _A.reshape.default,
           _A._to_copy.default, _A.to.dtype, _A.to.dtype_layout, _A.flatten.using_ints, _A.clone.default,
           _A.contiguous.default, _A.alias.default}


def _emit(ep, adder, at, x, q, s, z, group, bits, bias, name, out_meta):
    g = ep.graph_module.graph
    qn = adder.add(f"{name}_q", q)
    sn = adder.add(f"{name}_s", s)
    zn = adder.add(f"{name}_z", z) if z is not None else None
    with g.inserting_before(at):
        y = g.call_function(torch.ops.torchtrt_c.wq_linear.default, (x, qn, sn, zn, int(group), int(bits)))
        xv = x.meta.get("val")
        if isinstance(xv, torch.Tensor):
            y.meta["val"] = xv.new_empty((*xv.shape[:-1], q.shape[0]))
        for k in ("stack_trace", "nn_module_stack", "source_fn_stack"):
            if k in at.meta:
                y.meta[k] = at.meta[k]
        out = y
        if bias is not None:
            out = g.call_function(_A.add.Tensor, (y, bias))
            out.meta.update({k: v for k, v in out_meta.items() if k in ("val", "tensor_meta", "stack_trace",
                                                                          "nn_module_stack")})
    return out


def _from_dequantize_affine(c: _Consts, dq, w_shape):
    """(q, scales, zeros, group, bits) of a torchao dequantize_affine of constants, or None."""
    args = list(dq.args) + [None] * 8
    qn, block, sn, zn, in_dtype, qmin, qmax = args[:7]
    kw = dq.kwargs
    qmin = kw.get("quant_min", qmin)
    qmax = kw.get("quant_max", qmax)
    out_dtype = kw.get("output_dtype", torch.float32)
    if not all(c.is_const(a) for a in (qn, sn, zn)):
        return None
    q, s = c.value(qn), c.value(sn)
    z = c.value(zn) if zn is not None else None
    if not isinstance(q, torch.Tensor) or q.dim() != 2 or q.dtype not in (torch.int8, torch.uint8):
        return None
    N, K = q.shape
    block = list(block) if block is not None else None
    if not block or len(block) != 2 or block[0] != 1 or K % block[1]:
        return None
    group = int(block[1])
    G = K // group
    if s.numel() != N * G or (z is not None and z.numel() != N * G):
        return None
    qmin = -128 if qmin is None else int(qmin)
    qmax = 127 if qmax is None else int(qmax)
    s = _plain(s).to(torch.float32).reshape(N, G)
    zf = _plain(z).to(torch.float32).reshape(N, G) if z is not None else None
    qi = _plain(q).to(torch.int16)
    if qmin >= -8 and qmax <= 7 and group % 2 == 0 and K % 2 == 0:       # int4 in an int8 tensor
        u = (qi + 8).clamp(0, 15)
        zz = (zf if zf is not None else torch.zeros(N, G)) + 8.0
        return pack_int4(u), s, zz, group, 4
    if qmin >= 0 and qmax <= 15 and group % 2 == 0 and K % 2 == 0:       # uint4 values
        return pack_int4(qi.clamp(0, 15)), s, (zf if zf is not None else torch.zeros(N, G)), group, 4
    if q.dtype == torch.int8:
        zero = zf is None or not bool(zf.any())
        return qi.to(torch.int8).contiguous(), s, None if zero else zf, group, 8
    return None


def _quantize_setting(w: torch.Tensor, quantize: str, group_size: int, name: str):
    """(q, scales, zeros, group, bits) of the float weight w [N, K] under the quantize= setting."""
    N, K = w.shape
    if quantize == "int8_weight_only":
        q, s = quantize_int8(w)
        return q, s, None, K, 8
    gs = min(group_size, K)
    if K % gs or gs % 2:
        raise ValueError(f"quantize='int4_weight_only': linear {name} has K = {K} input features, "
                         f"not a multiple of quantize_group_size={group_size} (set "
                         f"quantize_group_size to a divisor of {K}, or quantize='int8_weight_only')")
    q, s, z = quantize_int4(w, gs)
    return q, s, z, gs, 4


def _setting_layer(ep, c, adder, n, quantize: str, group_size: int):
    """The quantize= setting on node n: a linear with a constant float weight [N, K], or a product
    x [M, K] @ W [K, N] with one (transformers' Conv1D in GPT-2 and its kin: addmm(bias, x, W);
    mm(x, W)), rewritten into wq_linear. Returns whether n was."""
    idx = {_A.linear.default: (1, 0, 2), _A.addmm.default: (2, 1, 0), _A.mm.default: (1, 0, None)}.get(n.target)
    if idx is None:
        return False
    wi, xi, bi = idx
    wn = n.args[wi] if len(n.args) > wi else None
    if not (isinstance(wn, torch.fx.Node) and wn.op == "placeholder" and wn.name in c.values):
        return False
    if n.target is _A.addmm.default and (n.kwargs.get("beta", 1) != 1 or n.kwargs.get("alpha", 1) != 1):
        return False
    w = c.value(wn)
    if type(w) not in (torch.Tensor, torch.nn.Parameter) or w.dim() != 2 \
            or w.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        return False
    if n.target is not _A.linear.default:
        w = w.t()   # [N, K]
    bias = n.args[bi] if bi is not None and len(n.args) > bi else None
    if bias is not None and n.target is _A.addmm.default:
        bv = bias.meta.get("val") if isinstance(bias, torch.fx.Node) else None
        if not (isinstance(bv, torch.Tensor) and tuple(bv.shape) in ((w.shape[0],), (1, w.shape[0]))):
            return False   # a bias of the product's full shape: not a linear layer's
    out = _emit(ep, adder, n, n.args[xi], *_quantize_setting(w, quantize, group_size, n.name), bias, n.name, n.meta)
    n.replace_all_uses_with(out)
    ep.graph_module.graph.erase_node(n)
    return True


def rewrite_weight_only(ep, quantize: Optional[str] = None, group_size: int = 128) -> int:
    """Rewrites the program's weight-only quantized linears (torchao's, and with quantize= every
    linear with constant float weights) into torchtrt_c.wq_linear; returns how many. In place."""
    gm = ep.graph_module
    g = gm.graph
    c = _Consts(ep)
    adder = _Adder(ep)
    done = 0
    dq_ops = set()
    ao = getattr(torch.ops, "torchao", None)
    if ao is not None and hasattr(ao, "dequantize_affine"):
        dq_ops.add(ao.dequantize_affine.default)
    for n in list(g.nodes):
        if n.op != "call_function":
            continue
        name = n.name
        # the quantize= setting (a float weight; torchao's layers below hold integer ones)
        if quantize and _setting_layer(ep, c, adder, n, quantize, group_size):
            done += 1
            continue
        # torchao IntxWeightOnlyConfig (and dequantize_affine weights in general)
        if n.target is _A.linear.default and isinstance(n.args[1], torch.fx.Node) and \
                n.args[1].op == "call_function" and n.args[1].target in dq_ops:
            r = _from_dequantize_affine(c, n.args[1], None)
            if r is None:
                continue
            q, s, z, group, bits = r
            bias = n.args[2] if len(n.args) > 2 else None
            out = _emit(ep, adder, n, n.args[0], q, s, z, group, bits, bias, name, n.meta)
            n.replace_all_uses_with(out)
            g.erase_node(n)
            done += 1
            continue
        # torchao Int8WeightOnlyConfig: mm(x, t(qdata).to(float)) * scale
        if n.target is _A.mm.default and len(n.users) == 1:
            b = n.args[1]
            mul = next(iter(n.users))
            if not (isinstance(b, torch.fx.Node) and c.is_const(b) and mul.op == "call_function"
                    and mul.target is _A.mul.Tensor and mul.args[0] is n and isinstance(mul.args[1], torch.fx.Node)
                    and c.is_const(mul.args[1])):
                continue
            src = _through(b, _LAYOUT)
            if not (isinstance(src, torch.fx.Node) and c.is_const(src)):
                continue
            sv = c.value(src)
            if not isinstance(sv, torch.Tensor) or sv.dtype != torch.int8:
                continue
            bv = c.value(b)   # [K, N] float holding the integers
            sc = c.value(mul.args[1])
            if bv.dim() != 2 or not isinstance(sc, torch.Tensor) or sc.numel() != bv.shape[1]:
                continue
            K, N = bv.shape
            qv = _plain(bv).t().contiguous()
            if not torch.equal(qv, torch.round(qv)) or qv.abs().max() > 128:
                continue
            # torchao flattens x to [-1, K] and reshapes the product back: the op takes x as it is
            # (its bias add and activation then fuse into the kernel's epilogue)
            x, at = n.args[0], mul
            back = next(iter(mul.users)) if len(mul.users) == 1 else None
            if (x.op == "call_function" and x.target in _VIEWS and back is not None and back.op == "call_function"
                    and back.target in _VIEWS and isinstance(x.args[0], torch.fx.Node)):
                xv, bv_ = x.args[0].meta.get("val"), back.meta.get("val")
                if isinstance(xv, torch.Tensor) and isinstance(bv_, torch.Tensor) and xv.dim() >= 2 \
                        and tuple(bv_.shape) == (*xv.shape[:-1], N):
                    x, at = x.args[0], back
            out = _emit(ep, adder, at, x, qv.to(torch.int8), _plain(sc).to(torch.float32).reshape(N, 1),
                        None, K, 8, None, name, at.meta)
            at.replace_all_uses_with(out)
            if at is not mul:
                g.erase_node(at)
            g.erase_node(mul)
            g.erase_node(n)
            done += 1
            continue
    if done:
        # checks torch.export left on the replaced weights' pieces (dtype asserts) go with them
        for n in list(g.nodes):
            if n.op == "call_function" and n.target is _A._assert_tensor_metadata.default and not n.users \
                    and c.is_const(n.args[0]) and isinstance(n.args[0], torch.fx.Node) and n.args[0].op != "placeholder":
                g.erase_node(n)
        g.eliminate_dead_code()
        _drop_unused_weights(ep)
        gm.recompile()
        log.info("weight-only quantization: %d linear layer(s) -> torchtrt_c.wq_linear", done)
    return done


def _drop_unused_weights(ep) -> None:
    """Weights no node reads any more (the float or torchao subclass weights replaced above) leave
    the program: the importer would copy them (and cannot read a subclass)."""
    from torch.export.graph_signature import InputKind
    g = ep.graph_module.graph
    phs = {n.name: n for n in g.nodes if n.op == "placeholder"}
    keep = []
    for spec in ep.graph_signature.input_specs:
        n = phs.get(getattr(spec.arg, "name", None))
        if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR) and n is not None \
                and not n.users:
            g.erase_node(n)
            continue
        keep.append(spec)
    ep.graph_signature.input_specs[:] = keep
