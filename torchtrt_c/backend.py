"""The torch.compile backend "torchtrt_c".

    fast = torch.compile(model, backend="torchtrt_c", options={"min_block_size": 3})

Each graph dynamo hands over is compiled with torchtrt_c's pipeline for the shapes it was
traced with. A graph that cannot be compiled runs eagerly (logged) unless
pass_through_build_failures=True. Bad settings always raise.
"""
from __future__ import annotations

import logging

import torch

from torchtrt_c._input import Input
from torchtrt_c._settings import CompilationSettings

log = logging.getLogger("torchtrt_c")


def torchtrt_c_backend(gm: torch.fx.GraphModule, example_inputs, options=None, **kwargs):
    opts = dict(options or {})
    opts.update(kwargs)
    settings = CompilationSettings.from_kwargs(**opts)
    if not all(isinstance(t, torch.Tensor) for t in example_inputs):
        msg = "graph has non-tensor (symbolic) inputs; dynamic torch.compile graphs are not compiled"
        if settings.pass_through_build_failures:
            raise NotImplementedError(msg)
        log.warning("torchtrt_c backend: %s, running eagerly", msg)
        return gm.forward
    inputs = [Input(shape=tuple(t.shape), dtype=t.dtype) for t in example_inputs]
    try:
        from torchtrt_c.dynamo._compiler import compile_module
        compiled = compile_module(gm, inputs, {}, settings)
    except Exception as ex:
        if settings.pass_through_build_failures:
            raise
        log.warning("torchtrt_c backend: could not compile the graph, running it eagerly: %s", ex)
        return gm.forward
    return compiled


def _register():
    from torch._dynamo.backends.registry import _BACKENDS, register_backend
    if "torchtrt_c" not in _BACKENDS:
        register_backend(name="torchtrt_c")(torchtrt_c_backend)


_register()
