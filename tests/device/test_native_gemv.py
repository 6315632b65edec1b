"""The C GEMV of native float32 GEMMs with few rows (backend/cpu/native_gemv.c: a linear's
x [M, K] times its constant weight [N, K] transposed, M <= TORCHTRT_C_NATIVE_GEMV_ROWS, default 4;
8 here, its most, so that every register block runs)
against torch eager: M from 1 to 8 (every register block), N not a multiple of the 4-row
blocks, K not a multiple of the 16 float lanes (1, 3, 17, 129, 769), with and without bias,
with activation and residual epilogues, x of rank 3 ([batch, seq, K] of <= 8 rows), 9 rows
(oneDNN/BLAS, not the GEMV), the knob at 0 (never), one step thread (the same values), and a
GEMM whose B is an activation (never the GEMV). Where the device has no native path the cases
still compare with torch and the call counts are not checked.
Tolerance: atol = rtol = 1e-4 (operands scaled for O(1) outputs; only the summation order
differs from torch's)."""
import pytest
import torch

import torchtrt_c
import torchtrt_c._C as C
from convtest import Const, assert_close, check_op, rand
from torchtrt_c import settings

TOL = 1e-4


@pytest.fixture(autouse=True)
def all_gemv_rows():
    settings.set(NATIVE_GEMV_ROWS=8)


def gemv_calls():
    return C.native_cpu().get("gemv_calls", 0)


def native():
    info = C.native_cpu()
    return info["available"] and info.get("gemv_rows", 0) > 0


class calls:
    """Checks the GEMV ran `want` times inside the block (where the native path exists)."""

    def __init__(self, want):
        self.want = want

    def __enter__(self):
        self.before = gemv_calls()

    def __exit__(self, *exc):
        if exc[0] is None and native():
            ran = gemv_calls() - self.before
            assert ran == self.want if self.want == 0 else ran >= self.want, f"GEMV ran {ran}, expected {self.want}"
        return False


@pytest.mark.parametrize("m", [1, 2, 3, 4, 5, 6, 7, 8])
@pytest.mark.parametrize("n,k", [(1, 17), (3, 769), (129, 3), (17, 1), (130, 257), (515, 64)], ids=str)
def test_linear_rows(m, n, k):
    x = rand(m, k, seed=m + k)
    w = rand(n, k, seed=n) / k ** 0.5
    b = rand(n, seed=k)
    with calls(2):
        check_op("aten.linear.default", [x, Const(w), Const(b)], tol=TOL)
        check_op("aten.linear.default", [x, Const(w), None], tol=TOL)


class _Mlp(torch.nn.Module):
    """Llama's MLP: down(silu(gate(x)) * up(x)) + x."""

    def __init__(self, d, h):
        super().__init__()
        self.gate = torch.nn.Linear(d, h, bias=False)
        self.up = torch.nn.Linear(d, h, bias=False)
        self.down = torch.nn.Linear(h, d, bias=False)

    def forward(self, x):
        return self.down(torch.nn.functional.silu(self.gate(x)) * self.up(x)) + x


@pytest.mark.parametrize("shape", [(1, 1, 40), (2, 3, 40), (1, 8, 33), (3, 3, 33)], ids=str)
def test_mlp_epilogues(shape):
    torch.manual_seed(shape[1])
    d = shape[-1]
    m = _Mlp(d, 3 * d + 5).eval()
    x = torch.randn(*shape)
    rows = shape[0] * shape[1]
    with calls(3 if rows <= 8 else 0):
        trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
        with torch.no_grad():
            assert_close(trt(x), m(x), TOL, TOL, f"mlp {shape}")


def test_knob_and_threads():
    x = rand(3, 129, seed=1)
    w = rand(67, 129, seed=2) / 129 ** 0.5
    lin = torch.nn.Linear(129, 67, bias=False).eval()
    with torch.no_grad():
        lin.weight.copy_(w)
    want = lin(x).detach()
    outs = []
    for knobs, n in (({}, 1), ({"STEP_THREADS": 1}, 1), ({"NATIVE_GEMV_ROWS": 0}, 0), ({"NATIVE_GEMV_ROWS": 2}, 0)):
        settings.reset()
        settings.set(**knobs)
        with calls(n):
            trt = torchtrt_c.compile(lin, inputs=[x], min_block_size=1)
            with torch.no_grad():
                outs.append(trt(x))
        assert_close(outs[-1], want, TOL, TOL, str(knobs))
    assert torch.equal(outs[0], outs[1])   # the rows' sums do not depend on the thread count


def test_activation_b_is_not_a_gemv():
    a = rand(3, 40, seed=5)
    b = rand(40, 17, seed=6)
    with calls(0):
        check_op("aten.mm.default", [a, b], tol=TOL)
