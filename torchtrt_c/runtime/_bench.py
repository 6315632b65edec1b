"""Resident timing of a compiled module, for bench/ (speed is measured there, never in tests).

    r = benchmark_resident(trt_module, [x], runs=50, warmup=5)
    r["median_ms"], r["engine_ms"], r["torch_ms"], r["times_ms"]

What is measured: the module is run once (normally) to record what every segment receives.
Then, for each run, every segment is timed on what it received, and a run's time is the sum
over segments:
  - an engine given host tensors: its kernel sequence with the inputs already in OpenCL device
    buffers (Engine.benchmark: launches + one clFinish; no host<->device copies). Path "opencl".
  - an engine given CUDA tensors: the call a module makes with those tensors (run_engine, then
    a synchronisation of the device), so the same path as a call: the engine's PTX on torch's
    stream ("cuda launch"), else OpenCL on memory shared with CUDA ("cuda shared"), else host
    staging ("cuda host"). Inputs are resident in the sense that they are already on the GPU.
  - a torch segment: called on the tensors it received (on their torch device, synchronised).
The result's "paths" names each engine's path. Not included: the top-level graph's glue
(getitem, output packing), and for engines given host tensors the host<->device transfers.
"""
from __future__ import annotations

import statistics
import time

import torch

from torchtrt_c.runtime import _cuda_interop, _execute
from torchtrt_c.runtime._execute import ENGINES, _np_view
from torchtrt_c.runtime._module import EngineModule
from torchtrt_c.runtime._shapes import EngineMeta


def _sync_for(tensors):
    if any(isinstance(t, torch.Tensor) and t.is_cuda for t in tensors):
        return torch.cuda.synchronize
    return lambda: None


class _Recorder(torch.fx.Interpreter):
    """Runs the graph once, recording each engine call ((engine, host copies of its inputs), or
    with cuda_calls and CUDA tensors ((blob, meta), the tensors)) and each torch segment call
    (module, args)."""

    def __init__(self, gm, cuda_calls: bool):
        super().__init__(gm)
        self.segments = []
        self.cuda_calls = cuda_calls  # engines on CUDA tensors: recorded to be called as a module calls them

    def _engine(self, args, blob, meta):
        m = EngineMeta.from_json(meta)
        if self.cuda_calls and any(isinstance(t, torch.Tensor) and t.is_cuda for t in args):
            # timed as a call with these tensors runs (the CUDA paths), on the tensors themselves
            self.segments.append(("engine_cuda", m.name, (blob, meta), [t.detach() for t in args]))
            return
        eng, _ = ENGINES.get(m.id, blob)
        ins = [t.detach().to("cpu").contiguous() for t in args]
        self.segments.append(("engine", m.name, eng, ins))

    def call_module(self, target, args, kwargs):
        mod = self.fetch_attr(target)
        if isinstance(mod, EngineModule):
            # the buffer itself: reading mod.engine would serialise a deferred blob
            self._engine(list(args), mod._buffers["engine"], mod.meta)
        else:
            self.segments.append(("torch", target, mod, (args, kwargs)))
        return super().call_module(target, args, kwargs)

    def call_function(self, target, args, kwargs):
        if target in (torch.ops.torchtrt_c.execute_engine.default, torch.ops.torchtrt_c.execute_engine):
            self._engine(list(args[0]), args[1], args[2])
        return super().call_function(target, args, kwargs)


def _time_torch(mod, args, kwargs, runs, warmup):
    flat = list(args) + list(kwargs.values())
    sync = _sync_for(flat)
    with torch.inference_mode():
        for _ in range(warmup):
            mod(*args, **kwargs)
        sync()
        ts = []
        for _ in range(runs):
            t0 = time.perf_counter()
            mod(*args, **kwargs)
            sync()
            ts.append((time.perf_counter() - t0) * 1e3)
    return ts


def _time_cuda_engine(blob, meta, ins, runs, warmup):
    """Per-run ms of the engine called on CUDA tensors as a module calls it, and the path taken."""
    with torch.inference_mode():
        for _ in range(warmup):
            _execute.run_engine(ins, blob, meta)
        torch.cuda.synchronize()
        ts = []
        for _ in range(runs):
            t0 = time.perf_counter()
            _execute.run_engine(ins, blob, meta)
            torch.cuda.synchronize()
            ts.append((time.perf_counter() - t0) * 1e3)
    return ts, f"cuda {_cuda_interop.status()['path'] or 'host'}"


def _record(module, inputs, runs, warmup, who, cuda_calls=False):
    """Checks the arguments of benchmark_resident / profile_engines and runs module once,
    recording what every segment receives."""
    if runs < 1 or warmup < 0:
        raise ValueError(f"runs must be >= 1 and warmup >= 0, got {runs}, {warmup}")
    if not isinstance(module, torch.fx.GraphModule):
        raise TypeError(f"{who} expects a module from torchtrt_c.compile, got {type(module).__name__}")
    if isinstance(inputs, torch.Tensor):
        inputs = [inputs]
    rec = _Recorder(module, cuda_calls)
    with torch.inference_mode():
        rec.run(*inputs)
    return rec


def benchmark_resident(module: torch.nn.Module, inputs, runs: int = 20, warmup: int = 3) -> dict:
    """Per-run times (ms) of module's segments with engine inputs resident on the device: on
    host tensors each engine's OpenCL kernel sequence on device buffers, on CUDA tensors the
    path a call with them takes (see the module docstring for what is and is not included).
    Returns dict(times_ms, median_ms, p10_ms, p90_ms, runs, engine_ms, torch_ms, n_engines,
    n_torch_segments, paths (engine name -> "opencl" | "cuda launch" | "cuda shared" |
    "cuda host"), measured)."""
    rec = _record(module, inputs, runs, warmup, "benchmark_resident", cuda_calls=True)
    eng_t = [0.0] * runs
    torch_t = [0.0] * runs
    n_eng = n_torch = 0
    paths = {}
    for kind, name, obj, data in rec.segments:
        if kind == "engine":
            n_eng += 1
            ts = obj.benchmark([_np_view(t) for t in data], runs=runs, warmup=warmup)
            eng_t = [a + b for a, b in zip(eng_t, ts)]
            paths[name] = "opencl"
        elif kind == "engine_cuda":
            n_eng += 1
            ts, paths[name] = _time_cuda_engine(obj[0], obj[1], data, runs, warmup)
            eng_t = [a + b for a, b in zip(eng_t, ts)]
        else:
            n_torch += 1
            ts = _time_torch(obj, data[0], data[1], runs, warmup)
            torch_t = [a + b for a, b in zip(torch_t, ts)]
    total = sorted(a + b for a, b in zip(eng_t, torch_t))
    q = lambda v, p: v[min(len(v) - 1, int(p * len(v)))]  # noqa: E731
    return {
        "times_ms": [a + b for a, b in zip(eng_t, torch_t)],
        "median_ms": statistics.median(total), "p10_ms": q(total, 0.1), "p90_ms": q(total, 0.9), "runs": runs,
        "engine_ms": statistics.median(eng_t), "torch_ms": statistics.median(torch_t),
        "n_engines": n_eng, "n_torch_segments": n_torch, "paths": paths,
        "measured": "engines on host tensors (path opencl): kernel launches + one clFinish per run, inputs "
                    "already in OpenCL device buffers; engines on CUDA tensors (path cuda launch/shared/host): "
                    "the runtime call a module makes with those tensors, then a device synchronisation; "
                    "torch segments: called on their recorded inputs, synchronised; excluded: top-level glue "
                    "and, for host tensors, host<->device copies",
    }


def profile_engines(module: torch.nn.Module, inputs, runs: int = 10, warmup: int = 2) -> list:
    """Device time of every kernel of every engine in module (ms, mean over runs, from OpenCL
    profiling events: launch gaps excluded), inputs resident in OpenCL device buffers (engines
    given CUDA tensors too: this profiles their OpenCL kernels, not the CUDA launch path).
    Returns [dict(engine, kernel, kind, ms)], slowest first; kind is the kernel's family
    ("gemm", "softmax", "elementwise", ...) as the engine's info() names it."""
    rec = _record(module, inputs, runs, warmup, "profile_engines")
    rows = []
    for kind, name, obj, data in rec.segments:
        if kind != "engine":
            continue
        for desc, ms in obj.profile([_np_view(t) for t in data], runs=runs, warmup=warmup):
            # desc: "k3 gemm: linear_1+relu"
            head, _, ops = desc.partition(": ")
            rows.append({"engine": name, "kernel": desc, "kind": head.split(" ")[-1], "ops": ops, "ms": ms})
    rows.sort(key=lambda r: -r["ms"])
    return rows
