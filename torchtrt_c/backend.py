"""The torch.compile backend "torchtrt_c".

    fast = torch.compile(model, backend="torchtrt_c", options={"min_block_size": 3})

Each graph dynamo hands over goes through the same pipeline as torchtrt_c.compile (docs/
torch_compile.md is the user's guide). What the backend adds is how it reads dynamo's graph:

- Weights. Dynamo passes a module's parameters and buffers as graph inputs. Those the graph does
  not write to are frozen: they become constants of the engines, as in torchtrt_c.compile, so a
  convolution gets the constant weight its kernels need. Every call checks that they are still
  the same tensors at the same version (what `load_state_dict`, `optimizer.step()` or an in-place
  write under `torch.no_grad()` bump); if one changed, the graph is compiled again with the new
  values. Inputs the graph mutates (a KV cache's `index_copy_`) stay runtime inputs.
- Dynamic graphs (dynamic=True, or dynamo's recompile after a shape changed: their symbolic sizes
  are graph inputs) get one engine over a range of sizes: the bounds of
  `torch._dynamo.mark_dynamic(x, dim, min=, max=)` where given, else a bucket from the symbol's
  lower bound up to a power of two at least twice the size seen. A size past the range compiles
  the graph again with the range grown to cover it (the old engine is dropped), so a session
  whose sizes grow to N compiles about log2(N) times. Values the graph reads by value (0-d tensors
  read with .item(), int inputs that are no tensor's size) are fixed per compile and keyed.
  TORCHTRT_C_BACKEND_SHAPES (default 8) caps the compiles per graph; later calls run eagerly.
- Devices. The example inputs keep their devices, so capture sees the graph as torch runs it; the
  compile pipeline leaves nodes on a device other than the engines' to torch (_compiler).

A graph that cannot be compiled runs eagerly (logged) unless pass_through_build_failures=True.
Bad settings always raise.
"""
from __future__ import annotations

import logging
import operator

import torch

from torchtrt_c import settings as _knobs
from torchtrt_c._C import InputError
from torchtrt_c._input import Input
from torchtrt_c._settings import CompilationSettings

log = logging.getLogger("torchtrt_c")

# TENSOR: a runtime tensor input; CONST: a frozen parameter/buffer; SIZE: a symbolic size that is
# some tensor input's dim (derived from it); FIXED: read by value, part of the compile's key
TENSOR, CONST, SIZE, FIXED = "tensor", "const", "size", "fixed"


def torchtrt_c_backend(gm: torch.fx.GraphModule, example_inputs, options=None, **kwargs):
    opts = dict(options or {})
    opts.update(kwargs)
    settings = CompilationSettings.from_kwargs(**opts)
    return _Graph(gm, list(example_inputs), settings)


# ---------------------------------------------------------------- reading dynamo's graph
def _is_param_or_buffer(node) -> bool:
    """Whether dynamo lifted this placeholder from an nn.Module's parameters or buffers (its
    source chain passes through the module's _parameters/_buffers)."""
    from torch._dynamo import source as S
    kinds = tuple(getattr(S, n) for n in ("ParamBufferSource", "UnspecializedParamBufferSource")
                  if hasattr(S, n))
    ga = node.meta.get("grapharg")
    src = getattr(ga, "source", None)
    while src is not None:
        if isinstance(src, kinds):
            return True
        src = getattr(src, "base", None)
    return False


# ops through which a tensor may alias its input (a write to the result writes the input)
_ALIASING = {"view", "reshape", "__getitem__", "narrow", "select", "transpose", "t", "permute",
             "expand", "expand_as", "unsqueeze", "squeeze", "flatten", "unflatten", "as_strided",
             "split", "chunk", "unbind", "detach", "contiguous", "view_as", "diagonal", "unfold",
             "movedim", "swapaxes", "swapdims", "getitem", "T", "mT", "real", "imag", "to", "type_as",
             "data", "tensor_split", "split_with_sizes"}


def _name(target) -> str:
    return target if isinstance(target, str) else getattr(target, "__name__", "")


def _writes(user, n) -> bool:
    """Whether `user` writes to its argument `n` in place."""
    if user.op not in ("call_method", "call_function"):
        return False
    t = user.target
    first = bool(user.args) and user.args[0] is n
    if t is operator.setitem:
        return first
    if isinstance(t, torch._ops.OpOverload):
        return t._schema.is_mutable
    if isinstance(t, torch._ops.OpOverloadPacket):
        return any(getattr(t, o)._schema.is_mutable for o in t.overloads())
    name = _name(t)
    if name.endswith("_") and not name.startswith("_") and first:
        return True          # x.add_(...), torch.relu_(x), x.index_copy_(...)
    if user.kwargs.get("inplace") is True and first:
        return True          # F.relu(x, inplace=True)
    out = user.kwargs.get("out")
    return out is n or (isinstance(out, (tuple, list)) and any(o is n for o in out))


def _mutated(ph) -> bool:
    """Whether the graph writes to this input, or to a view of it."""
    seen, work = {ph}, [ph]
    while work:
        n = work.pop()
        for u in n.users:
            if _writes(u, n):
                return True
            if u not in seen and u.args and u.args[0] is n and _name(u.target) in _ALIASING:
                seen.add(u)
                work.append(u)
    return False


def _reads_item(ph) -> bool:
    return any(u.op == "call_method" and u.target == "item" for u in ph.users)


def _sym(d):
    """The sympy expression of a symbolic size, None for a plain int."""
    return d.node.expr if isinstance(d, torch.SymInt) else None


class _Roles:
    """What each graph input is (TENSOR, CONST, SIZE, FIXED) and, for a dynamic graph, where
    each size symbol can be read at call time and its bounds."""

    def __init__(self, gm, example_inputs):
        phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
        self.n = len(example_inputs)
        self.roles = []
        self.dims = {}        # tensor input index -> [int | sympy expr] (its symbolic shape)
        self.where = {}       # symbol -> ("arg", i) | ("dim", i, d): where a call gives its value
        self.bounds = {}      # symbol -> (lower, upper or None)
        for i, (ph, a) in enumerate(zip(phs, example_inputs)):
            if isinstance(a, torch.Tensor):
                if _is_param_or_buffer(ph) and not _mutated(ph):
                    self.roles.append(CONST)
                elif a.dim() == 0 and _reads_item(ph):
                    self.roles.append(FIXED)
                else:
                    self.roles.append(TENSOR)
                    val = ph.meta.get("example_value")
                    shape = val.shape if isinstance(val, torch.Tensor) else a.shape
                    self.dims[i] = [_sym(d) if _sym(d) is not None else int(d) for d in shape]
                    self._bound(shape)
            else:
                self.roles.append(FIXED)
                s = _sym(ph.meta.get("example_value"))
                if s is not None and s.is_Symbol:
                    self.where.setdefault(s, ("arg", i))
        for i, shape in self.dims.items():
            for d, e in enumerate(shape):
                if not isinstance(e, int) and e.is_Symbol:
                    self.where.setdefault(e, ("dim", i, d))
        # a size symbol that is some tensor's dim is derived from that tensor; any other stays fixed
        on_dims = {e for shape in self.dims.values() for e in shape if not isinstance(e, int)}
        syms = set().union(*(e.free_symbols for e in on_dims)) if on_dims else set()
        self.size_dims = {}   # SIZE input index -> (tensor input index, dim) that holds it
        for i, ph in enumerate(phs[:self.n]):
            if self.roles[i] == FIXED:
                s = _sym(ph.meta.get("example_value"))
                if s is not None and s.is_Symbol and s in syms and self._dim_of(s) is not None:
                    self.roles[i] = SIZE
                    self.size_dims[i] = self._dim_of(s)
        self.symbols = sorted(syms, key=str)
        # every symbol must be readable from a call, else the sizes are fixed per compile
        self.dynamic = bool(self.symbols) and all(s in self.where for s in self.symbols)

    def _bound(self, shape):
        for d in shape:
            if isinstance(d, torch.SymInt):
                env = d.node.shape_env
                for s in d.node.expr.free_symbols:
                    vr = env.var_to_range.get(s)
                    lo = _finite(vr.lower) if vr is not None else None
                    hi = _finite(vr.upper) if vr is not None else None
                    self.bounds[s] = (max(lo or 0, 0), hi)

    def _dim_of(self, s):
        for i, shape in self.dims.items():
            for d, e in enumerate(shape):
                if not isinstance(e, int) and e == s:
                    return i, d
        return None

    def index(self, role):
        return [i for i, r in enumerate(self.roles) if r == role]

    def values(self, args) -> dict:
        """symbol -> its value in this call."""
        out = {}
        for s in self.symbols:
            w = self.where[s]
            out[s] = int(args[w[1]]) if w[0] == "arg" else int(args[w[1]].shape[w[2]])
        return out


def _finite(x):
    """A sympy bound as an int, None when it is infinite."""
    try:
        return int(x) if x.is_number and bool(x.is_finite) else None
    except (TypeError, ValueError, AttributeError):
        return None


def _bucket(v: int) -> int:
    """The default upper bound for an unbounded size seen at v: a power of two >= 2v."""
    b = 16
    while b < 2 * v:
        b *= 2
    return b


# ---------------------------------------------------------------- what gets compiled
class _Bound(torch.nn.Module):
    """dynamo's graph with its frozen weights as buffers (torch.export makes them constants),
    its SIZE inputs read from the tensors' shapes and its FIXED inputs set to one call's values:
    it takes the runtime tensors only."""

    def __init__(self, gm, roles: _Roles, consts: dict, fixed: dict):
        super().__init__()
        self.gm = gm
        self.n = roles.n
        self.tensor_pos = {i: k for k, i in enumerate(roles.index(TENSOR))}
        self.const_names = {}
        for i, t in consts.items():
            name = f"_ttc_w{i}"
            self.register_buffer(name, t.detach(), persistent=False)
            self.const_names[i] = name
        self.fixed = dict(fixed)
        self.sizes = {i: (self.tensor_pos[j], d) for i, (j, d) in roles.size_dims.items()}

    def forward(self, *tensors):
        args = []
        for i in range(self.n):
            if i in self.tensor_pos:
                args.append(tensors[self.tensor_pos[i]])
            elif i in self.const_names:
                args.append(getattr(self, self.const_names[i]))
            elif i in self.sizes:
                k, d = self.sizes[i]
                args.append(tensors[k].shape[d])
            else:
                args.append(self.fixed[i])
        return self.gm(*args)


_SDPA = (torch._C._nn.scaled_dot_product_attention, torch.nn.functional.scaled_dot_product_attention)


def _expand_gqa(gm) -> None:
    """SDPA with enable_gqa=True and fewer key/value heads than query heads -> the same with the
    key/value heads repeated (what the flag means): torch's own shape check of the grouped form
    fails on symbolic sizes during capture ("Attempting to broadcast a dimension of length 2"),
    which sent transformers' decode step with a growing (dynamic) cache to eager."""
    changed = False
    for n in list(gm.graph.nodes):
        if n.op != "call_function" or n.target not in _SDPA or not n.kwargs.get("enable_gqa"):
            continue
        q, k, v = (a.meta.get("example_value") if isinstance(a, torch.fx.Node) else None for a in n.args[:3])
        if not all(isinstance(t, torch.Tensor) and t.dim() >= 3 for t in (q, k, v)):
            continue
        hq, hk = q.shape[-3], k.shape[-3]
        if not isinstance(hq, int) or not isinstance(hk, int) or hk == hq or hk < 1 or hq % hk:
            continue
        with gm.graph.inserting_before(n):
            kk = gm.graph.call_function(torch.repeat_interleave, (n.args[1], hq // hk), {"dim": -3})
            vv = gm.graph.call_function(torch.repeat_interleave, (n.args[2], hq // hk), {"dim": -3})
        n.args = (n.args[0], kk, vv) + tuple(n.args[3:])
        n.kwargs = {key: val for key, val in n.kwargs.items() if key != "enable_gqa"}
        changed = True
    if changed:
        gm.graph.lint()
        gm.recompile()


class _Graph:
    """The callable dynamo gets for one graph: checks the frozen weights, picks (or compiles) the
    compiled module for this call's fixed values and sizes, and runs it on the runtime tensors."""

    def __init__(self, gm, example_inputs, settings):
        _expand_gqa(gm)
        self.gm = gm
        self.settings = settings
        self.limit = _knobs.integer("BACKEND_SHAPES", 8)
        self.roles = _Roles(gm, example_inputs)
        self.tensors = self.roles.index(TENSOR)
        self.fixed = self.roles.index(FIXED)
        self.const_idx = self.roles.index(CONST)
        self._take = _getter(self.tensors)
        self._freeze(example_inputs)
        self.variants = {}     # fixed values -> (ranges {symbol: (lo, hi)} or None, module or None)
        self.compiles = 0
        self.static_sizes = False   # a range failed: sizes are fixed per compile from then on
        self.told = False
        if not self.fixed and not self.roles.symbols:   # static: compiled now
            self._compile(example_inputs, ())
        # with no value to key on, no size and no weight to check, a call goes straight to the module
        self.plain = not self.fixed and not self.roles.symbols and not self.const_idx

    # ---- weights
    def _freeze(self, args):
        self.consts = {i: args[i] for i in self.const_idx}
        self.refs = [args[i] for i in self.const_idx]
        self.versions = [t._version for t in self.refs]
        self._take_consts = _getter(self.const_idx)

    def _weights_changed(self, args) -> bool:
        cur = self._take_consts(args)
        return (not all(map(operator.is_, cur, self.refs))
                or [t._version for t in cur] != self.versions)

    # ---- compiling
    def _key(self, args):
        vals = tuple(a.item() if isinstance(a, torch.Tensor) else a for a in (args[i] for i in self.fixed))
        if not all(isinstance(v, (int, float, bool)) for v in vals):
            return None
        if self.static_sizes or (self.roles.symbols and not self.roles.dynamic):
            vals += tuple(tuple(args[i].shape) for i in self.tensors)   # sizes fixed per compile
        return vals

    def _ranges(self, vals: dict, old) -> dict:
        out = {}
        for s, v in vals.items():
            lo, hi = self.roles.bounds.get(s, (0, None))
            if hi is None:   # unbounded: a bucket, grown past what the last compile covered
                hi = max(_bucket(v), old[s][1] if old else 0)
            out[s] = (min(lo, v), max(hi, v))
        return out

    def _inputs(self, args, ranges):
        import sympy
        out = []
        for i in self.tensors:
            t = args[i]
            if not ranges or self.static_sizes:
                out.append(Input.from_tensor(t))
                continue
            lo_s, hi_s = [], []
            for d, e in enumerate(self.roles.dims[i]):
                if isinstance(e, int):
                    lo_s.append(t.shape[d])
                    hi_s.append(t.shape[d])
                else:
                    lo_s.append(int(e.subs({s: sympy.Integer(r[0]) for s, r in ranges.items()})))
                    hi_s.append(int(e.subs({s: sympy.Integer(r[1]) for s, r in ranges.items()})))
            lo_s = [min(a, b) for a, b in zip(lo_s, t.shape)]
            hi_s = [max(a, b) for a, b in zip(hi_s, t.shape)]
            if lo_s == hi_s:
                out.append(Input.from_tensor(t))
            else:
                out.append(Input(min_shape=lo_s, opt_shape=tuple(t.shape), max_shape=hi_s,
                                 dtype=t.dtype, device=t.device, torch_tensor=t))
        return out

    def _compile(self, args, key, ranges=None):
        from torchtrt_c.dynamo._compiler import compile_module
        fixed = {i: args[i] for i in self.fixed}
        inputs = self._inputs(args, ranges)
        self.compiles += 1
        try:
            mod = compile_module(_Bound(self.gm, self.roles, self.consts, fixed), inputs, {}, self.settings)
        except Exception as ex:
            if self.settings.pass_through_build_failures:
                raise
            log.warning("torchtrt_c backend: could not compile the graph for inputs %s, running it "
                        "eagerly: %s", inputs, ex)
            mod = None
        self.variants[key] = (ranges, mod)
        return mod

    # ---- calls
    def __call__(self, *args):
        if self.plain:
            mod = self.variants[()][1]
            return mod(*self._take(args)) if mod is not None else self.gm.forward(*args)
        if self.const_idx and self._weights_changed(args):
            log.warning("torchtrt_c backend: a parameter or buffer changed since the graph was "
                        "compiled (its weights are constants of the engines); compiling it again")
            self._freeze(args)
            self.variants.clear()
        key = self._key(args)
        if key is None:
            return self.gm.forward(*args)
        ranges, mod = self.variants.get(key, (None, None))
        dynamic = self.roles.dynamic and not self.static_sizes
        vals = self.roles.values(args) if dynamic else None
        if key not in self.variants or (dynamic and not _covers(ranges, vals)):
            if self.compiles >= self.limit:
                if not self.told:
                    log.warning("torchtrt_c backend: a graph has been compiled %d times "
                                "(TORCHTRT_C_BACKEND_SHAPES); new shapes and values run eagerly", self.limit)
                    self.told = True
                return self.gm.forward(*args)
            mod = self._compile(args, key, self._ranges(vals, ranges) if dynamic else None)
        if mod is None:
            return self.gm.forward(*args)
        try:
            return mod(*self._take(args))
        except InputError:
            if not dynamic:
                raise
            # capture made a dim of the range static after all: fix sizes per compile from now on
            log.warning("torchtrt_c backend: the graph compiled for a range of sizes does not take "
                        "sizes %s; compiling it per shape from now on", vals)
            self.static_sizes = True
            self.variants.clear()
            return self(*args)


def _getter(idx):
    """args -> the tuple of args at these positions."""
    if len(idx) == 1:
        i = idx[0]
        return lambda a: (a[i],)
    return operator.itemgetter(*idx) if idx else (lambda a: ())


def _covers(ranges, vals) -> bool:
    return ranges is not None and all(ranges[s][0] <= v <= ranges[s][1] for s, v in vals.items())


def _register():
    from torch._dynamo.backends.registry import _BACKENDS, register_backend
    if "torchtrt_c" not in _BACKENDS:
        register_backend(name="torchtrt_c")(torchtrt_c_backend)


_register()
