"""Differential tests of the CPU GEMM kernel (gemm_cpu.cl) against torch eager, aimed at its
work-item order: the launch is (ceil(N/NR), ceil(M/MR)) but work-item ids are remapped so that
consecutive items walk down M with the same columns; every CPU work-group shape (forced with
TORCHTRT_C_GEMM_TILE=0..2: driver's choice, 4x4, 16x16) rounds the launch up differently, and
items past the last block must do nothing. Shapes: M not a multiple of the row block (2 or 4),
N not a multiple of the column block (4 or 8), K below/above/not a multiple of 8, a single row,
batched matmul, linear with its bias epilogue, fp16 storage.
Tolerances: fp32 atol = rtol = 1e-4 (operands scaled for O(1) outputs; only the summation order
differs); fp16 engines 2e-2.
"""
import pytest

from convtest import Const, check_op, rand
from torchtrt_c import settings



@pytest.fixture(params=[0, 1, 2])
def cpu_tile(request, monkeypatch):
    settings.set(KERNELS=None)
    settings.set(NATIVE="0")   # gemm_cpu.cl, not the CPU BLAS
    settings.set(GEMM_TILE=str(request.param))
    return request.param


@pytest.mark.parametrize("m,k,n", [(1, 5, 3), (7, 9, 13), (33, 64, 17), (130, 37, 70), (3, 300, 6)])
def test_linear(cpu_tile, m, k, n):
    x = rand(m, k, seed=m)
    w = rand(n, k, seed=n) / k ** 0.5
    b = rand(n, seed=k)
    check_op("aten.linear.default", [x, Const(w), Const(b)], tol=1e-4)


@pytest.mark.parametrize("m,k,n", [(1, 7, 9), (6, 16, 31), (45, 19, 66)])
def test_mm_and_bmm(cpu_tile, m, k, n):
    a = rand(m, k, seed=1)
    b = rand(k, n, seed=2) / k ** 0.5
    check_op("aten.mm.default", [a, b], tol=1e-4)
    a3 = rand(3, m, k, seed=3)
    b3 = rand(3, k, n, seed=4) / k ** 0.5
    check_op("aten.bmm.default", [a3, b3], tol=1e-4)


def test_linear_fp16(cpu_tile):
    x = rand(11, 40, seed=5)
    w = rand(21, 40, seed=6) / 40 ** 0.5
    b = rand(21, seed=7)
    check_op("aten.linear.default", [x, Const(w), Const(b)], tol=2e-2, precision="fp16")
