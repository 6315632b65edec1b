"""The user-facing entry points: compile, save, load.

    trt = torchtrt_c.compile(model, inputs=[torchtrt_c.Input(min_shape=(1, 3, 32, 32),
                             opt_shape=(8, 3, 32, 32), max_shape=(32, 3, 32, 32))], min_block_size=3)
    torchtrt_c.save(trt, "model.ep")            # exported-program format, engines embedded
    trt2 = torchtrt_c.load("model.ep")          # a fresh process needs no model class
"""
from __future__ import annotations

import logging
import os
import re

import torch

from torchtrt_c._input import Input, as_input, as_inputs, example_inputs
from torchtrt_c._settings import CompilationSettings

log = logging.getLogger("torchtrt_c")

_IRS = ("default", "dynamo", "torch_compile")


def _gather_inputs(inputs, arg_inputs, kwarg_inputs):
    if inputs is not None and arg_inputs is not None:
        raise ValueError("give inputs or arg_inputs, not both")
    args = arg_inputs if arg_inputs is not None else inputs
    if args is None and not kwarg_inputs:
        raise ValueError("torchtrt_c.compile needs example inputs: inputs=[torchtrt_c.Input(...) "
                         "or tensors]")
    if isinstance(args, (torch.Tensor, Input)):
        args = [args]
    args = as_inputs(list(args or ()))
    kw = {}
    for k, v in (kwarg_inputs or {}).items():
        kw[k] = as_input(v, f"kwarg_inputs[{k!r}]")
    return args, kw


def compile(module, ir: str = "default", inputs=None, arg_inputs=None, kwarg_inputs=None,
            **settings):
    """Compiles module (an nn.Module, or a torch.export.ExportedProgram: then inputs default to
    its own input specs) into a torch.fx.GraphModule whose OpenCL segments run as engines
    (`_run_on_acc_N`) and whose fallback segments run in torch (`_run_on_gpu_N`)."""
    if ir not in _IRS:
        raise ValueError(f"ir={ir!r} is not supported; use one of {', '.join(_IRS)}")
    s = CompilationSettings.from_kwargs(**settings)
    if ir == "torch_compile":
        import torchtrt_c.backend  # noqa: F401  (registers the backend)
        return torch.compile(module, backend="torchtrt_c", options=dict(settings))
    if not isinstance(module, (torch.nn.Module, torch.export.ExportedProgram)):
        raise TypeError(f"torchtrt_c.compile expects a torch.nn.Module, got {type(module).__name__}")
    if isinstance(module, torch.export.ExportedProgram):
        # compiled as it is (Torch-TensorRT's dynamo.compile takes one), its input specs read
        # from it unless given
        from torchtrt_c.dynamo._capture import check_program_inputs, program_inputs
        if inputs is None and arg_inputs is None and not kwarg_inputs:
            args, kw = program_inputs(module)
        else:
            args, kw = _gather_inputs(inputs, arg_inputs, kwarg_inputs)
            check_program_inputs(module, args, kw)
    else:
        args, kw = _gather_inputs(inputs, arg_inputs, kwarg_inputs)
    from torchtrt_c.dynamo._compiler import compile_module
    gm = compile_module(module, args, kw, s)
    gm._torchtrt_c_inputs = (args, kw)
    return gm


def _engine_nodes(gm):
    op = torch.ops.torchtrt_c.execute_engine.default
    for mod in gm.modules():
        g = getattr(mod, "graph", None)
        if not isinstance(g, torch.fx.Graph):
            continue
        for n in g.nodes:
            if n.op == "call_function" and n.target is op:
                yield mod, n


def save(module, path, inputs=None, arg_inputs=None, kwarg_inputs=None,
         output_format: str = "exported_program", retrace: bool = True) -> None:
    """Saves a compiled module as a torch.export program (engines are buffers inside it).
    inputs default to the Input specs the module was compiled with (dynamic ranges kept)."""
    from torchtrt_c.dynamo._capture import dynamic_shapes_for
    if output_format != "exported_program":
        raise ValueError(f"output_format={output_format!r}: only 'exported_program' is supported")
    if inputs is None and arg_inputs is None and kwarg_inputs is None:
        stored = getattr(module, "_torchtrt_c_inputs", None)
        if stored is None:
            raise ValueError("torchtrt_c.save: pass inputs= (the module was not compiled by "
                             "torchtrt_c.compile, so its input specs are unknown)")
        args, kw = stored
    else:
        args, kw = _gather_inputs(inputs, arg_inputs, kwarg_inputs)
    ex_args = tuple(example_inputs(list(args)))
    ex_kw = example_inputs(dict(kw))
    dynamic = dynamic_shapes_for(module, args, kw)
    from torchtrt_c.runtime._module import EngineModule
    for m in module.modules():  # blobs deferred at compile time are made now
        if isinstance(m, EngineModule):
            m.blob()
    ep = torch.export.export(module, ex_args, ex_kw, dynamic_shapes=dynamic, strict=False)
    # A file object: torch warns about names not ending in .pt2, ours often end in .ep.
    with open(os.fspath(path), "wb") as f:
        torch.export.save(ep, f)


def load(path, device=None) -> torch.nn.Module:
    """Loads a module saved by save(); engines are checked (and rebuilt for this machine's
    device when the file comes from another one) before it returns."""
    from torchtrt_c import SerializationError, _C
    from torchtrt_c.runtime._execute import _BLOB_OWNERS, ENGINES
    from torchtrt_c.runtime._shapes import EngineMeta
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(path)
    _import_pytree_modules(path)
    try:
        with open(path, "rb") as f:
            ep = torch.export.load(f)
        gm = ep.module()
    except Exception as ex:
        raise SerializationError(f"cannot load {path}: not a valid torchtrt_c program ({ex})") from ex
    for mod, n in _engine_nodes(gm):
        blob_node, meta = n.args[1], n.args[2]
        try:
            blob = _fetch(mod, blob_node.target)
            m = EngineMeta.from_json(meta)
            e = _C.Engine.deserialize(blob.detach().cpu().contiguous().numpy().tobytes(), device=device)
        except SerializationError:
            raise
        except Exception as ex:
            raise SerializationError(f"cannot load {path}: engine {n.name}: {ex}") from ex
        # the program's constant owns its engine: it lives as long as the loaded module
        _BLOB_OWNERS[blob] = ENGINES.put(m.id, e)
    for r in rebuilt_engines(gm):
        log.info("load %s: engine %s was built for %s; rebuilt from its IR for %s", path, r["engine"],
                 _device_str(r["built_for"]), _device_str(r["device"]))
    return gm


def rebuilt_engines(module) -> list:
    """The engines of a loaded module whose blobs were built for another device than the one
    they now run on (load rebuilt them from their IR): [{"engine", "built_for", "device"}], the
    devices as dicts with platform, name and driver. Empty when every blob was made here."""
    from torchtrt_c.runtime._execute import ENGINES
    from torchtrt_c.runtime._shapes import EngineMeta
    out = []
    for _, n in _engine_nodes(module):
        e = ENGINES.peek(EngineMeta.from_json(n.args[2]).id)
        built = e.built_for if e is not None else None
        here = e.device if e is not None else None
        if built and any(built[k] != here.get(k) for k in ("platform", "name", "driver")):
            out.append({"engine": n.name, "built_for": built,
                        "device": {k: here.get(k) for k in ("platform", "name", "driver")}})
    return out


def _device_str(d) -> str:
    return f"{d['name']!r} ({d['platform']}, driver {d['driver']})"


_TRANSFORMERS_NAME = re.compile(rb"transformers(?:\.[A-Za-z_][A-Za-z_0-9]*)+(?::[A-Za-z_][A-Za-z_0-9]*)?")


def _import_pytree_modules(path) -> None:
    """A program whose inputs/outputs hold transformers containers (ModelOutput, caches) names
    their classes in its specs; torch.export.load can rebuild them only once those classes are
    registered as pytree nodes, which importing their modules (ModelOutput) and registering the
    caches does. Other files are left alone; a file that is no zip fails in torch.export.load."""
    import importlib
    import zipfile
    try:
        with zipfile.ZipFile(path) as z:
            names = set()
            for member in z.namelist():
                if member.startswith("archive/models/") and member.endswith(".json"):
                    names.update(_TRANSFORMERS_NAME.findall(z.read(member)))
    except (zipfile.BadZipFile, OSError):
        return
    if not names:
        return
    for name in sorted(names):
        mod = name.decode().split(":")[0]
        if ":" not in name.decode():
            mod = mod.rsplit(".", 1)[0]
        try:
            importlib.import_module(mod)
        except Exception as ex:  # load then names the class it could not rebuild
            log.debug("load: cannot import %s: %s", mod, ex)
    from torchtrt_c.dynamo._capture import register_transformers_containers
    register_transformers_containers()


def _fetch(mod, target):
    obj = mod
    for p in target.split("."):
        obj = getattr(obj, p)
    return obj
