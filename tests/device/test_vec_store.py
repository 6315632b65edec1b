"""Elementwise kernels that store several adjacent elements per work-item (codegen_expr.c
emit_storev, "<kernel>_storev"): the GPU kernel families (forced here with TORCHTRT_C_KERNELS=gpu,
native CPU steps off) take 8 float16 or 4 float32 outputs per work-item, halved until the count
divides the output's innermost dim; the output index is decomposed once per run, and each leaf
is read with one 16/8/4-byte access where its run is adjacent and aligned, once where its
innermost stride is 0 (a broadcast), element by element otherwise; the results are stored as one
access where aligned. The same function is the CUDA launch path's library epilogue
("<kernel>_e", run on a GPU by tests/gpu/test_lib_epilogue_vec.py).

Against float64 eager on random inputs: float32 within 1e-5 of max(|ref|, 1), float16 within
4e-3 (the inputs are the same halves; ours rounds the float result once, eager rounds every
step in half). Innermost dims 16, 40 (runs of 8/4), 12 (4 halves), 6 (2), 5 and 11 (1: the
one-element kernel), odd outer dims, dense leaves, a bias, per-row broadcasts (stride 0), a
transposed leaf, views of an intermediate whose first element is not aligned, boolean and
integer leaves, dynamic shapes and an arange of a symbolic length (index nodes).
"""
import pytest
import torch

import torchtrt_c
import torchtrt_c._C as C


@pytest.fixture(autouse=True)
def gpu_kernels(monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")
    monkeypatch.setenv("TORCHTRT_C_NATIVE", "0")


def _src(trt):
    return "".join(C.Engine.deserialize(bytes(c.engine.numpy()), cache_dir="").info()["source"]
                   for n, c in trt.named_children() if n.startswith("_run_on_acc"))


def _width(dt, inner):
    v = 8 if dt == torch.float16 else 4
    while v > 1 and inner % v:
        v //= 2
    return v


def _check(got, want, dt, what):
    tol = 4e-3 if dt == torch.float16 else 1e-5
    got, want = got.double(), want.double()
    err = (got - want).abs().max().item() / max(want.abs().max().item(), 1.0)
    assert err <= tol, f"{what}: relative error {err:.3g} > {tol}"


class Mix(torch.nn.Module):
    """dense leaves, a bias along the innermost dim, a per-row scale (innermost stride 0),
    a comparison and a selection"""

    def forward(self, x, y, bias, row):
        z = torch.sigmoid(x * 2.0 + y) * bias + row
        return torch.where(x > 0.25, z, y - x)


SHAPES = [(3, 5, 16), (2, 7, 40), (2, 7, 12), (4, 9, 6), (3, 11, 5), (1, 3, 11)]


@pytest.mark.parametrize("dt", [torch.float16, torch.float32])
@pytest.mark.parametrize("shape", SHAPES)
def test_mixed_leaves(dt, shape):
    torch.manual_seed(sum(shape))
    x, y = torch.randn(*shape, dtype=dt), torch.randn(*shape, dtype=dt)
    bias, row = torch.randn(shape[-1], dtype=dt), torch.randn(*shape[:-1], 1, dtype=dt)
    m = Mix().eval()
    trt = torchtrt_c.compile(m, arg_inputs=[x, y, bias, row], min_block_size=1, enabled_precisions={dt})
    v = _width(dt, shape[-1])
    src = _src(trt)
    assert ("_storev(int lin" in src) == (v > 1), f"runs of {v} expected"
    with torch.no_grad():
        want = m(x.double(), y.double(), bias.double(), row.double())
        _check(trt(x, y, bias, row), want, dt, f"{dt} {shape}")
        # other values through the same engine
        x2, y2 = torch.randn_like(x), torch.randn_like(y)
        _check(trt(x2, y2, bias, row), m(x2.double(), y2.double(), bias.double(), row.double()), dt, "second call")


class Strided(torch.nn.Module):
    """a transposed leaf (innermost stride > 1), and views of a softmax's output (its own
    kernel) that start one element past an aligned address (strided, and dense): runs that must
    be read element by element while their store address is aligned"""

    def forward(self, x, t, y):
        s = torch.softmax(x, -1)                     # [B, S, D + 1]
        a = s[..., 1:] * 3.0 + y                     # leaf starts at element 1
        b = t.transpose(-1, -2) + s[..., :-1]        # transposed leaf, aligned view
        c = s.reshape(-1)[1:1 + y.numel()].reshape(y.shape)   # dense, one element past alignment
        return a - b * 0.5 + c


@pytest.mark.parametrize("dt", [torch.float16, torch.float32])
@pytest.mark.parametrize("shape", [(2, 5, 8), (3, 7, 12), (2, 9, 16), (1, 6, 7)])
def test_strided_and_unaligned_leaves(dt, shape):
    torch.manual_seed(7 * sum(shape))
    B, S, D = shape
    x, y = torch.randn(B, S, D + 1, dtype=dt), torch.randn(B, S, D, dtype=dt)
    t = torch.randn(B, D, S, dtype=dt)
    m = Strided().eval()
    trt = torchtrt_c.compile(m, arg_inputs=[x, t, y], min_block_size=1, enabled_precisions={dt})
    with torch.no_grad():
        _check(trt(x, t, y), m(x.double(), t.double(), y.double()), dt, f"{dt} {shape}")


class Masked(torch.nn.Module):
    """a boolean leaf and an integer leaf beside float ones"""

    def forward(self, x, mask, ids):
        return torch.where(mask, x * ids.to(x.dtype), -x)


@pytest.mark.parametrize("dt", [torch.float16, torch.float32])
@pytest.mark.parametrize("shape", [(4, 24), (3, 10), (5, 13)])
def test_bool_and_int_leaves(dt, shape):
    torch.manual_seed(shape[0] * shape[1])
    x = torch.randn(*shape, dtype=dt)
    mask = torch.rand(*shape) > 0.5
    ids = torch.randint(-3, 4, shape, dtype=torch.int64)
    m = Masked().eval()
    trt = torchtrt_c.compile(m, arg_inputs=[x, mask, ids], min_block_size=1, enabled_precisions={dt})
    with torch.no_grad():
        _check(trt(x, mask, ids), m(x.double(), mask, ids), dt, f"{dt} {shape}")


class Ramp(torch.nn.Module):
    """an arange of the symbolic dim 1 broadcast along a static innermost dim: an index node of
    an outer dim inside a run"""

    def forward(self, x):
        r = torch.arange(x.shape[1], dtype=x.dtype, device=x.device)
        return x * 0.5 + r[:, None]


@pytest.mark.parametrize("dt", [torch.float16, torch.float32])
def test_dynamic_shapes_and_index(dt):
    torch.manual_seed(3)
    spec = torchtrt_c.Input(min_shape=(1, 2, 24), opt_shape=(2, 9, 24), max_shape=(4, 17, 24), dtype=dt)
    m = Ramp().eval()
    trt = torchtrt_c.compile(m, inputs=[spec], min_block_size=1, enabled_precisions={dt})
    assert "_storev(int lin" in _src(trt)
    for shape in [(1, 2, 24), (3, 5, 24), (4, 17, 24), (2, 11, 24)]:
        x = torch.randn(*shape, dtype=dt)
        with torch.no_grad():
            _check(trt(x), m(x.double()), dt, f"{dt} {shape}")
