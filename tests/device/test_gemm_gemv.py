"""GEMM kernels' GEMV form "<name>_v" (csrc/kernels/gemv_gpu.cl, codegen.c gemv_wanted): a warp
per output column streaming the weight row, for products of at most 8 rows (LLM decode steps),
launched instead of the tile kernel where the plan's M is that small (plan.c; exec.c and
exec_cuda.c). TORCHTRT_C_GEMM_GEMV=auto emits it on the GPU kernel families, =1 on any device,
so that here (PoCL) it is differentially tested against torch; off by default.
Tolerance: float32 5e-5 of the output's scale (float sums in another order), float16 1e-2
(fp16 inputs, float accumulation, one rounding of the output)."""
import re

import numpy as np
import pytest
import torch

import torchtrt_c._C as C
from convtest import DTYPES, rand
from torchtrt_c import settings

TOL = {torch.float32: 5e-5, torch.float16: 1e-2}


@pytest.fixture(autouse=True)
def _kernels():
    settings.set(NATIVE="0")   # the GEMMs as OpenCL kernels on the CPU device too
    yield
    settings.set(NATIVE=None, GEMM_GEMV=None)


def _has_gemv(e):
    return re.search(r"^#define KNAME \w+_v$", e.info()["source"], re.M) is not None


def _linear(lead, n, k, dtype, gemv, epi="bias_relu", dyn=False):
    """x [*lead, k] @ w^T (+ b, relu / + residual) as one engine; (engine, run(x[, r]))"""
    settings.set(GEMM_GEMV=gemv)
    w, b = rand(n, k, seed=2) / k ** 0.5, rand(n, seed=3)
    g = C.Graph()
    if dyn:
        g.add_symbol("m", 1, 4, 64)   # (min, opt, max)
    dims = [("m" if (dyn and i == 0) else d) for i, d in enumerate(lead)] + [k]
    xi = g.add_input("x", ("tensor", DTYPES[dtype], dims))
    wi = g.add_tensor_constant("w", "float32", [n, k], w.numpy())
    bi = g.add_tensor_constant("b", "float32", [n], b.numpy())
    od = dims[:-1] + [n]
    (y,) = g.add_node("aten.linear.default", [xi, wi, bi], [("tensor", DTYPES[dtype], od)])
    ins = [xi]
    if epi == "bias_relu":
        (y,) = g.add_node("aten.relu.default", [y], [("tensor", DTYPES[dtype], od)])
    elif epi == "residual":
        ri = g.add_input("r", ("tensor", DTYPES[dtype], od))
        ins.append(ri)
        (y,) = g.add_node("aten.add.Tensor", [y, ri, g.add_constant(1)], [("tensor", DTYPES[dtype], od)])
    g.set_outputs([y])
    e = C.Engine.build(g, cache_dir="", precision="fp16" if dtype == torch.float16 else "fp32")

    def ref(*xs):
        out = torch.nn.functional.linear(xs[0].double(), w.double(), b.double())
        return out.relu() if epi == "bias_relu" else out + xs[1].double() if epi == "residual" else out

    def run(*xs):
        out = np.empty(tuple(xs[0].shape[:-1]) + (n,), np.float16 if dtype == torch.float16 else np.float32)
        e.execute([x.numpy() for x in xs], [out])
        return torch.from_numpy(out)
    return e, run, ref


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("lead,n,k", [([1], 70, 512), ([3], 33, 129), ([8], 130, 256), ([5], 17, 1000),
                                      ([2, 1], 64, 96), ([8, 1], 40, 64), ([1, 7], 9, 40), ([1], 5, 3)])
def test_gemv_matches_torch(dtype, lead, n, k):
    e, run, ref = _linear(lead, n, k, dtype, "1")
    assert _has_gemv(e)
    x = (rand(*lead, k, seed=1) / 2).to(dtype)
    y = run(x)
    assert e.info()["gemv_launches"] == 1
    want = ref(x)
    err = (y.double() - want).abs().max().item()
    assert err <= TOL[dtype] * max(1.0, want.abs().max().item()), err


def test_gemv_not_for_more_rows():
    """a [3, 4, K] input is 12 rows over the shared weight: the tile kernel runs"""
    e, run, ref = _linear([3, 4], 20, 64, torch.float32, "1")
    x = rand(3, 4, 64, seed=1)
    y = run(x)
    assert e.info()["gemv_launches"] == 0
    assert (y.double() - ref(x)).abs().max().item() <= 1e-4


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_gemv_residual_epilogue_and_dynamic_rows(dtype):
    """one engine over a dynamic row count: M <= 8 launches "_v", M > 8 the tile kernel; both right"""
    e, run, ref = _linear([1], 48, 200, dtype, "1", epi="residual", dyn=True)
    launches = 0
    for m in (1, 2, 8, 9, 31, 3):
        x = (rand(m, 200, seed=m) / 2).to(dtype)
        r = rand(m, 48, seed=10 + m).to(dtype)
        y = run(x, r)
        launches += m <= 8
        assert e.info()["gemv_launches"] == launches, m
        want = ref(x, r)
        err = (y.double() - want).abs().max().item()
        assert err <= TOL[dtype] * max(1.0, want.abs().max().item()), (m, err)


def test_gemv_off_and_default_on_cpu():
    """0 (and the default) never emit it; auto only on the GPU kernel families (not the CPU's)"""
    for v in ("0", None, "auto"):
        e, run, _ = _linear([1], 70, 64, torch.float32, v)
        run(rand(1, 64, seed=1))
        if v != "auto" or not e.info()["gpu_kernels"]:
            assert not _has_gemv(e) and e.info()["gemv_launches"] == 0


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_gemv_input_not_16_byte_aligned(dtype):
    """x one element into its storage (a host pointer 4 or 2 bytes past an aligned one): the
    16-byte loads of A are taken only where the address is aligned, else the element loop (on
    PoCL such a load of an unaligned address was a segmentation fault)."""
    e, run, ref = _linear([2], 40, 256, dtype, "1")
    base = (rand(2 * 256 + 1, seed=1) / 2).to(dtype)
    x = base[1:].view(2, 256)
    assert x.storage_offset() == 1 and x.numpy().ctypes.data % 16 != 0
    y = run(x)
    assert e.info()["gemv_launches"] == 1
    want = ref(x)
    err = (y.double() - want).abs().max().item()
    assert err <= TOL[dtype] * max(1.0, want.abs().max().item()), err
