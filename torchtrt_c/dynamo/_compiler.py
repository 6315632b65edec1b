"""The compile pipeline: capture -> decompose -> import -> lower (C) -> partition (C) ->
engines (C) -> stitch (FX).

    gm = compile_module(model, [Input(...)], {}, CompilationSettings.from_kwargs(...))
    gm._run_on_acc_0   # EngineModule
    gm._run_on_gpu_1   # torch.fx.GraphModule with the fallback nodes

The stitched parent is a GraphModule calling the segment submodules in the partitioner's
order; it takes and returns what the original forward did (pytree in/out specs from export).
"""
from __future__ import annotations

import hashlib
import json
import logging
import operator
import os
import threading
import time
import uuid

import torch
import torch.fx

from torchtrt_c import settings as _knobs
from torchtrt_c._input import input_leaves
from torchtrt_c._settings import CompilationSettings
from torchtrt_c.dynamo._capture import capture, copy_program, decompose, kwarg_order
from torchtrt_c.dynamo._compiled_module import CompiledModule
from torchtrt_c.dynamo._mutations import plan_mutations
from torchtrt_c.dynamo._weight_only import rewrite_weight_only
from torchtrt_c.dynamo._importer import ImportResult, NonAffineDim, import_program
from torchtrt_c.dynamo._module_cache import _content_digest, remember_blob
from torchtrt_c.dynamo._module_cache import _ident as _weight_ident
from torchtrt_c.dynamo._progress import Progress
from torchtrt_c.dynamo._rebuild import GraphView, _ident, build_torch_module, node_key
from torchtrt_c.runtime._module import EngineModule
from torchtrt_c.runtime._shapes import Dim, EngineMeta

log = logging.getLogger("torchtrt_c")

OPENCL = "opencl"


# ---------------------------------------------------------------- settings -> C
def forced_nodes_for_modules(graph: torch.fx.Graph, modules) -> dict:
    """Nodes whose module stack passes through one of `modules` (classes or qualified names),
    with the reason the partitioner will record."""
    if not modules:
        return {}
    names = {m for m in modules if isinstance(m, str)}
    classes = {m for m in modules if isinstance(m, type)}
    class_names = {f"{c.__module__}.{c.__qualname__}" for c in classes} | {c.__qualname__ for c in classes}
    out = {}
    for n in graph.nodes:
        if n.op != "call_function":
            continue
        for path, ty in (n.meta.get("nn_module_stack") or {}).values():
            tyname = ty if isinstance(ty, str) else f"{ty.__module__}.{ty.__qualname__}"
            short = tyname.rsplit(".", 1)[-1]
            hit = None
            if path in names or any(path.startswith(p + ".") for p in names if p):
                hit = path
            elif tyname in class_names or tyname in names or short in names:
                hit = f"{path} ({short})"
            if hit is not None:
                out[n.name] = f"torch_executed_modules: inside {hit}"
                break
    return out


def _devices_of(v) -> list:
    vals = v if isinstance(v, (list, tuple)) else [v]
    return [x.device for x in vals if isinstance(x, torch.Tensor)]


def engine_device(graph: torch.fx.Graph):
    """The device the graph's engines take their tensors on: the device most of its tensors
    live on, an accelerator's before the CPU's (a GPU model's host-side scalars and position
    tensors are the few); None when the graph holds no tensor."""
    count = {}
    for n in graph.nodes:
        for d in _devices_of(n.meta.get("val")):
            count[d] = count.get(d, 0) + 1
    if not count:
        return None
    return max(count, key=lambda d: (d.type not in ("cpu", "meta"), count[d]))


def forced_nodes_for_devices(graph: torch.fx.Graph) -> dict:
    """Nodes that make or read a tensor on another device than engine_device's (a GPU model's
    CPU-side position ids, a scalar tensor made on the host, the copy that moves it over): they
    run in torch, where torch runs them, so that an engine only ever sees tensors of one device.
    Node name -> the reason the partitioner records. Nothing on a one-device graph."""
    main = engine_device(graph)
    out = {}
    if main is None:
        return out
    for n in graph.nodes:
        if n.op != "call_function":
            continue
        devs = set(_devices_of(n.meta.get("val")))
        for a in n.all_input_nodes:
            devs.update(_devices_of(a.meta.get("val")))
        other = sorted(str(d) for d in devs if d != main)
        if other:
            out[n.name] = f"device: on {', '.join(other)}, beside the engines' {main}"
    return out


def forced_nodes(graph: torch.fx.Graph, settings: CompilationSettings) -> dict:
    """Every node the settings or the graph's devices send to torch, with the reason."""
    out = forced_nodes_for_devices(graph)
    out.update(forced_nodes_for_modules(graph, settings.torch_executed_modules))
    return out


def partition_settings(s: CompilationSettings, forced: dict) -> dict:
    d = {
        "min_block_size": s.min_block_size,
        "torch_executed_ops": s.torch_executed_op_names(),
        "forced_nodes": dict(forced),
        "require_full_compilation": s.require_full_compilation,
        "strategy": "fast" if s.use_fast_partitioner else "global",
        "assume_dynamic_shape_support": s.assume_dynamic_shape_support,
        "enable_resource_partitioning": s.enable_resource_partitioning,
    }
    if s.cpu_memory_budget is not None:
        d["cpu_memory_budget"] = s.cpu_memory_budget
    return d


def _fold_quantized_layers(ep, settings) -> int:
    """PT2E's dq -> conv2d/linear <- dq(int8 weights) layers as int8 ops (dynamo/_quant.py),
    where the target runs them as int8 kernels; PT2E dynamic quantization's run-time
    quantization parameters as float32 aten ops (any target)."""
    targets = {str(n.target) for n in ep.graph.nodes if n.op == "call_function"}
    if not any(t.startswith("quantized_decomposed.") for t in targets):
        return 0
    from torchtrt_c.dynamo import _quant
    _quant.lower_dynamic_qparams(ep.graph_module)
    if not any(t.startswith("quantized_decomposed.dequantize_per_") for t in targets):
        return 0
    return _quant.fold_qdq(ep) if _quant.int8_kernels(settings) else 0


def resolve_device(device):
    """settings.device -> an OpenCL device index (None: the runtime's default)."""
    if device is None:
        return None
    from torchtrt_c._devices import find_device
    return find_device(device)["index"]


def check_devices(settings, inputs) -> None:
    """Raises DeviceNotFoundError (naming the devices there are) for a device setting that cannot
    be honoured: settings.device, TORCHTRT_C_DEVICE (the default's source), an Input's device
    (CUDA inputs need a CUDA device torch has). OpenCLError when there is no OpenCL device."""
    from torchtrt_c import _C
    from torchtrt_c._devices import _no_device, devices
    devices()
    if resolve_device(settings.device) is None:
        _C.default_device()   # an unknown TORCHTRT_C_DEVICE is an error, not a torch fallback
    for i, inp in enumerate(inputs):
        dev = getattr(inp, "device", None)
        if dev is None:
            continue
        try:
            dev = torch.device(dev)
        except (RuntimeError, TypeError) as ex:
            raise _no_device(f"input {inp.name or i}: device {dev!r} is not a device ({ex})", _C.devices()) from None
        if dev.type == "cuda" and not (torch.cuda.is_available() and (dev.index or 0) < torch.cuda.device_count()):
            have = (f"torch sees {torch.cuda.device_count()} CUDA device(s)" if torch.cuda.is_available() else
                    f"torch {torch.__version__} sees no CUDA device")
            raise _no_device(f"input {inp.name or i}: device {dev}, but {have}", _C.devices())


# ---------------------------------------------------------------- engines
_pending = {}   # engine cache path -> the thread writing it
_pending_lock = threading.Lock()


def _write_behind(path: str, blob: bytes, after=(), write=None) -> None:
    """Writes a cache entry in a thread (a BERT-base engine blob is 440 MB: seconds of disk),
    overlapping the engines built after it and whatever follows the compile: the compile
    returns before its entries are on disk. Temporary file renamed into place, so readers see
    whole entries only; a later compile of the same entry waits for the write (_wait_written),
    and the interpreter waits for these (non-daemon) threads before it exits. after: paths
    whose writes must finish first; write: a callable writing the entry itself (else blob)."""
    def work():
        try:
            for p in after:
                _wait_written(p)
            if write is not None:
                write()
                return
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = path + f".{os.getpid()}.{threading.get_ident()}.tmp"
            with open(tmp, "wb") as f:
                f.write(blob)
            os.replace(tmp, path)
        except Exception as ex:  # noqa: BLE001  (a cache not written only costs the next compile)
            log.warning("could not write cache entry %s: %s", path, ex)
        finally:
            with _pending_lock:
                if _pending.get(path) is threading.current_thread():
                    del _pending[path]
    _wait_written(path)
    th = threading.Thread(target=work, name="torchtrt_c-engine-cache", daemon=False)
    with _pending_lock:
        _pending[path] = th
    th.start()


def _engine_file_writer(path: str, engine):
    """A write for _write_behind that serialises the engine in the writing thread (the C core
    releases the GIL): the compile does not wait for the engine's blob (0.3-1.9 s for a
    transformer's 500 MB of weights, most of it page faults on fresh memory)."""
    def write():
        blob = engine.serialize()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = path + f".{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "wb") as f:
            f.write(blob)
        os.replace(tmp, path)
    return write


def wait_engine_cache_writes() -> None:
    """Returns once every engine cache entry this process has started writing is on disk.
    compile() returns before its entries are written (see _write_behind); whoever looks at
    engine_cache_dir right after (another process started now, a test) waits here first."""
    _wait_written()


def _wait_written(path: str = None) -> None:
    """Waits for the pending cache write of path (all of them when None)."""
    with _pending_lock:
        ths = list(_pending.values()) if path is None else [_pending.get(path)]
    for th in ths:
        if th is not None and th is not threading.current_thread():
            th.join()


class _EngineFactory:
    def __init__(self, settings: CompilationSettings, imp: ImportResult, view: GraphView, digests=None):
        self.s = settings
        self.digests = digests if digests is not None else {}  # weight identity -> sha256 (module cache key's)
        self.imp = imp
        self.view = view
        self.device = resolve_device(settings.device)
        self.profile = None      # a CompileProfile recording each engine (set by stitch)
        self._keys = {}          # engine name -> its cache key (names its content, as a blob hash would)
        self.files = {}          # engine name -> its engine cache file (written or read)

    def _cache_key(self, sub) -> str:
        h = hashlib.sha256()
        h.update(str(sub).encode())
        for n in sub.nodes():
            if n["op"] == "prim.Constant":
                for o in n["outputs"]:
                    t = self.imp.weights.get(o)
                    if t is not None:
                        h.update(o.encode())
                        # the module cache's key hashed most weights a moment ago (same storage,
                        # view and version): their digests stand for the bytes
                        d = self.digests.get(_weight_ident(t))
                        if d is None:
                            d = _content_digest(t)
                        h.update(d)
        h.update(json.dumps(self.s.engine_key_fields(), sort_keys=True).encode())
        # the TORCHTRT_C_* settings in force (kernel paths, tiles, native steps: they change the
        # engine), as the module cache's key takes them
        from torchtrt_c import settings as knobs
        h.update(json.dumps(sorted(knobs.effective().items())).encode())
        h.update(json.dumps({k: list(v) for k, v in self.imp.symbols.items()}, sort_keys=True).encode())
        from torchtrt_c.dynamo._module_cache import _code_fingerprint
        h.update(_code_fingerprint().encode())  # an edited or rebuilt torchtrt_c builds anew
        from torchtrt_c import _C
        dev = _C.devices()[self.device if self.device is not None else _C.default_device()]
        h.update(json.dumps({k: dev.get(k) for k in ("platform", "name", "vendor", "driver")},
                            sort_keys=True, default=str).encode())
        return h.hexdigest()

    def build(self, sub, name: str):
        rec = self.profile.engine(name) if self.profile is not None else {"seconds": {}}
        sec = rec["seconds"]
        t = time.perf_counter()
        try:
            return self._build(sub, name, rec, sec)
        except Exception as ex:
            # kept on the profile: a segment that falls back to torch here is otherwise only a
            # log line, and a dry run (which builds nothing) cannot see it
            rec["source"] = "build failed"
            rec["failed"] = str(ex)
            raise
        finally:
            sec["total"] = time.perf_counter() - t

    def _build(self, sub, name, rec, sec):
        from torchtrt_c import _C
        path = None
        rec["source"] = "built"
        if self.s.cache_built_engines or self.s.reuse_cached_engines:
            t = time.perf_counter()
            key = self._cache_key(sub)
            sec["cache_key"] = time.perf_counter() - t
            self._keys[name] = key
            path = os.path.join(os.fspath(self.s.engine_cache_dir), key[:40] + ".ttce")
            self.files[name] = path
            _wait_written(path)
            if self.s.reuse_cached_engines and os.path.exists(path):
                t = time.perf_counter()
                # compiled before in this process: its engine is still live (the runtime's
                # registry, by the same id), so nothing is deserialised or uploaded again, and
                # its blob is the live module's (not the file's bytes, read again)
                from torchtrt_c.runtime._execute import ENGINES
                from torchtrt_c.dynamo._module_cache import _live_blob
                e = ENGINES.peek(key[:32])
                live_blob = _live_blob(key[:32]) if e is not None else None
                if e is not None:  # without a live blob: the new module's blob is deferred
                    rec["source"] = "engine cache (live)"
                    sec["load"] = time.perf_counter() - t
                    log.info("%s: reused cached engine %s (live)", name, path)
                    return e, live_blob
                with open(path, "rb") as f:
                    blob = f.read()
                try:
                    rec["source"] = "engine cache" if e is None else "engine cache (live)"
                    if e is None:
                        e = _C.Engine.deserialize(blob, device=self.device)
                        rec["build"] = e.build_profile()
                    sec["load"] = time.perf_counter() - t
                    log.info("%s: reused cached engine %s", name, path)
                    return e, blob
                except Exception as ex:  # a stale/corrupt cache entry: rebuild it
                    log.warning("%s: ignoring cached engine %s (%s)", name, path, ex)
                    rec["source"] = "built"
                    rec["rejected"] = str(ex)
        t = time.perf_counter()
        e = _C.Engine.build(sub, name=name, device=self.device, precision=self.s.precision(),
                            optimization_level=self.s.opt_level(),
                            tf32_matmul=self.s.tf32_policy()["matmul"], tf32_conv=self.s.tf32_policy()["conv"],
                            check_indices=self.s.check_indices,
                            cache_dir=os.fspath(self.s.engine_cache_dir) if self.s.cache_built_engines else None)
        sec["build"] = time.perf_counter() - t
        rec["build"] = e.build_profile()
        # no blob now: the module's is made when something asks for it (EngineModule.deferred),
        # the engine cache file's in the thread that writes it
        if path is not None and self.s.cache_built_engines:
            _write_behind(path, None, write=_engine_file_writer(path, e))
        return e, None

    def meta(self, e, name: str, blob) -> EngineMeta:
        """blob: the engine's bytes, or None when its blob is deferred."""
        used = set()
        ios = []
        for io in (e.inputs, e.outputs):
            lst = []
            for b in io:
                shape = [d if isinstance(d, int) else str(d) for d in b["shape"]]
                used.update(Dim.parse(d).sym for d in shape if isinstance(d, str))
                d = {"name": b["name"], "dtype": b["dtype"], "shape": shape}
                if b.get("written"):
                    d["written"] = True   # the engine writes this input in place (a KV cache)
                lst.append(d)
            ios.append(lst)
        syms = {s: [self.imp.symbols[s][0], self.imp.symbols[s][2]] for s in used if s in self.imp.symbols}
        key = self._keys.get(name)   # hashing a 440 MB blob again took a second
        if key is None and blob is None:
            # no content key without the engine cache: an id of its own (a loaded copy of
            # this module in this process still finds the live engine by it)
            ident = uuid.uuid4().hex
        elif key is None:
            data = blob.numpy() if isinstance(blob, torch.Tensor) else blob
            ident = hashlib.sha256(memoryview(data)).hexdigest()[:32]
        else:
            ident = key[:32]
        return EngineMeta({"id": ident, "name": name,
                           "inputs": ios[0], "outputs": ios[1], "symbols": syms})


# ---------------------------------------------------------------- stitching
def _fx_codegen(ep):
    from torch.export._unlift import _get_codegen
    names = None
    try:
        names = ep.module_call_graph[0].signature.forward_arg_names
    except Exception:
        names = None
    return _get_codegen(ep.call_spec.in_spec, ep.call_spec.out_spec, names)


def stitch(imp: ImportResult, part: dict, settings: CompilationSettings, progress: Progress,
           ep=None, build_engines: bool = True, orig_input_dtypes=None,
           input_specs=None, codegen=None, engine_files: dict = None,
           weight_digests: dict = None, copy_back=()) -> torch.fx.GraphModule:
    """engine_files, when given, receives each engine's cache file (engine name -> path);
    weight_digests: the module cache key's weight digests (the engine keys reuse them);
    copy_back: (input, output) positions of graph outputs that are an input's new value
    (dynamo/_mutations.py): the module copies them into the input and does not return them."""
    g = imp.graph
    view = GraphView(g)
    parent = torch.fx.Graph()
    root = torch.nn.Module()
    used = set()
    env = {}
    placeholders = []
    for k, v in enumerate(g.inputs):
        ph = parent.placeholder(_ident(v, used))
        placeholders.append(ph)
        if orig_input_dtypes is not None and orig_input_dtypes[k] == torch.float64 and settings.truncate_double:
            ph = parent.call_function(torch.ops.aten._to_copy.default, (ph,), {"dtype": torch.float32})
        env[v] = ph
    segs = part["segments"]
    acc = [s for s in segs if s["target"] == OPENCL]
    factory = _EngineFactory(settings, imp, view, weight_digests) if build_engines and acc else None
    if factory is not None:
        factory.profile = progress.profile
    n_built = 0
    for seg in segs:
        idx = seg["index"]
        outs = list(seg["outputs"])
        mod, args = None, None
        if seg["target"] == "torch":
            name = f"_run_on_gpu_{idx}"
        elif seg["target"] != OPENCL:  # another backend of hierarchical partitioning
            name = f"_run_on_acc_{seg['target']}_{idx}"
        else:
            name = f"_run_on_acc_{idx}"
            if build_engines:
                n_built += 1
                progress.engine(n_built, len(acc), name)
                sub, in_names, out_names = g.extract(seg["nodes"])
                try:
                    e, blob = factory.build(sub, name)
                    meta = factory.meta(e, name, blob)
                    if blob is None:
                        mod = EngineModule.deferred(e, meta)
                    else:
                        mod = (EngineModule.from_tensor(blob, meta, engine=e) if isinstance(blob, torch.Tensor)
                               else EngineModule(blob, meta, engine=e))
                        remember_blob(meta.id, mod.engine)
                    args, outs = list(in_names), list(out_names)
                except Exception as ex:
                    from torchtrt_c import DeviceNotFoundError, Error
                    # a device that is not there is the setting's fault, not the segment's
                    if (settings.pass_through_build_failures or not isinstance(ex, Error)
                            or isinstance(ex, DeviceNotFoundError)):
                        raise
                    log.warning("%s: engine build failed, running the segment in torch instead: %s",
                                name, ex)
                    mod = None
                    name = f"_run_on_gpu_{idx}"
        if mod is None:
            args = [v for v in seg["inputs"] if not view.is_constant(v)]
            mod = build_torch_module(view, seg["nodes"], args, outs, imp,
                                     class_name="TorchSegment" if name.startswith("_run_on_gpu") else "AccStandIn")
        root.add_module(name, mod)
        missing = [v for v in args if v not in env]
        if missing:
            raise RuntimeError(f"{name}: inputs {missing} are not produced by an earlier segment")
        call = parent.call_module(name, tuple(env[v] for v in args))
        for k, o in enumerate(outs):
            env[o] = parent.call_function(operator.getitem, (call, k))
    results = []
    for v in g.outputs:
        if v in env:
            results.append(env[v])
        elif view.is_constant(v):
            # a graph output that is a literal or a weight: materialise it in the parent
            info = view.value(v)
            if info["kind"] == "tensor":
                from torchtrt_c.dynamo._rebuild import tensor_from_graph
                t = imp.weights.get(v)
                attr = _ident("_const_" + v, used)
                root.register_buffer(attr, t if t is not None else tensor_from_graph(g, v))
                results.append(parent.get_attr(attr))
            else:
                results.append(None if info["kind"] == "none" else info["const"])
        else:
            raise RuntimeError(f"graph output %{v} is not produced by any segment")
    for inp, out in copy_back:   # an input's new value written back into it, as torch.export's module does
        # (resized first where its shape changed: an out= tensor of another shape, which the op
        # resizes in eager; a no-op otherwise)
        parent.call_function(torch.Tensor.resize_as_, (placeholders[inp], results[out]))
        parent.call_function(torch.Tensor.copy_, (placeholders[inp], results[out]))
    dropped = {out for _, out in copy_back}
    results = [r for i, r in enumerate(results) if i not in dropped]
    parent.output(tuple(results))
    if engine_files is not None and factory is not None:
        engine_files.update(factory.files)
    gm = CompiledModule(root, parent, class_name="CompiledModule")
    _finish_module(gm, settings, ep, input_specs, codegen)
    return gm


def _finish_module(gm, settings, ep, input_specs, codegen=None):
    """The pytree calling convention of the exported program, the user-input check, and the
    torch segments' constants on the inputs' device."""
    if ep is not None or codegen is not None:
        gm.graph._codegen = codegen if codegen is not None else _fx_codegen(ep)
        gm.recompile()
    if input_specs is not None:
        gm._ttc_specs = list(input_specs)
        gm._ttc_truncate = settings.truncate_double
        device = _inputs_device(input_specs)
        if device is not None:
            _place_constants(gm, device)


def _inputs_device(input_specs):
    """The CUDA device the module's inputs are on (the first input on one), else None."""
    for _, inp in input_specs:
        d = getattr(inp, "device", None)
        if d is not None and torch.device(d).type == "cuda":
            return torch.device(d)
    return None


def _place_constants(gm, device) -> None:
    """Torch segments (and the parent's own constants) read their tensors on the device of the
    module's inputs: the import keeps host copies of the weights and the C graph makes its
    constants on the host, and a torch op given a CUDA input and a host constant fails ("Expected
    all tensors to be on the same device"). That includes a segment whose engine failed to build
    and runs in torch instead. Engine blobs stay where they are: the runtime reads them on the
    host."""
    from torchtrt_c.runtime._module import EngineModule
    for _, mod in gm.named_children():
        if not isinstance(mod, EngineModule):
            mod.to(device)
    for name, b in list(gm.named_buffers(recurse=False)):
        gm.register_buffer(name, b.to(device))


# ---------------------------------------------------------------- pipeline
def _keep_ops(settings):
    keep = []
    for name in settings.torch_executed_op_names():
        ns, op, ov = name.split(".")
        keep.append(getattr(getattr(getattr(torch.ops, ns), op), ov))
    return keep


def _undecomposable_fallbacks(imp, settings, forced) -> set:
    from torchtrt_c.dynamo.lowering import NATIVE_OPS
    from torchtrt_c.dynamo.lowering._decompositions import TORCHTRT_C_DECOMPOSITIONS as ours
    from torchtrt_c.dynamo.lowering._decompositions import torch_disabled_decompositions
    native = {str(o): o for o in NATIVE_OPS if o not in torch_disabled_decompositions}
    if not native:
        return set()
    user_forced = set(settings.torch_executed_op_names())
    table = torch.export.default_decompositions()
    cov = imp.graph.coverage(partition_settings(settings, forced))
    ops = {node_key(n): n["op"] for n in imp.graph.nodes()}
    out = set()
    for name in cov.get("reasons", {}):
        op = native.get(ops.get(name))
        if op is not None and name not in forced and str(op) not in user_forced and (op in table or op in ours):
            out.add(op)
    return out


def lower(imp: ImportResult, settings, progress):
    g = imp.graph
    if settings.debug:  # printing a big graph costs time: only when asked for
        progress.dump("imported graph", str(g))
    progress.phase("lowering")
    passes = g.lower(debug=settings.debug)
    progress.profile.add_passes(passes)
    if settings.debug:
        for p in passes:
            log.debug("pass %s: %.4fs%s", p[0], p[1], " (changed)" if p[2] else "")
        progress.dump("lowered graph", str(g))


def partition(imp: ImportResult, settings, forced, progress):
    progress.phase("partitioning")
    part = imp.graph.partition(partition_settings(settings, forced))
    if settings.debug:
        progress.dump("partition", "\n".join(
            f"segment {s['index']} [{s['target']}] {len(s['nodes'])} nodes: in={s['inputs']} out={s['outputs']}"
            for s in part["segments"]))
    return part


def _input_names(ep, n):
    try:
        names = list(ep.module_call_graph[0].signature.forward_arg_names)
    except Exception:
        names = []
    if len(names) < n:
        names = [n_.name for n_ in ep.graph.nodes if n_.op == "placeholder"][-n:]
    return names[:n]


def _first_node_with_dim(ep, expr: str):
    for n in ep.graph.nodes:
        vals = n.meta.get("val")
        for v in vals if isinstance(vals, (list, tuple)) else [vals]:
            if isinstance(v, torch.Tensor) and any(str(d) == expr for d in v.shape):
                return n
    return None


def _non_affine_text(ep, node_name, ex: NonAffineDim) -> str:
    """What a dim our shapes cannot hold is, where it comes from and what to make static."""
    n = next((x for x in ep.graph.nodes if x.name == node_name), None) if node_name else None
    if n is None:
        n = _first_node_with_dim(ep, ex.expr)
    where = ""
    if n is not None:
        line = (n.meta.get("stack_trace") or "").strip().splitlines()
        where = f" at node {n.name} ({n.target}{', `' + line[-1].strip() + '`' if line else ''})"
    why = ("a product of dynamic dims" if ex.several_symbols else
           "not of that form (a floor division, e.g. a strided convolution or pooling over a "
           "dynamic length, or another non-affine function)")
    return (f"a tensor{where} has dim {ex.expr}; torchtrt_c's dims are affine in one dynamic dim "
            f"(a*s + b) and this is {why}")


def _import(ep, arg_inputs, kwarg_inputs, settings) -> ImportResult:
    """import_program. A node whose output has a dim our shapes cannot hold (B*S, L//5) runs in
    torch, and what reads it follows it there (_warn_non_affine names the first such node and
    what to make static to compile it). Such a dim on a graph input is a torchtrt_c.Error."""
    try:
        return import_program(ep, arg_inputs, kwarg_inputs, settings)
    except NonAffineDim as ex:
        from torchtrt_c import Error
        raise Error(f"torchtrt_c.compile: {_non_affine_text(ep, None, ex)}. Make the dynamic dims it "
                    f"comes from static (an Input with min == max there), or compute it without "
                    f"combining them.") from None


def _warn_non_affine(ep, imp: ImportResult):
    """The warning for nodes that run in torch because of their dims (once per compile)."""
    if imp.non_affine:
        name, ex = next(iter(imp.non_affine.items()))
        more = len(imp.non_affine) - 1
        log.warning("torchtrt_c.compile: %s, so it runs in torch, with what depends on it%s. Make the "
                    "dynamic dims it comes from static (an Input with min == max there) to compile it.",
                    _non_affine_text(ep, name, ex), f" ({more} more node(s) like it)" if more else "")


def compile_module(module, arg_inputs, kwarg_inputs, settings: CompilationSettings):
    progress = Progress(settings.debug)
    try:
        gm = _compile_module(module, arg_inputs, kwarg_inputs, settings, progress)
    finally:
        progress.close()
    gm._torchtrt_c_profile = progress.profile
    return gm


def _compile_module(module, arg_inputs, kwarg_inputs, settings: CompilationSettings, progress: Progress):
    if settings.debug:
        log.setLevel(logging.DEBUG)
    if not settings.dryrun:
        # No device, or a device setting that cannot be honoured (device=, TORCHTRT_C_DEVICE,
        # an Input on a CUDA device torch does not have), fails now rather than after capture
        # (a dry run needs no device)
        check_devices(settings, list(arg_inputs) + list(kwarg_inputs.values()))
    use_mc = (not settings.dryrun and (settings.cache_built_engines or settings.reuse_cached_engines)
              and _knobs.get("MODULE_CACHE") != "0")
    progress.phase("capture (torch.export)")
    prehash = None
    if use_mc:  # the weights' hashes for the module cache's key, computed while capture runs
        from torchtrt_c.dynamo import _module_cache as mc
        dev = resolve_device(settings.device)
        prehash = mc.Prehash(module, mc.context_text(arg_inputs, kwarg_inputs, settings, dev),
                             settings if settings.reuse_cached_engines else None, dev)
    if isinstance(module, torch.export.ExportedProgram):  # captured by the user already
        ep = copy_program(module)
    else:
        ep = capture(module, arg_inputs, kwarg_inputs, stack_traces=True if settings.debug else None)
    kwarg_inputs = kwarg_order(ep, kwarg_inputs)
    all_inputs = list(arg_inputs) + list(kwarg_inputs.values())
    # one per program input (a list of images counts each): Input, or a constant (no dtype)
    leaf_dtypes = [getattr(x, "dtype", None) for x in input_leaves(arg_inputs, kwarg_inputs)]
    mkey = None
    digests = {}
    if use_mc:
        digests = prehash.digests()
        mkey, gm = _module_cache_lookup(ep, arg_inputs, kwarg_inputs, settings, progress, digests)
        if prehash.preloaded:
            progress.profile.module_cache["preloaded_engines"] = len(prehash.preloaded)
        if gm is not None:
            _finish_module(gm, settings, ep, list(zip(_input_names(ep, len(all_inputs)), all_inputs)))
            progress.done()
            return gm
    # weight-only quantized linears (torchao's, or quantize=): int8/int4 weights in the engines
    rewrite_weight_only(ep, settings.quantize, settings.quantize_group_size)
    progress.phase("decompositions")
    _fold_quantized_layers(ep, settings)
    ep = decompose(ep, keep=_keep_ops(settings))
    progress.dump("decomposed FX graph", lambda: str(ep.graph))
    forced = forced_nodes(ep.graph, settings)
    progress.phase("import")
    muts = plan_mutations(ep)   # inputs the program writes: in place, or copied back
    imp = _import(muts.view if muts else ep, arg_inputs, kwarg_inputs, settings)
    lower(imp, settings, progress)
    # Ops we kept whole for the C core but that it cannot take here (no converter, or a
    # validator said no): decompose them after all, so their pieces can still run on OpenCL.
    redo = _undecomposable_fallbacks(imp, settings, forced)
    if redo:
        log.info("decomposing %s after all (not convertible whole)", ", ".join(sorted(map(str, redo))))
        progress.phase("decompositions")
        ep = decompose(ep, keep=_keep_ops(settings), decompose=redo)
        forced = forced_nodes(ep.graph, settings)
        progress.phase("import")
        muts = plan_mutations(ep)
        imp = _import(muts.view if muts else ep, arg_inputs, kwarg_inputs, settings)
        lower(imp, settings, progress)
    _warn_non_affine(ep, imp)
    part = partition(imp, settings, forced, progress)
    specs = list(zip(_input_names(ep, len(all_inputs)), all_inputs))
    if settings.dryrun:
        from torchtrt_c.dynamo._dryrun import DryRunReport
        progress.phase("dry-run report + stitching")
        report = DryRunReport.build(imp, part, settings, forced)
        gm = stitch(imp, part, settings, progress, ep=ep, build_engines=False,
                    orig_input_dtypes=leaf_dtypes, input_specs=specs,
                    copy_back=muts.copy_back if muts else ())
        progress.profile.dryrun = True
        report.profile = progress.done()
        report.emit(settings.dryrun)
        gm.dryrun_report = report
        return gm
    progress.phase("engines + stitching")
    files = {}
    gm = stitch(imp, part, settings, progress, ep=ep,
                orig_input_dtypes=leaf_dtypes, input_specs=specs, engine_files=files,
                weight_digests=digests, copy_back=muts.copy_back if muts else ())
    progress.dump("compiled module", lambda: gm.code)
    if prehash is not None:
        from torchtrt_c.dynamo._module_cache import drop_unused_preloads
        drop_unused_preloads(prehash, gm)
    if mkey is not None and settings.cache_built_engines:
        _module_cache_store(settings, mkey, gm, files, progress, prehash.prekey if prehash else None)
    progress.done()
    return gm


def _module_cache_lookup(ep, arg_inputs, kwarg_inputs, settings, progress, digests):
    """(key or None, the cached module or None). The key is taken right after capture, so a hit
    skips decompositions, import, lowering, partitioning and the engines' builds."""
    from torchtrt_c.dynamo import _module_cache as mc
    progress.phase("engine cache lookup")
    rec = progress.profile.module_cache
    t = time.perf_counter()
    try:
        key, hash_s = mc.module_key(ep, arg_inputs, kwarg_inputs, settings, resolve_device(settings.device),
                                    digests)
    except mc.Unserializable as ex:
        rec.update(result=f"off: the program holds {ex}")
        log.info("module cache: not used (the program holds %s)", ex)
        return None, None
    rec.update(key=key[:40], key_s=time.perf_counter() - t, weights_hash_s=hash_s, result="miss")
    if not settings.reuse_cached_engines:
        rec["result"] = "lookup off (reuse_cached_engines=False)"
        return key, None
    path = mc.entry_path(settings, key)
    entry = mc.writing_entry(settings, key)   # still being written: its engines are live here
    if entry is None:
        _wait_written(path)
        if not os.path.exists(path):
            return key, None
    progress.phase("load cached module")
    t = time.perf_counter()
    try:
        gm = mc.load_module(settings, key, progress.profile, entry=entry)
    except (mc.RejectedEntry, OSError) as ex:
        progress.profile.engines.clear()
        rec["result"] = f"rejected: {ex}"
        log.warning("torchtrt_c: ignoring the cached compile %s: %s; compiling the model again", path, ex)
        return key, None
    rec.update(result="hit", load_s=time.perf_counter() - t)
    log.info("module cache: reused %s", path)
    return key, gm


def _module_cache_store(settings, key, gm, files, progress, prekey=None):
    from torchtrt_c.dynamo import _module_cache as mc
    progress.phase("module cache entry")
    rec = progress.profile.module_cache
    try:
        path, write = mc.prepare_entry(settings, key, gm, files, prekey)
        _write_behind(path, None, after=list(files.values()), write=write)
        rec["result"] = "stored" if rec.get("result") in (None, "miss") else rec["result"] + "; stored again"
        log.info("module cache: writing %s", path)
    except mc.Unserializable as ex:
        rec["result"] = f"not stored: the module holds {ex}"
        log.info("module cache: not stored (%s)", ex)
    except OSError as ex:
        rec["result"] = f"not stored: {ex}"
        log.warning("could not write module cache entry: %s", ex)
