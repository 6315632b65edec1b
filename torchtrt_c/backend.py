"""The torch.compile backend "torchtrt_c".

    fast = torch.compile(model, backend="torchtrt_c", options={"min_block_size": 3})

Each graph dynamo hands over is compiled with torchtrt_c's pipeline for the shapes it was
traced with. A dynamic graph (dynamic=True, or dynamo's recompile after a shape changed: its
symbolic sizes are graph inputs) is compiled for each call's concrete shapes when they are
first seen, up to TORCHTRT_C_BACKEND_SHAPES signatures per graph (default 8; later ones run
eagerly, logged once). A graph that cannot be compiled runs eagerly (logged) unless
pass_through_build_failures=True. Bad settings always raise.
"""
from __future__ import annotations

import logging
import os

import torch

from torchtrt_c._input import Input
from torchtrt_c._settings import CompilationSettings

log = logging.getLogger("torchtrt_c")


def torchtrt_c_backend(gm: torch.fx.GraphModule, example_inputs, options=None, **kwargs):
    opts = dict(options or {})
    opts.update(kwargs)
    settings = CompilationSettings.from_kwargs(**opts)
    if not all(isinstance(t, torch.Tensor) for t in example_inputs):
        return _PerShape(gm, example_inputs, settings)
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


class _FixedSizes(torch.nn.Module):
    """A dynamic graph with its size inputs (and 0-d tensors read by value) fixed to one call's
    values: takes the other tensors only."""

    def __init__(self, gm, sizes: dict, n: int):
        super().__init__()
        self.gm = gm
        self.sizes = dict(sizes)
        self.n = n

    def forward(self, *tensors):
        it = iter(tensors)
        return self.gm(*[self.sizes[i] if i in self.sizes else next(it) for i in range(self.n)])


class _PerShape:
    """The callable dynamo gets for a graph with symbolic sizes among its inputs: each call's
    signature (the tensors' shapes, the sizes' values) compiled once, with static shapes, when
    first seen; a signature that does not compile, or one past the limit, runs the graph
    eagerly. Dtypes and devices are not in the signature: dynamo guards on them and hands a
    change over as another graph."""

    def __init__(self, gm, example_inputs, settings):
        self.gm = gm
        self.settings = settings
        self.limit = int(os.environ.get("TORCHTRT_C_BACKEND_SHAPES", "8"))
        self.compiled = {}
        self.told = False
        # fixed by value: the sizes, and the 0-d tensor inputs the graph reads with .item()
        # (Python floats of the model, a dropout probability or a scale, that dynamic dynamo
        # passes as tensors); the other inputs are tensors, keyed by shape
        ph = [n for n in gm.graph.nodes if n.op == "placeholder"]
        item = {i for i, n in enumerate(ph) if any(u.op == "call_method" and u.target == "item" for u in n.users)}
        self.fixed = [i for i, a in enumerate(example_inputs)
                      if not isinstance(a, torch.Tensor) or (i in item and a.dim() == 0)]
        fixed = set(self.fixed)
        self.tensors = [i for i in range(len(example_inputs)) if i not in fixed]

    def _key(self, args):
        vals = tuple(a.item() if isinstance(a, torch.Tensor) else a for a in (args[i] for i in self.fixed))
        if not all(isinstance(v, (int, float, bool)) for v in vals):
            return None   # something else symbolic: run eagerly
        return tuple(args[i].shape for i in self.tensors), vals

    def _build(self, args):
        from torchtrt_c.dynamo._compiler import compile_module
        fixed = {i: args[i] for i in self.fixed}
        tensors = [args[i] for i in self.tensors]
        inputs = [Input(shape=tuple(t.shape), dtype=t.dtype) for t in tensors]
        try:
            mod = compile_module(_FixedSizes(self.gm, fixed, len(args)), inputs, {}, self.settings)
        except Exception as ex:
            if self.settings.pass_through_build_failures:
                raise
            log.warning("torchtrt_c backend: could not compile the graph for shapes %s, running them "
                        "eagerly: %s", [tuple(t.shape) for t in tensors], ex)
            return None
        keep = self.tensors
        return lambda *a: mod(*[a[i] for i in keep])

    def __call__(self, *args):
        key = self._key(args)
        if key is None:
            return self.gm.forward(*args)
        fn = self.compiled.get(key)
        if fn is None and key not in self.compiled:
            if len(self.compiled) >= self.limit:
                if not self.told:
                    log.warning("torchtrt_c backend: a dynamic graph has been compiled for %d shape "
                                "signatures (TORCHTRT_C_BACKEND_SHAPES); new ones run eagerly", self.limit)
                    self.told = True
                return self.gm.forward(*args)
            fn = self.compiled[key] = self._build(args)
        return fn(*args) if fn is not None else self.gm.forward(*args)


def _register():
    from torch._dynamo.backends.registry import _BACKENDS, register_backend
    if "torchtrt_c" not in _BACKENDS:
        register_backend(name="torchtrt_c")(torchtrt_c_backend)


_register()
