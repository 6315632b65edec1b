"""Capture: torch.export with dynamic dims from Input ranges, then our decompositions.

    ep = capture(model, [Input(min_shape=(1, 4), opt_shape=(8, 4), max_shape=(32, 4))], {})
    ep = decompose(ep, settings)
"""
from __future__ import annotations

import inspect
import logging

import torch

from torchtrt_c._input import Input
from torchtrt_c.dynamo.lowering import get_decompositions
from torchtrt_c.dynamo.lowering._decompositions import infer_single_symbolic_size

log = logging.getLogger("torchtrt_c")


def _dynamic_spec(inp: Input):
    if not inp.is_dynamic():
        return None
    return {i: torch.export.Dim.AUTO(min=inp.min_shape[i], max=inp.max_shape[i])
            for i in inp.dynamic_dims()}


def dynamic_shapes_for(module, arg_inputs, kwarg_inputs):
    """torch.export's dynamic_shapes for these Input specs (None when all are static), keyed
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
    if dyn_kwargs:
        raise ValueError("dynamic kwarg inputs need a forward with named parameters")
    return tuple(dyn_args)


def capture(module: torch.nn.Module, arg_inputs, kwarg_inputs) -> torch.export.ExportedProgram:
    args = tuple(i.example_tensor() for i in arg_inputs)
    kwargs = {k: v.example_tensor() for k, v in kwarg_inputs.items()}
    dynamic_shapes = dynamic_shapes_for(module, arg_inputs, kwarg_inputs)
    was_training = module.training
    module.eval()
    try:
        ep = torch.export.export(module, args, kwargs, dynamic_shapes=dynamic_shapes, strict=False)
    finally:
        module.train(was_training)
    return ep


def decompose(ep: torch.export.ExportedProgram, keep=(), decompose=()):
    ep = ep.run_decompositions(get_decompositions(keep=keep, decompose=decompose))
    infer_single_symbolic_size(ep.graph_module)
    return ep
