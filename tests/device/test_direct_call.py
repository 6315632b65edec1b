"""The one-engine shortcut of CompiledModule (dynamo/_compiled_module.py): a module whose graph is
inputs -> one engine -> outputs is called without the fx forward, and must answer exactly what the
graph answers (output structure, order, duplicates, dynamic shapes, non-contiguous inputs), while
hooks, autograd, tracing and modules with torch segments keep the graph. Also the batched launch
(target.batch_launch, TORCHTRT_C_BATCH_LAUNCH): engines built with and without it agree with eager,
native host tasks and the index-error flag included. Tolerance: atol = rtol = 1e-5 (fp32)."""
import pytest
import torch
import torch.nn as nn

import torchtrt_c
from torchtrt_c.runtime import _execute
from zoo import assert_tree_close


class Two(nn.Module):
    def forward(self, x, y):
        a = torch.softmax(x, -1)
        return {"sum": a + y, "prod": (a * y, torch.cumsum(y, 0))}


class Reorder(nn.Module):
    def forward(self, x, y):
        a = torch.relu(y) * 2
        b = x - 1
        return b, a, b  # the same engine output twice, and not in the engine's order


class WithTorchSegment(nn.Module):
    def forward(self, x):
        return torch.relu(torch.sin(x)) + 1


def direct_plan(trt):
    trt(*getattr(trt, "_example"))  # the plan is made at the first call
    entry = trt.__dict__.get("_ttc_direct_plan")
    return entry[1] if entry else None


def compiled(m, *xs, **kw):
    trt = torchtrt_c.compile(m.eval(), inputs=list(xs), min_block_size=1, **kw)
    trt._example = xs
    return trt


def graph_call(trt, *xs):
    """The same call through the fx graph (the shortcut off for this call)."""
    saved = trt.__dict__["_ttc_direct_plan"]
    trt.__dict__["_ttc_direct_plan"] = (trt._code, None)
    try:
        return trt(*xs)
    finally:
        trt.__dict__["_ttc_direct_plan"] = saved


def counting(monkeypatch):
    calls = []
    real = _execute.run_engine
    monkeypatch.setattr(_execute, "run_engine", lambda *a: calls.append(1) or real(*a))
    return calls


@pytest.mark.parametrize("shape", [(3, 5), (1, 7), (4, 33)])
def test_structured_outputs_match_the_graph_and_eager(shape):
    torch.manual_seed(0)
    x, y = torch.randn(*shape), torch.randn(*shape)
    m = Two()
    trt = compiled(m, x, y)
    assert direct_plan(trt) is not None
    for _ in range(2):
        got = trt(x, y)
        assert set(got) == {"sum", "prod"} and isinstance(got["prod"], tuple)
        assert_tree_close(got, m(x, y), rtol=1e-5, atol=1e-5)
        assert_tree_close(got, graph_call(trt, x, y), rtol=0, atol=0)


def test_reordered_and_repeated_outputs_are_fresh_and_right():
    torch.manual_seed(1)
    x, y = torch.randn(6, 4), torch.randn(6, 4)
    m = Reorder()
    trt = compiled(m, x, y)
    assert direct_plan(trt) is not None
    got = trt(x, y)
    assert_tree_close(got, m(x, y), rtol=1e-5, atol=1e-5)
    assert_tree_close(got, graph_call(trt, x, y), rtol=0, atol=0)
    # the graph returns one tensor twice for a repeated output: so does the shortcut
    g = graph_call(trt, x, y)
    assert (got[0] is got[2]) == (g[0] is g[2])
    first = trt(x, y)
    first[1].fill_(7.0)
    assert_tree_close(trt(x, y)[1], m(x, y)[1], rtol=1e-5, atol=1e-5)


def test_dynamic_and_non_contiguous_inputs():
    torch.manual_seed(2)
    m = Two()
    inp = torchtrt_c.Input(min_shape=(1, 8), opt_shape=(4, 8), max_shape=(9, 8))
    trt = torchtrt_c.compile(m.eval(), inputs=[inp, inp], min_block_size=1)
    trt._example = (torch.randn(4, 8), torch.randn(4, 8))
    assert direct_plan(trt) is not None
    for b in (1, 5, 9, 2):
        x, y = torch.randn(b, 8), torch.randn(b, 8)
        assert_tree_close(trt(x, y), m(x, y), rtol=1e-5, atol=1e-5)
    base = torch.randn(8, 6)
    x = base.t()[:, :]  # (6, 8), not contiguous
    y = torch.randn(12, 8)[::2]  # every other row
    assert not x.is_contiguous() and not y.is_contiguous()
    assert_tree_close(trt(x, y), m(x, y), rtol=1e-5, atol=1e-5)
    with pytest.raises(torchtrt_c.InputError, match="outside the compiled range"):
        trt(torch.randn(10, 8), torch.randn(10, 8))


def test_hooks_autograd_and_torch_segments_take_the_graph(monkeypatch):
    torch.manual_seed(3)
    x, y = torch.randn(3, 5), torch.randn(3, 5)
    m = Two()
    trt = compiled(m, x, y)
    calls = counting(monkeypatch)
    trt(x, y)
    assert calls, "a one-engine module runs its engine directly"
    # a forward hook on the module, and a pre-hook on the engine submodule: both are called
    seen = []
    h = trt.register_forward_hook(lambda mod, args, out: seen.append("module"))
    assert_tree_close(trt(x, y), m(x, y), rtol=1e-5, atol=1e-5)
    h.remove()
    acc = trt._run_on_acc_0
    h = acc.register_forward_pre_hook(lambda mod, args: seen.append("engine"))
    assert_tree_close(trt(x, y), m(x, y), rtol=1e-5, atol=1e-5)
    h.remove()
    assert seen == ["module", "engine"]
    # an input that needs a gradient: the op path, which says it has no autograd formula
    with pytest.raises(RuntimeError):
        trt(x.clone().requires_grad_(), y)["sum"].sum().backward()
    # a module with a torch segment has no shortcut
    xs = torch.randn(4, 6)
    seg = compiled(WithTorchSegment(), xs, torch_executed_ops=["aten.sin.default"])
    if len([n for n, _ in seg.named_children() if n.startswith("_run_on_acc_")]) == 1:
        assert direct_plan(seg) is None
    assert_tree_close(seg(xs), WithTorchSegment()(xs), rtol=1e-5, atol=1e-5)


def test_recompiled_graph_gets_a_fresh_plan():
    torch.manual_seed(4)
    x, y = torch.randn(3, 5), torch.randn(3, 5)
    m = Reorder()
    trt = compiled(m, x, y)
    assert direct_plan(trt) is not None
    out = [n for n in trt.graph.nodes if n.op == "output"][0]
    b, a, _ = out.args[0]
    out.args = ((a, b, a),)  # (b, a, b) -> (a, b, a)
    trt.recompile()
    got = trt(x, y)
    r = m(x, y)
    ref = (r[1], r[0], r[1])
    assert_tree_close(got, ref, rtol=1e-5, atol=1e-5)


def test_deepcopy_keeps_answering():
    import copy
    torch.manual_seed(6)
    x, y = torch.randn(3, 5), torch.randn(3, 5)
    m = Reorder()
    trt = compiled(m, x, y)
    assert direct_plan(trt) is not None
    dup = copy.deepcopy(trt)
    assert_tree_close(dup(x, y), m(x, y), rtol=1e-5, atol=1e-5)
    assert_tree_close(trt(x, y), m(x, y), rtol=1e-5, atol=1e-5)


class IndexNet(nn.Module):
    def forward(self, x, idx):
        return torch.softmax(x, -1)[idx] * 2


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(3, 5, 3, padding=1)

    def forward(self, x):
        return torch.cumsum(torch.relu(self.c(x)), -1)


@pytest.mark.parametrize("batch", ["0", "1"])
def test_batched_launch_both_ways(batch, monkeypatch):
    """Engines built with the batched launch on and off: eager's answers, native host tasks
    (convolution) included, and an out-of-range index still reported after the batch."""
    monkeypatch.setenv("TORCHTRT_C_BATCH_LAUNCH", batch)
    torch.manual_seed(5)
    conv = ConvNet().eval()
    x = torch.randn(2, 3, 9, 7)
    e = torchtrt_c.compile(conv, inputs=[x], min_block_size=1)
    for _ in range(3):
        assert_tree_close(e(x), conv(x), rtol=1e-4, atol=1e-4)
    xi, idx = torch.randn(5, 6), torch.tensor([4, 0, 2])
    n = torchtrt_c.compile(IndexNet().eval(), inputs=[xi, idx], min_block_size=1)
    assert_tree_close(n(xi, idx), IndexNet()(xi, idx), rtol=1e-5, atol=1e-5)
    with pytest.raises(torchtrt_c.InputError, match="index out of range"):
        n(xi, torch.tensor([4, 9, 2]))
    assert_tree_close(n(xi, idx), IndexNet()(xi, idx), rtol=1e-5, atol=1e-5)
