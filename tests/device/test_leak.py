"""Device- and host-memory leak checks: executing an engine 10,000 times (static and changing
shapes) leaves the live OpenCL buffer count and bytes (_C.runtime_stats(), counted on every
clCreateBuffer/clReleaseMemObject in csrc/backend/opencl/memstats.c) where they were, RSS grows by
less than 4 MiB, and freeing the engine returns every buffer it made."""
import gc
import os

import numpy as np
import pytest
import torch

import torchtrt_c
import torchtrt_c._C as C
from convtest import rand


no_asan = pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""),
                             reason="ASan's quarantine keeps freed memory resident, so RSS says nothing there")


def _rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _live():
    s = C.runtime_stats()
    return s["live_buffers"], s["live_bytes"]


def _graph(dynamic):
    """x [B, 12] -> linear -> gelu -> view [B, 4, 2, 3] -> transposed conv -> sum over dim 1."""
    w1, b1 = rand(24, 12, seed=1) * 0.3, rand(24, seed=2)
    wt = rand(4, 3, 3, 3, seed=3) * 0.3
    g = C.Graph()
    B = "s0" if dynamic else 5
    if dynamic:
        g.add_symbol("s0", 1, 5, 9)
    L = g.add_constant
    x = g.add_input("x", ("tensor", "float32", [B, 12]))
    c1 = g.add_tensor_constant("w1", "float32", [24, 12], w1.numpy())
    c2 = g.add_tensor_constant("b1", "float32", [24], b1.numpy())
    c3 = g.add_tensor_constant("wt", "float32", [4, 3, 3, 3], wt.numpy())
    (h,) = g.add_node("aten.linear.default", [x, c1, c2], [("tensor", "float32", [B, 24])])
    (r,) = g.add_node("aten.gelu.default", [h, L("none")], [("tensor", "float32", [B, 24])])
    (v,) = g.add_node("aten.view.default", [r, L([-1, 4, 2, 3])], [("tensor", "float32", [B, 4, 2, 3])])
    (y,) = g.add_node("aten.convolution.default", [v, c3, L(None), L([2, 2]), L([0, 0]), L([1, 1]), L(True),
                                                   L([0, 0]), L(1)], [("tensor", "float32", [B, 3, 5, 7])])
    (s,) = g.add_node("aten.sum.dim_IntList", [y, L([1]), L(False), L(None)], [("tensor", "float32", [B, 5, 7])])
    g.set_outputs([s])

    def ref(xx):
        rr = torch.nn.functional.gelu(xx @ w1.T + b1).reshape(-1, 4, 2, 3)
        return torch.nn.functional.conv_transpose2d(rr, wt, None, 2).sum(1)

    return g, ref


@no_asan
def test_10000_executions_leak_no_buffers_bytes_or_rss():
    gc.collect()  # engines of earlier tests' modules that are gone are freed now, not in the middle
    start = _live()
    g, ref = _graph(dynamic=False)
    e = C.Engine.build(g, cache_dir="")
    assert _live()[0] > start[0], "building an engine makes buffers (constants): the counters see them"
    x = rand(5, 12, seed=4)
    out = np.empty((5, 5, 7), np.float32)
    for _ in range(200):
        e.execute([x.numpy()], [out])
    np.testing.assert_allclose(out, ref(x).numpy(), rtol=1e-4, atol=1e-4)
    warm, rss0 = _live(), _rss_kb()
    created0 = C.runtime_stats()["buffers_created"]
    for _ in range(10000):
        e.execute([x.numpy()], [out])
    assert _live() == warm, f"live (buffers, bytes) {warm} -> {_live()} over 10000 executions"
    grown = _rss_kb() - rss0
    assert grown < 4096, f"RSS grew by {grown} KiB over 10000 executions"
    np.testing.assert_allclose(out, ref(x).numpy(), rtol=1e-4, atol=1e-4)
    made = C.runtime_stats()["buffers_created"] - created0
    del e
    gc.collect()
    assert _live() == start, f"after freeing the engine: {_live()} live, {start} before it was built " \
                             f"({made} buffers made during the 10000 executions)"


@no_asan
def test_changing_shapes_leak_nothing():
    # re-planning for another batch size may replace the arena; it must release the old one
    gc.collect()
    start = _live()
    g, ref = _graph(dynamic=True)
    e = C.Engine.build(g, cache_dir="")
    xs = {b: rand(b, 12, seed=b) for b in (1, 4, 9)}
    outs = {b: np.empty((b, 5, 7), np.float32) for b in xs}
    for b in xs:
        e.execute([xs[b].numpy()], [outs[b]])
    warm, rss0 = _live(), _rss_kb()
    for i in range(3000):  # ends on the warm-up's last shape (9), so the plans match
        b = (1, 4, 9)[i % 3]
        e.execute([xs[b].numpy()], [outs[b]])
    assert _live() == warm, f"live (buffers, bytes) {warm} -> {_live()} over 3000 executions"
    assert _rss_kb() - rss0 < 4096
    for b in xs:
        np.testing.assert_allclose(outs[b], ref(xs[b]).numpy(), rtol=1e-4, atol=1e-4)
    del e
    gc.collect()
    assert _live() == start


def test_stats_count_buffers_of_a_compiled_module():
    # the torch path (execute_engine op, torch tensors in and out) frees what it makes per call
    m = torch.nn.Sequential(torch.nn.ConvTranspose2d(3, 4, 3, stride=2), torch.nn.ReLU()).eval()
    x = torch.randn(2, 3, 5, 5)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    for _ in range(20):
        trt(x)
    warm = _live()
    for _ in range(500):
        y = trt(x)
    assert _live() == warm, f"live (buffers, bytes) {warm} -> {_live()} over 500 calls"
    with torch.no_grad():
        torch.testing.assert_close(y, m(x), rtol=1e-4, atol=1e-4)
