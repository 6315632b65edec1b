"""Import: an exported (aten) FX graph -> a C graph (torchtrt_c._C.Graph).

    imp = import_program(ep, arg_inputs, kwarg_inputs, settings)
    imp.graph            # _C.Graph; user inputs first, weights as tensor constants
    imp.input_names      # C value names of the user inputs, in call order
    imp.opaque           # node name -> how to rebuild an op the C core does not know

Rules (they match the C IR's conventions, see csrc/ir/ir.h):
- user inputs -> g.add_input with dims from meta["val"]; each sympy symbol becomes "sK" with
  the range of the Input it came from (dims are affine in one symbol: "3*s0", "s0+1");
- parameters, buffers and lifted constants -> g.add_tensor_constant over a numpy view of the
  CPU tensor (no copy);
- call_function(OpOverload) -> g.add_node with inputs in schema order (kwarg-only included,
  defaults filled): literals -> prim.Constant, lists holding graph values -> prim.ListConstruct;
  dtypes/devices/layouts/memory formats are str constants ("float32", "cpu", "strided");
- ops returning a tuple/list -> one node with several outputs; getitem users map to them;
- other callables (operator.mul on SymInts, ...) -> opaque nodes ("py.<name>") whose rebuild
  recipe is kept in `opaque`;
- the backend-specific attention variants (_scaled_dot_product_flash_attention[_for_cpu],
  _efficient_, _cudnn_) become aten.scaled_dot_product_attention.default when only their
  output 0 is used; otherwise they import as they are and fall back to torch;
- an op whose schema has another arity than the C op table's imports as an opaque node
  (the C core gives the reason; it falls back to torch), never as an error.
"""
from __future__ import annotations

import logging
import operator
import functools
from dataclasses import dataclass, field

import sympy
import torch
import torch.fx

from torchtrt_c._input import CONSTANT_TYPES, Input, input_leaves
from torchtrt_c.dynamo.lowering._decompositions import MAX_RANK
from torchtrt_c.runtime._execute import dtype_name

log = logging.getLogger("torchtrt_c")

_IN = "__ttc_input__"  # placeholder tag in opaque recipes


class NonAffineDim(NotImplementedError):
    """A dim our IR cannot hold (dims are affine in one symbol): `expr` as torch prints it, and
    whether it combines several symbols (else it is a non-affine function of one)."""

    def __init__(self, expr, msg: str, several_symbols: bool):
        super().__init__(msg)
        self.expr = str(expr)
        self.several_symbols = several_symbols


@dataclass
class Opaque:
    target: object
    args: tuple
    kwargs: dict


@dataclass
class ImportResult:
    graph: object
    input_names: list
    output_names: list
    symbols: dict                       # "s0" -> (min, opt, max)
    weights: dict                       # C value name -> torch.Tensor (the original)
    opaque: dict = field(default_factory=dict)
    fx_to_c: dict = field(default_factory=dict)   # fx node name -> C value name(s)
    non_affine: dict = field(default_factory=dict)   # fx node name -> NonAffineDim: stays in torch
    torch_only: dict = field(default_factory=dict)   # fx node name -> why its output stays in torch


def _literal(v):
    if isinstance(v, torch.dtype):
        return dtype_name(v) if v in _dtype_ok() else str(v).replace("torch.", "")
    if isinstance(v, (torch.device,)):
        return str(v)
    if isinstance(v, (torch.layout, torch.memory_format)):
        return str(v).replace("torch.", "")
    return v


def _dtype_ok():
    from torchtrt_c.runtime._execute import _DTYPE_NAMES
    return _DTYPE_NAMES


class _Importer:
    def __init__(self, ep, arg_inputs, kwarg_inputs, settings):
        from torchtrt_c import _C
        self.ep = ep
        self.gm = ep if isinstance(ep, torch.fx.GraphModule) else None
        self.g = _C.Graph()
        self.settings = settings
        self.arg_inputs = list(arg_inputs)
        self.kwarg_inputs = dict(kwarg_inputs)
        self.env = {}            # fx node -> C value name, or list of names (multi-output)
        self.sym_names = {}      # sympy.Symbol -> "sK"
        self.symbols = {}
        self.weights = {}
        self.opaque = {}
        self.n_const = 0
        self.n_lists = 0
        self.non_affine = {}     # fx node name -> NonAffineDim (its output's dims cannot be ours)
        self.torch_only = {}     # fx node name -> why (an output of more dims than engines hold)
        self.cur = "input"
        # truncate_double: every float64 in the graph becomes float32 (the stitched module
        # casts float64 inputs on entry).
        self.truncate = bool(settings is not None and settings.truncate_double)

    # ---- types ----
    def _dim(self, d):
        if isinstance(d, int):
            return d
        if isinstance(d, torch.SymInt):
            expr = d.node.expr
            if isinstance(expr, sympy.Integer) or getattr(expr, "is_number", False):
                return int(expr)
            return self._expr(expr)
        raise TypeError(f"unexpected dim {d!r}")

    def _expr(self, expr):
        syms = list(expr.free_symbols)
        if len(syms) != 1:
            raise NonAffineDim(expr, f"dim {expr} depends on {len(syms)} symbols; torchtrt_c dims "
                                     f"are affine in one symbol", several_symbols=True)
        s = syms[0]
        name = self._symbol(s)
        e = sympy.expand(expr)
        mul, add = e.coeff(s, 1), e.coeff(s, 0)
        if not (mul.is_Integer and add.is_Integer) or sympy.expand(mul * s + add - e) != 0:
            raise NonAffineDim(expr, f"dim {expr} is not affine in {s}", several_symbols=False)
        mul, add = int(mul), int(add)
        out = name if mul == 1 else f"{mul}*{name}"
        if add:
            out += f"+{add}" if add > 0 else f"-{-add}"
        return out

    def _symbol(self, s):
        if s in self.sym_names:
            return self.sym_names[s]
        name = f"s{len(self.sym_names)}"
        lo, opt, hi = self._range_of(s)
        self.g.add_symbol(name, lo, opt, hi)
        self.sym_names[s] = name
        self.symbols[name] = (lo, opt, hi)
        return name

    def _range_of(self, s):
        # The user's Input range wins: export narrows [1, N] to [2, N] (it never traces 0/1).
        for node, inp in self._user_inputs():
            val = node.meta.get("val")
            if not isinstance(inp, Input) or not isinstance(val, torch.Tensor):
                continue
            for i, d in enumerate(val.shape):
                if isinstance(d, torch.SymInt) and d.node.expr == s:
                    return inp.min_shape[i], inp.opt_shape[i], inp.max_shape[i]
        vr = self.ep.range_constraints.get(s) if self.gm is None else None
        # sympy Integers; torch's int_oo (no bound) claims is_finite but is no Integer
        lo = int(vr.lower) if vr is not None and vr.lower.is_Integer else 0
        hi = int(vr.upper) if vr is not None and vr.upper.is_Integer else 2**31 - 1
        return lo, max(lo, min(hi, 1)), hi

    def _type(self, val):
        if isinstance(val, torch.Tensor):
            dt = torch.float32 if self.truncate and val.dtype == torch.float64 else val.dtype
            return ("tensor", dtype_name(dt), [self._dim(d) for d in val.shape])
        if isinstance(val, (bool,)) or isinstance(val, torch.SymBool):
            return "bool"
        if isinstance(val, (int, torch.SymInt)):
            return "int"
        if isinstance(val, (float, torch.SymFloat)):
            return "float"
        if val is None:
            return "none"
        if isinstance(val, str):
            return "str"
        return "any"

    # ---- inputs ----
    def _user_inputs(self):
        if not hasattr(self, "_ui") and self.gm is not None:
            ins = input_leaves(self.arg_inputs, self.kwarg_inputs)
            nodes = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
            self._ui = [(n, ins[i] if i < len(ins) else None) for i, n in enumerate(nodes)]
        if not hasattr(self, "_ui"):
            specs = self.ep.graph_signature.input_specs
            user = [s for s in specs if s.kind == torch.export.graph_signature.InputKind.USER_INPUT]
            nodes = {n.name: n for n in self.ep.graph.nodes if n.op == "placeholder"}
            ins = input_leaves(self.arg_inputs, self.kwarg_inputs)
            self._ui = [(nodes[s.arg.name], ins[i] if i < len(ins) else None) for i, s in enumerate(user)]
        return self._ui

    def _import_placeholders(self):
        if self.gm is not None:
            self.input_names = []
            for node, _ in self._user_inputs():
                self._add_user_input(node)
            return
        sig = self.ep.graph_signature
        IK = torch.export.graph_signature.InputKind
        nodes = {n.name: n for n in self.ep.graph.nodes if n.op == "placeholder"}
        self.input_names = []
        for spec in sig.input_specs:
            node = nodes[spec.arg.name]
            if spec.kind == IK.USER_INPUT:
                self._add_user_input(node)
            elif spec.kind in (IK.PARAMETER, IK.BUFFER, IK.CONSTANT_TENSOR):
                if spec.kind == IK.CONSTANT_TENSOR or spec.target not in self.ep.state_dict:
                    t = self.ep.constants[spec.target]
                else:
                    t = self.ep.state_dict[spec.target]
                self.env[node] = self._tensor_constant(node.name, t)
            else:
                raise NotImplementedError(f"input {node.name!r} of kind {spec.kind.name} is not supported")

    def _add_user_input(self, node):
        val = node.meta.get("val")
        if isinstance(val, CONSTANT_TYPES) and not node.users:
            # a bool/int/float/str/None torch.export fixed at capture (nothing reads it): an
            # input of its type that no segment takes, so that the stitched module keeps the
            # program's calling convention (the module checks the value: _compiled_module.py)
            self.env[node] = self.g.add_input(node.name, self._type(val))
            self.input_names.append(self.env[node])
            return
        if not isinstance(val, torch.Tensor):
            raise NotImplementedError(f"input {node.name!r}: only tensor inputs and constants "
                                      f"(bool/int/float/str/None) are supported, got {type(val).__name__}")
        ty = self._type(val)
        self.env[node] = self.g.add_input(node.name, ty)
        self.input_names.append(self.env[node])

    def _tensor_constant(self, name, t: torch.Tensor):
        from torch.utils._python_dispatch import is_traceable_wrapper_subclass
        if is_traceable_wrapper_subclass(t):
            # a tensor subclass whose computations did not fold into plain weights (capture's
            # fold_weight_computations folds the ones read by weight computations alone)
            raise NotImplementedError(f"constant {name!r} is a {type(t).__module__}.{type(t).__name__} tensor "
                                      f"subclass, which torchtrt_c engines cannot hold")
        t = t.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        if not t.is_contiguous():
            t = t.contiguous()
        dt = t.dtype
        if self.truncate and dt == torch.float64:
            t, dt = t.float(), torch.float32
        try:
            dname = dtype_name(dt)
        except TypeError as e:
            raise TypeError(f"constant {name!r}: {e}") from None
        view = t.view(torch.int16).numpy() if dt == torch.bfloat16 else t.numpy()
        vname = self.g.add_tensor_constant(name, dname, list(t.shape), view)
        self.weights[vname] = t
        return vname

    # ---- nodes ----
    def _const(self, v):
        self.n_const += 1
        if self.truncate and v is torch.float64:
            v = torch.float32
        return self.g.add_constant(_literal(v))

    def _list_name(self):
        # Every node gets a name: segments and extract() refer to nodes by name.
        self.n_lists += 1
        return f"{self.cur}__list{self.n_lists}"

    def _value(self, a, elem_type=None):
        """An FX argument -> a C value name."""
        if isinstance(a, torch.fx.Node):
            v = self.env[a]
            if isinstance(v, list):   # a multi-output node used whole: make the list
                return self.g.add_node("prim.ListConstruct", v, [("list", "tensor")],
                                       name=self._list_name())[0]
            return v
        if isinstance(a, (list, tuple)):
            if any(isinstance(x, torch.fx.Node) for x in a) or elem_type == "tensor":
                items = [self._value(x) for x in a]
                return self.g.add_node("prim.ListConstruct", items, [("list", elem_type or "any")],
                                       name=self._list_name())[0]
            return self._const(list(_literal(x) for x in a))
        if isinstance(a, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            raise NotImplementedError(f"unexpected symbolic literal {a}")
        return self._const(a)

    def _flatten_schema(self, node):
        schema = node.target._schema
        args, kwargs = node.args, node.kwargs
        flat = []
        for i, arg in enumerate(schema.arguments):
            if not arg.kwarg_only and i < len(args):
                v = args[i]
            elif arg.name in kwargs:
                v = kwargs[arg.name]
            elif arg.has_default_value():
                v = arg.default_value
            else:
                raise ValueError(f"node {node.name} ({node.target}): argument {arg.name!r} missing")
            flat.append(self._value(v, _elem_type(arg.type)))
        return flat

    def _sdpa_variant_inputs(self, node):
        """The inputs of aten.scaled_dot_product_attention.default for a backend-specific
        variant (flash/efficient/cudnn/flash_for_cpu) whose attention output is all that is
        used: the variants take the same q, k, v, mask (attn_bias), dropout_p, is_causal and
        scale; their extra outputs (logsumexp, rng state, ...) are dead."""
        schema = node.target._schema
        named = {}
        for i, arg in enumerate(schema.arguments):
            if not arg.kwarg_only and i < len(node.args):
                named[arg.name] = node.args[i]
            elif arg.name in node.kwargs:
                named[arg.name] = node.kwargs[arg.name]
            elif arg.has_default_value():
                named[arg.name] = arg.default_value
        mask = named.get("attn_mask", named.get("attn_bias"))
        vals = [named["query"], named["key"], named["value"], mask, named.get("dropout_p", 0.0),
                named.get("is_causal", False), named.get("scale"), False]
        return [self._value(v) for v in vals]

    def _outputs(self, node):
        tgt = node.target
        if isinstance(tgt, torch._ops.OpOverload) and not tgt._schema.returns:
            return [], False
        val = node.meta.get("val")
        if isinstance(val, (tuple, list)):
            return [self._out_type(v) for v in val], True
        return [self._out_type(val)], False

    def _out_type(self, v):
        # an output dtype engines lack (the uint64 rng state of flash attention), or a dim our
        # shapes cannot hold (B*S where both are dynamic, L // 5), only means the node stays in
        # torch: "any" keeps it out of every converter, and what reads it follows it there
        if isinstance(v, torch.Tensor) and v.dim() > MAX_RANK:
            self.torch_only.setdefault(self.cur, f"a {v.dim()}-D output; engines hold tensors of at most "
                                                 f"{MAX_RANK} dims")
            return "any"
        try:
            return self._type(v)
        except TypeError:
            return "any"
        except NonAffineDim as ex:
            self.non_affine.setdefault(self.cur, ex)
            return "any"

    def _module_stack(self, node):
        stack = node.meta.get("nn_module_stack") or {}
        paths = [p for p, _ in stack.values() if p]
        return paths[-1] if paths else None

    def _call(self, node):
        self.cur = node.name
        tgt = node.target
        if tgt is operator.getitem and isinstance(self.env.get(node.args[0]), list):
            self.env[node] = self.env[node.args[0]][node.args[1]]
            return
        ms = self._module_stack(node)
        if tgt in _sdpa_variants() and _only_output0_used(node):
            ins = self._sdpa_variant_inputs(node)
            vals = node.meta["val"]
            out = self.g.add_node(str(aten_sdpa()), ins, [self._type(vals[0])], name=node.name, module_stack=ms)
            self.env[node] = [out[0]] + [None] * (len(vals) - 1)
            return
        out_types, multi = self._outputs(node)
        if isinstance(tgt, torch._ops.OpOverload):
            ins = self._flatten_schema(node)
            op = str(tgt)
        else:
            if isinstance(tgt, torch._ops.HigherOrderOperator):
                raise NotImplementedError(f"node {node.name}: higher-order op {tgt} (control flow) "
                                          f"is not supported")
            ins, args_t, kwargs_t = [], None, None

            def tag(a):
                if isinstance(a, torch.fx.Node):
                    ins.append(self._value(a))
                    return (_IN, len(ins) - 1)
                return a
            args_t = torch.fx.node.map_aggregate(node.args, tag)
            kwargs_t = torch.fx.node.map_aggregate(node.kwargs, tag)
            self.opaque[node.name] = Opaque(tgt, args_t, kwargs_t)
            op = "py." + getattr(tgt, "__name__", type(tgt).__name__)
        names = [node.name] if len(out_types) == 1 and not multi else None
        outs = self.g.add_node(op, ins, out_types, name=node.name, output_names=names, module_stack=ms)
        self.env[node] = list(outs) if multi else (outs[0] if outs else None)

    def run(self) -> ImportResult:
        self._import_placeholders()
        outputs = []
        graph = self.gm.graph if self.gm is not None else self.ep.graph
        for node in graph.nodes:
            if node.op == "placeholder":
                continue
            if node.op == "get_attr" and self.gm is not None:
                t = _fetch_attr(self.gm, node.target)
                if not isinstance(t, torch.Tensor):
                    raise NotImplementedError(f"node {node.name}: get_attr of a {type(t).__name__}")
                self.env[node] = self._tensor_constant(node.name, t)
                continue
            if node.op == "call_function":
                self._call(node)
            elif node.op == "call_module" and not node.users:
                # ep.module()'s input-guard call (_guards_fn): checks, nothing computed
                log.debug("import: skipping unused call_module %s", node.target)
            elif node.op == "output":
                self.cur = "output"
                for a in node.args[0]:
                    outputs.append(self._value(a))
            else:
                raise NotImplementedError(f"node {node.name}: FX op {node.op!r} is not supported")
        self.g.set_outputs(outputs)
        fx_to_c = {n.name: v for n, v in self.env.items()}
        return ImportResult(self.g, self.input_names, outputs, self.symbols, self.weights,
                            self.opaque, fx_to_c, self.non_affine, self.torch_only)


def aten_sdpa():
    return torch.ops.aten.scaled_dot_product_attention.default


@functools.lru_cache(maxsize=None)
def _sdpa_variants():
    """The backend-specific attention ops export or aot produce instead of the composite
    scaled_dot_product_attention (whichever this torch build has)."""
    a = torch.ops.aten
    names = ["_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
             "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_flash_attention_for_cpu"]
    return frozenset(getattr(a, n).default for n in names if hasattr(a, n))


def _only_output0_used(node) -> bool:
    """Every user reads output 0 through getitem (the attention, not logsumexp & co.);
    export leaves dead getitems of the other outputs, which do not count."""
    return all(u.op == "call_function" and u.target is operator.getitem and (u.args[1] == 0 or not u.users)
               for u in node.users)


def _elem_type(t):
    """Element type of a list-typed schema argument ("tensor", "int", ...), None otherwise."""
    s = str(t)
    if s.startswith("Optional[") and s.endswith("]"):
        s = s[len("Optional["):-1]
    if not s.startswith("List["):
        return None
    inner = s[len("List["):-1]
    return {"Tensor": "tensor", "int": "int", "SymInt": "int", "float": "float",
            "bool": "bool"}.get(inner, "any")


def _fetch_attr(gm, target: str):
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def import_program(ep, arg_inputs, kwarg_inputs, settings=None) -> ImportResult:
    return _Importer(ep, arg_inputs, kwarg_inputs, settings).run()
