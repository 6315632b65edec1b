"""CUDA tensors through the CUDA driver: the engine's kernels on torch's own stream.

On NVIDIA, an engine's OpenCL program is PTX. Loaded into torch's CUDA context
(csrc/backend/cuda/exec_cuda.h), its kernels launch on torch's current stream with the tensors'
own memory as arguments, so a call involves no OpenCL queue and no switch between CUDA's and
OpenCL's contexts (the ~0.3 ms per call of the shared-memory path, bench/RESULTS.md). A call
  1. passes each input's memory as it is (inputs on another device, non-contiguous or not
     16-byte aligned are copied by torch first, on the current stream);
  2. allocates the outputs and an arena for the intermediates as torch tensors on the current
     stream (torch's caching allocator keeps them ordered with the stream's other work);
  3. launches every kernel on that stream and returns without waiting (engines that check
     indices read their error flag back, which waits for the stream).
Constants are uploaded once per engine, when the first CUDA call loads its PTX.

Engines this path cannot run are refused when their PTX is loaded (cuda_path() gives the
reason) and keep the shared-memory path (_cuda_interop): TORCHTRT_C_CUDA_LAUNCH=0 (read by the
C target, target.c), no libcuda, an OpenCL device that is not the tensors' CUDA device, kernel
forms a CUDA launch cannot give their launch state (csrc/backend/cuda/cuda_driver.h).
"""
from __future__ import annotations

import torch

from torchtrt_c.runtime import _cuda_interop

_MAX_SHAPES = 64


class State:
    """Per engine plan and CUDA device: the loaded engine (a capsule that keeps the engine
    alive) and the arena size per input shapes."""

    __slots__ = ("cap", "device", "arena")

    def __init__(self, cap, device: torch.device):
        self.cap = cap
        self.device = device
        self.arena = {}


def state_for(p, device: torch.device):
    """The plan's State for this CUDA device, or None (the reason kept on the plan)."""
    st = p.cuda_launch
    if st is not None and (st is False or st.device == device):
        return st or None
    with p.lock:
        st = p.cuda_launch
        if st is not None and (st is False or st.device == device):
            return st or None
        from torchtrt_c import _C
        ordinal = device.index if device.index is not None else torch.cuda.current_device()
        device = torch.device("cuda", ordinal)
        with torch.cuda.device(device):  # torch's context current on this thread
            cap, why = _C.cuda_launch_new(p.engine, ordinal)
        if cap is None:
            p.cuda_launch = False
            p.cuda_launch_reason = why
            return None
        p.cuda_launch = State(cap, device)
        return p.cuda_launch


def stats(p) -> dict:
    """Launch counters of a plan's loaded engine (tests): calls, launches, flag_reads, const_bytes."""
    from torchtrt_c import _C
    return _C.cuda_launch_stats(p.cuda_launch.cap)


def _raw_stream(device: torch.device) -> int:
    """torch's current stream on device as a CUstream handle (an int). The raw getter skips the
    torch.cuda.Stream object current_stream() builds (a few us per call); older torch builds
    without it take the public way."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw(device.index if device.index is not None else torch.cuda.current_device())
    return torch.cuda.current_stream(device).cuda_stream


def run(p, st: State, inputs, out_shapes):
    """One call on torch's current stream; None when the engine's launches do not fit CUDA's
    limits for these shapes (nothing was launched: the caller takes another path)."""
    from torchtrt_c import _C
    device = st.device
    ins = []
    for t in inputs:
        if t.device != device or not t.is_contiguous():
            t = t.to(device).contiguous()
        if t.data_ptr() % 16:
            t = t.clone()
        ins.append(t)
    key = tuple([t.shape for t in ins])
    nbytes = st.arena.get(key)
    if nbytes is None:
        if len(st.arena) >= _MAX_SHAPES:
            st.arena.clear()
        nbytes = st.arena[key] = _C.cuda_launch_arena(st.cap, key)
    arena = torch.empty(nbytes, dtype=torch.uint8, device=device)
    outs = [torch.empty(s, dtype=dt, device=device) for s, dt in zip(out_shapes, p.out_dtypes)]
    why = _C.cuda_launch_run(st.cap, [t.data_ptr() for t in ins], key, [o.data_ptr() for o in outs],
                             arena.data_ptr(), nbytes, _raw_stream(device))
    if why is not None:
        _cuda_interop._last.update(path=None, reason=f"CUDA launch refused: {why}")
        return None
    _cuda_interop._last.update(path="launch", reason="")
    if p.meta.written:
        from torchtrt_c.runtime._execute import write_back
        write_back(p, inputs, ins)
    return outs
