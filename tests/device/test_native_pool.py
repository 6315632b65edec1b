"""Max / average pooling as native CPU kernels (backend/cpu/native_pool.c) against torch eager, each
case built natively (the default where the device runs native kernels) and with
TORCHTRT_C_NATIVE_POOL=0 (the OpenCL kernel, read at build). Cases: padding, stride, dilation,
ceil_mode, count_include_pad on/off, divisor_override, odd sizes, batch > 1, windows wholly
inside the image (the unchecked fast path) and at the borders, NaN inputs for max (NaN wins, as
in torch), a pool fused between two convolutions with an epilogue applied in the native call.
Tolerance: max exact (nan-aware); average atol = rtol = 1e-5."""
import numpy as np
import pytest
import torch

import torchtrt_c
import torchtrt_c._C as C
from convtest import assert_close, check_op, rand
from torchtrt_c import settings


@pytest.fixture(autouse=True)
def plain_env(monkeypatch):
    for v in ("TORCHTRT_C_KERNELS", "TORCHTRT_C_NATIVE", "TORCHTRT_C_NATIVE_POOL", "TORCHTRT_C_NATIVE_CONV"):
        monkeypatch.delenv(v, raising=False)


def n_native(e):
    return sum("(native)" in d for d in e.info()["kernels"])


MAX = [  # shape, k, stride, pad, dil, ceil
    ((1, 3, 17, 13), 3, 2, 1, 1, False),
    ((2, 5, 12, 12), 2, 2, 0, 1, False),
    ((2, 4, 11, 9), 3, 2, 1, 1, True),
    ((1, 2, 15, 16), 3, 1, 1, 2, False),
    ((3, 1, 7, 30), (2, 4), (1, 3), (1, 2), 1, True),
    ((1, 64, 28, 28), 3, 2, 1, 1, False),
]


@pytest.mark.parametrize("native", ["1", "0"])
@pytest.mark.parametrize("case", MAX, ids=lambda c: "x".join(map(str, c[0])) + f"-k{c[1]}s{c[2]}p{c[3]}d{c[4]}c{int(c[5])}")
def test_max_pool(case, native, monkeypatch):
    if native == "0":
        settings.set(NATIVE_POOL="0")
    shape, k, s, p, d, ceil = case
    pair = lambda v: list(v) if isinstance(v, tuple) else [v, v]  # noqa: E731
    x = rand(*shape, seed=sum(shape))
    x.view(-1)[:: 7] = float("nan")   # NaN wins a max window
    e = check_op("aten.max_pool2d.default", [x, pair(k), pair(s), pair(p), pair(d), ceil], tol=0)
    if C.native_cpu()["available"]:
        assert n_native(e) == (1 if native == "1" else 0), e.info()["kernels"]


AVG = [  # shape, k, stride, pad, ceil, count_include_pad, divisor
    ((1, 3, 17, 13), 3, 2, 1, False, True, None),
    ((2, 5, 12, 11), 3, 2, 1, True, False, None),
    ((2, 4, 9, 9), 2, 1, 0, False, True, 3),
    ((1, 6, 14, 10), (3, 2), (2, 1), (1, 1), True, True, None),
]


@pytest.mark.parametrize("native", ["1", "0"])
@pytest.mark.parametrize("case", AVG, ids=lambda c: "x".join(map(str, c[0])) + f"-k{c[1]}s{c[2]}p{c[3]}c{int(c[4])}i{int(c[5])}d{c[6]}")
def test_avg_pool(case, native, monkeypatch):
    if native == "0":
        settings.set(NATIVE_POOL="0")
    shape, k, s, p, ceil, cip, div = case
    pair = lambda v: list(v) if isinstance(v, tuple) else [v, v]  # noqa: E731
    x = rand(*shape, seed=sum(shape) + 1)
    e = check_op("aten.avg_pool2d.default", [x, pair(k), pair(s), pair(p), ceil, cip, div], tol=1e-5)
    if C.native_cpu()["available"]:
        assert n_native(e) == (1 if native == "1" else 0), e.info()["kernels"]


class _Stem(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.pool = torch.nn.MaxPool2d(3, 2, 1)
        self.b = torch.nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.b(self.pool(torch.relu(self.a(x)))))


@pytest.mark.parametrize("native", ["1", "0"])
def test_pool_between_convolutions(native, monkeypatch):
    if native == "0":
        settings.set(NATIVE_POOL="0")
    torch.manual_seed(0)
    m = _Stem().eval()
    x = torch.randn(2, 3, 37, 29)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    with torch.no_grad():
        assert_close(trt(x), m(x), 1e-4, 1e-4, f"stem, native pool {native}")
