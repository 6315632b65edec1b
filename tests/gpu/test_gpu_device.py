"""GPU tier: what holds only when the default OpenCL device is a GPU (run with
TORCHTRT_C_DEVICE=gpu; skipped by tests/conftest.py elsewhere). Everything in tests/device runs
here too; this file checks that a GPU gets the GPU kernel families by itself (no
TORCHTRT_C_KERNELS), and that their untuned GEMM choices run and match torch.

Tolerance: fp32 atol = rtol = 1e-4 (inputs scaled so that outputs are O(1)); fp16 2e-2.
"""
import numpy as np
import pytest
import torch

import torchtrt_c._C as C
from convtest import DTYPES, assert_close, rand


@pytest.fixture(autouse=True)
def own_families(monkeypatch):
    monkeypatch.delenv("TORCHTRT_C_KERNELS", raising=False)
    monkeypatch.delenv("TORCHTRT_C_GEMM_TILE", raising=False)
    monkeypatch.delenv("TORCHTRT_C_CONV_TILE", raising=False)


def _linear_engine(m, k, n, precision="fp32"):
    x = rand(m, k, seed=m) / k ** 0.5
    w, b = rand(n, k, seed=n), rand(n, seed=k)
    g = C.Graph()
    xi = g.add_input("x", ("tensor", DTYPES[x.dtype], [m, k]))
    wi = g.add_tensor_constant("w", "float32", [n, k], w.numpy())
    bi = g.add_tensor_constant("b", "float32", [n], b.numpy())
    ot = ("tensor", "float32", [m, n])
    (y,) = g.add_node("aten.linear.default", [xi, wi, bi], [ot])
    (y,) = g.add_node("aten.relu.default", [y], [ot])
    g.set_outputs([y])
    e = C.Engine.build(g, cache_dir="", precision=precision)
    out = np.empty((m, n), np.float32)
    e.execute([x.numpy()], [out])
    return e, torch.from_numpy(out), torch.relu(torch.nn.functional.linear(x, w, b))


def test_gpu_engines_use_gpu_kernel_families(ocl_device):
    assert ocl_device["type"] == "gpu"
    e, got, want = _linear_engine(33, 70, 129)
    assert e.device["type"] == "gpu"
    assert e.info()["gpu_kernels"], "a GPU device must get the GPU kernel families without TORCHTRT_C_KERNELS"
    families = {t["index"]: t["family"] for t in C.gemm_tiles()}
    (tile,) = e.info()["tiles"].values()
    assert families[tile] in ("simt", "mma"), f"tile {tile} is a {families[tile]} kernel on a GPU"
    assert_close(got, want, 1e-4, 1e-4, "linear+relu, GPU families")


@pytest.mark.parametrize("m", [1, 16, 17, 256])
def test_untuned_gemm_choice_by_shape_runs(ocl_device, m):
    """The untuned choice depends on M and the compute units (tune.c: gemm_default): skinny
    (M <= 16) and large problems get different tiles; each must be a GPU tile and correct."""
    for precision, tol in (("fp32", 1e-4), ("fp16", 2e-2)):
        e, got, want = _linear_engine(m, 96, 80, precision)
        (tile,) = e.info()["tiles"].values()
        fam = C.gemm_tiles()[tile]["family"]
        assert fam != "cpu", f"M={m} {precision}: CPU tile {tile} on a GPU"
        if fam == "mma":
            assert precision == "fp16", f"tensor-core tile {tile} for an fp32 GEMM"
        assert_close(got, want, tol, tol, f"linear+relu M={m} {precision} tile {tile}")
