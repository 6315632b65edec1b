"""The lowering pass fuse_parallel_linear (csrc/passes/fuse_parallel_linear.c; setting
FUSE_PARALLEL_LINEAR, off by default, on in compile_llm's step): linears reading one input with
constant weights become one linear over the concatenated weights, each old output a slice of
it. Against torch eager with the setting on and off: Q/K/V-shaped groups of 2-4 linears with odd
sizes (N 1, 3, 17, 130; K 5, 33), with and without bias, members that feed each other's
consumers, a linear with another input left alone, mixed bias/no-bias groups (not fused
together), rank-3 x with a dynamic batch, float32 (atol = rtol = 1e-4: the summation order may
differ from torch's) and float16 (2e-3). The engine's GEMM kernels are counted: one per group."""
import pytest
import torch

import torchtrt_c
from torchtrt_c import settings


def gemm_kernels(trt):
    from torchtrt_c.runtime import EngineMeta
    from torchtrt_c.runtime._execute import ENGINES
    n = 0
    for name, mod in trt.named_children():
        if not name.startswith("_run_on_acc"):
            continue
        e = ENGINES.peek(EngineMeta.from_json(mod.meta).id)
        assert e is not None
        n += sum(1 for k in e.info()["kernels"] if " gemm:" in k)
    return n


class Qkv(torch.nn.Module):
    def __init__(self, k, ns, bias):
        super().__init__()
        self.ls = torch.nn.ModuleList(torch.nn.Linear(k, n, bias=bias) for n in ns)

    def forward(self, x):
        ys = [l(x) for l in self.ls]
        # consumers that mix the outputs (each read once, in another order)
        out = ys[-1].sum(-1, keepdim=True)
        for y in ys[:-1]:
            out = out + torch.tanh(y).mean(-1, keepdim=True)
        return out * 0.5, ys[0]


class Mixed(torch.nn.Module):
    """Gate/up with bias, a third without, one on another input."""

    def __init__(self, k):
        super().__init__()
        self.g = torch.nn.Linear(k, 17)
        self.u = torch.nn.Linear(k, 17)
        self.n = torch.nn.Linear(k, 17, bias=False)
        self.o = torch.nn.Linear(17, 17)

    def forward(self, x):
        h = torch.nn.functional.silu(self.g(x)) * self.u(x) + self.n(x)
        return self.o(h)


def _run(m, x, fuse, dtype, dynamic=False):
    settings.set(FUSE_PARALLEL_LINEAR=fuse)
    if dynamic:
        inp = [torchtrt_c.Input(min_shape=(1,) + tuple(x.shape[1:]), opt_shape=tuple(x.shape),
                                max_shape=(8,) + tuple(x.shape[1:]), dtype=dtype)]
    else:
        inp = [x]
    trt = torchtrt_c.compile(m, inputs=inp, min_block_size=1, enabled_precisions={dtype})
    with torch.no_grad():
        return trt, trt(x)


@pytest.mark.parametrize("ns,k", [((3, 17, 130), 33), ((1, 5), 5), ((130, 17, 3, 64), 33)], ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_groups(ns, k, bias):
    torch.manual_seed(len(ns) + k)
    m = Qkv(k, ns, bias).eval()
    x = torch.randn(3, k)
    with torch.no_grad():
        want = m(x)
    for fuse, gemms in ((0, len(ns)), (1, 1)):
        trt, got = _run(m, x, fuse, torch.float32)
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, atol=1e-4, rtol=1e-4)
        assert gemm_kernels(trt) == gemms, (fuse, gemms)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
def test_mixed_bias_and_dynamic_batch(dtype):
    torch.manual_seed(1)
    m = Mixed(33).eval()
    if dtype == torch.float16:
        m = m.half()
    x = torch.randn(5, 7, 33, dtype=dtype)
    with torch.no_grad():
        want = m(x.float() if dtype == torch.float32 else x)
    tol = 1e-4 if dtype == torch.float32 else 2e-3
    for fuse, gemms in ((0, 4), (1, 3)):   # g and u fuse; n (no bias) and o stay alone
        trt, got = _run(m, x, fuse, dtype, dynamic=True)
        torch.testing.assert_close(got.float(), want.float(), atol=tol, rtol=tol)
        assert gemm_kernels(trt) == gemms, (fuse, gemms)
        with torch.no_grad():
            x1 = x[:1].contiguous()
            torch.testing.assert_close(trt(x1).float(), m(x1).float(), atol=tol, rtol=tol)
