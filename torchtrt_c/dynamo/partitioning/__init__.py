"""Partitioning from Python, Torch-TensorRT style, over an aten-level torch.fx.GraphModule.

    gm = torch.export.export(model, (x,)).run_decompositions().module()
    n_supported, n_total = get_graph_converter_support(gm)
    part_gm, overview = fast_partition(gm, min_block_size=3)
    part_gm._run_on_acc_0, part_gm._run_on_gpu_1          # submodules (all run in torch here)

The work is done by the C partitioner (the same one compile uses); the returned module has one
submodule per segment, named as in compiled modules, so it runs and can be inspected.
"""
from __future__ import annotations

import logging

import torch

log = logging.getLogger("torchtrt_c")


def _import(gm: torch.fx.GraphModule, sample_inputs=None):
    from torchtrt_c._input import Input
    from torchtrt_c.dynamo._importer import import_program
    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if any("val" not in n.meta for n in phs):
        if sample_inputs is None:
            raise ValueError("the graph's placeholders carry no meta['val']: pass sample_inputs")
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.passes.fake_tensor_prop import FakeTensorProp
        mode = FakeTensorMode(allow_non_fake_inputs=True)
        FakeTensorProp(gm, mode).propagate(*sample_inputs)
    ins = [Input(shape=tuple(n.meta["val"].shape), dtype=n.meta["val"].dtype)
           if isinstance(n.meta["val"], torch.Tensor) and
           all(isinstance(d, int) for d in n.meta["val"].shape) else None for n in phs]
    imp = import_program(gm, ins, {}, None)
    imp.graph.lower()
    return imp


def _settings(min_block_size, torch_executed_ops, require_full_compilation, strategy, **extra):
    from torchtrt_c._settings import resolve_op_names
    d = {"min_block_size": int(min_block_size),
         "torch_executed_ops": resolve_op_names(torch_executed_ops or ()),
         "forced_nodes": {}, "require_full_compilation": bool(require_full_compilation),
         "strategy": strategy}
    d.update(extra)
    return d


def _partitioned_module(imp, part, gm):
    import copy

    from torchtrt_c._settings import CompilationSettings
    from torchtrt_c.dynamo._compiler import stitch
    from torchtrt_c.dynamo._progress import Progress
    # keep the original's calling convention (ep.module() takes/returns pytrees)
    codegen = copy.deepcopy(gm.graph._codegen) if hasattr(gm.graph, "_codegen") else None
    return stitch(imp, part, CompilationSettings(), Progress(False), build_engines=False,
                  codegen=codegen)


def _partition(gm, strategy, min_block_size, torch_executed_ops, require_full_compilation,
               sample_inputs=None, **extra):
    imp = _import(gm, sample_inputs)
    s = _settings(min_block_size, torch_executed_ops, require_full_compilation, strategy, **extra)
    part = imp.graph.partition(s)
    overview = imp.graph.coverage(s)
    return _partitioned_module(imp, part, gm), overview


def fast_partition(gm, min_block_size=5, torch_executed_ops=(), require_full_compilation=False,
                   sample_inputs=None):
    """Adjacency partitioning (the default): greedy merging of neighbouring supported nodes."""
    return _partition(gm, "fast", min_block_size, torch_executed_ops, require_full_compilation,
                      sample_inputs)


def global_partition(gm, min_block_size=5, torch_executed_ops=(), require_full_compilation=False,
                     sample_inputs=None):
    """Global partitioning: the fewest subgraphs (slower to compute)."""
    return _partition(gm, "global", min_block_size, torch_executed_ops, require_full_compilation,
                      sample_inputs)


def naive_partition(gm, min_block_size=5, torch_executed_ops=(), require_full_compilation=False,
                    sample_inputs=None):
    """In-order greedy segmentation (seeds/000's 7-segment baseline); for comparison."""
    return _partition(gm, "naive", min_block_size, torch_executed_ops, require_full_compilation,
                      sample_inputs)


def hierarchical_adjacency_partition(gm, min_block_size=5, backend_support_map=None,
                                     backend_priority=None, torch_executed_ops=(),
                                     require_full_compilation=False, sample_inputs=None):
    """Several backends in priority order; backend_support_map: name -> ops it runs."""
    from torchtrt_c._settings import resolve_op_names
    backend_support_map = backend_support_map or {}
    order = list(backend_priority or backend_support_map)
    backends = [(b, resolve_op_names(backend_support_map.get(b, ()))) for b in order]
    return _partition(gm, "hierarchical", min_block_size, torch_executed_ops,
                      require_full_compilation, sample_inputs, backends=backends)


def get_graph_converter_support(gm, torch_executed_ops=(), verbose=True, sample_inputs=None):
    """(n_supported, n_total) over the graph's ops, after the C lowering passes; logs a
    per-op breakdown."""
    imp = _import(gm, sample_inputs)
    cov = imp.graph.coverage(_settings(1, torch_executed_ops, False, "fast"))
    if verbose:
        lines = [f"{cov['supported']}/{cov['total']} ops supported"]
        for op, (s, t) in sorted(cov.get("per_op", {}).items()):
            lines.append(f"  {op}: {s}/{t}")
        log.info("\n".join(lines))
    return cov["supported"], cov["total"]


__all__ = ["fast_partition", "global_partition", "naive_partition",
           "hierarchical_adjacency_partition", "get_graph_converter_support"]
