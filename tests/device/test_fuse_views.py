"""GEMM epilogue fusion through a reshape view (csrc/kir/fuse.c, gemm_through_view).

A linear (or a matmul by a 2-D weight) on [.., T, K] is a [rows, N] GEMM whose result is read
through a contiguous reshape view as [.., T, N]; an elementwise op on that view (activation,
residual add, the copy that makes an engine output) becomes the GEMM's epilogue. Each test
checks the engine's kernel list (the elementwise kernels are gone, or are kept where fusing
would be wrong) and the numbers against torch eager on random inputs of odd sizes, for fp32
and fp16 engines, static and dynamic batch, on the device's default GEMM kernels and with
TORCHTRT_C_KERNELS=gpu (the GPU GEMM family, run by PoCL in CI).
Tolerances: fp32 atol 1e-4 + rtol 1e-4 (inputs scaled so that outputs are O(1); only the
summation order differs from torch); fp16 engines atol 2e-2 + rtol 2e-2 (weights and
activations rounded to half, fp32 accumulation).
"""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torchtrt_c
from torchtrt_c.runtime import profile_engines


TOL = {"fp32": 1e-4, "fp16": 2e-2}


class Mlp(nn.Module):
    """The transformer MLP block: x + fc2(gelu(fc1(x)))."""

    def __init__(self, d, f):
        super().__init__()
        self.fc1 = nn.Linear(d, f)
        self.fc2 = nn.Linear(f, d)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(x)))


class MatmulTanh(nn.Module):
    """matmul by a 2-D weight folds the batch into the rows, like linear (no bias leaf)."""

    def __init__(self, d, n):
        super().__init__()
        self.w = nn.Parameter(torch.randn(d, n) / d ** 0.5)

    def forward(self, x):
        return torch.tanh(torch.matmul(x, self.w)) * 0.5


class LinearOut(nn.Module):
    """A 4-D linear whose result is the engine output (the output copy folds in)."""

    def __init__(self, d, n):
        super().__init__()
        self.fc = nn.Linear(d, n)

    def forward(self, x):
        return self.fc(x)


class TwoReaders(nn.Module):
    """The linear's view is read by two ops: stays a separate GEMM (and is still right)."""

    def __init__(self, d, n):
        super().__init__()
        self.fc = nn.Linear(d, n)

    def forward(self, x):
        y = self.fc(x)
        return torch.relu(y), y * 2.0


class StridedResidual(nn.Module):
    """The residual leaf is a transposed (strided) tensor: read by the consumer's index."""

    def __init__(self, d, n):
        super().__init__()
        self.fc = nn.Linear(d, n)

    def forward(self, x, r):
        return self.fc(x) + r.transpose(1, 2)


class ViewOfView(nn.Module):
    """The linear's result reshaped again ([B, T, N] -> [B, T*N]) before the activation: a
    view of a view, not fused (still right)."""

    def __init__(self, d, n):
        super().__init__()
        self.fc = nn.Linear(d, n)

    def forward(self, x):
        return torch.sigmoid(self.fc(x).reshape(x.shape[0], -1))


def _rand(*shape, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g) / shape[-1] ** 0.5


def _compile(model, xs, precision, dynamic):
    dt = torch.float16 if precision == "fp16" else torch.float32
    model = copy.deepcopy(model).to(dt).eval()
    xs = [x.to(dt) for x in xs]
    if dynamic:
        ins = [torchtrt_c.Input(min_shape=(1,) + tuple(x.shape[1:]), opt_shape=tuple(x.shape),
                                max_shape=(6,) + tuple(x.shape[1:]), dtype=dt) for x in xs]
    else:
        ins = xs
    trt = torchtrt_c.compile(model, inputs=ins, enabled_precisions={dt}, require_full_compilation=True,
                             min_block_size=1)
    return model, trt, dt


def _kernels(trt, xs):
    rows = profile_engines(trt, xs, runs=1, warmup=0)
    return sorted((r["kind"], r["ops"]) for r in rows)


def _check(model, trt, dt, xs, precision):
    """Runs trt on xs (cast to dt) and compares with the float32 model holding the same
    (possibly half-rounded) weights."""
    xs = [x.to(dt) for x in xs]
    ref_model = copy.deepcopy(model).float()
    with torch.no_grad():
        want = ref_model(*[x.float() for x in xs])
        got = trt(*xs)
    if isinstance(want, torch.Tensor):
        want, got = (want,), (got,)
    tol = TOL[precision]
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == dt and g.shape == w.shape, (i, g.dtype, g.shape, w.shape)
        torch.testing.assert_close(g.float(), w, atol=tol, rtol=tol, msg=lambda m: f"output {i}: {m}")


PATHS = ["default", "gpu"]


@pytest.fixture(params=PATHS)
def kernels_env(request, monkeypatch):
    monkeypatch.delenv("TORCHTRT_C_GEMM_TILE", raising=False)
    if request.param == "gpu":
        monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")
    else:
        monkeypatch.delenv("TORCHTRT_C_KERNELS", raising=False)
    return request.param


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_mlp_block_is_two_gemms(kernels_env, precision, dynamic):
    torch.manual_seed(0)
    d, f, t = 7, 33, 5
    m = Mlp(d, f)
    x = _rand(3, t, d, seed=1)
    model, trt, dt = _compile(m, [x], precision, dynamic)
    ks = _kernels(trt, [x.to(dt)])
    # before: gemm, gelu, gemm, add (the activation and the residual add read the GEMM
    # results through the [B*T, N] -> [B, T, N] views)
    assert [k for k, _ in ks] == ["gemm", "gemm"], ks
    assert any("gelu" in o for _, o in ks) and any("add" in o for _, o in ks), ks
    for b in ([1, 3, 6] if dynamic else [3]):
        _check(model, trt, dt, [_rand(b, t, d, seed=10 + b)], precision)


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_matmul_by_2d_weight_with_activation(kernels_env, precision):
    torch.manual_seed(1)
    m = MatmulTanh(19, 9)
    x = _rand(2, 3, 5, 19, seed=2)
    model, trt, dt = _compile(m, [x], precision, False)
    ks = _kernels(trt, [x.to(dt)])
    assert [k for k, _ in ks] == ["gemm"], ks
    _check(model, trt, dt, [x], precision)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_4d_linear_output_copy_folds(kernels_env, dynamic):
    torch.manual_seed(2)
    m = LinearOut(13, 11)
    x = _rand(3, 2, 5, 13, seed=3)
    model, trt, dt = _compile(m, [x], "fp32", dynamic)
    ks = _kernels(trt, [x])
    assert [k for k, _ in ks] == ["gemm"], ks
    for b in ([1, 3, 5] if dynamic else [3]):
        _check(model, trt, dt, [_rand(b, 2, 5, 13, seed=20 + b)], "fp32")


def test_view_read_twice_is_not_fused(kernels_env):
    torch.manual_seed(3)
    m = TwoReaders(9, 17)
    x = _rand(3, 5, 9, seed=4)
    model, trt, dt = _compile(m, [x], "fp32", False)
    ks = _kernels(trt, [x])
    assert [k for k, _ in ks].count("gemm") == 1 and len(ks) == 3, ks
    _check(model, trt, dt, [x], "fp32")


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_strided_residual_leaf(kernels_env, precision):
    torch.manual_seed(4)
    m = StridedResidual(15, 21)
    x, r = _rand(3, 5, 15, seed=5), _rand(3, 21, 5, seed=6)
    model, trt, dt = _compile(m, [x, r], precision, False)
    ks = _kernels(trt, [x.to(dt), r.to(dt)])
    assert [k for k, _ in ks] == ["gemm"], ks
    _check(model, trt, dt, [x, r], precision)


def test_view_of_view_is_not_fused(kernels_env):
    torch.manual_seed(5)
    m = ViewOfView(8, 6)
    x = _rand(3, 5, 8, seed=7)
    model, trt, dt = _compile(m, [x], "fp32", False)
    ks = _kernels(trt, [x])
    assert [k for k, _ in ks] == ["elementwise", "gemm"], ks
    _check(model, trt, dt, [x], "fp32")
