"""Native convolutions through oneDNN (backend/cpu/native_conv_dnnl.c) against torch eager, and the
same engines with TORCHTRT_C_NATIVE_CONV=blas (im2col + OpenBLAS, the path taken where oneDNN
is missing). The knob is read on every call, so one engine is checked both ways. Cases: odd
sizes, batch > 1, stride/padding/dilation/groups, 1x1 strided, shapes whose floor division drops
input rows (ResNet's 1x1 stride-2 downsampling of an even image: computed bottom padding below
zero, asked of oneDNN as 0, which its floor division accepts), a kernel as big as the
image, two engines with the same shapes
and different weights (the kept weights are per engine), dynamic batch (one primitive per
shape), threads sharing an engine, engines freed and rebuilt.
Where the device has no native path or oneDNN does not load, the cases still compare the engine
with torch and the oneDNN-only assertions are skipped.
Tolerance: fp32 atol = rtol = 1e-4 (operands scaled for O(1) outputs; only the summation order
differs between oneDNN, OpenBLAS and torch)."""
import threading

import numpy as np
import pytest
import torch

import torchtrt_c
import torchtrt_c._C as C
from convtest import Const, assert_close, check_op, rand
from test_conv_kernels import conv_case
from torchtrt_c import settings

MODES = ["dnnl", "blas"]


@pytest.fixture(autouse=True)
def plain_env(monkeypatch):
    for v in ("TORCHTRT_C_KERNELS", "TORCHTRT_C_CONV_TILE", "TORCHTRT_C_CONV_CPU", "TORCHTRT_C_NATIVE",
              "TORCHTRT_C_NATIVE_CONV"):
        monkeypatch.delenv(v, raising=False)


def dnnl_on():
    return C.native_cpu()["conv"] == "onednn"


def test_knob_and_report(monkeypatch):
    info = C.native_cpu()
    assert set(info) >= {"available", "library", "conv", "conv_library"}, info
    if not info["available"]:
        assert info["conv"] == ""
        pytest.skip("no native path on this device")
    assert info["conv"] in ("onednn", "blas"), info
    if info["conv"] == "onednn":
        assert info["conv_library"].startswith("oneDNN 2."), info
    settings.set(NATIVE_CONV="blas")
    assert C.native_cpu()["conv"] == "blas"


CASES = [  # n, cin, cout, (h, w), k, stride, pad, dil, groups
    (1, 3, 8, (11, 9), 3, 1, 1, 1, 1),
    (3, 5, 13, (7, 21), 3, 2, 1, 1, 1),       # batch 3, stride 2
    (2, 6, 10, (9, 9), 3, 1, 2, 2, 1),        # dilation
    (2, 8, 12, (10, 7), 3, 1, 0, 1, 2),       # groups
    (2, 12, 20, (9, 9), 1, 2, 0, 1, 1),       # 1x1 stride 2
    (1, 16, 24, (7, 7), 1, 1, 0, 1, 1),       # 1x1: a GEMM in the blas path
    (2, 3, 16, (23, 19), 7, 2, 3, 1, 1),      # a stem
    (1, 4, 6, (9, 9), 2, 2, 0, 1, 1),         # floor drops the last row/column: bottom padding -1
    (1, 4, 4, (5, 5), 5, 1, 0, 1, 1),         # kernel as big as the image
    (2, 17, 33, (13, 11), 3, 1, 1, 1, 1),     # channels off oneDNN's 8/16 blocks
    (2, 8, 8, (9, 11), 3, 1, 1, 1, 8),        # depthwise
    (1, 6, 12, (8, 8), 3, 2, 1, 1, 6),        # depthwise, channel multiplier 2
    (2, 19, 19, (15, 13), 5, 2, 2, 1, 19),    # depthwise 5x5 stride 2, odd channels
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[:3])) + f"-k{c[4]}s{c[5]}p{c[6]}d{c[7]}g{c[8]}")
def test_conv(case, mode, monkeypatch):
    settings.set(NATIVE_CONV=mode)
    n, cin, cout, hw, k, s, p, d, g = case
    for bias, relu, residual in ((True, False, False), (True, True, True)):
        conv_case(n, cin, cout, hw, k, s, p, d, g, bias=bias, relu=relu, residual=residual, seed=cin + cout)


def test_depthwise_native_with_onednn(monkeypatch):
    """Depthwise convolutions run natively where oneDNN is in use when the engine is built (a
    direct kernel there), and stay OpenCL kernels otherwise."""
    for mode in MODES:
        settings.set(NATIVE_CONV=mode)
        e = conv_case(2, 8, 8, (9, 11), 3, 1, 1, 1, 8, relu=True, seed=3)
        nat = sum("(native)" in d for d in e.info()["kernels"])
        assert nat == (1 if dnnl_on() else 0), (mode, C.native_cpu(), e.info()["kernels"])


def test_same_engine_both_ways(monkeypatch):
    """One engine, the knob flipped between calls: the same result both ways (the kept weights
    survive a call that went through im2col)."""
    x = rand(2, 9, 15, 13, seed=1)
    w = rand(14, 9, 3, 3, seed=2) / 9
    e = check_op("aten.convolution.default", [x, Const(w), None, [1, 2], [1, 0], [1, 1], False, [0, 0], 1], tol=1e-4)
    ref = torch.nn.functional.conv2d(x, w, None, (1, 2), (1, 0)).numpy()
    for mode in ["dnnl", "blas", "dnnl", "blas", "dnnl"]:
        settings.set(NATIVE_CONV=mode)
        out = np.full(ref.shape, np.nan, np.float32)
        e.execute([x.numpy()], [out])
        err = float(np.abs(out - ref).max())
        assert err < 1e-4, f"{mode}: max abs error {err}"


def test_engines_keep_their_own_weights():
    """Two engines with the same convolution shape and different weights, run interleaved, and
    a third built after the first is freed."""
    x = rand(1, 8, 12, 12, seed=7)
    ws = [rand(16, 8, 3, 3, seed=s) / 8 for s in (8, 9, 10)]
    conv = lambda w: [x, Const(w), None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1]  # noqa: E731
    engines = [check_op("aten.convolution.default", conv(w), tol=1e-4) for w in ws[:2]]
    for _ in range(2):
        for e, w in zip(engines, ws):
            ref = torch.nn.functional.conv2d(x, w, None, 1, 1).numpy()
            out = np.empty(ref.shape, np.float32)
            e.execute([x.numpy()], [out])
            assert np.abs(out - ref).max() < 1e-4
    del engines[0]
    check_op("aten.convolution.default", conv(ws[2]), tol=1e-4)


class _Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(5, 12, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(12)
        self.b = torch.nn.Conv2d(12, 12, 3, stride=2, padding=1, groups=3)
        self.c = torch.nn.Conv2d(12, 5, 1)

    def forward(self, x):
        y = torch.relu(self.bn(self.a(x)))
        return self.c(torch.relu(self.b(y)))


@pytest.mark.parametrize("mode", MODES)
def test_dynamic_batch(mode, monkeypatch):
    settings.set(NATIVE_CONV=mode)
    torch.manual_seed(0)
    m = _Net().eval()
    with torch.no_grad():
        m.bn.running_mean.uniform_(-0.5, 0.5)
        m.bn.running_var.uniform_(0.5, 1.5)
    inp = torchtrt_c.Input(min_shape=(1, 5, 11, 9), opt_shape=(2, 5, 11, 9), max_shape=(4, 5, 11, 9))
    trt = torchtrt_c.compile(m, inputs=[inp], min_block_size=1)
    for b in (1, 4, 3, 1):
        x = torch.randn(b, 5, 11, 9)
        with torch.no_grad():
            assert_close(trt(x), m(x), 1e-4, 1e-4, f"{mode} batch {b}")


def test_threads_share_engine():
    e = conv_case(2, 8, 16, (12, 12), 3, 1, 1, relu=True, seed=11)
    x = rand(2, 8, 12, 12, seed=11).numpy()
    ref = np.empty((2, 16, 12, 12), np.float32)
    e.execute([x], [ref])
    errs = []

    def work():
        out = np.empty_like(ref)
        for _ in range(4):
            e.execute([x], [out])
            errs.append(float(np.abs(out - ref).max()))

    ts = [threading.Thread(target=work) for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(errs) == 12 and max(errs) == 0.0, errs


# shapes whose floor division drops input rows/columns (the computed bottom/right padding is
# negative): n, cin, cout, (h, w), k, stride, pad, groups
FLOOR_DROPS = [
    (2, 16, 24, (14, 14), 1, 2, 0, 1),    # ResNet's downsampling: 1x1 stride 2, even image
    (1, 5, 7, (11, 15), 1, 3, 0, 1),      # stride 3, both sides short by different amounts
    (3, 6, 9, (11, 10), 2, 3, 0, 1),      # 2x2 stride 3
    (2, 12, 12, (12, 9), 3, 2, 0, 12),    # depthwise 3x3 stride 2, no padding
    (1, 8, 8, (11, 10), 3, 4, 1, 1),      # stride 4 with padding (rows short by 1, columns not)
]


@pytest.mark.parametrize("case", FLOOR_DROPS, ids=lambda c: "x".join(map(str, c[:3])) + f"-k{c[4]}s{c[5]}p{c[6]}g{c[7]}")
@pytest.mark.parametrize("nhwc", [True, False])
def test_native_conv_floor_drops_rows(case, nhwc):
    """oneDNN itself (the bench hook raises where it refuses, where an engine would silently take
    im2col + sgemm) runs convolutions whose output size drops input rows, NHWC and NCHW."""
    if not dnnl_on():
        pytest.skip("oneDNN is not in use on this device")
    n, cin, cout, (h, w), k, s, p, g = case
    x = rand(n, cin, h, w, seed=cin)
    wt = rand(cout, cin // g, k, k, seed=cout) / (cin // g * k * k) ** 0.5
    b = rand(cout, seed=1)
    ref = torch.nn.functional.conv2d(x, wt, b, s, p, 1, g)
    oh, ow = ref.shape[2:]
    xa = x.permute(0, 2, 3, 1).contiguous().numpy() if nhwc else x.numpy()
    y = np.full((n, oh, ow, cout) if nhwc else (n, cout, oh, ow), np.nan, np.float32)
    ts = C.native_conv(xa, wt.numpy(), b.numpy(), y, (s, s), (p, p), groups=g, nhwc=nhwc, runs=2)
    assert len(ts) == 2 and all(t > 0 for t in ts), ts
    out = torch.from_numpy(y).permute(0, 3, 1, 2) if nhwc else torch.from_numpy(y)
    assert_close(out, ref, 1e-4, 1e-4, f"native_conv {case} nhwc={nhwc}")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", FLOOR_DROPS, ids=lambda c: "x".join(map(str, c[:3])) + f"-k{c[4]}s{c[5]}p{c[6]}g{c[7]}")
def test_conv_floor_drops_rows(case, mode, monkeypatch):
    """The same shapes as engines (+ bias, ReLU, a residual) both ways."""
    settings.set(NATIVE_CONV=mode)
    n, cin, cout, hw, k, s, p, g = case
    conv_case(n, cin, cout, hw, k, s, p, 1, g, bias=True, relu=True, residual=True, seed=cin + cout)


def test_native_conv_bad_arguments():
    if not dnnl_on():
        pytest.skip("oneDNN is not in use on this device")
    x = np.zeros((1, 4, 6, 6), np.float32)
    w = np.zeros((8, 4, 3, 3), np.float32)
    y = np.zeros((1, 8, 6, 6), np.float32)
    C.native_conv(x, w, None, y, (1, 1), (1, 1))
    with pytest.raises(torchtrt_c.InputError, match="disagree"):
        C.native_conv(x, w, None, np.zeros((1, 8, 5, 6), np.float32), (1, 1), (1, 1))   # wrong output size
    with pytest.raises(torchtrt_c.InputError, match="disagree"):
        C.native_conv(x, w, np.zeros(7, np.float32), y, (1, 1), (1, 1))                 # bias of 7 for 8 channels
    with pytest.raises(torchtrt_c.InputError, match="disagree"):
        C.native_conv(x, w, None, y, (1, 1), (1, 1), groups=3)                           # 4 channels in 3 groups
    with pytest.raises(torchtrt_c.InputError, match="float32"):
        C.native_conv(x.astype(np.float64), w, None, y, (1, 1), (1, 1))
    with pytest.raises(torchtrt_c.InputError, match="rank 4"):
        C.native_conv(x[0], w, None, y, (1, 1), (1, 1))
