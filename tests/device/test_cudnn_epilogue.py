"""Convolutions' epilogue kernels for the CUDA launch path's cuDNN step, on any device.

With TORCHTRT_C_CUDA_LIBS=1 the code generator emits each convolution's epilogue alone as a
second kernel ("<kernel>_e", codegen.c lib_epi_wanted), which the CUDA launch path runs in
place after cuDNN wrote the raw convolution (backend/cuda/exec_cuda.c, backend/cuda/cudnn.c). Here
(PoCL in CI) the text is compiled with the GPU kernel families and the engines' results must
stay those of eager: fp32 1e-4, fp16 1e-2 of max(|ref|, 1). Split-K convolutions get none
(their output is partial sums). cuDNN itself runs only on a GPU: tests/gpu/test_cudnn_engine.py.
"""
import re

import pytest
import torch

import torchtrt_c
from torchtrt_c import _C

from cudalaunch import ConvNet as Net, accs


def _sources(trt):
    engines = accs(trt)
    assert engines
    return [_C.Engine.deserialize(bytes(c.engine.numpy()), cache_dir="").info()["source"] for c in engines]


@pytest.mark.parametrize("value", ["0", "1"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("shape", [(2, 3, 17, 13), (1, 3, 8, 8)])
def test_conv_epilogue_kernels(value, dtype, shape, monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_CUDA_LIBS", value)
    monkeypatch.setenv("TORCHTRT_C_NATIVE", "0")
    monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")
    torch.manual_seed(sum(shape))
    m = Net(8).eval()
    with torch.no_grad():   # BN statistics that are not the identity
        m.a[1].running_mean.uniform_(-0.5, 0.5)
        m.a[1].running_var.uniform_(0.5, 2.0)
    x = torch.randn(*shape)
    if dtype == torch.float16:
        m, x = m.half(), x.half()
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1, enabled_precisions={dtype})
    srcs = _sources(trt)
    epi = [k for s in srcs for k in re.findall(r"__kernel void (k\d+_e)\(", s)]
    if value == "1":
        # a (BN+ReLU), b (bias+residual+ReLU), dw (bias+ReLU6), g (bias+sigmoid): four epilogues;
        # the plain conv has none (it may run as a GEMM, whose epilogue rule is the lead's)
        assert len(epi) >= 4, f"epilogue kernels {epi}"
    else:
        assert not epi, epi
    with torch.no_grad():
        want = m.float()(x.float())
        got = trt(x).float()
    tol = 1e-4 if dtype == torch.float32 else 1e-2
    err = (got - want).abs().max().item() / max(want.abs().max().item(), 1.0)
    assert err <= tol, f"relative error {err:.3g} > {tol} ({value}, {dtype}, {shape})"


class _Chain(torch.nn.Module):
    """conv + ReLU -> conv + bias + residual + ReLU -> conv + ReLU -> strided conv: the middle
    tensors are the ones the CUDA path keeps channels-last (csrc/kir/nhwc.c: two convolutions
    NHWC on both sides, two changing a layout; 3x3: a 1x1 may become a GEMM)"""

    def __init__(self, c):
        super().__init__()
        self.a = torch.nn.Conv2d(3, c, 3, padding=1)
        self.b = torch.nn.Conv2d(c, c, 3, padding=1)
        self.e = torch.nn.Conv2d(c, c, 3, padding=1)
        self.c = torch.nn.Conv2d(c, 4, 3, stride=2, padding=1, bias=False)

    def forward(self, x):
        y = torch.relu(self.a(x))
        return self.c(torch.relu(self.e(torch.relu(self.b(y) + y))))


@pytest.mark.parametrize("nhwc", ["0", "1"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("c", [8, 13])
def test_channels_last_epilogue_kernels(nhwc, dtype, c, monkeypatch):
    """With TORCHTRT_C_CUDA_LIBS=1 the convolutions whose output the CUDA path keeps NHWC also get
    "<kernel>_eh" (their epilogue over NHWC, runs of 8/4 halves/floats along C, or of one where
    no width divides it: c=13); compiled here, run on a GPU by tests/gpu/test_cuda_nhwc.py and
    on this device by csrc/tests/test_cuda_nhwc.c. TORCHTRT_C_CUDA_NHWC=0: none."""
    for k, v in (("TORCHTRT_C_CUDA_LIBS", "1"), ("TORCHTRT_C_NATIVE", "0"), ("TORCHTRT_C_KERNELS", "gpu"),
                 ("TORCHTRT_C_CONV_KSPLIT", "1"), ("TORCHTRT_C_CUDA_NHWC", nhwc)):
        monkeypatch.setenv(k, v)
    torch.manual_seed(c)
    m, x = _Chain(c).eval(), torch.randn(2, 3, 9, 7)
    if dtype == torch.float16:
        m, x = m.half(), x.half()
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1, enabled_precisions={dtype})
    eh = [k for s in _sources(trt) for k in re.findall(r"__kernel void (k\d+_eh)\(", s)]
    assert (len(eh) >= 1) == (nhwc == "1"), eh
    with torch.no_grad():
        want = m.float()(x.float())
        got = trt(x).float()
    tol = 1e-4 if dtype == torch.float32 else 1e-2
    err = (got - want).abs().max().item() / max(want.abs().max().item(), 1.0)
    assert err <= tol, f"relative error {err:.3g} > {tol}"
