"""The engine submodule of a compiled graph (`_run_on_acc_N`): an engine blob + its meta.

    acc = EngineModule(engine, meta)          # at compile time
    y0, y1 = acc(x, w)                        # calls torch.ops.torchtrt_c.execute_engine

The blob is a uint8 buffer, so state_dict, torch.export and torch.export.save carry it.
"""
from __future__ import annotations

import weakref

import torch

from torchtrt_c.runtime import _execute  # noqa: F401  (registers the op)
from torchtrt_c.runtime._shapes import EngineMeta


# engine id -> a module whose blob is deferred (EngineModule.deferred): the runtime takes the
# live engine from it when the registry no longer has it (ENGINES.clear()). Weak: no engine is
# kept by it
DEFERRED = weakref.WeakValueDictionary()

# engine id -> the Future of its deserialisation in the background (a whole-module cache hit
# returns before its engines are loaded: dynamo/_module_cache.py); a call waits for it. Each
# is removed when done
PENDING = {}


def _wait_loaded(mod) -> None:
    fut = PENDING.get(EngineMeta.from_json(mod.meta).id)
    if fut is not None:
        if not fut.done():  # seconds for a big engine: say why the call has not started
            import logging
            import sys
            msg = f"{mod.engine_name}: waiting for the engine to finish loading (module cache hit)"
            logging.getLogger("torchtrt_c").info(msg)
            try:
                print(f"[torchtrt_c] {msg}", file=sys.stderr, flush=True)
            except (ValueError, OSError):  # a closed stream: the message is optional
                pass
        try:
            fut.result()
        except Exception:  # noqa: BLE001  (the runtime deserialises it itself and raises why)
            pass


def _eager_ok(inputs) -> bool:
    """True when calling the op's implementation directly is indistinguishable from calling the
    op (saves the dispatcher's ~20-100 us per call): plain tensors, nothing tracing (dynamo,
    export, make_fx modes, functorch, torch.jit.trace: it records ops, so a direct call would
    leave only the outputs' torch.empty in its graph), no profiler to record the op, no
    autograd graph to build (the op has no autograd formula; the dispatcher path keeps its
    behaviour there)."""
    if (torch.compiler.is_compiling() or torch._C._get_tracing_state() or torch._C._len_torch_dispatch_stack()
            or torch._C._is_torch_function_mode_enabled() or torch._C._are_functorch_transforms_active()
            or torch.autograd._profiler_enabled()):
        return False
    grad = torch.is_grad_enabled()
    for t in inputs:
        if type(t) is not torch.Tensor or (grad and t.requires_grad):
            return False
    return True


class EngineModule(torch.nn.Module):
    def __init__(self, blob: bytes, meta: EngineMeta, engine=None):
        super().__init__()
        self.register_buffer("engine", torch.frombuffer(bytearray(blob), dtype=torch.uint8))
        self.meta = meta.to_json()
        self.engine_name = meta.name
        if engine is not None:
            self.own(_execute.ENGINES.put(meta.id, engine))

    @classmethod
    def from_tensor(cls, blob: torch.Tensor, meta: EngineMeta, engine=None) -> "EngineModule":
        """An EngineModule over an existing uint8 tensor (not copied): a warm compile shares
        the blob read from the engine cache or held by a live module of the same engine."""
        self = cls.__new__(cls)
        torch.nn.Module.__init__(self)
        self.register_buffer("engine", blob)
        self.meta = meta.to_json()
        self.engine_name = meta.name
        if engine is not None:
            self.own(_execute.ENGINES.put(meta.id, engine))
        return self

    @classmethod
    def deferred(cls, engine, meta: EngineMeta) -> "EngineModule":
        """An EngineModule over a live engine whose blob is not serialised yet: a compile that
        keeps its module in memory never needs the blob (the runtime finds the engine by id),
        and serialising a transformer's 500 MB of weights into fresh pages cost 0.3-1.9 s of
        every cold compile. The blob is made on first need (blob(): state_dict, pickling,
        copy.deepcopy, torchtrt_c.save, torch.export); until then the buffer is empty."""
        self = cls.__new__(cls)
        torch.nn.Module.__init__(self)
        self.register_buffer("engine", torch.empty(0, dtype=torch.uint8))
        self.__dict__["_buffers"] = _BlobOnRead(self, self._buffers)
        self.meta = meta.to_json()
        self.engine_name = meta.name
        self._deferred = engine
        self.own(_execute.ENGINES.put(meta.id, engine))
        DEFERRED[meta.id] = self
        return self

    def own(self, entry) -> None:
        """Keeps entry (runtime/_execute.EngineEntry): the engine lives at least as long as this
        module. A module without one (a copy, an unpickled module) gets its engine at its first
        call, owned by its blob."""
        self.__dict__["_ttc_entry"] = entry

    def blob(self) -> torch.Tensor:
        """The engine blob (a uint8 tensor), serialised now if it was deferred."""
        e = self.__dict__.get("_deferred")
        if e is not None:
            bufs = dict(self._buffers)
            dev = bufs["engine"].device
            t = torch.frombuffer(e.serialize(mutable=True), dtype=torch.uint8)
            bufs["engine"] = t if dev.type == "cpu" else t.to(dev)
            self.__dict__["_buffers"] = bufs
            self._deferred = None
        return self._buffers["engine"]

    def __getattr__(self, name):
        # `mod.engine` is the blob to whoever reads it; forward reads the buffer itself
        if name == "engine" and self.__dict__.get("_deferred") is not None:
            return self.blob()
        return super().__getattr__(name)

    def _apply(self, fn, recurse=True):
        # .to()/.cuda() move the empty placeholder: no reason to make the blob
        bufs = self.__dict__["_buffers"]
        if isinstance(bufs, _BlobOnRead):
            bufs.quiet = True
        try:
            return super()._apply(fn, recurse)
        finally:
            if isinstance(bufs, _BlobOnRead):
                bufs.quiet = False

    def __getstate__(self):
        self.blob()  # the live engine does not pickle; the blob carries it
        state = dict(super().__getstate__())
        state.pop("_ttc_entry", None)  # a copy finds the engine by id, or deserialises the blob
        return state

    @property
    def engine_meta(self) -> EngineMeta:
        return EngineMeta.from_json(self.meta)

    def forward(self, *inputs):
        if PENDING:
            _wait_loaded(self)
        if _eager_ok(inputs):
            # the blob through _buffers: nn.Module.__getattr__ costs ~1 us, and the steady
            # state (a FastCall in the plan) does not even read it; reading self.engine would
            # also make a deferred blob (EngineModule.deferred)
            return tuple(_execute.run_engine(list(inputs), self._buffers["engine"], self.meta))
        return tuple(torch.ops.torchtrt_c.execute_engine(list(inputs), self._buffers["engine"], self.meta))

    def extra_repr(self) -> str:
        m = self.engine_meta
        ins = ", ".join(f"{n}: {dt}{EngineMeta.shape_str(d)}" for n, dt, d in m.inputs)
        outs = ", ".join(f"{n}: {dt}{EngineMeta.shape_str(d)}" for n, dt, d in m.outputs)
        size = "deferred" if self.__dict__.get("_deferred") is not None else self.engine.numel()
        return f"name={m.name}, inputs=[{ins}], outputs=[{outs}], bytes={size}"


class _BlobOnRead(dict):
    """A deferred EngineModule's _buffers: whoever lists the buffers (named_buffers: torch.export
    and torch.export.save; state_dict; load_state_dict) gets the blob, made then. forward reads
    the entry by key, which does not make it."""

    def __init__(self, mod, bufs):
        super().__init__(bufs)
        self.mod = weakref.ref(mod)
        self.quiet = False

    def _make(self):
        mod = self.mod()
        if mod is not None and not self.quiet:
            mod.blob()
            return mod.__dict__["_buffers"]
        return None

    def items(self):
        bufs = self._make()
        return bufs.items() if bufs is not None else dict.items(self)

    def values(self):
        bufs = self._make()
        return bufs.values() if bufs is not None else dict.values(self)
