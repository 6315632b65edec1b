"""Differential tests (OpenCL engine vs torch eager) for two-output reductions: max.dim
(values exact, indices exact: random floats have no ties) and var_mean.correction
(fp32: atol 1e-5, rtol 1e-4 -- sums in another order than torch's)."""
import pytest
import torch

from convtest_data import In, assert_close, build, rand_tensor, run


SYM = [("s0", 1, 4, 33)]


@pytest.mark.parametrize("dim,keepdim", [(1, False), (-1, True), (0, False)])
def test_max_dim_dynamic(dim, keepdim):
    shape = ["s0", 7, 13]
    out = list(shape)
    if keepdim:
        out[dim] = 1
    else:
        del out[dim]
    eng = build("aten.max.dim", [In("x", "float32", shape), dim, keepdim],
                [("tensor", "float32", out), ("tensor", "int64", out)], symbols=SYM)
    for n in (1, 3, 33):
        a = rand_tensor((n, 7, 13))
        vals, idx = run(eng, [a])
        wv, wi = torch.max(a, dim, keepdim)
        assert_close(vals, wv, 0, 0, f"max.dim values n={n}")
        assert_close(idx, wi, 0, 0, f"max.dim indices n={n}")


@pytest.mark.parametrize("dims,corr,keepdim", [([1], 1, False), ([0, 2], 0, True), (None, 1, False), ([-1], 2, True)])
def test_var_mean(dims, corr, keepdim):
    shape = (3, 7, 33)
    a = rand_tensor(shape)
    wv, wm = torch.var_mean(a, dims, correction=corr, keepdim=keepdim)
    eng = build("aten.var_mean.correction", [In("x", "float32", list(shape)), dims, corr, keepdim],
                [("tensor", "float32", list(wv.shape))] * 2)
    v, m = run(eng, [a])
    assert_close(v, wv, 1e-5, 1e-4, f"var_mean var dims={dims}")
    assert_close(m, wm, 1e-5, 1e-4, f"var_mean mean dims={dims}")
