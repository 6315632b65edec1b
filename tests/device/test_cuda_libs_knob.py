"""TORCHTRT_C_CUDA_LIBS (target/target.c) on any device. A value other than 0, 1 or auto is
refused by name when the engine is built (the segment then runs in torch, and the log says
why). =1 makes the code generator emit each GEMM's epilogue alone as a second kernel
("<kernel>_e", codegen.c lib_epi_wanted) on any device, so the text that the CUDA launch path
runs after a cuBLAS product is compiled here too (PoCL in CI); the engines' results must stay
those of eager (fp32: 1e-5; fp16: 1e-2 relative to max(|ref|, 1)). cuBLAS itself runs only in
the CUDA launch path: tests/gpu/test_cublas_gemm.py."""
import logging
import re

import pytest
import torch

import torchtrt_c
from torchtrt_c import _C


def _accs(trt):
    return [c for n, c in trt.named_children() if n.startswith("_run_on_acc_")]


@pytest.mark.parametrize("var,bad", [("TORCHTRT_C_CUDA_LIBS", "yes"), ("TORCHTRT_C_CUDA_LIBS", "2"),
                                     ("TORCHTRT_C_CUDA_LIBS", "on"),
                                     # cuBLASLt epilogues (tests/gpu/test_cublaslt_epilogue.py): 0 or 1
                                     ("TORCHTRT_C_CUDA_LT", "2"), ("TORCHTRT_C_CUDA_LT", "on"),
                                     # channels-last convolutions (tests/gpu/test_cuda_nhwc.py): 0 or 1
                                     ("TORCHTRT_C_CUDA_NHWC", "2"), ("TORCHTRT_C_CUDA_NHWC", "yes")])
def test_bad_value_is_named(var, bad, monkeypatch, caplog):
    monkeypatch.setenv(var, bad)
    m = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU()).eval()
    x = torch.randn(3, 4)
    with caplog.at_level(logging.WARNING):
        trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    assert not _accs(trt)
    assert f"{var}={bad}" in caplog.text, caplog.text
    with torch.no_grad():
        torch.testing.assert_close(trt(x), m(x))

class _Block(torch.nn.Module):
    """GEMMs with epilogues: bias + GELU, a residual add, a batched product of activations."""

    def __init__(self, d, h):
        super().__init__()
        self.up = torch.nn.Linear(d, h)
        self.down = torch.nn.Linear(h, d)

    def forward(self, x):
        y = self.down(torch.nn.functional.gelu(self.up(x))) + x
        return torch.matmul(y, y.transpose(-1, -2)) * 0.5


@pytest.mark.parametrize("value", ["0", "1", "auto"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("shape", [(2, 7, 13), (1, 5, 32)])
def test_epilogue_kernels_compile_and_results_hold(value, dtype, shape, monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_CUDA_LIBS", value)
    # the GPU kernel families, no host BLAS: the GEMMs are OpenCL kernels here as on a GPU
    monkeypatch.setenv("TORCHTRT_C_NATIVE", "0")
    monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")
    torch.manual_seed(sum(shape))
    m = _Block(shape[-1], 2 * shape[-1] + 1).eval()
    x = torch.randn(*shape)
    if dtype == torch.float16:
        m, x = m.half(), x.half()
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1, enabled_precisions={dtype})
    accs = _accs(trt)
    assert accs
    srcs = [_C.Engine.deserialize(bytes(c.engine.numpy()), cache_dir="").info()["source"] for c in accs]
    epi = [k for s in srcs for k in re.findall(r"__kernel void (k\d+_e)\(", s)]
    if value == "1":
        assert len(epi) >= 2, "no epilogue kernels emitted for the GEMMs with epilogues"
    elif value == "0":
        assert not epi, epi
    # auto: emitted on NVIDIA targets only (tests/gpu/test_cublas_gemm.py counts them there)
    with torch.no_grad():
        want = m.float()(x.float())
        got = trt(x).float()
    tol = 1e-5 if dtype == torch.float32 else 1e-2
    err = (got - want).abs().max().item() / max(want.abs().max().item(), 1.0)
    assert err <= tol, f"relative error {err:.3g} > {tol} ({value}, {dtype}, {shape})"
