"""The one-work-group-per-row kernels GPUs get for softmax / log-softmax over the last dim,
layer norm, group norm and reductions over the innermost dim (norm_wg.cl, softmax_wg.cl,
rowred.cl and the generated row reductions), forced onto the CPU device here with
TORCHTRT_C_KERNELS=gpu, against torch eager. Rows shorter and longer than a work-group, odd
lengths, NaN/inf rows, fp16 engines and a dynamic row count. Tolerances: softmax/reductions
1e-5, norms 1e-4 (float statistics, summation order differs from torch), fp16 engines 2e-2."""
import pytest
import torch

import torchtrt_c._C as C
from convtest import Const, check_op, rand


@pytest.fixture(params=["gpu", "default"])
def family(request, monkeypatch):
    if request.param == "gpu":
        monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")
    else:
        monkeypatch.delenv("TORCHTRT_C_KERNELS", raising=False)
    return request.param


def _default_is_gpu():
    d = C.default_device()
    d = C.devices()[d] if isinstance(d, int) else d
    return isinstance(d, dict) and d.get("type") == "gpu"


def _uses_wg(e):
    """Whether the engine uses the row kernels (a work-group per row, or for layer norms a warp
    per row: norm_warp.cl); on a GPU device they are the default."""
    src = e.info()["source"]
    return "__local float sh[" in src or "TTC_PTX_SCRATCH(scr, RPW)" in src


def _expect_wg(family):
    return family == "gpu" or _default_is_gpu()


@pytest.mark.parametrize("shape", [(3, 1), (4, 7), (2, 3, 37), (5, 129), (2, 1030), (3, 4097)])
def test_softmax_last_dim(family, shape):
    x = rand(*shape, seed=sum(shape)) * 5
    e = check_op("aten._softmax.default", [x, -1, False], tol=1e-5)
    assert _uses_wg(e) == _expect_wg(family)
    check_op("aten._log_softmax.default", [x, -1, False], tol=1e-5)


def test_softmax_other_dims_keep_row_kernel(family):
    x = rand(4, 7, 5, seed=3) * 4
    e = check_op("aten._softmax.default", [x, 1, False], tol=1e-5)
    assert not _uses_wg(e)


def test_softmax_special_values(family):
    x = rand(4, 300, seed=5)
    x[0, 7] = float("inf")
    x[1, :] = float("-inf")
    x[2, 100] = float("nan")
    x[3, :150] = float("-inf")
    check_op("aten._softmax.default", [x, -1, False], tol=1e-5)


def test_softmax_fp16_and_dynamic(family):
    x = (rand(6, 131, seed=7) * 3).half()
    check_op("aten._softmax.default", [x, -1, False], tol=2e-2, precision="fp16")
    x = rand(5, 77, seed=8) * 3
    check_op("aten._softmax.default", [x, -1, False], tol=1e-5, dynamic=(1, 4, 9))


@pytest.mark.parametrize("n", [1, 5, 33, 768, 1031, 4099])
def test_layer_norm_rows(family, n):
    x = rand(3, 4, n, seed=n) * 3 + 1
    e = check_op("aten.layer_norm.default", [x, [n], Const(rand(n, seed=1)), Const(rand(n, seed=2)), 1e-5, True],
                 tol=1e-4)
    assert _uses_wg(e) == _expect_wg(family)
    check_op("aten.layer_norm.default", [x, [4, n], None, None, 1e-5, True], tol=1e-4)


def test_layer_norm_fp16_dynamic(family):
    x = rand(7, 768, seed=4).half()
    check_op("aten.layer_norm.default", [x, [768], Const(rand(768, seed=1).half()), Const(rand(768, seed=2).half()),
                                         1e-5, True], tol=2e-2, precision="fp16")
    x = rand(5, 50, seed=6)
    check_op("aten.layer_norm.default", [x, [50], Const(rand(50, seed=1)), None, 1e-12, True], tol=1e-4,
             dynamic=(1, 3, 8))


@pytest.mark.parametrize("shape,groups", [((2, 6, 4, 5), 3), ((1, 32, 17, 19), 8), ((3, 4, 1, 1), 2)])
def test_group_norm_rows(family, shape, groups):
    y = rand(*shape, seed=groups)
    c = shape[1]
    check_op("aten.group_norm.default", [y, groups, Const(rand(c, seed=3)), Const(rand(c, seed=4)), 1e-5, True],
             tol=1e-4)
    check_op("aten.group_norm.default", [y, groups, None, None, 1e-5, True], tol=1e-4)


@pytest.mark.parametrize("shape", [(3, 4, 5), (2, 3, 1000), (2, 1, 257)])
@pytest.mark.parametrize("keep", [False, True])
def test_inner_reductions(family, shape, keep):
    x = rand(*shape, seed=len(shape))
    e = check_op("aten.sum.dim_IntList", [x, [-1], keep, None], tol=1e-5)
    assert _uses_wg(e) == _expect_wg(family)
    check_op("aten.mean.dim", [x, [1, 2], keep, None], tol=1e-5)
    check_op("aten.amax.default", [x, [2], keep], tol=1e-6)
    check_op("aten.amin.default", [x, [0, 2], keep], tol=1e-6)
    check_op("aten.var.correction", [x, [2], 1, keep], tol=1e-5)
    check_op("aten.var.correction", [x, [1, 2], 0, keep], tol=1e-5)
    check_op("aten.prod.dim_int", [x * 0.1 + 1, 2, keep, None], tol=1e-5)
    check_op("aten.argmax.default", [x, 2, keep])
    check_op("aten.sum.default", [x, None], tol=1e-4)


def test_reductions_nan_and_strided(family):
    x = rand(4, 6, 301, seed=9)
    x[1, 2, 7] = float("nan")
    check_op("aten.amax.default", [x, [2], False], tol=1e-6)
    check_op("aten.amin.default", [x, [2], False], tol=1e-6)
    check_op("aten.sum.dim_IntList", [x, [2], False, None], tol=1e-5)


class _PermSum(torch.nn.Module):
    def forward(self, x):
        y = x.permute(2, 1, 0)          # the reduced innermost dim is strided
        return y.sum(-1), y.amax(-1), torch.softmax(y, -1), torch.layer_norm(y * 2, [y.shape[-1]])


def test_strided_rows_through_compile(family):
    import torchtrt_c
    x = rand(301, 5, 3, seed=2)
    trt = torchtrt_c.compile(_PermSum().eval(), inputs=[x], min_block_size=1)
    got, want = trt(x), _PermSum()(x)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, atol=1e-4, rtol=1e-4)
