"""Weight-only quantized linear at large M on the native CPU step (issue 35; backend/cpu/native_wq.c):
above the GEMV's row limit (12 to 64 rows by loop, bits and layer size: native_wq.h) the packed weights
are dequantized a block of rows at a time into a kept per-thread buffer and multiplied by the
float32 linear's oneDNN matmul (native_gemm_dnnl.c), the epilogue's bias and activation inside
it as post-ops (the plan the float32 linear takes, native_post.c), a residual add after it in C;
blocks of 16 MB of floats, so a [2500, 4096] weight takes 3 (1024, 1024, 452 rows) written as
column blocks of y (oneDNN's C with a row stride), each with its slice of the bias.
TORCHTRT_C_NATIVE_GEMM=blas: OpenBLAS's sgemm for the blocks, the epilogue in native_epi.

Differential against torch on the same dequantized weights (float64, then the epilogue in
float64): int8 per channel and grouped with zero points, int4 grouped; odd N and K; M 70, 200
and a [3, 50, K] input; bias + GELU / SiLU / GELU-tanh, + a residual input. With dynamic rows
(1..300) the post-ops are planned and every call applies them: M 5 takes the GEMV with the
post-ops in C after it, M 200 the matmul. Tolerance: 5e-6 of the output's largest |value| (float32
sums of K products in another order than torch's; the errors seen are below 6e-7); 1e-4 for the
GEMV's calls (the VNNI loop rounds x to int16 a row: errors seen up to 3e-5)."""
import pytest
import torch

import torchtrt_c
import torchtrt_c._C as C
from torchtrt_c.dynamo._weight_only import dequantize

from engine_kernels import kernels  # noqa: E402
from test_wq_linear import random_weights  # noqa: E402

F = torch.nn.functional
ACTS = {"gelu": F.gelu, "silu": F.silu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh")}
TOL = 5e-6
TOL_GEMV = 1e-4   # the VNNI GEMV rounds x to int16 per row (test_wq_linear's native loops: its bound)


@pytest.fixture(autouse=True)
def plain_env(monkeypatch):
    for v in ("TORCHTRT_C_KERNELS", "TORCHTRT_C_NATIVE", "TORCHTRT_C_NATIVE_WQ_ISA", "TORCHTRT_C_NATIVE_WQ_GEMV_MAX_M",
              "TORCHTRT_C_NATIVE_GEMM", "TORCHTRT_C_NATIVE_GEMM_POST"):
        monkeypatch.delenv(v, raising=False)
    if not C.native_cpu()["available"]:
        pytest.skip("no native CPU steps on this device")


class WQAct(torch.nn.Module):
    """act(wq_linear(x) + bias) + r"""

    def __init__(self, q, s, z, group, bits, bias, act):
        super().__init__()
        self.register_buffer("q", q)
        self.register_buffer("s", s)
        self.register_buffer("z", z)
        self.bias = torch.nn.Parameter(bias)
        self.group, self.bits, self.act = group, bits, act

    def forward(self, x, r):
        y = torch.ops.torchtrt_c.wq_linear(x, self.q, self.s, self.z, self.group, self.bits)
        return ACTS[self.act](y + self.bias) + r


def reference(m, x, r):
    w = dequantize(m.q, m.s, m.z, m.group, m.bits).double()
    return ACTS[m.act](x.double() @ w.T + m.bias.double()) + r.double()


def check(y, ref, tol=TOL):
    err = (y.double() - ref).abs().max().item() / ref.abs().max().item()
    assert err <= tol, err


CASES = [  # x's shape, N, K, group, bits, zeros, act
    ((70, 200), 37, 200, 200, 8, False, "gelu"),          # per channel, odd N; above the VNNI GEMV's 64 rows
    ((200, 96), 131, 96, 32, 8, True, "silu"),            # groups with zero points
    ((3, 50, 168), 45, 168, 56, 4, True, "gelu_tanh"),    # int4, rank 3 (150 rows), 28-byte groups
    ((70, 96), 131, 96, 32, 4, True, "gelu"),
    ((70, 4096), 2500, 4096, 128, 8, True, "gelu"),       # 3 blocks of weight rows: 1024, 1024, 452
    ((70, 4096), 2500, 4096, 64, 4, True, "silu"),
]


@pytest.mark.parametrize("lib", ["auto", "blas"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-N{c[1]}-K{c[2]}-g{c[3]}-b{c[4]}-{c[6]}")
def test_wq_linear_large_m(case, lib, monkeypatch):
    shape, N, K, group, bits, zeros, act = case
    monkeypatch.setenv("TORCHTRT_C_NATIVE_GEMM", lib)
    q, s, z = random_weights(N, K, group, bits, zeros, seed=N + K)
    g = torch.Generator().manual_seed(K)
    m = WQAct(q, s, z, group, bits, torch.randn(N, generator=g), act).eval()
    x = torch.randn(*shape, generator=g)
    r = torch.randn(*shape[:-1], N, generator=g)
    trt = torchtrt_c.compile(m, inputs=[x, r], min_block_size=1)
    ks = [k for k in kernels(trt) if " wq_linear:" in k]
    dnnl = lib == "auto" and C.native_cpu()["gemm"] == "onednn" and C.native_cpu()["gemm_post"]
    assert len(ks) == 1 and "(native)" in ks[0], ks
    assert ("+post" in ks[0]) == dnnl, ks   # bias and activation planned into the matmul
    before = C.native_cpu()
    with torch.no_grad():
        y = trt(x, r)
    after = C.native_cpu()
    blocks = -(-N // max(16, (1 << 22) // K))
    assert sum(after["wq_calls"].values()) == sum(before["wq_calls"].values())   # no GEMV
    if dnnl:
        assert after["gemm_onednn_post_calls"] - before["gemm_onednn_post_calls"] == blocks
    else:
        assert after["gemm_onednn_calls"] == before["gemm_onednn_calls"]
    check(y, reference(m, x, r))


@pytest.mark.parametrize("bits", [8, 4])
def test_wq_linear_dynamic_rows_post(bits):
    """Rows 1..300: the post-ops are planned (a call may take the matmul); M 5 runs the GEMV and
    applies them in C after it, M 200 inside the matmul; both equal torch."""
    N, K, group = 77, 128, 32
    q, s, z = random_weights(N, K, group, bits, True, seed=bits)
    g = torch.Generator().manual_seed(3)
    m = WQAct(q, s, z, group, bits, torch.randn(N, generator=g), "gelu").eval()
    specs = [torchtrt_c.Input(min_shape=(1, K), opt_shape=(64, K), max_shape=(300, K)),
             torchtrt_c.Input(min_shape=(1, N), opt_shape=(64, N), max_shape=(300, N))]
    trt = torchtrt_c.compile(m, inputs=specs, min_block_size=1)
    ks = [k for k in kernels(trt) if " wq_linear:" in k]
    assert len(ks) == 1 and "(native)" in ks[0], ks
    if C.native_cpu()["gemm"] == "onednn" and C.native_cpu()["gemm_post"]:
        assert "+post" in ks[0], ks
    for M in (5, 200, 5):
        x = torch.randn(M, K, generator=g)
        r = torch.randn(M, N, generator=g)
        before = sum(C.native_cpu()["wq_calls"].values())
        with torch.no_grad():
            y = trt(x, r)
        assert (sum(C.native_cpu()["wq_calls"].values()) - before == 1) == (M == 5)
        check(y, reference(m, x, r), TOL_GEMV if M == 5 else TOL)


def test_wq_linear_static_small_rows_keep_native_epilogue():
    """Rows that always take the GEMV (static M within the GEMV's limit): no post-ops planned, the epilogue stays in
    native_epi's vectorised steps."""
    N, K = 40, 64
    q, s, z = random_weights(N, K, K, 8, False, seed=1)
    m = WQAct(q, s, z, K, 8, torch.randn(N), "gelu").eval()
    x, r = torch.randn(8, K), torch.randn(8, N)
    trt = torchtrt_c.compile(m, inputs=[x, r], min_block_size=1)
    ks = [k for k in kernels(trt) if " wq_linear:" in k]
    assert len(ks) == 1 and "(native)" in ks[0] and "+post" not in ks[0], ks
    with torch.no_grad():
        check(trt(x, r), reference(m, x, r), TOL_GEMV)


ISAS = ("generic", "avx2", "avx512", "vnni")


def gemv_max_m(cap, N, K, group, bits):
    """The GEMV's row limit (native_wq.h's table, restated) for the loop that runs under cap."""
    best = C.native_cpu()["wq_isa"]
    isa = ISAS[min(ISAS.index(cap), ISAS.index(best))]
    gb = group if bits == 8 else group // 2
    if isa == "vnni" and not (K == group or gb % 32 == 0 or gb in (2, 4, 8, 16)):
        isa = "avx512"
    if isa == "vnni":
        return 64 if bits == 8 or N * K >= 1 << 22 else 32
    if isa in ("avx512", "avx2"):
        return 32 if bits == 8 else 16 if isa == "avx512" else 12
    return 16


LIMIT_LAYERS = [  # N, K, group, bits
    (45, 96, 96, 8),        # int8 per channel: 64 rows (VNNI), 32 (float loops)
    (67, 256, 32, 4),       # int4, a small layer: 32 rows (VNNI), 16 (AVX-512), 12 (AVX2)
    (1024, 4096, 32, 4),    # int4, N K = 4M: 64 rows (VNNI)
]


@pytest.mark.parametrize("cap", ["vnni", "avx512", "avx2"])
@pytest.mark.parametrize("layer", LIMIT_LAYERS, ids=lambda c: f"N{c[0]}-K{c[1]}-g{c[2]}-b{c[3]}")
def test_wq_linear_row_limit_both_sides(layer, cap, monkeypatch):
    """Static rows at the GEMV's limit and one past it, the loop capped by NATIVE_WQ_ISA at compile
    and run time: at the limit the GEMV runs (its counter) and the bias + GELU stay in native_epi;
    past it the dequantized blocks + matmul (no GEMV call), the post-ops planned into oneDNN's
    matmul; both equal torch (TOL_GEMV / TOL)."""
    N, K, group, bits = layer
    monkeypatch.setenv("TORCHTRT_C_NATIVE_WQ_ISA", cap)
    lim = gemv_max_m(cap, N, K, group, bits)
    q, s, z = random_weights(N, K, group, bits, bits == 4, seed=N)
    g = torch.Generator().manual_seed(K)
    m = WQAct(q, s, z, group, bits, torch.randn(N, generator=g), "gelu").eval()
    dnnl = C.native_cpu()["gemm"] == "onednn" and C.native_cpu()["gemm_post"]
    for M in (lim, lim + 1):
        x, r = torch.randn(M, K, generator=g), torch.randn(M, N, generator=g)
        trt = torchtrt_c.compile(m, inputs=[x, r], min_block_size=1)
        ks = [k for k in kernels(trt) if " wq_linear:" in k]
        assert len(ks) == 1 and "(native)" in ks[0], ks
        assert ("+post" in ks[0]) == (dnnl and M > lim), (M, lim, ks)
        before = sum(C.native_cpu()["wq_calls"].values())
        with torch.no_grad():
            y = trt(x, r)
        assert sum(C.native_cpu()["wq_calls"].values()) - before == (1 if M <= lim else 0), (M, lim)
        check(y, reference(m, x, r), TOL_GEMV if M <= lim else TOL)


def test_wq_linear_gemv_max_m_setting(monkeypatch):
    """TORCHTRT_C_NATIVE_WQ_GEMV_MAX_M (read on every call) moves the limit on one engine: 0 sends
    a single row to the matmul, 100 keeps 70 rows on the GEMV; unset, 70 rows take the matmul.
    Every call equals torch; the post-ops (planned: the rows are dynamic) run either way."""
    N, K, group = 37, 96, 32
    q, s, z = random_weights(N, K, group, 8, True, seed=5)
    g = torch.Generator().manual_seed(5)
    m = WQAct(q, s, z, group, 8, torch.randn(N, generator=g), "silu").eval()
    specs = [torchtrt_c.Input(min_shape=(1, K), opt_shape=(64, K), max_shape=(100, K)),
             torchtrt_c.Input(min_shape=(1, N), opt_shape=(64, N), max_shape=(100, N))]
    trt = torchtrt_c.compile(m, inputs=specs, min_block_size=1)
    for setting, M, gemv in (("0", 1, False), ("100", 70, True), (None, 70, False), (None, 1, True)):
        if setting is None:
            monkeypatch.delenv("TORCHTRT_C_NATIVE_WQ_GEMV_MAX_M", raising=False)
        else:
            monkeypatch.setenv("TORCHTRT_C_NATIVE_WQ_GEMV_MAX_M", setting)
        x, r = torch.randn(M, K, generator=g), torch.randn(M, N, generator=g)
        before = sum(C.native_cpu()["wq_calls"].values())
        with torch.no_grad():
            y = trt(x, r)
        assert (sum(C.native_cpu()["wq_calls"].values()) - before == 1) == gemv, (setting, M)
        check(y, reference(m, x, r), TOL_GEMV if gemv else TOL)
