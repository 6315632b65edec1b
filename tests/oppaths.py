"""The execution paths this machine has, read from its devices (the op harness runs every case
on each, as ggml's test-backend-ops runs every op on every backend):

    for b in machine_builds():        # [Build(name="cpu-native", ...), ...]
        with b.knobs():                # the TORCHTRT_C_* knobs read when an engine is built
            e = _C.Engine.build(g, device=b.device, ...)
        for call in b.calls:           # "host": Engine.execute on host arrays (the OpenCL queue)
            ...                        # "cuda": CUDA tensors through the CUDA launch path

A Build is one way of building an engine (a device and the knobs read then); its calls are the
ways of running that same engine, so a case builds one engine per Build and runs it on each.

  OpenCL CPU device (PoCL):
    cpu-native      defaults: GEMM/convolution/attention/norms as native steps (oneDNN/OpenBLAS)
                    where the BLAS loads, other kernels OpenCL; small engines without native
                    steps on the caller's thread (PoCL's basic device)
    cpu-opencl      OpenCL kernels only (TORCHTRT_C_NATIVE=0), on PoCL's pthread device
                    (TORCHTRT_C_CALLER_THREAD=0): what a large engine runs
    cpu-gpukernels  the GPU kernel families (TORCHTRT_C_KERNELS=gpu): the kernels an NVIDIA
                    device builds, on PoCL
  OpenCL GPU device:
    gpu             its kernels (cuBLAS/cuDNN never: TORCHTRT_C_CUDA_LIBS=0), called with host
                    arrays (the OpenCL queue) and, where it is torch's CUDA device under NVIDIA's
                    driver, with CUDA tensors (the CUDA launch path)
    gpu-libs        TORCHTRT_C_CUDA_LIBS=1 (cuBLAS/cuDNN wherever a step can take them), CUDA
                    tensors through the CUDA launch path (only it runs library steps)

One device per distinct (platform, name): several identical GPUs are one set of paths.
TTC_TEST_OP_PATHS=cpu-opencl,gpu (names, or a device type: cpu, gpu) keeps those builds only.
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Optional, Tuple

# every knob a Build sets or must see at its default while the engine is built
KNOBS = ("TORCHTRT_C_NATIVE", "TORCHTRT_C_KERNELS", "TORCHTRT_C_CALLER_THREAD", "TORCHTRT_C_CUDA_LAUNCH",
         "TORCHTRT_C_CUDA_LIBS", "TORCHTRT_C_HALF_COMPUTE")


@dataclass(frozen=True)
class Build:
    name: str                      # the test id's part: cpu-native, cpu-opencl, cpu-gpukernels, gpu, gpu-libs
    device: int                    # OpenCL device index (Engine.build's device=)
    env: Tuple[Tuple[str, str], ...]   # knobs set while building; the other KNOBS are unset
    calls: Tuple[str, ...]         # "host" and/or "cuda"
    cuda: Optional[int] = None     # torch's CUDA device ordinal for "cuda" calls
    native: bool = False           # native steps may run (the case expects them where its op has one)

    @contextlib.contextmanager
    def knobs(self):
        """The build's knobs in os.environ (read by the C target when an engine is made), the
        previous values restored after."""
        old = {k: os.environ.get(k) for k in KNOBS}
        try:
            for k in KNOBS:
                os.environ.pop(k, None)
            os.environ.update(dict(self.env))
            yield
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def check(self, info: dict, what: str = ""):
        """An engine built for this path took it (Engine.info()): the GPU kernel families where
        the path has them, no native step where native steps are off, no caller's thread where
        that is off."""
        env = dict(self.env)
        if env.get("TORCHTRT_C_KERNELS") == "gpu":
            assert info["gpu_kernels"], f"{what}: built without the GPU kernel families on path {self.name}"
        if env.get("TORCHTRT_C_NATIVE") == "0":
            native = [k for k in info["kernels"] if "(native)" in k]
            assert not native, f"{what}: native steps {native} on path {self.name}"
        if env.get("TORCHTRT_C_CALLER_THREAD") == "0":
            assert not info.get("caller_thread"), f"{what}: on the caller's thread on path {self.name}"


def _cuda_ordinals():
    """OpenCL device index -> torch CUDA ordinal, for the CUDA devices whose OpenCL device the
    CUDA launch path can run on (a CUDA torch, libcuda, NVIDIA's OpenCL driver); {} elsewhere."""
    try:
        import torch
        if not torch.cuda.is_available():
            return {}
        from torchtrt_c import _C
        from torchtrt_c._devices import find_device
        if not _C.cuda_driver()[0]:
            return {}
        out = {}
        for i in range(torch.cuda.device_count()):
            try:
                d = find_device(f"cuda:{i}")
            except Exception:  # noqa: BLE001  (no OpenCL device for this CUDA device)
                continue
            if "NVIDIA" in f"{d.get('platform')} {d.get('vendor')}":
                out.setdefault(d["index"], i)
        return out
    except ImportError:
        return {}


def _native_available(index: int) -> bool:
    """Whether engines on OpenCL device `index` run native steps by default (host tasks and a
    BLAS that loads: _C.native_cpu() asks about the default device, TORCHTRT_C_DEVICE's)."""
    from torchtrt_c import _C
    old = os.environ.get("TORCHTRT_C_DEVICE")
    os.environ["TORCHTRT_C_DEVICE"] = str(index)
    try:
        with Build("probe", index, (), ()).knobs():
            return bool(_C.native_cpu()["available"])
    finally:
        if old is None:
            os.environ.pop("TORCHTRT_C_DEVICE", None)
        else:
            os.environ["TORCHTRT_C_DEVICE"] = old


def machine_builds() -> list:
    """Every Build this machine's OpenCL devices have (see the module docstring)."""
    from torchtrt_c import _C
    cuda = _cuda_ordinals()
    seen, out = set(), []
    for d in _C.devices():
        key = (d.get("platform"), d.get("name"))
        if key in seen:
            continue
        seen.add(key)
        i = d["index"]
        tag = "cpu" if d.get("type") == "cpu" else "gpu" if d.get("type") == "gpu" else f"dev{i}"
        if any(b.name.split("-")[0] == tag for b in out):   # a second distinct device of this type
            tag = f"{tag}{i}"
        if d.get("type") == "gpu":
            ordinal = cuda.get(i)
            out.append(Build(tag, i, (("TORCHTRT_C_CUDA_LIBS", "0"),),
                             ("host", "cuda") if ordinal is not None else ("host",), ordinal))
            if ordinal is not None:
                out.append(Build(f"{tag}-libs", i, (("TORCHTRT_C_CUDA_LIBS", "1"),), ("cuda",), ordinal))
            continue
        if d.get("type") == "cpu" and _native_available(i):
            out.append(Build(f"{tag}-native", i, (), ("host",), native=True))
        out.append(Build(f"{tag}-opencl", i, (("TORCHTRT_C_NATIVE", "0"), ("TORCHTRT_C_CALLER_THREAD", "0")), ("host",)))
        out.append(Build(f"{tag}-gpukernels", i, (("TORCHTRT_C_KERNELS", "gpu"),), ("host",)))
    keep = os.environ.get("TTC_TEST_OP_PATHS")
    if keep:
        want = {w.strip() for w in keep.split(",") if w.strip()}
        out = [b for b in out if b.name in want or b.name.split("-")[0] in want]
    return out
