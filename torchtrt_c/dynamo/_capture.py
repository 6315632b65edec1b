"""Capture: torch.export with dynamic dims from Input ranges, then our decompositions.

    ep = capture(model, [Input(min_shape=(1, 4), opt_shape=(8, 4), max_shape=(32, 4))], {})
    ep = decompose(ep, settings)

Outputs are whatever pytree torch.export can flatten: tensors in tuples/lists/dicts, and
transformers' ModelOutput (it registers those itself). Its caches (DynamicCache,
EncoderDecoderCache, ...) are registered here when transformers is already imported, so that
GPT-2/Llama at their default use_cache=True compile and return their cache. Anything else
that torch.export cannot flatten is a torchtrt_c.Error that says what to change.
"""
from __future__ import annotations

import inspect
import logging
import operator
import os
import re
import sys

import torch

from torchtrt_c import settings as _knobs
from torchtrt_c._input import Input, example_inputs
from torchtrt_c.dynamo.lowering import get_decompositions
from torchtrt_c.dynamo.lowering._decompositions import infer_single_symbolic_size, localize_sym_sizes
from torchtrt_c.dynamo.lowering._local_decomp import copy_graph, decompose_locally

log = logging.getLogger("torchtrt_c")


def _dynamic_spec(inp):
    """torch.export's dynamic_shapes entry of one input: None for a static Input or a constant,
    the same container for a list/tuple/dict of inputs (None when nothing in it is dynamic)."""
    if isinstance(inp, (list, tuple)):
        sub = [_dynamic_spec(v) for v in inp]
        return None if all(s is None for s in sub) else type(inp)(sub)
    if isinstance(inp, dict):
        sub = {k: _dynamic_spec(v) for k, v in inp.items()}
        return None if all(s is None for s in sub.values()) else sub
    if not isinstance(inp, Input) or not inp.is_dynamic():
        return None
    return {i: torch.export.Dim.AUTO(min=inp.min_shape[i], max=inp.max_shape[i])
            for i in inp.dynamic_dims()}


def dynamic_shapes_for(module, arg_inputs, kwarg_inputs):
    """torch.export's dynamic_shapes for these input specs (None when all are static), keyed
    by forward's parameter names so that kwargs work too."""
    dyn_args = [_dynamic_spec(i) for i in arg_inputs]
    dyn_kwargs = {k: _dynamic_spec(v) for k, v in kwarg_inputs.items()}
    if all(d is None for d in dyn_args) and all(d is None for d in dyn_kwargs.values()):
        return None
    try:
        params = [p for p in inspect.signature(module.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    except (TypeError, ValueError):
        params = []
    if len(params) >= len(dyn_args) and not any(p.kind == p.VAR_POSITIONAL for p in params):
        spec = {params[i].name: d for i, d in enumerate(dyn_args)}
        spec.update(dyn_kwargs)
        return spec
    try:
        sig = list(inspect.signature(module.forward).parameters.values())
    except (TypeError, ValueError):
        sig = []
    star = next((i for i, p in enumerate(sig) if p.kind == p.VAR_POSITIONAL), None)
    if star is not None and star <= len(dyn_args) and all(
            p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in sig[:star]):
        # forward(a, b, *rest): torch.export binds the trailing inputs to `rest` as one tuple
        spec = {sig[i].name: d for i, d in enumerate(dyn_args[:star])}
        spec[sig[star].name] = tuple(dyn_args[star:])
        spec.update(dyn_kwargs)
        return spec
    if dyn_kwargs:
        raise ValueError("dynamic kwarg inputs need a forward with named parameters")
    return tuple(dyn_args)


def register_transformers_containers() -> bool:
    """Registers transformers' cache classes as pytree nodes (so torch.export can return them
    and torch.export.load can rebuild them). Only when transformers is already imported: a
    model of it is being compiled or loaded; we never import it ourselves. True when done."""
    if "transformers" not in sys.modules or torch.compiler.is_compiling():
        return False
    _register_model_outputs()
    try:
        from transformers.cache_utils import Cache
    except Exception:  # a transformers without caches: nothing to register
        return False
    try:  # transformers >= 5.2x: generic flatten of any cache (keeps its layers' layout)
        from transformers.exporters.exporter_dynamo import register_pytree_node
    except Exception:
        register_pytree_node = None
    if register_pytree_node is not None:
        for c in _subclasses(Cache):
            register_pytree_node(c)
        return True
    try:  # older transformers: DynamicCache only
        from transformers.integrations.executorch import register_dynamic_cache_export_support
        register_dynamic_cache_export_support()
        return True
    except Exception as ex:
        log.debug("cannot register transformers caches as pytrees: %s", ex)
        return False


def _subclasses(cls):
    """Every subclass of cls, at any depth."""
    todo = list(cls.__subclasses__())
    while todo:
        c = todo.pop()
        todo.extend(c.__subclasses__())
        yield c


def _register_model_outputs():
    """transformers registers each ModelOutput subclass as a pytree node when the class is
    defined, except while torch is compiling (torch.compiler.is_compiling()): a model module
    first imported then (say, inside a torch.compile'd function or backend) leaves its output
    classes unregistered for the rest of the process, and torch.export then cannot return
    them. Register every subclass that is still missing, with transformers' own function."""
    import torch.utils._pytree as pytree
    try:
        from transformers.utils.generic import ModelOutput, _register_model_output_pytree_node
    except Exception:  # another transformers: it registers its outputs its own way
        return
    for c in _subclasses(ModelOutput):
        if c not in pytree.SUPPORTED_NODES:
            try:
                _register_model_output_pytree_node(c)
            except Exception as ex:  # noqa: BLE001  (export then names the class in its error)
                log.debug("cannot register %s as a pytree node: %s", c.__name__, ex)


_UNKNOWN_TYPE = re.compile(r"Found <class '([^']+)'> in (output|input)")


def _container_error(ex: Exception):
    """torch.export's "not a known type" failure -> a torchtrt_c.Error saying what to change;
    None for any other failure."""
    m = _UNKNOWN_TYPE.search(str(ex))
    if m is None:
        return None
    from torchtrt_c import Error
    cls, where = m.group(1), m.group(2)
    short = cls.rsplit(".", 1)[-1]
    hint = ""
    if "Cache" in short:
        hint = (" For a transformers model, pass use_cache=False (in the config or as a kwarg "
                "input) so that no cache is returned.")
    verb = "returns" if where == "output" else "takes"
    return Error(f"torchtrt_c.compile: the model {verb} a {cls}, a container torch.export cannot "
                 f"flatten. Return (or pass) tensors in tuples, lists or dicts instead, or register "
                 f"the class with torch.utils._pytree.register_pytree_node.{hint}")


def _lazy_graph_modules():
    """torch.export's own passes regenerate the Python code of the whole graph after each
    rewrite (set_grad/autocast regions split into submodules and inlined again, runtime
    asserts, placeholder names): Llama's no_grad + autocast rotary embedding cost 25-30 such
    recompiles, 0.3-0.5 s of a 1.3-1.8 s capture. Graph modules made in this context generate
    their code only when it is first needed (Inductor and dynamo trace the same way); the
    ExportedProgram's own module is an ordinary GraphModule either way.
    TORCHTRT_C_LAZY_FX=0: eager recompiles, as before."""
    import contextlib
    if _knobs.get("LAZY_FX") == "0":
        return contextlib.nullcontext()
    try:
        from torch.fx._lazy_graph_module import _use_lazy_graph_module
    except ImportError:  # a torch without it: every recompile is eager
        return contextlib.nullcontext()
    return _use_lazy_graph_module(True)


def capture(module: torch.nn.Module, arg_inputs, kwarg_inputs, stack_traces=None) -> torch.export.ExportedProgram:
    """stack_traces: record each node's source stack (node.meta["stack_trace"]); None: only with
    dynamic shapes, where the warning for an unsupported dim names the source line
    (_compiler._warn_non_affine).
    Recording them is 15-20% of a transformer's capture (a symbolised traceback per node:
    GPT-2 1.41 -> 1.15 s) and nothing else reads them."""
    # example tensors on the Input's device where it names one: a model whose weights are on a
    # GPU is traced with inputs there (torch.export refuses to mix the devices)
    args = tuple(example_inputs(list(arg_inputs), own_device=True))
    kwargs = example_inputs(dict(kwarg_inputs), own_device=True)
    dynamic_shapes = dynamic_shapes_for(module, arg_inputs, kwarg_inputs)
    if stack_traces is None:
        stack_traces = dynamic_shapes is not None
    register_transformers_containers()
    was_training = module.training
    _set_training(module, False)
    import torch.fx.config as fx_config
    # the switch is newer than torch 2.11 (there, traces are always recorded)
    has_switch = hasattr(fx_config, "do_not_emit_stack_traces")
    no_traces = fx_config.do_not_emit_stack_traces if has_switch else False
    try:
        if has_switch:
            fx_config.do_not_emit_stack_traces = no_traces or not stack_traces
        from torchtrt_c.dynamo.lowering._decompositions_spatial import align_scale_for_dynamic_sizes
        with _lazy_graph_modules(), align_scale_for_dynamic_sizes():
            ep = torch.export.export(module, args, kwargs, dynamic_shapes=dynamic_shapes, strict=False)
    except Exception as ex:
        err = (_container_error(ex) or _data_dependent_error(ex, module, args, kwargs)
               or _fixed_shape_error(ex) or _unflattenable_output(module, args, kwargs))
        if err is None:
            raise
        raise err from None
    finally:
        if has_switch:
            fx_config.do_not_emit_stack_traces = no_traces
        _set_training(module, was_training)
    return ep


def _set_training(module, mode: bool):
    """module.train(mode), except for the graph modules that the PT2E quantization flow
    (torchao's convert_pt2e) returns: they are torch.export graphs whose train()/eval() raise
    NotImplementedError, and they have no mode to switch (their graph is fixed)."""
    try:
        module.train(mode)
    except NotImplementedError:
        pass


def copy_program(ep: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    """A user's ExportedProgram as the compile's own (Torch-TensorRT's dynamo.compile takes one
    as its input): the passes after capture rewrite the graph, the signature and the constants
    table in place (decompose, fold_weight_computations), and the user's program must stay as
    it was. Weights are shared, not copied."""
    import copy
    gm = ep.graph_module
    new_gm = torch.fx.GraphModule(gm, copy_graph(gm))
    return ep._update(new_gm, copy.deepcopy(ep.graph_signature), constants=dict(ep.constants))


def _program_user_inputs(ep: torch.export.ExportedProgram):
    """[(name, fake value)] of the program's user inputs, positional first, then keyword
    (names as forward's); nested containers are refused by name."""
    from torchtrt_c import InputError
    IK = torch.export.graph_signature.InputKind
    nodes = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    vals = [nodes[s.arg.name].meta.get("val") for s in ep.graph_signature.input_specs if s.kind == IK.USER_INPUT]
    args_spec, kwargs_spec = ep.call_spec.in_spec.children()
    if any(not c.is_leaf() for c in args_spec.children() + kwargs_spec.children()):
        raise InputError("torchtrt_c.compile: the ExportedProgram takes containers of tensors; only tensor "
                         "arguments are supported")
    n_args = args_spec.num_children
    names = list(ep.module_call_graph[0].signature.forward_arg_names or []) if ep.module_call_graph else []
    if len(names) < n_args:
        names = [f"arg{i}" for i in range(n_args)]
    names = names[:n_args] + list(kwargs_spec.context)
    return list(zip(names, vals)), n_args


def program_inputs(ep: torch.export.ExportedProgram):
    """(arg Inputs, {kwarg: Input}) read from the program: its static dims as they are, a
    dynamic dim's range from its range constraints with the size it was exported at as the
    optimum. A dim without an upper bound (Dim.AUTO, Dim without max) needs inputs= given."""
    from torchtrt_c import InputError
    ins, n_args = _program_user_inputs(ep)
    out = []
    for name, val in ins:
        if not isinstance(val, torch.Tensor):
            raise InputError(f"torchtrt_c.compile: input {name!r} of the ExportedProgram is not a tensor "
                             f"({type(val).__name__}); only tensor inputs are supported")
        lo, opt, hi = [], [], []
        for i, d in enumerate(val.shape):
            if isinstance(d, int):
                a = h = b = d
            else:
                vr = ep.range_constraints.get(d.node.expr)
                # sympy Integers; torch's int_oo (no bound) claims is_finite but is no Integer
                if vr is None or not vr.upper.is_Integer:
                    raise InputError(f"torchtrt_c.compile: input {name!r} dim {i} ({d.node.expr}) of the "
                                     f"ExportedProgram has no upper bound; give inputs=[torchtrt_c.Input("
                                     f"min_shape=..., opt_shape=..., max_shape=...)] (or export with "
                                     f"Dim(..., max=N))")
                a, b = int(vr.lower) if vr.lower.is_Integer else 0, int(vr.upper)
                h = min(max(int(d.node.hint) if d.node.hint is not None else a, a), b)
            lo.append(a)
            opt.append(h)
            hi.append(b)
        out.append(Input(min_shape=tuple(lo), opt_shape=tuple(opt), max_shape=tuple(hi), dtype=val.dtype, name=name)
                   if lo != hi else Input(shape=tuple(lo), dtype=val.dtype, name=name))
    return out[:n_args], {name: inp for (name, _), inp in zip(ins[n_args:], out[n_args:])}


def check_program_inputs(ep: torch.export.ExportedProgram, arg_inputs, kwarg_inputs) -> None:
    """Inputs given with an ExportedProgram must describe its inputs: their number, dtypes and
    ranks, and no range on a dim the program has static."""
    from torchtrt_c import InputError
    ins, n_args = _program_user_inputs(ep)
    given = list(arg_inputs) + [kwarg_inputs.get(name) for name, _ in ins[n_args:]]
    if len(arg_inputs) != n_args or set(kwarg_inputs) != {name for name, _ in ins[n_args:]}:
        raise InputError(f"torchtrt_c.compile: the ExportedProgram takes {n_args} positional input(s)"
                         f"{' and ' + ', '.join(n for n, _ in ins[n_args:]) if len(ins) > n_args else ''}; "
                         f"got {len(arg_inputs)} positional and {sorted(kwarg_inputs) or 'no'} keyword input(s)")
    for (name, val), inp in zip(ins, given):
        if not isinstance(val, torch.Tensor):
            continue
        if inp.dtype != val.dtype:
            raise InputError(f"torchtrt_c.compile: input {name!r} is {val.dtype} in the ExportedProgram, "
                             f"the Input says {inp.dtype}")
        if len(inp.min_shape) != val.dim():
            raise InputError(f"torchtrt_c.compile: input {name!r} has {val.dim()} dims in the ExportedProgram, "
                             f"the Input {len(inp.min_shape)}")
        for i, d in enumerate(val.shape):
            if isinstance(d, int) and not inp.min_shape[i] == inp.max_shape[i] == d:
                raise InputError(f"torchtrt_c.compile: input {name!r} dim {i} is {d} in the ExportedProgram "
                                 f"(static), the Input gives [{inp.min_shape[i]}, {inp.max_shape[i]}]; export "
                                 f"it with a dynamic dim there to compile a range")


_OPERATOR = re.compile(r"Operator `([^`]+)`")


def _break_what(reason: str):
    """What a dynamo graph break on data is, in our words (None: not a data-dependent one)."""
    m = _OPERATOR.search(reason)
    if m is not None:
        return m.group(1)
    if "Tensor.item()" in reason or "_local_scalar_dense" in reason:
        return "Tensor.item() (a tensor's value read as a Python number)"
    if "Data-dependent" in reason or "data-dependent" in reason or "generic_jump" in reason:
        return "a branch on a tensor's value"
    return None


def _user_frame(ex: Exception):
    """The last frame of ex's traceback in the user's code (not torch's, ours or Python's)."""
    import traceback
    import sysconfig
    skip = [os.path.dirname(torch.__file__), os.path.dirname(os.path.dirname(__file__)),
            sysconfig.get_paths().get("stdlib") or "\0"]
    frames = [f for f in traceback.extract_tb(ex.__traceback__)
              if not any(f.filename.startswith(d) for d in skip) and not f.filename.startswith("<")]
    return frames[-1] if frames else None


def _at(frame) -> str:
    return f" ({os.path.basename(frame.filename)}:{frame.lineno}, `{(frame.line or '').strip()}`)" if frame else ""


def _data_dependent_error(ex: Exception, module, args, kwargs):
    """torch.export's failure on a value that depends on the data (nonzero, x[mask], unique,
    .item() in a condition, `not`/bool()/int() of a tensor, resize_ to a computed size,
    torchvision's nms) -> a torchtrt_c.Error saying in our words what the model does where
    (operators and source lines from torch._dynamo.explain, run only on this failure path;
    else the model's own frame in export's traceback) and what the user can do:
    torch.compile(backend="torchtrt_c") (dynamo breaks the graph there; the rest becomes
    engines), keep the value a tensor, or pass it in. None for any other failure."""
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode
    text = str(ex)
    if not isinstance(ex, GuardOnDataDependentSymNode) and "data-dependent" not in text:
        return None
    from torchtrt_c import Error
    where = []
    try:
        import torch._dynamo
        explained = torch._dynamo.explain(module)(*args, **kwargs)
        for b in explained.break_reasons:
            what = _break_what(b.reason)
            if what is None:
                continue
            at = what + _at(b.user_stack[-1] if b.user_stack else None)
            if at not in where:
                where.append(at)
    except Exception as why:  # noqa: BLE001  (the explanation is a courtesy: export's own words stay)
        log.debug("torch._dynamo.explain failed: %s", why)
    first = text.strip().splitlines()[0] if text.strip() else type(ex).__name__
    if where:
        ops = f"where the model reads it: {'; '.join(where)}"
    else:
        frame = _user_frame(ex)
        ops = ("a tensor's value is used as a Python value (bool, int or float: an `if`, `not`, int(), "
               f".item(), a size computed from data){_at(frame) if frame else ''}")
    return Error(f"torchtrt_c.compile: torch.export cannot capture this model as one graph: a size or "
                 f"value depends on the input data ({ops}). torch.compile(model, backend=\"torchtrt_c\") "
                 f"compiles such models: dynamo breaks the graph there, runs that part in torch "
                 f"and compiles the rest into engines. Or keep the value a tensor (torch.where in place of "
                 f"an `if` or `not`, a multiplication by a mask in place of a boolean index, torch.cond for "
                 f"a branch), or compute it outside the model and pass it in as an input. "
                 f"(torch.export said: {first})")


_FIXED_SHAPE = re.compile(r"shape '\[([^\]]*)\]' is invalid for input of size (\S*[su]\d+\S*)")


def _fixed_shape_error(ex: Exception):
    """torch.export's failure on a reshape to sizes written into the model while the input's
    dims are dynamic (native_group_norm(x, w, b, N, C, HxW, ...) with constant N and HxW, a
    view to literal sizes) -> a torchtrt_c.Error saying so and what to do. None otherwise."""
    m = _FIXED_SHAPE.search(str(ex))
    if m is None:
        return None
    from torchtrt_c import Error
    frame = _user_frame(ex)
    return Error(f"torchtrt_c.compile: the model reshapes a tensor with dynamic dims ({m.group(2)} elements) "
                 f"to the fixed sizes [{m.group(1)}]{_at(frame)}: sizes written into the model (a view to "
                 f"literal sizes, or an op's size arguments such as native_group_norm's N and HxW) hold "
                 f"for one input shape only. Make those input dims static (an Input with min == max "
                 f"there), or compute the sizes from the tensor (x.shape, torch.nn.functional.group_norm). "
                 f"(torch.export said: {str(ex).strip().splitlines()[0]})")


_LEAF_TYPES = (torch.Tensor, int, float, bool, str, type(None), torch.SymInt, torch.SymFloat, torch.dtype,
               torch.device)


def _unflattenable_output(module, args, kwargs):
    """After export failed for another reason than "not a known type": torch versions differ in
    how an unregistered container fails (torch 2.11 raises "unhashable type: 'Pair'" for a
    dataclass). Run the module once eagerly and name the first output leaf that is neither a
    tensor nor a scalar: the same clear error. None when the outputs are all fine (the export
    failure is something else and is raised as it is)."""
    import torch.utils._pytree as pytree
    try:
        with torch.no_grad():
            out = module(*args, **kwargs)
        leaves, _ = pytree.tree_flatten(out)
    except Exception:  # noqa: BLE001  (the model itself fails: report export's error)
        return None
    for leaf in leaves:
        if not isinstance(leaf, _LEAF_TYPES):
            cls = type(leaf)
            return _container_error(RuntimeError(f"Found <class '{cls.__module__}.{cls.__qualname__}'> in output"))
    return None


def kwarg_order(ep: torch.export.ExportedProgram, kwarg_inputs: dict) -> dict:
    """kwarg_inputs in the order export flattened them (its in_spec), which is the order of
    the program's placeholders; the user's dict order may differ."""
    try:
        keys = list(ep.call_spec.in_spec.children()[1].context)
    except Exception:
        return dict(kwarg_inputs)
    if sorted(keys) != sorted(kwarg_inputs):
        return dict(kwarg_inputs)
    return {k: kwarg_inputs[k] for k in keys}


def decompose(ep: torch.export.ExportedProgram, keep=(), decompose=()):
    from torchtrt_c.dynamo.lowering._decompositions_spatial import (align_scale_for_dynamic_sizes,
                                                                    retarget_upsample_defaults)
    retarget_upsample_defaults(ep.graph_module, keep)
    if torch.ops.aten.convolution.default in set(decompose):  # 3-D convolutions: batch norm first
        from torchtrt_c.dynamo.lowering._decompositions_conv3d import fold_batch_norm_3d
        fold_batch_norm_3d(ep)
    table = get_decompositions(keep=keep, decompose=decompose)
    # Node by node where possible: torch's whole-program re-trace costs as much as capture.
    local = None
    with align_scale_for_dynamic_sizes():   # (upsampling's align_corners scale at a dynamic size 1)
        if _knobs.get("LOCAL_DECOMPOSITIONS") != "0":
            local = decompose_locally(ep, table)
        ep = local if local is not None else ep.run_decompositions(table)
    fold_weight_computations(ep)
    unflatten_row_regions(ep.graph_module)
    infer_single_symbolic_size(ep.graph_module)
    localize_sym_sizes(ep.graph_module)
    return ep


_VIEWS = (torch.ops.aten.view.default, torch.ops.aten.reshape.default,
          torch.ops.aten._unsafe_view.default)


def _multi_symbol(d) -> bool:
    return isinstance(d, torch.SymInt) and len(d.node.expr.free_symbols) > 1


_A = torch.ops.aten
# Ops that treat each row of a 2-D [rows, N] tensor alone and keep it 2-D with the same rows:
# on x[..., N] they compute the same per row. Binary ones take other operands that do not
# depend on the row (rank <= 1, or one row).
_ROW_UNARY = {getattr(_A, n).default for n in (
    "relu", "gelu", "silu", "sigmoid", "tanh", "clone", "_to_copy", "alias", "neg", "exp", "erf",
    "hardtanh", "leaky_relu", "elu", "softplus", "mish", "hardswish", "hardsigmoid", "abs", "sqrt",
    "rsqrt", "square")} | {_A.pow.Tensor_Scalar, _A.mul.Scalar, _A.add.Scalar, _A.sub.Scalar, _A.div.Scalar}
_ROW_BINARY = {_A.mul.Tensor, _A.add.Tensor, _A.sub.Tensor, _A.div.Tensor, _A.maximum.default,
               _A.minimum.default}
_ROW_NORMS = {_A.layer_norm.default, _A.rms_norm.default}
_ROW_SOFTMAX = {_A._softmax.default, _A._log_softmax.default, _A.softmax.int, _A.log_softmax.int}


def _row_region(flat, rows):
    """The nodes fed by `flat` ([rows, K]) that compute row by row, and the views that end the
    region (back to the unflattened shape); None when some use of the region is anything else."""
    region, exits, work = {flat}, [], [flat]
    while work:   # everything downstream of flat, up to the views that end it
        n = work.pop()
        for u in n.users:
            if u in region or u in exits:
                continue
            if u.op == "call_function" and u.target in _VIEWS and u.args[0] is n:
                exits.append(u)
                continue
            region.add(u)
            work.append(u)

    def row_free(a):   # broadcasts the same against [rows, N] and [..., N]
        if not isinstance(a, torch.fx.Node):
            return True
        v = a.meta.get("val")
        return (a not in region and isinstance(v, torch.Tensor)
                and (v.dim() <= 1 or (v.dim() == 2 and v.shape[0] == 1)))

    for u in region - {flat}:
        v = u.meta.get("val")
        if u.op != "call_function" or not isinstance(v, torch.Tensor) or v.dim() != 2:
            return None
        if not (v.shape[0] is rows or v.shape[0] == rows):
            return None
        t, a = u.target, u.args
        if t in _ROW_UNARY:
            ok = a[0] in region and all(row_free(x) for x in a[1:])
        elif t in _ROW_BINARY:
            ok = all(x in region or row_free(x) for x in a)
        elif t is _A.linear.default or t is _A.mm.default:
            ok = a[0] in region and all(x not in region for x in a[1:])
        elif t is _A.addmm.default:
            ok = a[1] in region and row_free(a[0]) and a[2] not in region
        elif t in _ROW_NORMS:
            ok = a[0] in region and all(x not in region for x in a[1:])
        elif t in _ROW_SOFTMAX:
            ok = a[0] in region and a[1] in (-1, 1)
        else:
            ok = False
        if not ok or (u.kwargs and t not in (_A._to_copy.default, _A.clone.default)):
            return None
    return region, exits


def unflatten_row_regions(gm: torch.fx.GraphModule) -> int:
    """x[B, S, K] -> view [B*S, K] -> row-wise ops -> view [B, S, N] becomes the same ops on the
    3-D x: GPT-2's Conv1D (addmm on the flattened x), OPT's feed-forward block (view(-1, K),
    layer norm, fc1, relu, fc2, + residual, view back), any Linear written with x.view(-1, K).
    mm/addmm become matmul (+ bias), softmax over the rows' dim stays on the last dim. With
    batch and sequence both dynamic, B*S is a product of two symbols, which our shapes (affine
    in one symbol) cannot hold; the 3-D form never builds it. Only done where the flattened dim
    is such a product and every use of the region is row-wise or a view (a view back to [B, S, N]
    goes; another, [B, S, H, D] say, reshapes the 3-D result). Returns how many regions were
    rewritten."""
    changed = 0
    g = gm.graph
    for flat in list(g.nodes):
        if flat._erased or flat.op != "call_function" or flat.target not in _VIEWS:
            continue
        x = flat.args[0]
        xv, fv = x.meta.get("val"), flat.meta.get("val")
        if not isinstance(xv, torch.Tensor) or not isinstance(fv, torch.Tensor):
            continue
        if xv.dim() < 3 or fv.dim() != 2 or not _multi_symbol(fv.shape[0]):
            continue
        if fv.shape[1] is not xv.shape[-1] and fv.shape[1] != xv.shape[-1]:
            continue
        found = _row_region(flat, fv.shape[0])
        if found is None:
            continue
        region, exits = found
        lead = list(xv.shape[:-1])
        if not exits or not all(isinstance(e.meta.get("val"), torch.Tensor) for e in exits):
            continue
        mode = getattr(xv, "fake_mode", None)
        if mode is None:
            continue
        flat.replace_all_uses_with(x)
        for n in [n for n in g.nodes if n in region and n is not flat]:
            v = n.meta["val"]
            with mode:
                new_val = v.new_empty(lead + [v.shape[1]])
            t = n.target
            if t in (_A.mm.default, _A.addmm.default):
                inp, w = (n.args[0], n.args[1]) if t is _A.mm.default else (n.args[1], n.args[2])
                with g.inserting_before(n):
                    new = g.call_function(_A.matmul.default, (inp, w))
                    new.meta.update({k: v_ for k, v_ in n.meta.items() if k != "val"})
                    new.meta["val"] = new_val
                    if t is _A.addmm.default:
                        new = g.call_function(_A.add.Tensor, (new, n.args[0]))
                        new.meta.update({k: v_ for k, v_ in n.meta.items() if k != "val"})
                        new.meta["val"] = new_val
                n.replace_all_uses_with(new)
                g.erase_node(n)
                continue
            if t in _ROW_SOFTMAX:
                n.args = (n.args[0], -1) + tuple(n.args[2:])
            n.meta["val"] = new_val
            n.meta.pop("tensor_meta", None)
        for e in exits:   # a view back to the unflattened shape goes; any other reshapes the 3-D result
            src = e.args[0]
            if list(e.meta["val"].shape) == list(src.meta["val"].shape):
                e.replace_all_uses_with(src)
                g.erase_node(e)
            else:
                e.target = _A.reshape.default
        g.erase_node(flat)
        changed += 1
    if changed:
        g.lint()
        gm.recompile()
        log.debug("unflatten_row_regions: %d row-wise region(s) kept unflattened", changed)
    return changed


# Ops that only re-lay out a weight: the C core reads these without a copy (a transposed
# weight into a GEMM, ...), so a cone of nothing else is left alone.
_LAYOUT_OPS = {getattr(torch.ops.aten, n).default for n in (
    "view", "reshape", "_unsafe_view", "permute", "t", "expand", "unsqueeze", "squeeze", "clone",
    "alias", "contiguous")} | {torch.ops.aten.transpose.int, torch.ops.aten.slice.Tensor,
                               torch.ops.aten.select.int, torch.ops.aten.squeeze.dim}


def fold_weight_computations(ep: torch.export.ExportedProgram) -> int:
    """Computations on weights alone (weight_norm's g * v / ||v||, a parametrization, a scale
    applied to a buffer) run once here and become constants of the program, as Torch-TensorRT's
    constant folding does: the engine then sees a constant weight (a convolution needs one) and
    no op that only ever computes the same value. Only cones with real compute are folded,
    and only where the result is no larger than the weights it is computed from. Returns how
    many values were folded."""
    from torch.export.graph_signature import InputKind, InputSpec, TensorArgument
    sig = ep.graph_signature
    g = ep.graph_module.graph
    kinds = (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR)
    values = {}
    for spec in sig.input_specs:
        if spec.kind in kinds and isinstance(spec.arg, TensorArgument):
            t = ep.state_dict.get(spec.target) if spec.kind != InputKind.CONSTANT_TENSOR else None
            if t is None:
                t = ep.constants.get(spec.target)
            if isinstance(t, torch.Tensor):
                values[spec.arg.name] = t
    const = {}      # node -> real tensor (computed lazily)
    cone_cost = {}  # node -> (has compute, weight elements it reads)
    for n in g.nodes:
        if n.op == "placeholder" and n.name in values:
            const[n] = None
            cone_cost[n] = (False, values[n.name].numel())
            continue
        # ops of several results count too, with the getitems that pick one (weight
        # standardisation's var_mean: NF-Nets, timm's StdConv2d)
        item = n.op == "call_function" and n.target is operator.getitem
        if n.op != "call_function" or not (item or isinstance(n.target, torch._ops.OpOverload)):
            continue
        if not item and (torch.Tag.nondeterministic_seeded in n.target.tags or n.target._schema.is_mutable):
            continue
        ins = [a for a in n.all_input_nodes]
        if not ins or not all(a in const for a in ins):
            continue
        val = n.meta.get("val")
        several = (not item and isinstance(val, (tuple, list)) and len(val) > 0
                   and all(isinstance(v, torch.Tensor) for v in val))
        if not isinstance(val, torch.Tensor) and not several:
            continue
        const[n] = None
        compute = (not item and n.target not in _LAYOUT_OPS) or any(cone_cost[a][0] for a in ins)
        cone_cost[n] = (compute, sum(cone_cost[a][1] for a in ins))
    # torch.export's dtype/device checks on weight values (torchao's Float8Tensor leaves them
    # on its float8 data) hold by construction: they go, or they would keep the raw weights
    checks = [n for n in g.nodes if n.op == "call_function" and n.target is _A._assert_tensor_metadata.default
              and not n.users and n.args and n.args[0] in const]
    for n in checks:
        g.erase_node(n)
    def conv_weight(n):
        # a weight only re-laid-out (the 3-D convolution's 5-D weight read as a 2-D one,
        # _decompositions_conv3d.py) folds too: the core would fold it into an unnamed constant,
        # which the engine cache key then hashes as printed text (minutes for r3d_18)
        return any(u.op == "call_function" and u.target is _A.convolution.default and len(u.args) > 1
                   and u.args[1] is n for u in n.users)
    frontier = [n for n in const if n.op == "call_function"
                and isinstance(n.meta["val"], torch.Tensor)
                and ((cone_cost[n][0] and n.meta["val"].numel() <= cone_cost[n][1]) or conv_weight(n))
                and any(u not in const for u in n.users)]
    if not frontier:
        if checks:
            ep.graph_module.recompile()
        return 0

    def value(n):
        if n.op == "placeholder":
            return values[n.name]
        if const[n] is None:
            args = torch.fx.node.map_arg(n.args, value)
            kwargs = torch.fx.node.map_arg(n.kwargs, value)
            with torch.no_grad():
                const[n] = n.target(*args, **kwargs)
        return const[n]

    first_user = next(i for i, s_ in enumerate(sig.input_specs) if s_.kind == InputKind.USER_INPUT) \
        if any(s_.kind == InputKind.USER_INPUT for s_ in sig.input_specs) else len(sig.input_specs)
    placeholders = [n for n in g.nodes if n.op == "placeholder"]
    anchor = placeholders[first_user - 1] if first_user > 0 else None
    folded = 0
    read = {n for n in placeholders if n.name in values and n.users}
    # every value first: a frontier node may read another one (DETR's position embedding feeds
    # both a folded add and a folded product), which is a placeholder once that one is folded
    computed = [(n, value(n)) for n in frontier]
    for n, t in computed:
        if not isinstance(t, torch.Tensor):
            continue
        name = f"_ttc_folded_{folded}_{n.name}"
        with (g.inserting_after(anchor) if anchor is not None else g.inserting_before(placeholders[0])):
            ph = g.placeholder(name)
        ph.meta.update({k: v for k, v in n.meta.items() if k in ("val", "tensor_meta")})
        ep.constants[name] = t.detach().clone().contiguous()
        sig.input_specs.insert(first_user, InputSpec(kind=InputKind.CONSTANT_TENSOR,
                                                     arg=TensorArgument(name=ph.name), target=name,
                                                     persistent=None))
        first_user += 1
        anchor = ph
        n.replace_all_uses_with(ph)
        folded += 1
    g.eliminate_dead_code()
    # weights only the folded computations read leave the program (the importer would copy
    # them; a tensor subclass, such as torchao's Float8Tensor, it cannot read at all)
    gone = {n.name for n in read if not n.users}
    if gone:
        for n in [n for n in placeholders if n.name in gone]:
            g.erase_node(n)
        sig.input_specs[:] = [s_ for s_ in sig.input_specs if getattr(s_.arg, "name", None) not in gone]
    ep.graph_module.recompile()
    log.debug("fold_weight_computations: %d value(s) folded, %d weight(s) left unread", folded, len(gone))
    return folded
