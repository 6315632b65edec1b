"""Rebuild: C graph nodes -> a torch.fx.GraphModule (the `_run_on_gpu_N` torch segments).

    gm = build_torch_module(g, nodes, ["x", "relu_1"], ["lgamma"], imp)
    (y,) = gm(x, r)

Each C node becomes a call to torch.ops.aten.<op>.<overload> with its flat inputs put back as
positional and keyword arguments from the op's schema; prim.Constant nodes become literals
(tensor constants become buffers: the original weights where we imported them, else the
bytes the C graph holds), prim.ListConstruct a Python list, opaque nodes are rebuilt from
the importer's recipe. The module always returns a tuple.
"""
from __future__ import annotations

import operator
import re

import numpy as np
import torch
import torch.fx

from torchtrt_c.runtime._execute import torch_dtype

_IN = "__ttc_input__"
_VIEW_AS_RESHAPE = {"aten.view.default": "aten.reshape.default",
                    "aten._unsafe_view.default": "aten.reshape.default"}


def _ident(name: str, used: set) -> str:
    base = re.sub(r"\W", "_", name) or "v"
    if base[0].isdigit():
        base = "v_" + base
    s, k = base, 1
    while s in used:
        s, k = f"{base}_{k}", k + 1
    used.add(s)
    return s


def resolve_op(op_name: str):
    """'aten.add.Tensor' -> torch.ops.aten.add.Tensor (None when it is not a torch op)."""
    parts = op_name.split(".")
    if len(parts) != 3:
        return None
    ns = getattr(torch.ops, parts[0], None)
    packet = getattr(ns, parts[1], None) if ns is not None else None
    if packet is None:
        return None
    return getattr(packet, parts[2], None)


def _unliteral(v, real_type: str):
    if not isinstance(v, str):
        return v
    if "ScalarType" in real_type:
        return torch_dtype(v) if v in _dtype_names() else getattr(torch, v)
    if "Device" in real_type:
        return torch.device(v)
    if "Layout" in real_type or "MemoryFormat" in real_type:
        return getattr(torch, v)
    return v


def _dtype_names():
    from torchtrt_c.runtime._execute import _DTYPES
    return _DTYPES


def tensor_from_graph(g, name: str) -> torch.Tensor:
    dtype, shape, data = g.tensor_constant(name)
    dt = torch_dtype(dtype)
    if dt == torch.bfloat16:
        arr = np.frombuffer(bytearray(data), dtype=np.int16)
        return torch.from_numpy(arr.copy()).view(torch.bfloat16).reshape(shape)
    buf = bytearray(data)
    return torch.frombuffer(buf, dtype=dt).reshape(shape) if buf else torch.empty(shape, dtype=dt)


def node_key(n: dict) -> str:
    """How partition results and extract() name a node: its name, else its first output."""
    return n["name"] or (n["outputs"][0] if n["outputs"] else n["op"])


class GraphView:
    """Node and value lookups over a C graph (g.nodes() is a snapshot of dicts)."""

    def __init__(self, g):
        self.g = g
        self.nodes = g.nodes()
        self.by_name = {node_key(n): n for n in self.nodes}
        self.producer = {}
        for n in self.nodes:
            for o in n["outputs"]:
                self.producer[o] = n
        self._values = {}

    def value(self, name):
        v = self._values.get(name)
        if v is None:
            v = self._values[name] = self.g.value(name)
        return v

    def is_constant(self, name) -> bool:
        """True for values that can be rematerialised anywhere: literals, weights, and lists
        of those."""
        p = self.producer.get(name)
        if p is None:
            return False
        if p["op"] == "prim.Constant":
            return True
        if p["op"] == "prim.ListConstruct":
            return all(self.is_constant(i) for i in p["inputs"])
        return False


class _Builder:
    def __init__(self, view: GraphView, imp, weights):
        self.view = view
        self.imp = imp
        self.weights = weights
        self.graph = torch.fx.Graph()
        self.root = torch.nn.Module()
        self.env = {}
        self.used = set()
        self.n_buf = 0

    def constant(self, name):
        if name in self.env:
            return self.env[name]
        p = self.view.producer[name]
        if p["op"] == "prim.ListConstruct":
            val = [self.get(i) for i in p["inputs"]]
        else:
            info = self.view.value(name)
            if info["kind"] == "tensor":
                t = self.weights.get(name)
                if t is None:
                    t = tensor_from_graph(self.view.g, name)
                attr = _ident("c_" + name, self.used)
                self.root.register_buffer(attr, t)
                val = self.graph.get_attr(attr)
            elif info["kind"] == "none":
                val = None
            else:
                val = info["const"]
        self.env[name] = val
        return val

    def get(self, name):
        if name in self.env:
            return self.env[name]
        if self.view.is_constant(name):
            return self.constant(name)
        raise KeyError(f"value %{name} is neither an input of this segment nor produced in it")

    def node(self, n):
        op = n["op"]
        outs = n["outputs"]
        if op == "prim.Constant":
            self.constant(outs[0])
            return
        ins = [self.get(i) for i in n["inputs"]]
        if op == "prim.ListConstruct":
            self.env[outs[0]] = list(ins)
            return
        if op == "prim.TupleConstruct":
            self.env[outs[0]] = tuple(ins)
            return
        if op in ("prim.getitem",):
            self.env[outs[0]] = self.graph.call_function(operator.getitem, tuple(ins))
            return
        if op == "prim.ListUnpack":
            for k, o in enumerate(outs):
                self.env[o] = self.graph.call_function(operator.getitem, (ins[0], k))
            return
        recipe = self.imp.opaque.get(n["name"]) if self.imp is not None else None
        # Lowering drops clone/contiguous (no-ops for engines, whose tensors are always
        # contiguous), so in torch a view may now see a strided input: reshape copies then.
        target = resolve_op(_VIEW_AS_RESHAPE.get(op, op))
        if isinstance(target, torch._ops.OpOverload):
            args, kwargs = self._schema_args(target, ins, n)
        elif recipe is not None:
            target = recipe.target

            def sub(a):
                if isinstance(a, tuple) and len(a) == 2 and a[0] == _IN:
                    return ins[a[1]]
                return a
            args = _map(recipe.args, sub)
            kwargs = _map(recipe.kwargs, sub)
        else:
            raise NotImplementedError(f"node {n['name']}: cannot rebuild op {op} in torch")
        call = self.graph.call_function(target, tuple(args), dict(kwargs))
        call.name = _ident(n["name"] or op, self.used) if n["name"] else call.name
        if len(outs) == 1 and not _returns_sequence(target):
            self.env[outs[0]] = call
        else:
            for k, o in enumerate(outs):
                self.env[o] = self.graph.call_function(operator.getitem, (call, k))

    def _schema_args(self, target, ins, n):
        schema = target._schema
        if len(ins) != len(schema.arguments):
            raise ValueError(f"node {n['name']}: {target} takes {len(schema.arguments)} inputs, "
                             f"the C node has {len(ins)}")
        args, kwargs = [], {}
        for a, v in zip(schema.arguments, ins):
            v = _unliteral(v, str(a.real_type))
            if a.kwarg_only:
                kwargs[a.name] = v
            else:
                args.append(v)
        return args, kwargs


def _returns_sequence(target) -> bool:
    if not isinstance(target, torch._ops.OpOverload):
        return False
    rets = target._schema.returns
    return len(rets) != 1 or str(rets[0].type).startswith("List[")


def _map(a, fn):
    if isinstance(a, tuple) and len(a) == 2 and a[0] == _IN:
        return fn(a)
    if isinstance(a, (list, tuple)):
        return type(a)(_map(x, fn) for x in a)
    if isinstance(a, dict):
        return {k: _map(v, fn) for k, v in a.items()}
    return fn(a)


def build_torch_module(view: GraphView, node_names, input_values, output_values, imp=None,
                       weights=None, class_name="TorchSegment") -> torch.fx.GraphModule:
    b = _Builder(view, imp, weights if weights is not None else (imp.weights if imp else {}))
    for v in input_values:
        b.env[v] = b.graph.placeholder(_ident(v, b.used))
    wanted = set(node_names)
    for n in view.nodes:
        if node_key(n) in wanted:
            b.node(n)
    b.graph.output(tuple(b.get(v) for v in output_values))
    gm = torch.fx.GraphModule(b.root, b.graph, class_name=class_name)
    gm.graph.lint()
    return gm
