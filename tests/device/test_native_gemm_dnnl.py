"""Native GEMMs through oneDNN's matmul (backend/cpu/native_gemm_dnnl.c) against torch eager, under
each TORCHTRT_C_NATIVE_GEMM setting (read when the engine is built): auto (oneDNN where B is a
constant, reordered once), dnnl (every GEMM) and blas (OpenBLAS, the path where oneDNN is
missing). Cases: odd M/N/K (1, 3, 17, 129, 769), B as [N,K] (linear) and [K,N] (GPT-2's addmm,
mm), bias/GELU/residual epilogues, a linear over [batch, seq, K] (one GEMM of batch*seq rows),
batched matmul with a shared and a per-batch B, strided (transposed) operands, two engines with
the same shape and different weights, threads sharing an engine. Where oneDNN does not load or
the device has no native path the cases still compare with torch and the library-count
assertions are skipped.
Tolerance: fp32 atol = rtol = 1e-4 (operands scaled for O(1) outputs; only the summation order
differs between oneDNN, OpenBLAS and torch)."""
import threading

import numpy as np
import pytest
import torch

import torchtrt_c
import torchtrt_c._C as C
from convtest import Const, assert_close, check_op, rand
from torchtrt_c import settings

MODES = ["auto", "dnnl", "blas"]
TOL = 1e-4


@pytest.fixture(autouse=True)
def plain_env(monkeypatch):
    for v in ("TORCHTRT_C_KERNELS", "TORCHTRT_C_GEMM_TILE", "TORCHTRT_C_NATIVE", "TORCHTRT_C_NATIVE_GEMM"):
        monkeypatch.delenv(v, raising=False)
    # GEMMs of a few rows with a constant [N, K] weight go to the C GEMV (test_native_gemv.py):
    # here every GEMM goes to the library the case names
    settings.set(NATIVE_GEMV_ROWS=0)


def gemm_lib():
    return C.native_cpu()["gemm"]


def calls():
    return C.native_cpu()["gemm_onednn_calls"]


class counted:
    """How many GEMMs oneDNN ran inside the block; checks it against want[mode] where oneDNN
    is the target's library (want: how many of the block's GEMMs have a constant B, and how
    many in all)."""

    def __init__(self, mode, const, total):
        self.mode, self.const, self.total = mode, const, total

    def __enter__(self):
        self.before = calls()

    def __exit__(self, *exc):
        if exc[0] is not None:
            return False
        ran = calls() - self.before
        lib = gemm_lib()
        if lib != "onednn":   # OpenBLAS (knob, or oneDNN missing) or no native path
            assert ran == 0, (self.mode, lib, ran)
            return False
        want = self.const if self.mode == "auto" else self.total
        assert ran >= want and (want > 0 or ran == 0), f"{self.mode}: oneDNN ran {ran} GEMMs, expected {want}"
        return False


def test_knob(monkeypatch):
    info = C.native_cpu()
    assert "gemm" in info and "gemm_onednn_calls" in info, info
    if not info["available"]:
        assert info["gemm"] == ""
        pytest.skip("no native path on this device")
    settings.set(NATIVE_GEMM="blas")
    assert gemm_lib() == "blas"
    settings.set(NATIVE_GEMM="dnnl")
    assert gemm_lib() in ("onednn", "blas")   # blas where oneDNN does not load
    settings.set(NATIVE_GEMM="fastest")
    with pytest.raises(torchtrt_c.Error, match="TORCHTRT_C_NATIVE_GEMM=fastest"):
        C.native_cpu()


SIZES = [(1, 17, 3), (3, 769, 17), (17, 129, 1), (129, 3, 769), (130, 768, 257)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("m,k,n", SIZES, ids=lambda v: str(v))
def test_linear_and_addmm(m, k, n, mode, monkeypatch):
    settings.set(NATIVE_GEMM=mode)
    x = rand(m, k, seed=m + k)
    w = rand(n, k, seed=n) / k ** 0.5
    b = rand(n, seed=k)
    with counted(mode, 2, 2):   # B = [N,K] (trans_b), with and without the bias epilogue
        check_op("aten.linear.default", [x, Const(w), Const(b)], tol=TOL)
        check_op("aten.linear.default", [x, Const(w), None], tol=TOL)
    with counted(mode, 1, 1):   # GPT-2's Conv1D: addmm(bias, x, W[K,N])
        check_op("aten.addmm.default", [Const(b), x, Const(w.t().contiguous()), 1, 1], tol=TOL)
    with counted(mode, 0, 1):   # two activations: OpenBLAS under auto
        check_op("aten.mm.default", [x, w.t().contiguous()], tol=TOL)


class _Block(torch.nn.Module):
    """A transformer MLP: linear + GELU, linear + residual, over [batch, seq, d]."""

    def __init__(self, d, h):
        super().__init__()
        self.a = torch.nn.Linear(d, h)
        self.b = torch.nn.Linear(h, d)

    def forward(self, x):
        return self.b(torch.nn.functional.gelu(self.a(x))) + x


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", [(1, 17, 24), (3, 5, 24), (2, 129, 40)], ids=str)
def test_epilogues_over_batch(shape, mode, monkeypatch):
    settings.set(NATIVE_GEMM=mode)
    torch.manual_seed(shape[1])
    d = shape[-1]
    m = _Block(d, 3 * d + 1).eval()
    x = torch.randn(*shape)
    with counted(mode, 2, 2):
        trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
        with torch.no_grad():
            assert_close(trt(x), m(x), TOL, TOL, f"mlp {shape} {mode}")


@pytest.mark.parametrize("mode", MODES)
def test_batched_and_strided(mode, monkeypatch):
    settings.set(NATIVE_GEMM=mode)
    a3 = rand(3, 17, 129, seed=1)
    b3 = rand(3, 129, 5, seed=2) / 129 ** 0.5
    b2 = rand(129, 5, seed=3) / 129 ** 0.5
    with counted(mode, 0, 3):   # per-batch B: a oneDNN call per batch under dnnl
        check_op("aten.bmm.default", [a3, b3], tol=TOL)
    with counted(mode, 1, 1):   # one constant B shared by every batch: one GEMM of 51 rows
        check_op("aten.matmul.default", [a3, Const(b2)], tol=TOL)
    with counted(mode, 1, 1):   # a constant B given as a transposed view of [N,K]
        bt = rand(5, 129, seed=4) / 129 ** 0.5
        check_op("aten.mm.default", [a3[0], Const(bt.t())], tol=TOL)
    # a strided (transposed) activation operand: the engine's own copy feeds the library
    at = rand(129, 17, seed=5)
    check_op("aten.mm.default", [at.t(), b2], tol=TOL, ref=lambda x, y: x @ y)


def test_two_engines_same_shape(monkeypatch):
    """Two engines of the same shape with different weights: the reordered copies are per
    engine; freeing one leaves the other right."""
    settings.set(NATIVE_GEMM="auto")
    x = rand(33, 65, seed=1)
    ws = [rand(31, 65, seed=s) / 65 ** 0.5 for s in (2, 3)]
    es = [check_op("aten.linear.default", [x, Const(w), None], tol=TOL) for w in ws]
    out = np.empty((33, 31), np.float32)
    for e, w in zip(es, ws):
        e.execute([x.numpy()], [out])
        assert_close(torch.from_numpy(out), x @ w.t(), TOL, TOL, "engine's own weights")
    del es[0]
    es[0].execute([x.numpy()], [out])
    assert_close(torch.from_numpy(out), x @ ws[1].t(), TOL, TOL, "after the other engine was freed")


def test_threads_share_engine(monkeypatch):
    settings.set(NATIVE_GEMM="auto")
    x = rand(64, 48, seed=1)
    w = rand(80, 48, seed=2) / 48 ** 0.5
    e = check_op("aten.linear.default", [x, Const(w), None], tol=TOL)
    ref = (x @ w.t()).numpy()
    errs = []

    def work():
        out = np.empty((64, 80), np.float32)
        for _ in range(5):
            e.execute([x.numpy()], [out])
            errs.append(float(np.abs(out - ref).max()))

    ts = [threading.Thread(target=work) for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(errs) == 15 and max(errs) < 1e-3, errs


def test_dynamic_rows_capped(monkeypatch):
    """A dynamic row count is a primitive (and a weight copy) per shape: the first 8 shapes of
    a kernel go through oneDNN, later ones through OpenBLAS; every result stays right."""
    settings.set(NATIVE_GEMM="auto")
    torch.manual_seed(0)
    m = torch.nn.Linear(19, 7).eval()
    inp = torchtrt_c.Input(min_shape=(1, 19), opt_shape=(8, 19), max_shape=(40, 19))
    trt = torchtrt_c.compile(m, inputs=[inp], min_block_size=1)
    before = calls()
    rows = [1, 3, 17, 2, 5, 8, 13, 21, 34, 39, 40, 3, 17]   # 11 distinct shapes, two repeated
    for r in rows:
        x = torch.randn(r, 19)
        with torch.no_grad():
            assert_close(trt(x), m(x), TOL, TOL, f"{r} rows")
    if gemm_lib() == "onednn":
        # the repeats (3, 17) are among the first 8 shapes: oneDNN again
        assert calls() - before == 10, calls() - before
