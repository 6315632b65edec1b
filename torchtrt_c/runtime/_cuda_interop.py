"""CUDA tensors in, CUDA tensors out, without host copies.

Where the engine's OpenCL device can import memory the CUDA driver exports (NVIDIA's OpenCL:
cl_khr_external_memory_opaque_fd, matched to the CUDA device by UUID), each engine binding gets
a buffer that both APIs see (csrc/backend/opencl/external_memory.h). A call then
  1. copies each input into its shared buffer on torch's current stream (device to device;
     CPU and non-contiguous inputs are copied in the same way, by torch);
  2. synchronises that stream only (OpenCL cannot wait on CUDA work: NVIDIA's OpenCL exports no
     semaphore and the CUDA driver exports none, so no semaphore can be shared);
  3. enqueues the engine on its OpenCL queue, then a write of a per-plan counter into a shared
     flag, and returns without waiting;
  4. makes torch's stream wait on the device until the flag holds that counter
     (cuStreamWaitValue32), then copies the outputs into fresh torch tensors on that stream.
The outputs are ordinary torch CUDA tensors; the shared buffers are reused by the next call,
which torch's stream orders after this one's output copies.

Elsewhere (other vendors, PoCL, no libcuda) the runtime keeps the host path (pinned staging
buffers); `status()` says which path the last CUDA call took and why.

    TORCHTRT_C_CUDA_INTEROP=0          never share memory (host path)
    TORCHTRT_C_CUDA_INTEROP_WAIT=host  wait for the engine on the host (clFinish) instead of on
                                       the device (for measurements)
"""
from __future__ import annotations


import torch

from torchtrt_c import settings as _settings

ENABLED = _settings.get("CUDA_INTEROP") != "0"
DEVICE_WAIT = _settings.get("CUDA_INTEROP_WAIT") != "host"
_FLAG_WRAP = 1 << 31

_last = {"path": None, "reason": "no CUDA call yet"}


def status() -> dict:
    """{'path': 'launch' | 'shared' | 'host' | None, 'reason': why a path before it was not
    taken ('' when the CUDA launch ran)} for the last engine call with CUDA tensors in this
    process. 'launch': the engine's PTX on torch's stream through the CUDA driver
    (_cuda_launch); 'shared': OpenCL on memory shared with CUDA; 'host': through host memory."""
    return dict(_last)


def shared_stats() -> dict:
    """Live shared buffers (count, bytes) and totals allocated/freed, process-wide."""
    from torchtrt_c import _C
    return _C.shared_stats()


class _CAI:
    """A raw CUDA allocation as __cuda_array_interface__; holds the buffer's owner (the C
    capsule), so torch tensors viewing it keep it alive."""

    __slots__ = ("owner", "__cuda_array_interface__")

    def __init__(self, owner, ptr: int, size: int):
        self.owner = owner
        self.__cuda_array_interface__ = {"shape": (size,), "typestr": "|u1", "data": (ptr, False),
                                         "version": 3, "stream": None}


class _Shared:
    """One shared buffer: the C capsule, and a uint8 torch view of all of it."""

    __slots__ = ("cap", "size", "base", "views")

    def __init__(self, engine, ordinal: int, nbytes: int, device):
        from torchtrt_c import _C
        self.cap, ptr, self.size = _C.shared_alloc(engine, ordinal, nbytes)
        # normal tensors even when the first call runs under inference_mode: later calls
        # outside it write into them
        with torch.cuda.device(device), torch.inference_mode(False):
            self.base = torch.as_tensor(_CAI(self.cap, ptr, self.size), device=device)
        self.views = {}

    def view(self, shape, dtype) -> torch.Tensor:
        key = (tuple(shape), dtype)
        v = self.views.get(key)
        if v is None:
            n = 1
            for d in shape:
                n *= d
            nbytes = n * torch.empty((), dtype=dtype).element_size()
            with torch.inference_mode(False):
                v = self.base[:nbytes].view(dtype).view(tuple(shape))
            if len(self.views) >= 16:
                self.views.clear()
            self.views[key] = v
        return v


class State:
    """Per engine plan: the shared buffers (one per binding, grown to the largest shape seen),
    the completion flag and its counter, and the stream of the last call."""

    def __init__(self, engine, device: torch.device):
        self.engine = engine
        self.device = device
        self.ordinal = device.index if device.index is not None else torch.cuda.current_device()
        self.bufs = {}
        self.flag = None
        self.value = 0
        self.last_stream = None

    def buffer(self, kind: str, i: int, nbytes: int, stream) -> _Shared:
        b = self.bufs.get((kind, i))
        if b is None or b.size < nbytes:
            if b is not None:
                # the old buffer may still be read by queued copies: let them finish first
                stream.synchronize()
            self.bufs[(kind, i)] = None
            b = self.bufs[(kind, i)] = _Shared(self.engine, self.ordinal, nbytes, self.device)
        return b


def state_for(p, device: torch.device):
    """The plan's State for this CUDA device, or None (host path) with the reason recorded."""
    if not ENABLED:
        _last.update(path="host", reason="disabled (TORCHTRT_C_CUDA_INTEROP=0)")
        return None
    st = p.interop
    if st is not None and (st is False or st.device == device):
        return st or None
    from torchtrt_c import _C
    ordinal = device.index if device.index is not None else torch.cuda.current_device()
    ok, why = _C.cuda_interop(p.engine, ordinal)
    if not ok:
        p.interop = False
        p.interop_reason = why
        return None
    p.interop = State(p.engine, torch.device("cuda", ordinal))
    return p.interop


def run(p, st: State, inputs, out_shapes) -> list:
    """One call on shared buffers (module docstring); under the plan's lock."""
    from torchtrt_c import _C
    device = st.device
    stream = torch.cuda.current_stream(device)
    if st.last_stream is not None and st.last_stream != stream:
        # the last call's output copies were queued on another stream: the engine must not
        # overwrite its outputs before they ran
        st.last_stream.synchronize()
    ins, in_views = [], []
    for i, t in enumerate(inputs):
        nbytes = t.numel() * t.element_size()
        b = st.buffer("in", i, nbytes, stream)
        t = t.detach()
        in_views.append(b.view(t.shape, t.dtype))
        in_views[-1].copy_(t)
        ins.append((b.cap, tuple(t.shape), nbytes))
    outs, out_views, out_bufs = [], [], []
    for i, (s, dt) in enumerate(zip(out_shapes, p.out_dtypes)):
        o = torch.empty(s, dtype=dt, device=device)
        nbytes = o.numel() * o.element_size()
        b = st.buffer("out", i, nbytes, stream)
        outs.append(o)
        out_views.append(b.view(s, dt))
        out_bufs.append((b.cap, nbytes))
    if st.flag is None:
        st.flag = _Shared(p.engine, st.ordinal, 4, device)
        st.flag.view((1,), torch.int32).zero_()
    if st.value >= _FLAG_WRAP:
        stream.synchronize()
        st.flag.view((1,), torch.int32).zero_()
        st.value = 0
    # 2. OpenCL cannot wait on CUDA: the inputs must be in memory before the engine is enqueued
    stream.synchronize()
    st.value += 1
    finished = _C.execute_shared(p.engine, ins, out_bufs, st.flag.cap if DEVICE_WAIT else None, st.value)
    if not finished:
        _C.shared_stream_wait(st.flag.cap, stream.cuda_stream, st.value)
    for o, v in zip(outs, out_views):
        o.copy_(v)
    if p.meta.written:  # inputs the engine wrote (KV caches) back from the shared buffers
        from torchtrt_c.runtime._execute import write_back
        write_back(p, inputs, in_views)
    st.last_stream = stream
    _last.update(path="shared", reason="")
    return outs
