"""Capture: torch.export with dynamic dims from Input ranges, then our decompositions.

    ep = capture(model, [Input(min_shape=(1, 4), opt_shape=(8, 4), max_shape=(32, 4))], {})
    ep = decompose(ep, settings)
"""
from __future__ import annotations

import logging

import torch

from torchtrt_c._input import Input
from torchtrt_c.dynamo.lowering import get_decompositions

log = logging.getLogger("torchtrt_c")


def _dynamic_spec(inp: Input):
    if not inp.is_dynamic():
        return None
    return {i: torch.export.Dim.AUTO(min=inp.min_shape[i], max=inp.max_shape[i])
            for i in inp.dynamic_dims()}


def capture(module: torch.nn.Module, arg_inputs, kwarg_inputs) -> torch.export.ExportedProgram:
    args = tuple(i.example_tensor() for i in arg_inputs)
    kwargs = {k: v.example_tensor() for k, v in kwarg_inputs.items()}
    dyn_args = tuple(_dynamic_spec(i) for i in arg_inputs)
    dyn_kwargs = {k: _dynamic_spec(v) for k, v in kwarg_inputs.items()}
    any_dynamic = any(d is not None for d in dyn_args) or any(d is not None for d in dyn_kwargs.values())
    dynamic_shapes = None
    if any_dynamic:
        dynamic_shapes = {} if not dyn_args and not dyn_kwargs else None
        # torch.export wants the spec shaped like forward's signature: use arg names.
        import inspect
        try:
            params = list(inspect.signature(module.forward).parameters)
        except (TypeError, ValueError):
            params = []
        if len(params) >= len(args):
            dynamic_shapes = {params[i]: d for i, d in enumerate(dyn_args)}
            dynamic_shapes.update(dyn_kwargs)
        else:
            dynamic_shapes = dyn_args
    was_training = module.training
    module.eval()
    try:
        ep = torch.export.export(module, args, kwargs, dynamic_shapes=dynamic_shapes, strict=False)
    finally:
        module.train(was_training)
    return ep


def decompose(ep: torch.export.ExportedProgram, keep=(), decompose=()):
    return ep.run_decompositions(get_decompositions(keep=keep, decompose=decompose))
