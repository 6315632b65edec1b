"""Resident timing used by bench/: Engine.benchmark, Engine.benchmark_copy and
runtime.benchmark_resident return one positive time per run and check their inputs like
execute. (Speed itself is measured in bench/, never asserted here.)"""
import numpy as np
import pytest
import torch

import torchtrt_c
import torchtrt_c._C as C
from convtest import rand


def _engine():
    g = C.Graph()
    g.add_symbol("s0", 1, 4, 32)
    w = rand(7, 13, seed=1)
    x = g.add_input("x", ("tensor", "float32", ["s0", 13]))
    wn = g.add_tensor_constant("fc.weight", "float32", [7, 13], w.numpy())
    bn = g.add_tensor_constant("fc.bias", "float32", [7], rand(7, seed=2).numpy())
    (l,) = g.add_node("aten.linear.default", [x, wn, bn], [("tensor", "float32", ["s0", 7])], name="fc")
    (y,) = g.add_node("aten.relu.default", [l], [("tensor", "float32", ["s0", 7])], name="relu")
    g.set_outputs([y])
    return C.Engine.build(g, name="bench_lr", cache_dir="")


def test_engine_benchmark_returns_one_time_per_run():
    e = _engine()
    for bs, runs in ((1, 1), (5, 7), (32, 3)):
        ts = e.benchmark([rand(bs, 13, seed=bs).numpy()], runs=runs, warmup=2)
        assert isinstance(ts, list) and len(ts) == runs
        assert all(isinstance(t, float) and t > 0 for t in ts), ts
    # execute still works after (the benchmark uses its own queue and buffers)
    x = rand(3, 13, seed=9)
    out = np.empty((3, 7), np.float32)
    e.execute([x.numpy()], [out])
    assert np.isfinite(out).all()


def test_engine_benchmark_checks_inputs():
    e = _engine()
    good = rand(2, 13).numpy()
    with pytest.raises(torchtrt_c.InputError, match="1 inputs, 2 given"):
        e.benchmark([good, good])
    with pytest.raises(torchtrt_c.InputError, match="x.*float32"):
        e.benchmark([good.astype(np.float64)])
    with pytest.raises(torchtrt_c.InputError, match="x.*rank"):
        e.benchmark([good.reshape(-1)])
    with pytest.raises(torchtrt_c.InputError, match="x"):
        e.benchmark([rand(2, 12).numpy()])
    with pytest.raises(torchtrt_c.InputError, match="x"):
        e.benchmark([rand(33, 13).numpy()])  # above the symbol's max
    with pytest.raises(torchtrt_c.InputError, match="buffer"):
        e.benchmark([[1.0] * 13])
    with pytest.raises(ValueError, match="runs"):
        e.benchmark([good], runs=0)
    with pytest.raises(ValueError, match="warmup"):
        e.benchmark([good], warmup=-1)


def test_benchmark_copy():
    ts = C.Engine.benchmark_copy(1 << 16, runs=4, warmup=1)
    assert len(ts) == 4 and all(t > 0 for t in ts)
    with pytest.raises(ValueError):
        C.Engine.benchmark_copy(0)


class _Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(12, 16)
        self.fc2 = torch.nn.Linear(16, 5)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def test_benchmark_resident_compiled_module():
    torch.manual_seed(0)
    m = _Small().eval()
    x = torch.randn(3, 12)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    r = torchtrt_c.runtime.benchmark_resident(trt, [x], runs=6, warmup=1)
    assert len(r["times_ms"]) == 6 and all(t > 0 for t in r["times_ms"])
    # host tensors: the engines' OpenCL kernels on device buffers, and the result says so
    assert r["paths"] == {n: "opencl" for n, _ in trt.named_children() if n.startswith("_run_on_acc")}, r["paths"]
    assert r["n_engines"] >= 1 and r["runs"] == 6
    assert r["p10_ms"] <= r["median_ms"] <= r["p90_ms"]
    assert r["engine_ms"] > 0


def test_benchmark_resident_with_torch_segment():
    torch.manual_seed(0)
    m = _Small().eval()
    x = torch.randn(3, 12)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1, torch_executed_ops={"torch.ops.aten.relu.default"})
    kids = [n for n, _ in trt.named_children()]
    r = torchtrt_c.runtime.benchmark_resident(trt, [x], runs=4, warmup=0)
    assert len(r["times_ms"]) == 4 and all(t > 0 for t in r["times_ms"])
    assert r["n_torch_segments"] == sum(1 for k in kids if k.startswith("_run_on_gpu")), kids
    assert r["n_engines"] == sum(1 for k in kids if k.startswith("_run_on_acc")), kids
    assert r["n_torch_segments"] >= 1 and r["torch_ms"] > 0


def test_benchmark_resident_bad_inputs():
    m = _Small().eval()
    x = torch.randn(3, 12)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    with pytest.raises(torchtrt_c.InputError):
        torchtrt_c.runtime.benchmark_resident(trt, [torch.randn(3, 11)], runs=2)
    with pytest.raises(ValueError):
        torchtrt_c.runtime.benchmark_resident(trt, [x], runs=0)
    with pytest.raises(TypeError):
        torchtrt_c.runtime.benchmark_resident(m, [x], runs=2)


def test_engine_profile_one_time_per_kernel():
    e = _engine()
    descs = e.info()["kernels"]
    for bs in (1, 5, 32):
        rows = e.profile([rand(bs, 13, seed=bs).numpy()], runs=3, warmup=1)
        assert [d for d, _ in rows] == descs
        assert all(isinstance(ms, float) and ms >= 0 for _, ms in rows), rows
        assert sum(ms for _, ms in rows) > 0
    with pytest.raises(torchtrt_c.InputError, match="x"):
        e.profile([rand(2, 12).numpy()])
    with pytest.raises(ValueError, match="runs"):
        e.profile([rand(2, 13).numpy()], runs=0)
    # execute still works after
    out = np.empty((2, 7), np.float32)
    e.execute([rand(2, 13).numpy()], [out])
    assert np.isfinite(out).all()


def test_profile_engines_compiled_module():
    torch.manual_seed(0)
    m = _Small().eval()
    x = torch.randn(3, 12)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    rows = torchtrt_c.runtime.profile_engines(trt, [x], runs=3, warmup=0)
    assert rows and all(r["engine"].startswith("_run_on_acc") for r in rows)
    assert {r["kind"] for r in rows} <= {"gemm", "elementwise"}, rows
    assert [r["ms"] for r in rows] == sorted((r["ms"] for r in rows), reverse=True)
    with pytest.raises(TypeError):
        torchtrt_c.runtime.profile_engines(m, [x])
