"""The runtime's per-call fast path (EngineModule -> run_engine, cached plans): fresh outputs on
every call, the same input checks as the op (also once a shape is cached), dynamic shapes through
the shape cache, and the dispatcher path wherever the fast path must not be taken."""
import re

import pytest
import torch
import torch.nn as nn

import torchtrt_c
from torchtrt_c.runtime import _execute
from zoo import assert_tree_close



class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(8, 6)

    def forward(self, x):
        return torch.relu(self.l(x)) * 2


@pytest.fixture(scope="module")
def compiled():
    torch.manual_seed(0)
    m = Net().eval()
    trt = torchtrt_c.compile(m, inputs=[torch.randn(3, 8)], min_block_size=1)
    return m, trt


def test_outputs_are_fresh_tensors_across_calls(compiled):
    m, trt = compiled
    x = torch.randn(3, 8)
    with torch.no_grad():
        ref = m(x)
    a = trt(x)
    a_copy = a.clone()
    a.fill_(123.0)  # mutating one result must not show up in the next, nor the next in this one
    b = trt(x)
    assert_tree_close(b, ref)
    assert a.data_ptr() != b.data_ptr()
    assert torch.all(a == 123.0)
    assert_tree_close(a_copy, ref)
    acc = trt._run_on_acc_0
    o1, o2 = acc(x), acc(x)
    assert o1[0].data_ptr() != o2[0].data_ptr()
    r1 = torch.ops.torchtrt_c.execute_engine([x], acc.engine, acc.meta)
    r2 = torch.ops.torchtrt_c.execute_engine([x], acc.engine, acc.meta)
    r1[0].zero_()
    assert_tree_close(r2[0], ref)


@pytest.mark.parametrize("path", ["module", "op"])
def test_bad_inputs_raise_input_error_naming_the_input_after_caching(compiled, path):
    m, trt = compiled
    acc = trt._run_on_acc_0
    name = acc.engine_meta.inputs[0][0]

    def call(x):
        if path == "module":
            return acc(x)
        return torch.ops.torchtrt_c.execute_engine([x], acc.engine, acc.meta)

    call(torch.randn(3, 8))  # the good shape is now cached
    with pytest.raises(torchtrt_c.InputError, match=rf"input {re.escape(repr(name))}: expected dtype float32, got float64"):
        call(torch.randn(3, 8, dtype=torch.float64))
    with pytest.raises(torchtrt_c.InputError, match=rf"input {re.escape(repr(name))}: dim 0 is 4"):
        call(torch.randn(4, 8))
    with pytest.raises(torchtrt_c.InputError, match=rf"input {re.escape(repr(name))}: expected rank 2"):
        call(torch.randn(3, 8, 1))
    with pytest.raises(torchtrt_c.InputError, match="expected 1 input"):
        call_many = (acc if path == "module" else
                     lambda *xs: torch.ops.torchtrt_c.execute_engine(list(xs), acc.engine, acc.meta))
        call_many(torch.randn(3, 8), torch.randn(3, 8))
    assert_tree_close(call(torch.ones(3, 8))[0], m(torch.ones(3, 8)))


def test_non_contiguous_and_grad_inputs(compiled):
    m, trt = compiled
    x = torch.randn(8, 3).t()  # non-contiguous (3, 8)
    assert not x.is_contiguous()
    assert_tree_close(trt(x), m(x))
    xg = torch.randn(3, 8, requires_grad=True)  # takes the dispatcher path (autograd enabled)
    out = trt(xg)
    assert_tree_close(out.detach(), m(xg).detach())
    with torch.no_grad():
        assert_tree_close(trt(xg), m(xg))


def test_dynamic_shapes_through_the_shape_cache():
    torch.manual_seed(1)
    m = Net().eval()
    inp = torchtrt_c.Input(min_shape=(1, 8), opt_shape=(4, 8), max_shape=(16, 8))
    trt = torchtrt_c.compile(m, inputs=[inp], min_block_size=1)
    for b in (1, 5, 16, 5, 1, 9, 16):
        x = torch.randn(b, 8)
        out = trt(x)
        assert out.shape == (b, 6)
        assert_tree_close(out, m(x))
    with pytest.raises(torchtrt_c.InputError, match="outside the compiled range"):
        trt._run_on_acc_0(torch.randn(17, 8))


def test_fast_path_is_skipped_under_tracing_and_profiling(compiled, monkeypatch):
    m, trt = compiled
    x = torch.randn(3, 8)
    calls = []
    real = _execute.run_engine
    monkeypatch.setattr(_execute, "run_engine", lambda *a: calls.append(1) or real(*a))
    # a FastCall an earlier call of these shapes left (the one-engine shortcut) would skip
    # run_engine altogether: start from the plans' first call
    _execute._drop_plans()
    trt(x)
    assert calls, "plain eager calls should take the fast path"
    calls.clear()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        trt(x)
    assert any("execute_engine" in e.name for e in prof.events())
    calls.clear()
    ep = torch.export.export(trt, (x,))
    assert any(n.target is torch.ops.torchtrt_c.execute_engine.default for n in ep.graph.nodes)
    assert_tree_close(ep.module()(x), m(x))


def test_engine_cache_clear_drops_plans(compiled):
    m, trt = compiled
    x = torch.randn(3, 8)
    trt(x)
    assert _execute._PLANS
    _execute.ENGINES.clear()
    assert not _execute._PLANS
    assert_tree_close(trt(x), m(x))  # deserialized again from the blob


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device for torch tensors")
def test_cuda_inputs_staged_through_pinned_buffers():
    torch.manual_seed(2)
    m = Net().eval()
    inp = torchtrt_c.Input(min_shape=(1, 8), opt_shape=(4, 8), max_shape=(16, 8))
    trt = torchtrt_c.compile(m, inputs=[inp], min_block_size=1)
    prev = []
    for b in (3, 3, 7, 3, 16):
        x = torch.randn(b, 8)
        out = trt(x.cuda())
        assert out.device.type == "cuda" and out.shape == (b, 6)
        assert_tree_close(out.cpu(), m(x))
        out.fill_(-1.0)  # the next call must not see (or overwrite) this one's result
        prev.append(out)
    assert all(torch.all(p == -1.0) for p in prev)
    xt = torch.randn(8, 5).t()  # non-contiguous CUDA input
    assert_tree_close(trt(xt.cuda()).cpu(), m(xt))
