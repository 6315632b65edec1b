"""Shared by the tests of the CUDA launch path (tests/gpu/test_cuda_launch.py,
test_cuda_graphs.py, test_gemm_dynsmem.py): why they cannot run here, if they cannot."""
import torch

import torchtrt_c
from torchtrt_c import _C


def why_not():
    """None where CUDA tensors can go through the CUDA launch path (a CUDA torch and device,
    libcuda, an NVIDIA OpenCL device), else the reason."""
    if not torch.cuda.is_available():
        return "needs a CUDA torch and a CUDA device"
    ok, why = _C.cuda_driver()
    if not ok:
        return why
    if not any("NVIDIA" in f"{d.platform} {d.vendor}" for d in torchtrt_c.devices()):
        return "no NVIDIA OpenCL device"
    return None
