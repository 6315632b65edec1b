"""What this process holds for torchtrt_c engines, for leak checks (tests/device/test_memory_loop.py).

    before = torchtrt_c.runtime.memory_stats()
    trt = torchtrt_c.compile(model, inputs=[x]); trt(x); del trt; gc.collect()
    assert torchtrt_c.runtime.memory_stats()["engines"] == before["engines"]

Counts come from the C core (every engine, buffer, weight and CUDA allocation it makes is
counted where it is made and freed), plus the Python runtime's registry and plans.
"""
from __future__ import annotations


def memory_stats() -> dict:
    """Process-wide, now:
      engines         C engines alive (built or deserialised and not yet freed)
      owned_engines   engines the runtime registry names for live modules (EngineEntry)
      plans           call plans (one per engine submodule meta in use)
      buffers         live OpenCL buffers (constants, arenas, staging; every device)
      device_bytes    their bytes (on a CPU device, PoCL, that memory is host memory)
      host_ptr_bytes  of device_bytes, buffers over host memory the library does not own
      host_bytes      weights held in host memory by graphs and engines (copied or wrapped)
      cuda_bytes      CUDA memory of the CUDA launch path (engine constants), with
                      cuda_allocs, cuda_modules (loaded PTX) and cuda_graphs
      shared_buffers, shared_bytes  buffers shared between CUDA and OpenCL
    Memory torch allocates for a call (outputs, CUDA arenas from torch's caching allocator) is
    torch's: torch.cuda.memory_allocated() counts it."""
    from torchtrt_c import _C
    from torchtrt_c.runtime._execute import _PLANS, ENGINES
    s = _C.runtime_stats()
    return {
        "engines": s["engines"], "owned_engines": ENGINES.live(), "plans": len(_PLANS),
        "buffers": s["live_buffers"], "device_bytes": s["live_bytes"], "host_ptr_bytes": s["host_ptr_bytes"],
        "host_bytes": s["tensor_data_bytes"], "tensor_data": s["tensor_data"],
        "cuda_bytes": s["cuda_bytes"], "cuda_allocs": s["cuda_allocs"], "cuda_modules": s["cuda_modules"],
        "cuda_graphs": s["cuda_graphs"], "shared_buffers": s["shared_buffers"], "shared_bytes": s["shared_bytes"],
    }
