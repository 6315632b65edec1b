"""The runtime op: torch.ops.torchtrt_c.execute_engine(inputs, engine_blob, meta) -> outputs.

Compiled modules call engines only through this op, so torch.export / torch.export.save
handle them like any other op: the engine blob is a uint8 buffer, the meta a string literal.
The fake implementation computes output shapes from the meta (SymInts welcome); the real one
deserializes the blob once per engine id (cache), validates the inputs against the engine's
bindings (InputError naming the input), and executes on the engine's OpenCL device.

    outs = torch.ops.torchtrt_c.execute_engine([x], blob, meta_json)
"""
from __future__ import annotations

import threading
from typing import List

import torch

from torchtrt_c.runtime._shapes import EngineMeta

_DTYPES = {
    "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "float64": torch.float64, "int64": torch.int64, "int32": torch.int32, "int8": torch.int8,
    "uint8": torch.uint8, "bool": torch.bool,
}
_DTYPE_NAMES = {v: k for k, v in _DTYPES.items()}


def dtype_name(dt: torch.dtype) -> str:
    try:
        return _DTYPE_NAMES[dt]
    except KeyError:
        raise TypeError(f"dtype {dt} is not supported by torchtrt_c engines") from None


def torch_dtype(name: str) -> torch.dtype:
    return _DTYPES[name]


class _EngineCache:
    """Engines by id, deserialized on first use. One lock per engine: an engine's buffers are
    reused between calls, so one call at a time per engine."""

    def __init__(self):
        self._lock = threading.Lock()
        self._engines = {}

    def put(self, engine_id: str, engine) -> None:
        with self._lock:
            self._engines[engine_id] = (engine, threading.Lock())

    def get(self, engine_id: str, blob: torch.Tensor):
        with self._lock:
            hit = self._engines.get(engine_id)
        if hit is not None:
            return hit
        from torchtrt_c import _C
        data = blob.detach().cpu().contiguous().numpy().tobytes()
        engine = _C.Engine.deserialize(data)
        with self._lock:
            return self._engines.setdefault(engine_id, (engine, threading.Lock()))

    def clear(self) -> None:
        with self._lock:
            self._engines.clear()


ENGINES = _EngineCache()


def _np_view(t: torch.Tensor):
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy()
    return t.numpy()


@torch.library.custom_op("torchtrt_c::execute_engine", mutates_args=())
def execute_engine(inputs: List[torch.Tensor], engine: torch.Tensor, meta: str) -> List[torch.Tensor]:
    m = EngineMeta.from_json(meta)
    shapes = [tuple(t.shape) for t in inputs]
    dtypes = [_DTYPE_NAMES.get(t.dtype, str(t.dtype)) for t in inputs]
    env = m.bind_inputs(shapes, dtypes, check=True)
    out_shapes = m.output_shapes(env)
    eng, lock = ENGINES.get(m.id, engine)
    device = inputs[0].device if inputs else torch.device("cpu")
    host_in = [t.detach().to("cpu").contiguous() for t in inputs]
    host_out = [torch.empty(s, dtype=_DTYPES[dt]) for s, (_, dt, _) in zip(out_shapes, m.outputs)]
    with lock:
        eng.execute([_np_view(t) for t in host_in], [_np_view(t) for t in host_out])
    if device.type != "cpu":
        host_out = [t.to(device) for t in host_out]
    return host_out


@execute_engine.register_fake
def _(inputs, engine, meta):
    m = EngineMeta.from_json(meta)
    env = m.bind_inputs([tuple(t.shape) for t in inputs], check=False)
    device = inputs[0].device if inputs else engine.device
    return [torch.empty(s, dtype=_DTYPES[dt], device=device)
            for s, (_, dt, _) in zip(m.output_shapes(env), m.outputs)]
