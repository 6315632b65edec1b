"""Decompositions applied node by node, without torch's whole-program re-trace (issue 15).

ExportedProgram.run_decompositions re-traces the whole program through AOT autograd
(functionalization, fake-tensor dispatch of every node, twice) even when only a handful of
nodes need decomposing: on the CPU it cost as much as torch.export itself (BERT-base 2-3 s).
Here the exported graph is rewritten in place instead: only the nodes that the re-trace would
change are traced (each on its own, over its fake inputs) and replaced by their pieces, which
are expanded again until none is left that needs it. What "needs it" is torch's rule:

- an op in the decomposition table (get_decompositions: torch's default table minus what the
  C core converts whole, plus ours);
- a CompositeImplicitAutograd op that export could not preserve anyway (it aliases, mutates or
  is random: reshape, to, flatten, dropout ...), broken up by its own composite kernel;
- an in-place op (relu_, add_ ...): replaced by its functional form where that is safe (its
  self is a fresh tensor, no view of it exists, every other use comes before the mutation).

Anything else the re-trace would have to handle (dynamic shapes, higher-order ops, mutated
inputs or buffers, an in-place op on a view, a decomposition that creates constants) makes
decompose_locally return None without touching the program, and the caller runs
run_decompositions as before.

    ep2 = decompose_locally(ep, table)     # None: use ep.run_decompositions(table)
"""
from __future__ import annotations

import logging
import operator

import torch
import torch.fx
import torch.utils._pytree as pytree

log = logging.getLogger("torchtrt_c")

aten = torch.ops.aten

# Rounds of re-expansion of pieces that need decomposing again (conv2d -> convolution is one;
# deeper chains are rare). More means something loops: give up and let torch re-trace.
_MAX_DEPTH = 8


class _Unsupported(Exception):
    """This program needs torch's full re-trace (the reason is the message)."""


class _KeepWhole(Exception):
    """The decomposition returned NotImplemented for this node, whose op has no composite
    kernel: the re-trace would record it as it is (the 3-D convolution's decomposition leaves
    2-D convolutions whole), so it stays."""


def _preservable(op) -> bool:
    from torch._export.utils import _check_valid_to_preserve
    return _check_valid_to_preserve(op)


def _is_cia(op) -> bool:
    return torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "CompositeImplicitAutograd")


def _aliases(op) -> bool:
    """The op returns a view of (or the same storage as) an input."""
    return any(r.alias_info is not None for r in op._schema.returns)


class _Rules:
    def __init__(self, table):
        self.table = table
        self._memo = {}

    def decomposition(self, op):
        """The function that breaks op up, or None when op stays whole."""
        if op in self._memo:
            return self._memo[op]
        fn = None
        if op is aten.lift_fresh_copy.default:  # the re-trace's functionalization gives a clone
            fn = aten.clone.default
        elif op in self.table:
            fn = self.table[op]
        elif _is_cia(op) and not _preservable(op):
            fn = op.decompose
        self._memo[op] = fn
        return fn


def _static(val) -> bool:
    if isinstance(val, torch.Tensor):
        return all(isinstance(d, int) for d in val.shape)
    return not isinstance(val, (torch.SymInt, torch.SymFloat, torch.SymBool))


def _check_program(ep, g):
    sig = ep.graph_signature
    if sig.buffers_to_mutate or sig.user_inputs_to_mutate or getattr(sig, "parameters_to_mutate", None):
        raise _Unsupported("the program mutates an input or buffer")
    if ep.range_constraints:
        raise _Unsupported("dynamic shapes")
    for n in g.nodes:
        if n.op in ("get_attr", "call_module", "call_method"):
            raise _Unsupported(f"{n.op} node {n.name}")
        if n.op == "call_function":
            if n.target is operator.getitem:
                continue
            if not isinstance(n.target, torch._ops.OpOverload):
                raise _Unsupported(f"call of {n.target}")
        if n.op != "output" and not _static(n.meta.get("val")):
            raise _Unsupported(f"symbolic value at {n.name}")
        if n.op != "output" and "val" not in n.meta:
            raise _Unsupported(f"no meta['val'] at {n.name}")


def _functional_variant(op):
    """relu_.default -> relu.default (None when torch has no such op)."""
    name = op._schema.name.split("::")[-1]
    if not name.endswith("_") or name.endswith("__"):
        return None
    packet = getattr(aten, name[:-1], None)
    if packet is None:
        return None
    overload = op._overloadname or "default"
    return getattr(packet, overload, None)


def _functionalize(g, node, order):
    """An in-place op whose self is a fresh, unaliased intermediate: the functional op, whose
    result takes self's place for every later use. Raises _Unsupported when that is not safe."""
    op = node.target
    fop = _functional_variant(op)
    args = op._schema.arguments
    if (fop is None or not args or args[0].alias_info is None or not args[0].alias_info.is_write
            or any(a.alias_info is not None and a.alias_info.is_write for a in args[1:])):
        raise _Unsupported(f"in-place {op}")
    x = node.args[0]
    if not isinstance(x, torch.fx.Node) or x.op != "call_function":
        raise _Unsupported(f"{op} on {getattr(x, 'name', x)} (an input)")
    xv, nv = x.meta.get("val"), node.meta.get("val")
    if (torch.Tag.inplace_view in op.tags or not isinstance(xv, torch.Tensor) or not isinstance(nv, torch.Tensor)
            or xv.shape != nv.shape or xv.dtype != nv.dtype):
        # resize_, transpose_ ...: the re-trace rewrites these through as_strided
        raise _Unsupported(f"{op} changes its input's metadata")
    src = x.args[0] if x.target is operator.getitem else x
    if src.target is operator.getitem or not isinstance(src.target, torch._ops.OpOverload) or _aliases(src.target):
        raise _Unsupported(f"{op} on a view ({x.name})")
    later = []
    for u in x.users:
        if u is node:
            continue
        if u.op == "call_function" and isinstance(u.target, torch._ops.OpOverload) and _aliases(u.target):
            raise _Unsupported(f"{op} on {x.name}, which has a view ({u.name})")
        if order.get(u, -1) > order[node]:
            later.append(u)
    with g.inserting_before(node):
        new = g.call_function(fop, node.args, node.kwargs)
    new.meta.update(node.meta)
    order[new] = order[node]
    for u in later:
        u.replace_input_with(x, new)
    node.replace_all_uses_with(new)
    g.erase_node(node)
    return new


def _composite_kernel(fn) -> bool:
    """fn runs an op's C++ CompositeImplicitAutograd kernel (op.decompose, or the entry torch's
    default table has for such an op)."""
    if getattr(fn, "__name__", "") == "decompose":
        return True
    return getattr(getattr(fn, "func", None), "__name__", "") == "_special_op_to_decompose_cia"


def _piece_key(node, flat, where):
    """Nodes with the same op, the same non-tensor arguments and inputs of the same metadata
    decompose into the same pieces: one trace serves them all (ResNet-50's 53 convolutions
    have a few dozen distinct shapes). None when an argument cannot be part of a key."""
    parts = [node.target]
    for i, a in enumerate(flat):
        if i in where:
            v = a.meta["val"]
            parts.append((tuple(v.shape), v.stride(), v.dtype, str(v.device), v.requires_grad))
        elif a is None or isinstance(a, (bool, int, float, str, torch.dtype, torch.device, torch.layout,
                                         torch.memory_format)):
            parts.append((type(a), a))
        else:
            return None
    return tuple(parts)


class _NeedTrace(Exception):
    """The recorder met something only make_fx handles (a tensor it did not see made)."""


class _Tape:
    """A piece recorded op by op: a Graph whose placeholders are the piece's tensor inputs,
    each op a node with its fake result as meta['val']. Tensors are known by identity."""

    def __init__(self, vals):
        self.g = torch.fx.Graph()
        self.known = {}  # id(tensor) -> (node, tensor): the tensor is kept alive with its id
        for i, v in enumerate(vals):
            ph = self.g.placeholder(f"in{i}")
            ph.meta["val"] = v
            self.known[id(v)] = (ph, v)

    def node_of(self, a):
        if isinstance(a, torch.Tensor):
            hit = self.known.get(id(a))
            if hit is None or hit[1] is not a:
                raise _NeedTrace("an untracked tensor")
            return hit[0]
        if isinstance(a, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            raise _NeedTrace("a symbolic value")
        return a

    def record(self, func, args, kwargs, out):
        if not any(isinstance(o, torch.Tensor) for o in pytree.tree_leaves(out)):
            # a metadata query (prim.device, sym_size on static shapes): its value is a constant
            return out
        node = self.g.call_function(func, pytree.tree_map(self.node_of, tuple(args)),
                                    pytree.tree_map(self.node_of, dict(kwargs)))
        node.meta["val"] = out
        if isinstance(out, torch.Tensor):
            self.known[id(out)] = (node, out)
        elif isinstance(out, (tuple, list)):
            for i, o in enumerate(out):
                if isinstance(o, torch.Tensor):
                    gi = self.g.call_function(operator.getitem, (node, i))
                    gi.meta["val"] = o
                    self.known[id(o)] = (gi, o)
        elif out is not None:
            raise _NeedTrace(f"{func} returns {type(out).__name__}")
        return out

    def finish(self, out):
        self.g.output(pytree.tree_map(self.node_of, out))
        return self.g


def _record_piece(piece, vals, post):
    """piece(*vals) recorded with a torch-function mode (a Python decomposition: every ATen op
    it calls is one node, composite or not) or a dispatch mode (a C++ composite kernel: the
    ops it dispatches). A fraction of make_fx's cost (no tracer, proxies, GraphModule)."""
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode
    tape = _Tape(vals)

    # No exception may leave a mode's handler: under a C++ kernel it would abort the process.
    # A problem is noted and the recording given up after the piece has run.
    failed = []

    def note(func, args, kwargs, out):
        if not failed:
            try:
                tape.record(func, args, kwargs, out)
            except _NeedTrace as ex:
                failed.append(str(ex))
        return out

    class Dispatch(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            return note(func, args, kwargs, func(*args, **kwargs))

    class Function(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            if isinstance(func, torch._ops.OpOverload):
                return note(func, args, kwargs, out)
            for o in pytree.tree_leaves(out):  # x.shape, x.dim(): fine; a tensor made unseen: not
                if isinstance(o, torch.Tensor) and not failed:
                    try:
                        tape.node_of(o)
                    except _NeedTrace as ex:
                        failed.append(f"{func} makes a tensor")
            return out

    with (Dispatch() if post else Function()):
        out = piece(*vals)
    if failed:
        raise _NeedTrace(failed[0])
    return tape.finish(out)


def _trace_piece(fn, node, fake_mode, cache):
    """fn applied to node's inputs, traced into a small Graph whose placeholders are node's
    tensor inputs in flattened order. A Python decomposition is traced pre-dispatch, so that
    the composite ops it calls stay whole (and are looked at again); a C++ composite kernel
    only post-dispatch (pre-dispatch records the op itself again). Recorded directly where
    possible, else by make_fx."""
    from torch.fx.experimental.proxy_tensor import make_fx
    flat, spec = pytree.tree_flatten((node.args, node.kwargs))
    where = [i for i, a in enumerate(flat) if isinstance(a, torch.fx.Node)]
    vals = [flat[i].meta["val"] for i in where]
    if not all(isinstance(v, torch.Tensor) for v in vals):
        raise _Unsupported(f"non-tensor node input of {node.name}")
    key = _piece_key(node, flat, set(where))
    if key is not None and key in cache:
        return cache[key], [flat[i] for i in where]
    # Values of different nodes may be one fake tensor (a cached piece's values serve each of
    # its uses); tracers know tensors by identity, so each input gets an object of its own.
    owner = {}
    for j, v in enumerate(vals):
        if owner.setdefault(id(v), flat[where[j]]) is not flat[where[j]]:
            with fake_mode:
                vals[j] = v.detach()
            owner[id(vals[j])] = flat[where[j]]

    def piece(*ts):
        fa = list(flat)
        for i, t in zip(where, ts):
            fa[i] = t
        a, k = pytree.tree_unflatten(fa, spec)
        out = fn(*a, **k)
        if out is NotImplemented:
            if not _is_cia(node.target):
                raise _KeepWhole()
            raise _Unsupported(f"no decomposition of {node.target} for these arguments")
        return out

    post = _composite_kernel(fn)
    with fake_mode:
        try:
            graph = _record_piece(piece, vals, post)
        except _NeedTrace as ex:
            log.debug("decompositions: %s traced by make_fx (%s)", node.target, ex)
            graph = make_fx(piece, pre_dispatch=not post)(*vals).graph
    if key is not None:
        cache[key] = graph
    return graph, [flat[i] for i in where]


def _splice(g, node, piece, inputs, depth, depths):
    """Replaces node by the piece's nodes (inserted before it). Returns the new call nodes."""
    env = {}
    phs = [n for n in piece.nodes if n.op == "placeholder"]
    for ph, inp in zip(phs, inputs):
        env[ph] = inp
    keep_meta = {k: v for k, v in node.meta.items() if k not in ("val", "tensor_meta")}
    created = []
    out = None
    with g.inserting_before(node):
        for n in piece.nodes:
            if n.op == "placeholder":
                continue
            if n.op == "output":
                out = torch.fx.node.map_arg(n.args[0], lambda a: env[a])
                continue
            if n.op != "call_function" or not (n.target is operator.getitem
                                               or isinstance(n.target, torch._ops.OpOverload)):
                raise _Unsupported(f"the decomposition of {node.target} makes a {n.op} {n.target}")
            if n.target is not operator.getitem and n.target._schema.is_mutable:
                raise _Unsupported(f"the decomposition of {node.target} makes an in-place {n.target}")
            new = g.call_function(n.target, torch.fx.node.map_arg(n.args, lambda a: env[a]),
                                  torch.fx.node.map_arg(n.kwargs, lambda a: env[a]))
            new.meta.update(keep_meta)
            if "val" in n.meta:
                new.meta["val"] = n.meta["val"]
            env[n] = new
            depths[new] = depth
            created.append(new)
    # A result that is one of node's inputs (dropout in eval, to() of the same dtype) takes
    # node's place as it is, except where that would make an input of the program (or one of
    # its outputs) an output again: there a clone, as the re-trace gives.
    inset = set(inputs) if any(u.op == "output" for u in node.users) else set()

    def fresh(v):
        if (isinstance(v, torch.fx.Node) and v in inset
                and (v.op == "placeholder" or any(u.op == "output" for u in v.users))):
            with g.inserting_before(node):
                c = g.call_function(aten.clone.default, (v,))
            c.meta.update(keep_meta)
            c.meta["val"] = v.meta["val"]
            created.append(c)
            depths[c] = depth
            return c
        return v
    out = pytree.tree_map(fresh, out)
    if isinstance(node.meta.get("val"), (tuple, list)):
        outs = list(out) if isinstance(out, (tuple, list)) else None
        for u in list(node.users):
            if u.target is not operator.getitem or outs is None:
                raise _Unsupported(f"use of the multi-output {node.name}")
            u.replace_all_uses_with(outs[u.args[1]])
            g.erase_node(u)
    else:
        if not isinstance(out, torch.fx.Node):
            if isinstance(out, (tuple, list)) and len(out) == 1:
                out = out[0]
            else:
                raise _Unsupported(f"the decomposition of {node.target} returns {type(out).__name__}")
        node.replace_all_uses_with(out)
    g.erase_node(node)
    return created


def _fake_mode(g):
    from torch._guards import detect_fake_mode
    vals = [n.meta.get("val") for n in g.nodes if n.op == "placeholder"]
    mode = detect_fake_mode([v for v in vals if isinstance(v, torch.Tensor)])
    if mode is None:
        raise _Unsupported("no fake mode on the placeholders")
    return mode


_DROPOUTS_ = ("aten::dropout_", "aten::feature_dropout_", "aten::alpha_dropout_",
              "aten::feature_alpha_dropout_")


def _identity_in_eval(n) -> bool:
    name = n.target.name()
    if name == "aten::detach_":
        return True
    if name in _DROPOUTS_:
        train = n.args[2] if len(n.args) > 2 else n.kwargs.get("train")
        return train is False
    return False


def _inline_grad_mode_wrappers(gm, g) -> int:
    """wrap_with_set_grad_enabled(enabled, submod, *xs) (a torch.no_grad() block in forward,
    Llama's rotary embedding): its body inlined; grad mode means nothing to an inference
    graph."""
    hop = getattr(torch.ops.higher_order, "wrap_with_set_grad_enabled", None)
    done = 0
    for n in list(g.nodes):
        if hop is None or n.op != "call_function" or n.target is not hop:
            continue
        sub_node = n.args[1]
        if not isinstance(sub_node, torch.fx.Node) or sub_node.op != "get_attr":
            raise _Unsupported(f"{n.name}: no submodule")
        sub = getattr(gm, sub_node.target)
        env = {}
        phs = [p for p in sub.graph.nodes if p.op == "placeholder"]
        if len(phs) != len(n.args) - 2:
            raise _Unsupported(f"{n.name}: operands and placeholders differ")
        for p, a in zip(phs, n.args[2:]):
            env[p] = a
        out = None
        with g.inserting_before(n):
            for sn in sub.graph.nodes:
                if sn.op == "placeholder":
                    continue
                if sn.op == "output":
                    out = torch.fx.node.map_arg(sn.args[0], lambda a: env[a])
                    continue
                if sn.op != "call_function":
                    raise _Unsupported(f"{n.name}: a {sn.op} in its body")
                env[sn] = g.node_copy(sn, lambda a: env[a])
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        for u in list(n.users):
            if u.target is not operator.getitem:
                raise _Unsupported(f"{n.name}: used whole")
            u.replace_all_uses_with(outs[u.args[1]])
            g.erase_node(u)
        g.erase_node(n)
        if not sub_node.users:
            g.erase_node(sub_node)
        done += 1
    return done


def _rewrite(g, rules, fake_mode) -> int:
    order = {n: i for i, n in enumerate(g.nodes)}
    for n in list(g.nodes):
        if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload) and n.target._schema.is_mutable:
            if _identity_in_eval(n):  # detach_, dropout_(train=False): no mutation at all
                n.replace_all_uses_with(n.args[0])
                g.erase_node(n)
                continue
            _functionalize(g, n, order)
    depths = {}
    cache = {}
    work = [n for n in g.nodes if n.op == "call_function" and n.target is not operator.getitem]
    done = 0
    while work:
        n = work.pop(0)
        if n._erased:
            continue
        fn = rules.decomposition(n.target)
        if fn is None:
            continue
        if n.target._schema.is_mutable:
            raise _Unsupported(f"in-place {n.target} from a decomposition")
        depth = depths.get(n, 0) + 1
        if depth > _MAX_DEPTH:
            raise _Unsupported(f"decomposition of {n.target} does not end")
        try:
            piece, inputs = _trace_piece(fn, n, fake_mode, cache)
        except _KeepWhole:
            continue
        created = _splice(g, n, piece, inputs, depth, depths)
        work[:0] = [c for c in created if c.target is not operator.getitem]
        done += 1
    return done


def _output_names(ep, g):
    """The names of the new graph's outputs, in the order of the signature's output specs
    (a replaced output node has a new name). None where an output is not a node."""
    from torch.export.graph_signature import TensorArgument
    out = next(n for n in reversed(g.nodes) if n.op == "output")
    flat = pytree.tree_leaves(out.args[0])
    specs = ep.graph_signature.output_specs
    if len(flat) != len(specs):
        raise _Unsupported("outputs and output specs differ in number")
    names = []
    for spec, v in zip(specs, flat):
        if isinstance(spec.arg, TensorArgument):
            if not isinstance(v, torch.fx.Node):
                raise _Unsupported(f"output {spec.arg.name} is not a node")
            names.append(v.name)
        else:
            names.append(None)
    return names


def copy_graph(gm: torch.fx.GraphModule) -> torch.fx.Graph:
    """A copy of gm's graph (owned by gm) whose nodes keep their names: the copy's namespace
    renames what shadows a builtin ("input" -> "input_1"), while a program's signature names
    the nodes as they were. Node metadata is shared with the original."""
    g = gm.graph
    new_g = torch.fx.Graph(owning_module=gm, tracer_cls=g._tracer_cls)
    val_map = {}
    out = new_g.graph_copy(g, val_map)
    new_g.output(out)
    for old, new in val_map.items():
        if new.name != old.name:
            new.name = old.name
            new_g._graph_namespace._used_names.add(old.name)
    return new_g


def decompose_locally(ep: torch.export.ExportedProgram, table):
    """ep with every node that torch's re-trace would change decomposed in place (the program
    object is reused), or None (ep untouched) where only that re-trace can do it."""
    gm = ep.graph_module
    try:
        new_g = copy_graph(gm)
        _inline_grad_mode_wrappers(gm, new_g)
        _check_program(ep, new_g)
        fake_mode = _fake_mode(new_g)
        rules = _Rules(table)
        done = _rewrite(new_g, rules, fake_mode)
        new_g.eliminate_dead_code()
        new_g.lint()
        outs = _output_names(ep, new_g)
    except _Unsupported as ex:
        log.debug("decompositions: torch's re-trace (%s)", ex)
        return None
    except Exception as ex:  # noqa: BLE001 - torch internals differ between releases: the
        # re-trace gives the same program, only slower (ep is untouched until here)
        log.info("decompositions: torch's re-trace (the node-by-node path failed: %s: %s)",
                 type(ex).__name__, ex)
        return None
    for spec, name in zip(ep.graph_signature.output_specs, outs):
        if name is not None:
            spec.arg = type(spec.arg)(name=name)
    gm.graph = new_g  # the setter regenerates the code (a second recompile was 20-40 ms of Llama's)
    log.debug("decompositions: %d node(s) decomposed in place", done)
    return ep
