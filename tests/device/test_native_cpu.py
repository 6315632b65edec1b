"""Native CPU kernels (backend/cpu/native_ops.c): on an OpenCL device that runs native kernels (PoCL)
float32 GEMMs and convolutions run as clEnqueueNativeKernel commands calling OpenBLAS, their
epilogues (bias, activation, residual, ...) as an OpenCL kernel reading the result in place.
Differential tests against torch eager: GEMM shapes with odd sizes, transposed operands
(linear weights), batched and broadcast batches, fused epilogues; convolutions with
stride/padding/dilation/groups, 1x1 (no im2col), depthwise (stays an OpenCL kernel), bias + BN +
relu + residual fused; the TORCHTRT_C_NATIVE=0 fallback; fp16 engines (keep the OpenCL kernels);
save/load in a fresh process with and without the native path; the resident benchmark.
Where the device has no native path (a GPU, or no OpenBLAS) the same cases check the OpenCL
kernels and the native-only assertions are skipped.
Tolerances: fp32 atol = rtol = 1e-4 (operands scaled for O(1) outputs; only the summation order
differs); fp16 engines 2e-2."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import torchtrt_c
import torchtrt_c._C as C
from convtest import Const, assert_close, check_op, rand
from test_conv_kernels import conv_case

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def plain_env(monkeypatch):
    for v in ("TORCHTRT_C_KERNELS", "TORCHTRT_C_GEMM_TILE", "TORCHTRT_C_CONV_TILE", "TORCHTRT_C_CONV_CPU",
              "TORCHTRT_C_NATIVE", "TORCHTRT_C_NATIVE_CONV", "TORCHTRT_C_NATIVE_EPI"):
        monkeypatch.delenv(v, raising=False)


def native_on():
    return C.native_cpu()["available"]


def n_native(e):
    return sum("(native)" in d for d in e.info()["kernels"])


def expect_native(e, n):
    """n kernels of e are native where the device has the native path, none elsewhere."""
    want = n if native_on() else 0
    assert n_native(e) == want, (C.native_cpu(), e.info()["kernels"])


@pytest.mark.parametrize("m,k,n", [(1, 5, 3), (7, 9, 13), (33, 64, 17), (130, 37, 70), (3, 300, 6), (128, 96, 200)])
def test_linear(m, k, n):
    x = rand(m, k, seed=m)
    w = rand(n, k, seed=n) / k ** 0.5
    b = rand(n, seed=k)
    e = check_op("aten.linear.default", [x, Const(w), Const(b)], tol=1e-4)
    expect_native(e, 1)
    e = check_op("aten.linear.default", [x, Const(w), None], tol=1e-4)   # no epilogue: the native call only
    expect_native(e, 1)


@pytest.mark.parametrize("m,k,n", [(1, 7, 9), (6, 16, 31), (45, 19, 66)])
def test_mm_bmm_matmul(m, k, n):
    a, b = rand(m, k, seed=1), rand(k, n, seed=2) / k ** 0.5
    expect_native(check_op("aten.mm.default", [a, b], tol=1e-4), 1)
    a3, b3 = rand(3, m, k, seed=3), rand(3, k, n, seed=4) / k ** 0.5
    expect_native(check_op("aten.bmm.default", [a3, b3], tol=1e-4), 1)
    # a batch against one matrix (a 2-D operand shared by every batch), a constant operand
    expect_native(check_op("aten.matmul.default", [a3, Const(b)], tol=1e-4), 1)
    # transposed operand: B^T as a view of a [n, k] input
    bt = rand(n, k, seed=5) / k ** 0.5
    got = check_op("aten.mm.default", [a, bt.t()], tol=1e-4, ref=lambda x, y: x @ y)
    assert got.info()["n_kernels"] >= 1


def test_addmm_alpha_beta():
    a, b, c = rand(9, 11, seed=1), rand(11, 14, seed=2) / 11 ** 0.5, rand(9, 14, seed=3)
    check_op("aten.addmm.default", [c, a, b, 0.5, 2.0], tol=1e-4)


def test_empty_reduction():
    """K = 0: the library is not called (it may leave C as it was); the result is zeros, plus
    the epilogue."""
    expect_native(check_op("aten.mm.default", [rand(3, 0, seed=1), rand(0, 4, seed=2)], tol=1e-6), 1)
    expect_native(check_op("aten.addmm.default", [rand(6, 4, seed=3), rand(6, 0, seed=1), rand(0, 4, seed=2), 1, 1],
                           tol=1e-6), 1)


class _Mlp(torch.nn.Module):
    """linear + bias + gelu, linear + bias + residual, tanh: epilogues the engine fuses."""

    def __init__(self, d=24, h=40):
        super().__init__()
        self.a = torch.nn.Linear(d, h)
        self.b = torch.nn.Linear(h, d)

    def forward(self, x):
        return torch.tanh(self.b(torch.nn.functional.gelu(self.a(x))) + x)


@pytest.mark.parametrize("shape", [(5, 24), (2, 7, 24)])
def test_fused_epilogues(shape):
    torch.manual_seed(0)
    m = _Mlp().eval()
    x = torch.randn(*shape)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    with torch.no_grad():
        assert_close(trt(x), m(x), 1e-4, 1e-4, "mlp")
    engines = [C.Engine.deserialize(bytes(mod.engine.numpy()), cache_dir="") for mod in trt.modules()
               if hasattr(mod, "engine_meta")]
    assert engines
    if engines and native_on():
        assert sum(n_native(e) for e in engines) == 2, [e.info()["kernels"] for e in engines]


CONVS = [  # n, cin, cout, (h, w), k, stride, pad, dil, groups
    (1, 3, 8, (11, 9), 3, 1, 1, 1, 1),
    (2, 5, 13, (7, 21), 3, 2, 1, 1, 1),
    (1, 6, 10, (9, 9), 3, 1, 2, 2, 1),        # dilation
    (1, 8, 12, (10, 7), 3, 1, 0, 1, 2),       # groups
    (2, 16, 24, (7, 7), 1, 1, 0, 1, 1),       # 1x1: a GEMM on the image, no im2col
    (1, 12, 20, (9, 9), 1, 2, 0, 1, 1),       # 1x1 stride 2: im2col
    (1, 3, 16, (23, 19), 7, 2, 3, 1, 1),      # a stem
    (1, 4, 4, (5, 5), 5, 1, 0, 1, 1),         # kernel as big as the image: one output pixel
]


@pytest.mark.parametrize("case", CONVS, ids=lambda c: "x".join(map(str, c[:3])) + f"-k{c[4]}s{c[5]}p{c[6]}d{c[7]}g{c[8]}")
def test_conv(case):
    n, cin, cout, hw, k, s, p, d, g = case
    for bias, relu, residual in ((True, False, False), (False, True, True), (True, True, True)):
        e = conv_case(n, cin, cout, hw, k, s, p, d, g, bias=bias, relu=relu, residual=residual, seed=cin + cout)
        expect_native(e, 1)


def test_depthwise_keeps_opencl(monkeypatch):
    """Depthwise convolutions run natively only through oneDNN (tests/device/test_native_conv_dnnl.py);
    with TORCHTRT_C_NATIVE_CONV=blas at build they stay OpenCL kernels."""
    monkeypatch.setenv("TORCHTRT_C_NATIVE_CONV", "blas")
    e = conv_case(2, 8, 8, (9, 11), 3, 1, 1, 1, 8, relu=True, seed=3)
    assert n_native(e) == 0, e.info()["kernels"]
    e = conv_case(1, 6, 12, (8, 8), 3, 2, 1, 1, 6, seed=4)   # channel multiplier 2
    assert n_native(e) == 0, e.info()["kernels"]


def test_conv1d():
    e = conv_case(2, 5, 7, (1, 30), 3, 2, 1, conv1d=True, seed=2)
    expect_native(e, 1)


class _Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(6, 10, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(10)
        self.b = torch.nn.Conv2d(10, 6, 1, bias=False)

    def forward(self, x):
        return torch.relu(self.b(torch.relu(self.bn(self.a(x)))) + x)


def test_conv_bn_relu_residual_block():
    torch.manual_seed(0)
    m = _Block().eval()
    with torch.no_grad():
        m.bn.running_mean.uniform_(-0.5, 0.5)
        m.bn.running_var.uniform_(0.5, 1.5)
    inp = torchtrt_c.Input(min_shape=(1, 6, 9, 7), opt_shape=(2, 6, 9, 7), max_shape=(3, 6, 9, 7))
    trt = torchtrt_c.compile(m, inputs=[inp], min_block_size=1)
    for b in (1, 3):
        x = torch.randn(b, 6, 9, 7)
        with torch.no_grad():
            assert_close(trt(x), m(x), 1e-4, 1e-4, f"block batch {b}")


def test_env_forces_opencl_kernels(monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_NATIVE", "0")
    assert not C.native_cpu()["available"]
    e = conv_case(1, 5, 9, (8, 8), 3, 1, 1, relu=True, seed=5)
    assert n_native(e) == 0
    x, w = rand(6, 10, seed=1), rand(7, 10, seed=2) / 10 ** 0.5
    e = check_op("aten.linear.default", [x, Const(w), Const(rand(7, seed=3))], tol=1e-4)
    assert n_native(e) == 0


def test_fp16_engines():
    """fp16 engines: ops whose operands or result are half keep the OpenCL kernels; a convolution
    between the engine's float32 bindings may still run natively (in float32). Correct either way."""
    conv_case(1, 5, 9, (8, 8), 3, 1, 1, relu=True, precision="fp16", seed=6)
    x, w = rand(6, 10, seed=1), rand(7, 10, seed=2) / 10 ** 0.5
    g = C.Graph()
    xi = g.add_input("x", ("tensor", "float32", [6, 10]))
    wi = g.add_tensor_constant("w", "float32", [7, 10], w.numpy())
    ot = ("tensor", "float32", [6, 7])
    (h,) = g.add_node("aten.linear.default", [xi, wi, g.add_constant(None)], [ot])
    (h,) = g.add_node("aten.relu.default", [h], [ot])
    (y,) = g.add_node("aten.mm.default", [h, g.add_tensor_constant("v", "float32", [7, 7], torch.eye(7).numpy())], [ot])
    g.set_outputs([y])
    e = C.Engine.build(g, name="fp16", precision="fp16", cache_dir="")
    out = np.empty((6, 7), np.float32)
    e.execute([x.numpy()], [out])
    assert_close(torch.from_numpy(out), torch.relu(x @ w.t()), 2e-2, 2e-2, "fp16 linear+relu+mm")
    # the intermediate h is half: the GEMM reading it keeps the OpenCL kernel
    assert n_native(e) <= 1, e.info()["kernels"]


def test_benchmark_and_profile():
    """The resident benchmark and the per-kernel profile run native kernels too (their own
    buffers and scratch); the native kernel's time is the library call's."""
    e = conv_case(1, 8, 16, (12, 12), 3, 1, 1, relu=True, seed=7)
    x = rand(1, 8, 12, 12, seed=7).numpy()
    times = e.benchmark([x], runs=2, warmup=1)
    assert len(times) == 2 and min(times) > 0, times
    prof = e.profile([x], runs=2, warmup=1)
    assert len(prof) == e.info()["n_kernels"] and all(t > 0 for _, t in prof), prof


def test_threads_share_engine():
    import threading
    x = rand(64, 48, seed=1)
    w = rand(80, 48, seed=2) / 48 ** 0.5
    e = check_op("aten.linear.default", [x, Const(w), None], tol=1e-4)
    ref = (x @ w.t()).numpy()
    errs = []

    def work(seed):
        out = np.empty((64, 80), np.float32)
        for _ in range(5):
            e.execute([x.numpy()], [out])
            errs.append(float(np.abs(out - ref).max()))

    ts = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(errs) == 15 and max(errs) < 1e-3, errs


_LOAD = """
import sys, numpy as np, torchtrt_c._C as C
blob = open(sys.argv[1], "rb").read()
e = C.Engine.deserialize(blob, cache_dir="")
x = np.load(sys.argv[2]); ref = np.load(sys.argv[3])
out = np.empty(ref.shape, np.float32)
e.execute([x], [out])
print(float(np.abs(out - ref).max()), sum("(native)" in d for d in e.info()["kernels"]), C.native_cpu()["available"])
"""


@pytest.mark.parametrize("native_env", ["", "0"])
def test_save_load_fresh_process(tmp_path, native_env):
    """An engine built here (native where available) loads in a fresh process; with
    TORCHTRT_C_NATIVE=0 there (as on a machine without the library) it is rebuilt with the
    OpenCL kernels."""
    e = conv_case(1, 6, 10, (9, 9), 3, 1, 1, relu=True, seed=8)
    x = rand(1, 6, 9, 9, seed=8).numpy()
    ref = np.empty((1, 10, 9, 9), np.float32)
    e.execute([x], [ref])
    (tmp_path / "e.bin").write_bytes(e.serialize())
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "ref.npy", ref)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env["TORCHTRT_C_NATIVE"] = native_env or "1"
    r = subprocess.run([sys.executable, "-c", _LOAD, str(tmp_path / "e.bin"), str(tmp_path / "x.npy"),
                        str(tmp_path / "ref.npy")], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    err, n, avail = r.stdout.split()[-3:]
    assert float(err) < 1e-4, r.stdout
    assert int(n) == (1 if avail == "True" else 0), r.stdout
    if native_env == "0":
        assert avail == "False"
