"""The integer GEMM on int8 tensor cores (codegen_qgemm.c gen_qgemm_mma: mma.sync m16n8k32 s8,
chosen on NVIDIA sm_80+); TORCHTRT_C_QGEMM_MMA=1 takes it on any device, elsewhere than NVIDIA
through the PTX prelude's emulation, so that on PoCL the tile logic, the staging of A and B and
the edges are differentially tested (on the H100 the same tests ran the PTX: 2026-12-07). aten._int_mm accumulates in int32: results must be exactly torch's,
at odd sizes (partial tiles, K not a multiple of the 64-byte slice or of a 16-byte chunk), for a
weight stored [N, K] (k-contiguous: the vector loads) and [K, N] (the byte loop), with a
torchao-style epilogue (per-row x per-column scales) and a dynamic row count. PT2E's linears
(torchtrt_c.qlinear: uint8 or int8 activations with a zero point) take the same kernel, the zero
point handled as in the convolution's (test_qconv_mma.py): exact against torch in float64 with
unit scales, and bit-identical to the portable kernel through a requantization epilogue."""
import pytest
import torch

import torchtrt_c
import torchtrt_c._C as C
from torchtrt_c.dynamo import _quant  # noqa: F401  (registers torch.ops.torchtrt_c.qlinear)


@pytest.fixture(autouse=True)
def _forced(monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_QGEMM_MMA", "1")
    monkeypatch.setenv("TORCHTRT_C_NATIVE", "0")   # the OpenCL kernel on CPU devices too


def _i8(*shape, seed=0):
    return torch.randint(-128, 128, shape, generator=torch.Generator().manual_seed(seed), dtype=torch.int8)


class IntMM(torch.nn.Module):
    def __init__(self, w, kn=False, scales=None):
        super().__init__()
        # a weight stored [N, K] and used transposed (torchao's layout), or stored [K, N]
        self.register_buffer("w", w.t().contiguous() if kn else w)
        self.kn = kn
        self.scales = scales

    def forward(self, x):
        y = torch._int_mm(x, self.w if self.kn else self.w.t())
        if self.scales is None:
            return y
        sx, sw = self.scales
        return y.float() * sx * sw


def _source(trt):
    eng = C.Engine.deserialize(bytes(trt._run_on_acc_0.engine.numpy()), cache_dir="")
    return eng.info()["source"]


@pytest.mark.parametrize("M,K,N", [(1, 32, 8), (17, 64, 33), (64, 128, 64), (130, 96, 70), (5, 40, 12),
                                   (3, 200, 129)])
@pytest.mark.parametrize("kn", [False, True], ids=["w_nk", "w_kn"])
def test_int_mm_on_tensor_cores_is_exact(M, K, N, kn):
    w = _i8(N, K, seed=1)
    x = _i8(M, K, seed=2)
    m = IntMM(w, kn).eval()
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    assert "ttc_mma_s8(" in _source(trt)
    with torch.no_grad():
        y = trt(x)
    assert y.dtype == torch.int32
    assert torch.equal(y, torch._int_mm(x, w.t().contiguous()))


def test_int_mm_extremes_and_scales_epilogue():
    """-128 x -128 over K = 4096 (2^26: past float's exact integers) and a float epilogue."""
    M, K, N = 9, 4096, 24
    x = torch.full((M, K), -128, dtype=torch.int8)
    x[1::2] = 127
    w = _i8(N, K, seed=3)
    w[0] = -128
    sx, sw = torch.rand(M, 1) * 0.01, torch.rand(1, N) * 0.01
    m = IntMM(w, scales=(sx, sw)).eval()
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    assert "ttc_mma_s8(" in _source(trt)
    ref = torch._int_mm(x, w.t())
    assert ref.abs().max().item() > 2 ** 24
    with torch.no_grad():
        y = trt(x)
    torch.testing.assert_close(y, ref.float() * sx * sw, rtol=1e-6, atol=0)


def test_int_mm_dynamic_rows():
    w = _i8(40, 96, seed=4)
    m = IntMM(w).eval()
    spec = torchtrt_c.Input(min_shape=(1, 96), opt_shape=(16, 96), max_shape=(200, 96), dtype=torch.int8)
    trt = torchtrt_c.compile(m, inputs=[spec], min_block_size=1)
    for M in (1, 65, 200, 7):
        x = _i8(M, 96, seed=M)
        with torch.no_grad():
            assert torch.equal(trt(x), torch._int_mm(x, w.t())), M


@pytest.mark.parametrize("setting", ["0", None])
def test_default_follows_the_device_and_off_means_off(setting, monkeypatch):
    """unset: chosen on NVIDIA sm_80+ only (read from the device), =0: never"""
    if setting is None:
        monkeypatch.delenv("TORCHTRT_C_QGEMM_MMA", raising=False)
    else:
        monkeypatch.setenv("TORCHTRT_C_QGEMM_MMA", setting)
    w = _i8(16, 64, seed=5)
    x = _i8(4, 64)
    trt = torchtrt_c.compile(IntMM(w).eval(), inputs=[x], min_block_size=1)
    src = _source(trt)
    nvidia_engine = "#define TTC_PTX 1" in src
    sm80 = torch.cuda.is_available() and torch.cuda.get_device_capability() >= (8, 0)
    want = setting is None and nvidia_engine and sm80
    assert ("ttc_mma_s8(" in src) == want
    with torch.no_grad():
        assert torch.equal(trt(x), torch._int_mm(x, w.t()))


class QLinear(torch.nn.Module):
    def __init__(self, w, zp, x_scale=1.0, scales=None, bias=None):
        super().__init__()
        self.register_buffer("w", w)
        self.register_buffer("ws", torch.ones(w.shape[0]) if scales is None else scales)
        self.register_buffer("b", bias)
        self.zp, self.xs = zp, x_scale

    def forward(self, x):
        return torch.ops.torchtrt_c.qlinear(x, self.xs, self.zp, self.w, self.ws, self.b)


def _q(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    lo, hi = (-128, 128) if dtype == torch.int8 else (0, 256)
    return torch.randint(lo, hi, shape, generator=g).to(dtype)


@pytest.mark.parametrize("M,K,N,dt,zp", [(5, 37, 11, torch.uint8, 0), (17, 64, 33, torch.uint8, 119),
                                         (3, 200, 129, torch.int8, -7), (66, 96, 70, torch.uint8, 255),
                                         (4, 40, 8, torch.int8, 127), (9, 48, 20, torch.uint8, 128)])
def test_pt2e_linear_with_a_zero_point_is_exact(M, K, N, dt, zp):
    x, w = _q((M, K), dt, seed=M), _i8(N, K, seed=N)
    trt = torchtrt_c.compile(QLinear(w, zp).eval(), inputs=[x], min_block_size=1)
    with torch.no_grad():
        y = trt(x)
    assert "ttc_mma_s8(" in _source(trt)
    assert torch.equal(y, ((x.double() - zp) @ w.double().t()).float())


@pytest.mark.parametrize("dt,zp", [(torch.uint8, 3), (torch.int8, -20)])
def test_pt2e_linear_scaled_is_the_portable_kernels_bitwise(dt, zp, monkeypatch):
    g = torch.Generator().manual_seed(5)
    x, w = _q((7, 72), dt, seed=1), _i8(45, 72, seed=2)
    m = QLinear(w, zp, 0.0227, torch.rand(45, generator=g) * 0.02 + 0.001, torch.randn(45, generator=g)).eval()
    ys = []
    for setting in ("1", "0"):   # engines are built lazily: run each under its setting
        monkeypatch.setenv("TORCHTRT_C_QGEMM_MMA", setting)
        trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
        with torch.no_grad():
            ys.append(trt(x))
        assert ("ttc_mma_s8(" in _source(trt)) == (setting == "1")
    assert torch.equal(ys[0], ys[1])
    with torch.no_grad():
        want = m(x)
    torch.testing.assert_close(ys[0], want, rtol=1e-5, atol=1e-5 * want.abs().max().item())
