"""The whole-module cache: a warm compile is capture + a key + a lookup.

    key = module_key(ep, arg_inputs, kwarg_inputs, settings, device)   # right after capture
    gm = load_module(settings, key, ep, specs)     # None on a miss (or a rejected entry)
    store_module(settings, key, gm)                # after a cold compile

The key names everything the compiled module depends on: the captured program (its graph
printout, every node's shapes/dtypes/strides, the signature, range constraints and pytree
specs), all weight and constant bytes (a hash of every byte, _content_digest: a sampled hash
could miss a changed element, and a stale hit is a silently wrong answer), the Input specs, the settings
that change what is compiled, torchtrt_c's code (package version plus the size and mtime of its
Python files and the extension), its TORCHTRT_C_* environment, torch's version and the OpenCL
device (platform, name, vendor, driver).

An entry (`<key>.ttcm` in engine_cache_dir) holds the stitched module: its parent graph and its
torch segments as restricted node lists (only torch ops, getitem and _to_copy are allowed as
targets: loading an entry never runs code from the file), their buffers as tensors
(torch.load weights_only=True), and per engine its meta plus the engine cache entry's file
name, size and CRC-32. The engines themselves stay in their `.ttce` files (written by the
engine factory); a hit reads and checks them and deserialises them in a background thread:
the compile returns at once, an engine's first call waits for its load (an engine compiled
earlier in this process is reused live, its blob shared). TORCHTRT_C_MODULE_CACHE=0 turns the
module cache off (the per-engine cache still works). Preload: the weights are hashed while
torch.export runs (Prehash); with them, a prekey (weights, settings, inputs, code, device: the
key without the program) names an index file `<prekey>.ttcx` holding the module key stored
last for them, and that entry's engines start loading while capture still runs. The lookup
after capture decides with the full key; engines preloaded for a miss are dropped. An entry whose
checksum, format or engine files do not match is rejected with a warning that says why, and
the model is compiled again (overwriting it).
"""
from __future__ import annotations

import hashlib
import io
import json
import logging
import operator
import os
import re
import threading
import time
import weakref
import zlib
from concurrent.futures import ThreadPoolExecutor

import torch
import torch.fx

from torchtrt_c import settings as _knobs

log = logging.getLogger("torchtrt_c")

FORMAT = "torchtrt_c module cache 1"
MAGIC = b"TTCM1\n"
_SUFFIX = ".ttcm"
_INDEX_SUFFIX = ".ttcx"   # prekey (weights + context, no program) -> the module key last stored


class Unserializable(Exception):
    """The stitched module holds something an entry cannot describe (then no entry is written)."""


class RejectedEntry(Exception):
    """A cache entry that cannot be used (corrupt, truncated, another format, engines missing)."""


# ---------------------------------------------------------------- the key
_code_fp = None


def _code_fingerprint() -> str:
    """torchtrt_c's code: version, and size + mtime of each Python file and of the extension
    (a rebuilt extension or an edited converter must not hit entries compiled by the old one)."""
    global _code_fp
    if _code_fp is None:
        import torchtrt_c
        from torchtrt_c import _C
        h = hashlib.sha256(str(getattr(torchtrt_c, "__version__", "")).encode())
        root = os.path.dirname(os.path.abspath(torchtrt_c.__file__))
        files = [os.path.abspath(_C.__file__)]
        for d, _, names in os.walk(root):
            files += [os.path.join(d, n) for n in names if n.endswith(".py")]
        for f in sorted(files):
            st = os.stat(f)
            h.update(f"{os.path.relpath(f, root)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
        _code_fp = h.hexdigest()
    return _code_fp


def _meta_str(v) -> str:
    if isinstance(v, torch.Tensor):
        try:
            stride = tuple(v.stride())
        except Exception:  # sparse / nested: no strides
            stride = None
        return f"T({v.dtype},{tuple(v.shape)},{stride},{v.device.type})"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(_meta_str(x) for x in v) + "]"
    return repr(v) if isinstance(v, (int, float, bool, str, type(None), torch.SymInt, torch.SymFloat,
                                     torch.SymBool)) else type(v).__name__


def _program_text(ep) -> str:
    parts = [str(ep.graph), str(ep.graph_signature), str(sorted((str(k), str(v)) for k, v in
                                                                 ep.range_constraints.items()))]
    for n in ep.graph.nodes:
        parts.append(f"{n.name}:{_meta_str(n.meta.get('val'))}")
    try:
        parts += [str(ep.call_spec.in_spec), str(ep.call_spec.out_spec)]
    except Exception:
        pass
    return "\n".join(parts)


def _tensor_bytes(t: torch.Tensor):
    t = t.detach()
    if t.device.type == "meta" or isinstance(t, torch._subclasses.FakeTensor):
        raise Unserializable("a weight without data (meta/fake tensor)")
    if t.device.type != "cpu":
        t = t.cpu()
    if t.is_sparse or t.layout != torch.strided or t.is_quantized:
        raise Unserializable(f"a {t.layout} tensor")
    return t.contiguous().reshape(-1).view(torch.uint8).numpy()


def _weights(ep) -> list:
    out = []
    for spec in ep.graph_signature.input_specs:
        if spec.target is None:
            continue
        t = ep.state_dict.get(spec.target)
        if t is None:
            t = ep.constants.get(spec.target)
        if isinstance(t, torch.Tensor):
            out.append((spec.target, t))
        elif t is not None:  # a script object or something else we cannot hash: no key
            raise Unserializable(f"constant {spec.target} is a {type(t).__name__}")
    return out


def _content_digest(t: torch.Tensor) -> bytes:
    """dtype, shape and every byte. The bytes go through the core's 64-bit hash (ttc_hash64,
    four multiply-rotate lanes: 0.3 s per GB here against sha256's 1.6 s; it drops the GIL
    too), not sha256: GPT-2's 500 MB took 0.8 s of sha256 on the core capture was not using,
    which a loaded 2-core machine does not have. Any changed byte changes it (no sampling);
    accidental equality of two different tensors is 2^-64."""
    h = hashlib.sha256(f"{t.dtype}:{tuple(t.shape)}\n".encode())
    if t.numel():
        from torchtrt_c import _C
        h.update(_C.hash64(_tensor_bytes(t), 0x51F15EED).to_bytes(8, "little"))
    return h.digest()


def _ident(t: torch.Tensor):
    """What makes two tensor objects show the same bytes (a weight export hands back as it is,
    or as another view of the same storage)."""
    try:
        ptr = t.untyped_storage().data_ptr()
    except Exception:  # fake / meta tensors have no bytes: never matched
        return None
    if ptr == 0 and t.numel():  # meta storage
        return None
    # _version: an in-place op since the digest was taken (a pass, say) makes it another tensor
    return (ptr, t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype, str(t.device), t._version)


class Prehash:
    """Hashes a module's parameters and buffers in a thread while torch.export captures it
    (hashlib releases the GIL on big buffers, so the two overlap on a second core). The tensors
    are listed before capture starts: non-strict export swaps fake tensors into the module
    while it traces, the list keeps the real ones. module_key uses a digest here only for a
    tensor with the same storage, offset, shape, strides and dtype; others are hashed then."""

    def __init__(self, module: torch.nn.Module, context: bytes = None, settings=None, device=None):
        seen = {}
        self._names = []  # (name, ident) in the module's order, for the prekey
        for name, t in list(module.named_parameters()) + list(module.named_buffers()):
            if isinstance(t, torch.Tensor) and t.layout == torch.strided and not t.is_quantized:
                k = _ident(t)
                if k is not None:
                    seen.setdefault(k, t.detach())
                    self._names.append((name, k))
        self._items = list(seen.items())
        self._out = {}
        self._context, self._settings, self._device = context, settings, device
        self.prekey = None      # set once every weight is hashed (see _speculate)
        self.preloaded = []     # engine ids whose load _speculate started
        self._th = threading.Thread(target=self._run, name="torchtrt_c-prehash", daemon=True)
        self._th.start()

    def _run(self):
        for k, t in self._items:
            try:
                self._out[k] = _content_digest(t)
            except Exception:  # hashed again (and failing clearly) in module_key
                pass
        if self._context is not None and len(self._out) == len(self._items) and self._names:
            h = hashlib.sha256(b"prekey\n" + self._context)
            for name, k in self._names:
                h.update(name.encode() + b"\0" + self._out[k])
            self.prekey = h.hexdigest()
            try:
                if self._settings is not None:
                    self._speculate()
            except Exception as ex:  # noqa: BLE001  (only a head start: the lookup decides)
                log.debug("module cache: no preload (%s)", ex)

    def _speculate(self):
        """A model compiled before with these weights, settings and inputs most likely has the
        same program too: start loading its engines while capture still runs. Only a head
        start: the lookup after capture decides with the full key, and loaded engines are
        registered under their content ids, which are right whichever module uses them."""
        idx = os.path.join(os.fspath(self._settings.engine_cache_dir), self.prekey[:40] + _INDEX_SUFFIX)
        try:
            with open(idx) as f:
                key = f.read().strip()
        except OSError:
            return
        if not re.fullmatch(r"[0-9a-f]{64}", key) or not os.path.exists(entry_path(self._settings, key)):
            return
        manifest, _ = _read_entry(entry_path(self._settings, key), key)
        from torchtrt_c.runtime import _module
        from torchtrt_c.runtime._execute import ENGINES
        from torchtrt_c.runtime._shapes import EngineMeta
        for name, rec in manifest["modules"].items():
            if rec.get("kind") != "engine":
                continue
            meta = EngineMeta.from_json(rec["meta"])
            if ENGINES.peek(meta.id) is not None or meta.id in _module.PENDING:
                continue
            blob, _, _ = _engine_blob(self._settings, name, rec)
            entry = _load_behind(meta, blob, self._device)
            with _live_lock:
                _preloaded_blobs[meta.id] = (blob, entry)
            self.preloaded.append(meta.id)

    def digests(self) -> dict:
        self._th.join()
        return self._out


def _settings_text(s) -> str:
    import dataclasses
    skip = {"debug", "dryrun", "cache_built_engines", "reuse_cached_engines", "engine_cache_dir", "device"}
    d = {}
    for f in dataclasses.fields(s):
        if f.name in skip:
            continue
        v = getattr(s, f.name)
        if f.name == "torch_executed_modules":
            v = sorted(x if isinstance(x, str) else f"{x.__module__}.{x.__qualname__}" for x in v)
        elif f.name == "torch_executed_ops":
            v = s.torch_executed_op_names()
        elif isinstance(v, (set, frozenset)):
            v = sorted(map(str, v))
        d[f.name] = str(v)
    # the TF32 policy as resolved (None settings follow torch's switches at compile time)
    d["tf32_policy"] = str(sorted(s.tf32_policy().items()))
    return json.dumps(d, sort_keys=True)


def context_text(arg_inputs, kwarg_inputs, settings, device_index) -> bytes:
    """Everything of the key but the program and its weights: torchtrt_c's code and
    environment, torch, the device, the settings and the Input specs."""
    from torchtrt_c import _C
    parts = [_code_fingerprint(), f"torch {torch.__version__}",
             json.dumps(sorted(_knobs.effective().items()))]
    dev = _C.devices()[device_index if device_index is not None else _C.default_device()]
    parts.append(json.dumps({k: dev.get(k) for k in ("platform", "name", "vendor", "driver", "version")},
                            sort_keys=True, default=str))
    parts.append(_settings_text(settings))
    from torchtrt_c._input import Input, input_leaves
    for i in input_leaves(arg_inputs, kwarg_inputs):   # a constant input: its value and type
        parts.append(repr((tuple(i.min_shape), tuple(i.opt_shape), tuple(i.max_shape), str(i.dtype)))
                     if isinstance(i, Input) else repr((type(i).__name__, i)))
    parts.append(repr(list(kwarg_inputs)))
    import torch.utils._pytree as pytree
    parts.append(str(pytree.tree_structure((tuple(arg_inputs), dict(kwarg_inputs)))))
    return "\n".join(parts).encode()


def module_key(ep, arg_inputs, kwarg_inputs, settings, device_index, digests: dict) -> tuple:
    """(key hex, seconds spent hashing weights after capture). digests: tensor identity (_ident)
    -> content digest, from Prehash; the digests computed here are added (the engine cache keys
    reuse them). Raises Unserializable when the program holds something the key cannot name
    (then nothing is cached)."""
    h = hashlib.sha256(FORMAT.encode())
    h.update(context_text(arg_inputs, kwarg_inputs, settings, device_index))
    h.update(_program_text(ep).encode())
    t = time.perf_counter()
    items = _weights(ep)
    pre = digests
    digests = [pre.get(_ident(x)) for _, x in items]
    todo = [i for i, d in enumerate(digests) if d is None]
    big = sum(items[i][1].numel() * items[i][1].element_size() for i in todo)
    if big > (64 << 20) and len(todo) > 1:  # threads: hashlib releases the GIL on big buffers
        with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as ex:
            for i, d in zip(todo, ex.map(_content_digest, [items[i][1] for i in todo])):
                digests[i] = d
    else:
        for i in todo:
            digests[i] = _content_digest(items[i][1])
    for i in todo:
        k = _ident(items[i][1])
        if k is not None:
            pre[k] = digests[i]
    for (name, _), d in zip(items, digests):
        h.update(name.encode() + b"\0" + d)
    return h.hexdigest(), time.perf_counter() - t


def entry_path(settings, key: str) -> str:
    return os.path.join(os.fspath(settings.engine_cache_dir), key[:40] + _SUFFIX)


# ---------------------------------------------------------------- graphs <-> node lists
_FUNCS = {"getitem": operator.getitem}
_FUNC_NAMES = {v: k for k, v in _FUNCS.items()}


def _enc(a):
    if isinstance(a, torch.fx.Node):
        return {"n": a.name}
    if a is None or isinstance(a, (bool, int, str)):
        return a
    if isinstance(a, float):
        return {"f": repr(a)}  # inf/nan kept exactly
    if isinstance(a, list):
        return {"l": [_enc(x) for x in a]}
    if isinstance(a, tuple):
        return {"t": [_enc(x) for x in a]}
    if isinstance(a, dict) and all(isinstance(k, str) for k in a):
        return {"d": {k: _enc(v) for k, v in a.items()}}
    if isinstance(a, torch.dtype):
        return {"dtype": str(a).replace("torch.", "")}
    if isinstance(a, torch.device):
        return {"device": str(a)}
    if isinstance(a, (torch.layout, torch.memory_format)):
        return {"attr": str(a).replace("torch.", "")}
    raise Unserializable(f"argument of type {type(a).__name__}")


def _dec(a, env):
    if not isinstance(a, dict):
        return a
    if "n" in a:
        return env[a["n"]]
    if "f" in a:
        return float(a["f"])
    if "l" in a:
        return [_dec(x, env) for x in a["l"]]
    if "t" in a:
        return tuple(_dec(x, env) for x in a["t"])
    if "d" in a:
        return {k: _dec(v, env) for k, v in a["d"].items()}
    if "dtype" in a:
        dt = getattr(torch, a["dtype"], None)
        if not isinstance(dt, torch.dtype):
            raise RejectedEntry(f"unknown dtype {a['dtype']!r}")
        return dt
    if "device" in a:
        return torch.device(a["device"])
    if "attr" in a:
        v = getattr(torch, a["attr"], None)
        if not isinstance(v, (torch.layout, torch.memory_format)):
            raise RejectedEntry(f"unknown torch attribute {a['attr']!r}")
        return v
    raise RejectedEntry(f"unknown argument encoding {sorted(a)}")


def encode_graph(g: torch.fx.Graph) -> list:
    out = []
    for n in g.nodes:
        if n.op == "call_function":
            if isinstance(n.target, torch._ops.OpOverload):
                target = "op:" + str(n.target)
            elif n.target in _FUNC_NAMES:
                target = _FUNC_NAMES[n.target]
            else:
                raise Unserializable(f"node {n.name} calls {n.target!r}")
        elif n.op in ("placeholder", "call_module", "get_attr", "output"):
            target = n.target
        else:
            raise Unserializable(f"node {n.name}: op {n.op}")
        out.append([n.op, n.name, target, _enc(n.args), _enc(dict(n.kwargs))])
    return out


def decode_graph(nodes: list) -> torch.fx.Graph:
    from torchtrt_c.dynamo._rebuild import resolve_op
    g = torch.fx.Graph()
    env = {}
    for op, name, target, args, kwargs in nodes:
        args = _dec(args, env)
        kwargs = _dec(kwargs, env)
        if op == "placeholder":
            n = g.placeholder(target)
        elif op == "output":
            n = g.output(args[0])
        elif op == "get_attr":
            n = g.get_attr(target)
        elif op == "call_module":
            n = g.call_module(target, tuple(args), kwargs)
        elif op == "call_function":
            if target.startswith("op:"):
                fn = resolve_op(target[3:])
                if not isinstance(fn, torch._ops.OpOverload):
                    raise RejectedEntry(f"unknown op {target[3:]!r}")
            elif target in _FUNCS:
                fn = _FUNCS[target]
            else:
                raise RejectedEntry(f"target {target!r} is not allowed")
            n = g.call_function(fn, tuple(args), kwargs)
        else:
            raise RejectedEntry(f"node op {op!r}")
        n.name = name
        env[name] = n
    g.lint()
    return g


# ---------------------------------------------------------------- live blobs
# engine id -> its blob tensor (a uint8 buffer of an EngineModule of this process): a warm
# compile in the same process shares it instead of reading the engine file again
_live_blobs = weakref.WeakValueDictionary()
_live_lock = threading.Lock()
# engine id -> (blob mapped and checked by a preload (Prehash._speculate), its engine's entry),
# until load_module takes them or drop_unused_preloads drops them (strong references: nothing
# else holds them yet)
_preloaded_blobs = {}


def remember_blob(engine_id: str, blob: torch.Tensor) -> None:
    with _live_lock:
        _live_blobs[engine_id] = blob


def _live_blob(engine_id: str):
    with _live_lock:
        return _live_blobs.get(engine_id)


# ---------------------------------------------------------------- store / load
def drop_unused_preloads(prehash, gm) -> None:
    """After a miss: engines a preload started loading that the compiled module does not use
    (same weights, another program: an edited forward) are dropped again, not kept for the
    life of the process."""
    if prehash is None or not prehash.preloaded:
        return
    for eid in prehash.preloaded:
        with _live_lock:
            # its entry goes with it unless the module uses it (then the module owns it)
            _preloaded_blobs.pop(eid, None)


def _engine_id(mod) -> str:
    from torchtrt_c.runtime._shapes import EngineMeta
    return EngineMeta.from_json(mod.meta).id


# entry path -> (manifest, tensors) of an entry this process is still writing: a compile of the
# same module meanwhile takes it from here when every engine in it is live, instead of waiting
# for the write (the engines' serialisation and 500 MB of disk for a transformer: a warm compile
# right after the cold one waited 0.9-1.4 s for it)
_writing = {}


def writing_entry(settings, key: str):
    """(manifest, tensors) of the entry for key while this process writes it and all of its
    engines are live, else None (read the file once written)."""
    from torchtrt_c.runtime._execute import ENGINES
    from torchtrt_c.runtime._shapes import EngineMeta
    entry = _writing.get(entry_path(settings, key))
    if entry is None:
        return None
    for rec in entry[0]["modules"].values():
        if rec["kind"] == "engine" and ENGINES.peek(EngineMeta.from_json(rec["meta"]).id) is None:
            return None
    return entry


def prepare_entry(settings, key: str, gm, engine_files: dict, prekey: str = None):
    """gm's entry as (path, write): write() writes it and may run in another thread, once the
    engine cache files named in engine_files are on disk (it checks). Everything that reads gm
    or its weights happens here, now: buffers are copied (a weight the user changes after the
    compile must not reach an entry keyed by the old one). Raises Unserializable when gm holds
    something an entry cannot describe."""
    from torchtrt_c.runtime._module import EngineModule
    tensors = {}
    mods = {}
    blobs = {}
    for name, mod in gm.named_children():
        if isinstance(mod, EngineModule):
            path = engine_files.get(name)
            if path is None:
                raise Unserializable(f"{name}: no engine cache file")
            # size and CRC-32 are the file's, taken when it is on disk: the module's own blob
            # may be deferred (never serialised), and the file is what a hit reads
            blobs[name] = path
            mods[name] = {"kind": "engine", "meta": mod.meta, "file": os.path.basename(path)}
        elif isinstance(mod, torch.fx.GraphModule):
            bufs = {}
            for bname, b in mod.named_buffers():
                if "." in bname:
                    raise Unserializable(f"{name}: nested buffer {bname}")
                # on the host: the compile that loads the entry puts them on its inputs' device
                tensors[f"{name}/{bname}"] = b.detach().cpu().clone()
                bufs[bname] = f"{name}/{bname}"
            if dict(mod.named_parameters()):
                raise Unserializable(f"{name}: has parameters")
            mods[name] = {"kind": "graph", "class": type(mod).__name__, "graph": encode_graph(mod.graph),
                          "buffers": bufs}
        else:
            raise Unserializable(f"submodule {name} is a {type(mod).__name__}")
    root_bufs = {}
    for bname, b in gm.named_buffers(recurse=False):
        tensors[f"/{bname}"] = b.detach().cpu().clone()
        root_bufs[bname] = f"/{bname}"
    manifest = {"format": FORMAT, "key": key, "graph": encode_graph(gm.graph), "modules": mods,
                "buffers": root_bufs}
    path = entry_path(settings, key)

    def write():
        try:
            _write(path)
        finally:
            _writing.pop(path, None)

    def _write(path):
        for name, epath in blobs.items():
            if not os.path.exists(epath):
                raise OSError(f"{name}: engine cache file {epath} was not written")
            size = os.path.getsize(epath)
            # mapped: the pages are the page cache's (the file was just written), no copy
            blob = torch.from_file(epath, shared=False, size=size, dtype=torch.uint8)
            mods[name]["size"] = size
            mods[name]["crc32"] = zlib.crc32(blob.numpy())
            del blob
        bio = io.BytesIO()
        torch.save({"manifest": json.dumps(manifest), "tensors": tensors}, bio)
        payload = bio.getvalue()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = path + f".{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "wb") as f:
            f.write(MAGIC + hashlib.sha256(payload).digest() + payload)
        os.replace(tmp, path)
        if prekey is not None:  # lets the next compile of these weights preload (Prehash)
            idx = os.path.join(os.path.dirname(path), prekey[:40] + _INDEX_SUFFIX)
            with open(tmp, "w") as f:
                f.write(key)
            os.replace(tmp, idx)
    _writing[path] = (manifest, tensors)
    return path, write


def store_module(settings, key: str, gm, engine_files: dict) -> str:
    """Writes gm's entry now (see prepare_entry), once its engine files are written."""
    from torchtrt_c.dynamo._compiler import _wait_written
    for p in engine_files.values():
        _wait_written(p)
    path, write = prepare_entry(settings, key, gm, engine_files)
    write()
    return path


def _read_entry(path: str, key: str) -> tuple:
    with open(path, "rb") as f:
        data = f.read()
    if not data.startswith(MAGIC) or len(data) < len(MAGIC) + 32:
        raise RejectedEntry("not a torchtrt_c module cache entry (bad header)")
    digest, payload = data[len(MAGIC):len(MAGIC) + 32], data[len(MAGIC) + 32:]
    if hashlib.sha256(payload).digest() != digest:
        raise RejectedEntry("checksum mismatch (the file is damaged or truncated)")
    try:
        obj = torch.load(io.BytesIO(payload), weights_only=True)
        manifest = json.loads(obj["manifest"])
        tensors = obj["tensors"]
    except Exception as ex:
        raise RejectedEntry(f"unreadable payload ({type(ex).__name__}: {ex})") from None
    if manifest.get("format") != FORMAT:
        raise RejectedEntry(f"format {manifest.get('format')!r}, expected {FORMAT!r}")
    if manifest.get("key") != key:
        raise RejectedEntry("it was written for another key")
    return manifest, tensors


def _engine_blob(settings, name: str, rec: dict) -> tuple:
    """(uint8 tensor, live engine or None, the preload's entry or None) for one engine of an
    entry."""
    from torchtrt_c.runtime._execute import ENGINES
    from torchtrt_c.runtime._shapes import EngineMeta
    meta = EngineMeta.from_json(rec["meta"])
    live = ENGINES.peek(meta.id)
    with _live_lock:
        pre, pre_entry = _preloaded_blobs.pop(meta.id, (None, None))
    blob = pre if pre is not None else _live_blob(meta.id)
    # a live module's blob or one a preload checked: the engine these bytes name (ids are
    # content keys), no need to read and check the file again
    # (an entry still being written has no size yet: writing_entry() hands it out only with
    # every engine live)
    if blob is not None and blob.numel() == rec.get("size", blob.numel()) and (live is not None or pre is not None):
        return blob, live, pre_entry
    if live is not None:  # live in this process (ids are content keys): its blob is deferred
        return None, live, None
    path = os.path.join(os.fspath(settings.engine_cache_dir), rec["file"])
    try:
        size = os.path.getsize(path)
    except OSError:
        raise RejectedEntry(f"{name}: engine file {rec['file']} is missing") from None
    if size != rec["size"]:
        raise RejectedEntry(f"{name}: engine file {rec['file']} has {size} bytes, expected {rec['size']}")
    # mapped copy-on-write (as torch.load(mmap=True) does): pages come from the page cache as
    # they are read, with no zero-filled allocation and no copy (a fresh 440 MB buffer cost
    # 1-3 s of page faults on a busy machine). Entries are only ever replaced by rename, never
    # rewritten in place, so the mapped file keeps its size while it is mapped.
    blob = torch.from_file(path, shared=False, size=size, dtype=torch.uint8)
    if zlib.crc32(blob.numpy()) != rec["crc32"]:
        raise RejectedEntry(f"{name}: engine file {rec['file']} is damaged (CRC-32 mismatch)")
    return blob, live, pre_entry


_loader = None
_loader_lock = threading.Lock()


def _load_behind(meta, blob: torch.Tensor, device):
    """Deserialises an engine in a thread (the C core releases the GIL): the compile returns
    at once and the engine's first call waits for whatever is left (runtime/_module.PENDING).
    One thread: engines load one after another, in the module's order. Returns the engine's
    entry, which the caller's module keeps (runtime/_execute.EngineEntry): the thread fills it,
    and skips the work when nothing keeps it any more (a dropped preload)."""
    global _loader
    from torchtrt_c.runtime import _module
    from torchtrt_c.runtime._execute import ENGINES
    with _loader_lock:
        if _loader is None:
            _loader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="torchtrt_c-engine-load")
    entry = ENGINES.reserve(meta.id)
    wanted = weakref.ref(entry)

    def work():
        from torchtrt_c import _C
        keep = wanted()
        if keep is None or keep.engine is not None:
            return
        t = time.perf_counter()
        e = _C.Engine.deserialize(blob.numpy(), device=device)
        ENGINES.put(meta.id, e)
        log.info("%s: engine loaded from the module cache in %.2fs", meta.name, time.perf_counter() - t)

    fut = _loader.submit(work)
    _module.PENDING[meta.id] = fut
    fut.add_done_callback(lambda f: _module.PENDING.pop(meta.id, None) if _module.PENDING.get(meta.id) is f else None)
    return entry


def load_module(settings, key: str, profile=None, entry=None):
    """The compiled module of an entry, or None when there is none. Raises RejectedEntry (with
    the reason) for an entry that exists but cannot be used. entry: writing_entry()'s
    (manifest, tensors), used instead of the file."""
    from torchtrt_c.dynamo._compiled_module import CompiledModule
    from torchtrt_c.runtime._execute import ENGINES
    from torchtrt_c.runtime._module import EngineModule
    from torchtrt_c.runtime._shapes import EngineMeta
    path = entry_path(settings, key)
    if entry is not None:
        manifest, tensors = entry[0], {k: t.clone() for k, t in entry[1].items()}
    elif not os.path.exists(path):
        return None
    else:
        manifest, tensors = _read_entry(path, key)
    root = torch.nn.Module()
    try:
        for name, rec in manifest["modules"].items():
            t = time.perf_counter()
            if rec["kind"] == "engine":
                blob, live, entry = _engine_blob(settings, name, rec)
                meta = EngineMeta.from_json(rec["meta"])
                if blob is None:
                    mod = EngineModule.deferred(live, meta)
                else:
                    mod = EngineModule.from_tensor(blob, meta)
                    from torchtrt_c.runtime import _module
                    if live is None and meta.id not in _module.PENDING and ENGINES.peek(meta.id) is None:
                        from torchtrt_c.dynamo._compiler import resolve_device
                        entry = _load_behind(meta, blob, resolve_device(settings.device))
                    # the module keeps its engine: live, loading (a preload's, or just started)
                    mod.own(entry if entry is not None else ENGINES.reserve(meta.id))
                    remember_blob(meta.id, mod.engine)
                if profile is not None:
                    e = profile.engine(name)
                    e["source"] = "module cache (live)" if live is not None else "module cache"
                    e["seconds"]["load"] = time.perf_counter() - t
            elif rec["kind"] == "graph":
                sub = torch.nn.Module()
                for bname, tk in rec["buffers"].items():
                    sub.register_buffer(bname, tensors[tk])
                mod = torch.fx.GraphModule(sub, decode_graph(rec["graph"]), class_name=rec["class"])
            else:
                raise RejectedEntry(f"{name}: unknown module kind {rec['kind']!r}")
            root.add_module(name, mod)
        for bname, tk in manifest["buffers"].items():
            root.register_buffer(bname, tensors[tk])
        graph = decode_graph(manifest["graph"])
    except RejectedEntry:
        raise
    except Exception as ex:
        raise RejectedEntry(f"cannot rebuild the module ({type(ex).__name__}: {ex})") from None
    return CompiledModule(root, graph, class_name="CompiledModule")


def discard(settings, key: str) -> None:
    try:
        os.remove(entry_path(settings, key))
    except OSError:
        pass


__all__ = ["module_key", "context_text", "Prehash", "load_module", "store_module", "prepare_entry", "writing_entry",
           "drop_unused_preloads", "RejectedEntry", "Unserializable", "remember_blob"]
