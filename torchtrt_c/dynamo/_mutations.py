"""Inputs a program writes in place: a KV cache that the model updates with index_copy_
(transformers' static cache under torch.compile or torch.export), a running buffer passed in.

torch.export functionalises such writes: the program computes the new value of the input and
returns it as an extra output ("user input mutation") that its own module copies back. For the
engines, plan_mutations rewrites a copy of the program:

- a new value made by `index_copy(input, dim, index, source)` becomes
  `torchtrt_c.index_copy_into(input, dim, index, source)`, which the engine runs in place (a
  kernel writes the input's memory at the indexed positions; the binding is marked written, so
  every call path hands the engine the caller's tensor or copies the result back) and whose
  value, for what reads it later, is the input after the write; the extra output goes;
- any other new value stays an output of the graph, and the compiled module copies it into the
  input after the call (copy_back), as torch.export's own module does.

    plan = plan_mutations(ep)          # None: the program writes no input
    imp = import_program(plan.view, ...)   # plan.copy_back: [(user input, graph output)]
"""
from __future__ import annotations

import dataclasses
from typing import List, Optional, Tuple

import torch

from torchtrt_c.dynamo.lowering._local_decomp import copy_graph


@torch.library.custom_op("torchtrt_c::index_copy_into", mutates_args=())
def index_copy_into(self: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
    """index_copy_ into self, in place (the contract with the engines, which take self as an input
    they write); returns self's new value (a copy: a custom op's output cannot alias an input)."""
    self.index_copy_(dim, index, source)
    return self.clone()


@index_copy_into.register_fake
def _(self, dim, index, source):
    return torch.empty_like(self)


class _ProgramView:
    """ep with another graph and output specs (what the importer reads); the rest is ep's."""

    def __init__(self, ep, gm, signature):
        self._ep = ep
        self.graph_module = gm
        self.graph = gm.graph
        self.graph_signature = signature

    def __getattr__(self, name):
        return getattr(self._ep, name)


@dataclasses.dataclass
class MutationPlan:
    view: object                          # what to import instead of ep
    copy_back: List[Tuple[int, int]]      # (user input position, graph output position)
    in_place: List[str]                   # inputs the engines write in place


def _as_index_copy(o, ph):
    """(ph, dim, index, source) where node o is index_copy(ph, dim, index, source), or the
    index_put(ph, [None, .., None, index], source) the decompositions make of it (one 1-D index
    tensor at dim, source of the indexed shape, no accumulation); else None."""
    if ph is None or not isinstance(o, torch.fx.Node) or o.op != "call_function" or not o.args or o.args[0] is not ph:
        return None
    if o.target is torch.ops.aten.index_copy.default and isinstance(o.args[1], int):
        return tuple(o.args[:4])
    if o.target is not torch.ops.aten.index_put.default or len(o.args) < 3:
        return None
    acc = o.args[3] if len(o.args) > 3 else o.kwargs.get("accumulate", False)
    idx = list(o.args[1])
    real = [i for i, x in enumerate(idx) if x is not None]
    if acc or len(real) != 1 or real[0] != len(idx) - 1:
        return None
    d, ix, src = real[0], idx[real[0]], o.args[2]
    x_val, ix_val = ph.meta.get("val"), getattr(ix, "meta", {}).get("val")
    src_val = getattr(src, "meta", {}).get("val")
    if not all(isinstance(v, torch.Tensor) for v in (x_val, ix_val, src_val)):
        return None
    if ix_val.dim() != 1 or ix_val.dtype not in (torch.int64, torch.int32) or src_val.dim() != x_val.dim():
        return None
    same = all(i == d or src_val.shape[i] == x_val.shape[i] for i in range(x_val.dim()))
    if not same or src_val.shape[d] != ix_val.shape[0]:
        return None
    return (ph, d, ix, src)


def plan_mutations(ep) -> Optional[MutationPlan]:
    from torch.export.graph_signature import ExportGraphSignature, InputKind, OutputKind
    sig = ep.graph_signature
    specs = list(sig.output_specs)
    if not any(s.kind == OutputKind.USER_INPUT_MUTATION for s in specs):
        return None
    graph = copy_graph(ep.graph_module)
    gm = torch.fx.GraphModule(ep.graph_module, graph)
    out_node = next(n for n in reversed(graph.nodes) if n.op == "output")
    outs = list(out_node.args[0])
    users = [s.arg.name for s in sig.input_specs if s.kind == InputKind.USER_INPUT]
    phs = {n.name: n for n in graph.nodes if n.op == "placeholder"}
    keep, keep_specs, copy_back, in_place = [], [], [], []
    for o, s in zip(outs, specs):
        if s.kind != OutputKind.USER_INPUT_MUTATION:
            keep.append(o)
            keep_specs.append(s)
            continue
        ph = phs.get(s.target)
        args = _as_index_copy(o, ph)
        if args is not None:
            with graph.inserting_before(o):
                n = graph.call_function(torch.ops.torchtrt_c.index_copy_into.default, args)
            n.meta = dict(o.meta)
            o.replace_all_uses_with(n)
            graph.erase_node(o)
            in_place.append(s.target)
            continue
        keep.append(o)
        keep_specs.append(s)
        copy_back.append((users.index(s.target), len(keep) - 1))
    out_node.args = (tuple(keep),)
    graph.lint()
    gm.recompile()
    view = _ProgramView(ep, gm, ExportGraphSignature(input_specs=list(sig.input_specs), output_specs=keep_specs))
    return MutationPlan(view, copy_back, in_place)
