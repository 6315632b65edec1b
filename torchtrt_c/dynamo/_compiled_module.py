"""CompiledModule: the stitched GraphModule, plus a check of the user's inputs on each call.

The engines check their own inputs too, but when a torch segment runs first an engine only
sees intermediates; checking the user inputs up front names the argument the user passed.

    trt(torch.randn(33, 8))   # InputError: input 'x': dim 0 is 33, outside the compiled range [1, 32]

Checks are skipped while tracing (torch.export / torch.compile see fake tensors).

A module whose graph is one engine between its inputs and outputs (the whole model converted)
is called without the fx wrapper: __call__ hands the inputs to the engine's runtime directly
and builds the result as the graph would (bench/overhead.py: the fx forward, its pytree
flattening and the submodule's nn.Module call cost ~10 us per call). Anything the shortcut
would skip (hooks, tracing, autograd, tensor subclasses, keyword arguments) takes the graph.
Once a call of plain CPU tensors has passed the check and run, the shortcut keeps a FastCall
for those argument dtypes and shapes (runtime/_execute.py fast_call): later such calls skip the
check and the plan lookups and are one C call after a look at hooks and modes.
"""
from __future__ import annotations

import operator

import torch
import torch.fx
from torch.nn.modules import module as _nn_module
from torch.utils import _pytree as pytree

from torchtrt_c.runtime import _execute
from torchtrt_c.runtime import _module as _engine_module


def _is_real(t) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor
    return isinstance(t, torch.Tensor) and not isinstance(t, FakeTensor)


# -- devices recorded in output specs ---------------------------------------------------------
# A pytree node's context may hold the device its object lived on when the graph was captured:
# transformers' caches flatten to their attributes, DynamicLayer.device among them, and rebuild
# from that record. A module compiled on the CPU and called on CUDA tensors would then return a
# DynamicCache whose layers say 'cpu' while holding CUDA tensors (and transformers moves the cache
# to that device at the next update). The spec is rebuilt once per output device instead.

def _ctx_devices(ctx, found: set) -> None:
    if isinstance(ctx, torch.device):
        found.add(str(ctx))
    elif isinstance(ctx, dict):
        if ctx.get("_t") == "device" and isinstance(ctx.get("s"), str):
            found.add(ctx["s"])
        for v in ctx.values():
            _ctx_devices(v, found)
    elif isinstance(ctx, (list, tuple)):
        for v in ctx:
            _ctx_devices(v, found)


def _ctx_on(ctx, old: str, dev: torch.device):
    if isinstance(ctx, torch.device):
        return dev if str(ctx) == old else ctx
    if isinstance(ctx, dict):
        if ctx.get("_t") == "device" and ctx.get("s") == old:
            return {**ctx, "s": str(dev)}
        return type(ctx)((k, _ctx_on(v, old, dev)) for k, v in ctx.items()) if type(ctx) is dict else ctx
    if type(ctx) in (list, tuple):
        return type(ctx)(_ctx_on(v, old, dev) for v in ctx)
    return ctx


def _children(spec) -> list:
    return list(spec.children()) if hasattr(spec, "children") else spec.children_specs  # torch < 2.10


def spec_devices(spec) -> set:
    """The devices named in the contexts of spec's nodes (torch.device objects, or transformers'
    {"_t": "device", "s": ...} records)."""
    found: set = set()
    stack = [spec]
    while stack:
        s = stack.pop()
        if not s.is_leaf():
            _ctx_devices(s.context, found)
            stack.extend(_children(s))
    return found


def spec_on(spec, old: str, dev: torch.device):
    """spec with the device old in its nodes' contexts replaced by dev."""
    if spec.is_leaf():
        return spec
    return pytree.TreeSpec(spec.type, _ctx_on(spec.context, old, dev),
                           [spec_on(c, old, dev) for c in _children(spec)])


def _first_device(flat):
    for t in flat:
        if isinstance(t, torch.Tensor):
            return t.device
    return None


class _DeviceSpecs:
    """The specs of one output spec per output device, where the spec records exactly one
    device (more than one: the model placed objects itself, kept as captured)."""

    __slots__ = ("old", "by_dev")

    def __init__(self, spec):
        devs = spec_devices(spec)
        self.old = next(iter(devs)) if len(devs) == 1 else None
        self.by_dev = {}

    def spec(self, spec, flat):
        if self.old is None:
            return spec
        dev = _first_device(flat)
        if dev is None or str(dev) == self.old:
            return spec
        s = self.by_dev.get(dev)
        if s is None:
            s = self.by_dev[dev] = spec_on(spec, self.old, dev)
        return s


def _outputs_on_device(mod, out):
    """out of the graph path with its spec's recorded device made the outputs' device."""
    d = mod.__dict__.get("_ttc_out_devs")
    if d is None:
        cg = mod.graph._codegen
        spec = cg.pytree_info.out_spec if isinstance(cg, torch.fx.graph._PyTreeCodeGen) else None
        d = mod.__dict__["_ttc_out_devs"] = (_DeviceSpecs(spec) if spec is not None else False)
    if d is False or d.old is None:
        return out
    flat, spec = pytree.tree_flatten(out)
    s = d.spec(spec, flat)
    return out if s is spec else pytree.tree_unflatten(flat, s)


class _Direct:
    """The shortcut of a one-engine graph: engine inputs are args[arg_idx[i]], the graph's
    flat outputs are engine outputs out_idx, unflattened with out_spec (None: a tuple).
    fast: (FastCall.run, the engine submodule, unflatten, its meta) for the shapes of the last call of
    plain CPU tensors that passed the checks (None: none yet, or dropped with the engine cache's
    plans); fasts: the same per argument shapes seen (False: these shapes cannot take one)."""

    __slots__ = ("name", "n_args", "arg_idx", "out_idx", "out_spec", "leaf", "fast", "fasts", "devs",
                 "__weakref__")

    def __init__(self, name, n_args, arg_idx, out_idx, out_spec):
        self.name, self.n_args, self.arg_idx, self.out_idx = name, n_args, arg_idx, out_idx
        self.out_spec = out_spec
        self.leaf = out_spec is not None and out_spec.is_leaf() and len(out_idx) == 1
        self.fast, self.fasts = None, {}
        self.devs = _DeviceSpecs(out_spec) if out_spec is not None else None

    def spec(self, flat):
        """out_spec for outputs flat (their device named where the spec records one)."""
        return self.out_spec if self.devs is None else self.devs.spec(self.out_spec, flat)

    # copies and pickles leave the FastCall behind (it holds a live engine): made again at a call
    def __getstate__(self):
        return (self.name, self.n_args, self.arg_idx, self.out_idx, self.out_spec)

    def __setstate__(self, state):
        self.__init__(*state)


def _direct_plan(gm):
    """A _Direct for gm's graph when it is placeholders -> one EngineModule -> getitems ->
    output with a plain calling convention, else None."""
    nodes = list(gm.graph.nodes)
    ph = [n for n in nodes if n.op == "placeholder"]
    calls = [n for n in nodes if n.op == "call_module"]
    outs = [n for n in nodes if n.op == "output"]
    if len(calls) != 1 or len(outs) != 1 or calls[0].kwargs or any(n.args for n in ph):
        return None  # placeholders with defaults keep the generated forward
    call = calls[0]
    if type(gm._modules.get(call.target)) is not _engine_module.EngineModule:
        return None
    pos = {n: i for i, n in enumerate(ph)}
    if any(a not in pos for a in call.args):
        return None
    items = {}
    for n in nodes:
        if n.op in ("placeholder", "call_module", "output"):
            continue
        if (n.op != "call_function" or n.target is not operator.getitem or n.kwargs or n.args[0] is not call
                or type(n.args[1]) is not int):
            return None
        items[n] = n.args[1]
    res = outs[0].args[0]
    if not isinstance(res, (tuple, list)) or any(r not in items for r in res):
        return None
    cg = gm.graph._codegen
    if isinstance(cg, torch.fx.graph._PyTreeCodeGen):
        info = cg.pytree_info
        # positional tensors only: the flattened inputs are the arguments themselves
        if info.in_spec != pytree.tree_structure((tuple(range(len(ph))), {})) or info.out_spec is None:
            return None
        out_spec = info.out_spec
    elif type(cg) is torch.fx.graph.CodeGen:
        out_spec = None
    else:
        return None
    return _Direct(call.target, len(ph), tuple(pos[a] for a in call.args), tuple(items[r] for r in res), out_spec)


def _make_fast(plan, acc, args) -> None:
    """plan.fast for args' shapes (args have just passed the user-input check and run): only
    where every argument feeds the engine, so the FastCall's checks cover all that the
    user-input check looked at."""
    key = tuple([t.shape if type(t) is torch.Tensor else None for t in args])
    f = plan.fasts.get(key)
    if f is None or (f and (f[1] is not acc or f[3] is not acc.meta)):  # a replaced submodule or engine
        p = _execute._PLANS.get(acc.meta)
        if p is None or p.engine is None or set(plan.arg_idx) != set(range(plan.n_args)):
            return
        ret = "single" if plan.leaf else "tuple"
        run = _execute.fast_call(p.engine, p.in_dtypes, p.out_dtypes, args, plan.n_args, plan.arg_idx,
                                 plan.out_idx, ret)
        if run is None:  # these tensors (not their shapes) keep the general path
            return
        f = (run, acc, None if plan.leaf else plan.spec(args), acc.meta) if run else False
        if len(plan.fasts) >= 64:  # dynamic shapes: keep it bounded
            plan.fasts.clear()
        plan.fasts[key] = f
    if f:
        plan.fast = f
        _execute.FAST_HOLDERS.add(plan)


def _hooked(m) -> bool:
    return bool(m._backward_hooks or m._backward_pre_hooks or m._forward_hooks or m._forward_pre_hooks)


def _plain(mod, acc) -> bool:
    """Nothing is active that the shortcut would skip: hooks (on the module, on the engine
    submodule, global), jit tracing, dynamo, dispatch / function modes, functorch, the profiler.
    Autograd is the FastCall's to refuse (an input that requires grad)."""
    return not (mod._forward_hooks or mod._forward_pre_hooks or mod._backward_hooks or mod._backward_pre_hooks
                or acc._forward_hooks or acc._forward_pre_hooks or acc._backward_hooks or acc._backward_pre_hooks
                or _nn_module._global_forward_hooks or _nn_module._global_forward_pre_hooks
                or _nn_module._global_backward_hooks or _nn_module._global_backward_pre_hooks
                or _tracing_state() or _is_compiling() or _dispatch_modes() or _function_modes()
                or _functorch() or _profiling())


_tracing_state = torch._C._get_tracing_state
_is_compiling = torch.compiler.is_compiling
_dispatch_modes = torch._C._len_torch_dispatch_stack
_function_modes = torch._C._is_torch_function_mode_enabled
_functorch = torch._C._are_functorch_transforms_active
_profiling = torch.autograd._profiler_enabled


class CompiledModule(torch.fx.GraphModule):
    _ttc_specs = None      # [(name, Input)] in call order
    _ttc_truncate = False

    def __call__(self, *args, **kwargs):
        # the steady state of a one-engine module: a FastCall made at an earlier call whose
        # arguments passed the checks below takes exactly those dtypes and shapes (anything
        # else answers NotImplemented and is checked here as on the first call)
        d = self.__dict__.get("_ttc_direct_plan")
        if d is not None and not kwargs and d[0] is self._code and d[1] is not None:
            fast = d[1].fast
            if (fast is not None and self._modules.get(d[1].name) is fast[1] and fast[1].meta is fast[3]
                    and _plain(self, fast[1])):
                out = fast[0](args)
                if out is not NotImplemented:
                    return out if fast[2] is None else pytree.tree_unflatten(out, fast[2])
        specs = self._ttc_specs
        if specs is not None and not torch.compiler.is_compiling():
            # the check depends only on the dtypes and shapes: plain tensors whose dtypes and
            # shapes passed it once skip it (FakeTensors and other subclasses always take it)
            key = None
            if not kwargs and len(args) == len(specs):
                key = tuple([(t.dtype, t.shape) if type(t) is torch.Tensor else None for t in args])
            passed = self.__dict__.get("_ttc_passed")
            if key is None or passed is None or key not in passed:
                self._ttc_check(specs, args, kwargs)
                if key is not None and None not in key:
                    if passed is None or len(passed) >= 64:  # dynamic shapes: keep it bounded
                        passed = self.__dict__["_ttc_passed"] = set()
                    passed.add(key)
        if not kwargs:
            out = self._ttc_direct(args)
            if out is not None:
                return out
        return _outputs_on_device(self, _graph_call(self, *args, **kwargs))

    def recompile(self):
        code = super().recompile()
        self.__dict__.pop("_ttc_out_devs", None)
        # fx's recompile routes this instance's class's __call__ through call_wrapped ->
        # _WrappedCall -> super().__call__ (readable errors from the generated forward): two
        # frames and a super() per call, ~0.8 us. The class is this instance's own
        # (GraphModule.__new__), so calls come straight here; the graph path keeps the wrapper.
        type(self).__call__ = CompiledModule.__call__
        return code

    def _ttc_direct(self, args):
        """The outputs through the one-engine shortcut, or None where the graph must run."""
        d = self.__dict__.get("_ttc_direct_plan")
        if d is None or d[0] is not self._code:  # a recompiled graph gets a fresh plan
            d = self.__dict__["_ttc_direct_plan"] = (self._code, _direct_plan(self))
        plan = d[1]
        if plan is None or len(args) != plan.n_args:
            return None
        acc = self._modules.get(plan.name)
        blob = acc._buffers.get("engine") if type(acc) is _engine_module.EngineModule else None
        if (blob is None or _hooked(self) or _hooked(acc)
                or _nn_module._global_forward_hooks or _nn_module._global_forward_pre_hooks
                or _nn_module._global_backward_hooks or _nn_module._global_backward_pre_hooks
                or torch._C._get_tracing_state() or not _engine_module._eager_ok(args)):
            return None
        if _engine_module.PENDING:
            _engine_module._wait_loaded(acc)
        # the blob through _buffers: nn.Module.__getattr__ costs a microsecond per call
        outs = _execute.run_engine([args[i] for i in plan.arg_idx], blob, acc.meta)
        _make_fast(plan, acc, args)
        if plan.leaf:
            return outs[plan.out_idx[0]]
        flat = [outs[i] for i in plan.out_idx]
        return tuple(flat) if plan.out_spec is None else pytree.tree_unflatten(flat, plan.spec(flat))

    def _ttc_check(self, specs, args, kwargs):
        from torchtrt_c import InputError
        given = list(args)
        names = [n for n, _ in specs]
        for k, v in kwargs.items():
            if k not in names:
                raise InputError(f"unexpected input {k!r}; the module takes {', '.join(names)}")
        if len(given) > len(specs):
            raise InputError(f"the module takes {len(specs)} input(s) ({', '.join(names)}), "
                             f"got {len(given)} positional")
        for i, (name, inp) in enumerate(specs):
            if i < len(given):
                t = given[i]
            elif name in kwargs:
                t = kwargs[name]
            else:
                raise InputError(f"input {name!r} is missing: the module takes {len(specs)} input(s) "
                                 f"({', '.join(names)}), got {len(given) + len(kwargs)}")
            self._ttc_check_one(name, inp, t)

    def _ttc_check_one(self, name, inp, t):
        """t against its spec: an Input (a tensor's dtype and dims), a list/tuple/dict of specs
        (the same container, item by item), or a constant (the same value)."""
        from torchtrt_c import InputError
        from torchtrt_c._input import Input
        if isinstance(inp, (list, tuple, dict)):
            kind = type(inp).__name__
            if type(t) is not type(inp) or len(t) != len(inp) or (kind == "dict" and set(t) != set(inp)):
                what = f"keys {sorted(map(str, inp))}" if kind == "dict" else f"{len(inp)} items"
                raise InputError(f"input {name!r}: expected a {kind} of {what} (as at compile time), "
                                 f"got {_describe(t)}")
            for k in (inp if kind == "dict" else range(len(inp))):
                self._ttc_check_one(f"{name}[{k!r}]", inp[k], t[k])
            return
        if not isinstance(inp, Input):   # fixed at compile time, as torch.export fixes it
            if type(t) is not type(inp) or t != inp:
                raise InputError(f"input {name!r} is {_describe(t)}; the module was compiled with {inp!r} "
                                 f"there and non-tensor inputs are fixed at compile time (torch.export "
                                 f"specialises them): compile again for this value")
            return
        if not isinstance(t, torch.Tensor):
            raise InputError(f"input {name!r}: expected a tensor (shape {_range_str(inp)}), got {_describe(t)}")
        if not _is_real(t):
            return
        dt = inp.dtype
        if t.dtype != dt and not (self._ttc_truncate and dt == torch.float64 and t.dtype == torch.float32):
            raise InputError(f"input {name!r}: expected dtype {str(dt).replace('torch.', '')}, "
                             f"got {str(t.dtype).replace('torch.', '')}")
        if t.dim() != len(inp.min_shape):
            raise InputError(f"input {name!r}: expected rank {len(inp.min_shape)} "
                             f"(shape {_range_str(inp)}), got shape {tuple(t.shape)}")
        for d, (v, lo, hi) in enumerate(zip(t.shape, inp.min_shape, inp.max_shape)):
            if lo == hi and v != lo:
                raise InputError(f"input {name!r}: dim {d} is {v}, the module was compiled for "
                                 f"{lo} (shape {_range_str(inp)})")
            if not lo <= v <= hi:
                raise InputError(f"input {name!r}: dim {d} is {v}, outside the compiled range "
                                 f"[{lo}, {hi}]")


# the graph path: nn.Module.__call__ under fx's error-reporting wrapper where this torch has it
_wrapped_call = getattr(torch.fx.graph_module, "_WrappedCall", None)
if _wrapped_call is not None:
    try:
        _graph_call = _wrapped_call(CompiledModule, None)
    except TypeError:  # another signature: plain nn.Module.__call__
        _wrapped_call = None
if _wrapped_call is None:
    def _graph_call(mod, *args, **kwargs):
        return super(CompiledModule, mod).__call__(*args, **kwargs)


def _describe(v) -> str:
    if isinstance(v, torch.Tensor):
        return f"a tensor of shape {tuple(v.shape)}"
    if isinstance(v, (list, tuple, dict)):
        return f"a {type(v).__name__} of {len(v)} items"
    return repr(v)


def _range_str(inp) -> str:
    return "(" + ", ".join(str(a) if a == b else f"{a}..{b}"
                           for a, b in zip(inp.min_shape, inp.max_shape)) + ")"
