"""Inputs whose negative bit is set (issue 36): torch keeps torch._neg_view(x) lazy, its memory
holding x's values, while engines read memory. Every call path must give eager's answer: the
general path (runtime/_execute.run_engine), the FastCall made by an earlier plain call
(csrc/python/py_fastcall.c), CompiledModule's one-engine shortcut, the graph path of a module
with several engines, the runtime op itself, torch.compile's backend, and CUDA tensors where
there are any. Tolerance: 1e-5 relative to max(|eager|, 1) (the same engine on plain inputs
gives that).
"""
import pytest
import torch

import torchtrt_c


class CNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 6, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(6)
        self.fc = torch.nn.Linear(6 * 5 * 7, 20)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        return self.fc(torch.flatten(torch.nn.functional.max_pool2d(y, 2), 1))


def _model():
    torch.manual_seed(0)
    m = CNN().eval()
    with torch.no_grad():
        m.bn.running_mean.uniform_(-0.5, 0.5)
        m.bn.running_var.uniform_(0.5, 1.5)
    return m


def _close(got, want, what):
    err = (got.float() - want.float()).abs().max().item()
    scale = max(want.abs().max().item(), 1.0)
    assert err <= 1e-5 * scale, f"{what}: max error {err:.3g} (scale {scale:.3g})"


def _accs(trt):
    return [n for n, _ in trt.named_children() if n.startswith("_run_on_acc_")]


def _inputs(device="cpu"):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 3, 10, 14, generator=g).to(device)
    neg = torch._neg_view(x)
    # a non-contiguous one: the negative view of a transposed tensor
    t = torch.randn(2, 3, 14, 10, generator=g).to(device).transpose(2, 3)
    return x, neg, torch._neg_view(t)


@pytest.mark.parametrize("order", ["neg_first", "plain_first"])
def test_one_engine_module(order):
    """One engine: the shortcut, then the FastCall (made by the plain call) must not read a
    negative view's memory as it is."""
    m = _model()
    x, neg, neg_t = _inputs()
    assert neg.is_neg() and neg_t.is_neg()
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    assert len(_accs(trt)) == 1
    with torch.no_grad():
        if order == "plain_first":
            for _ in range(3):  # the FastCall for these shapes exists after these
                _close(trt(x), m(x), "plain")
        for i in range(3):
            _close(trt(neg), m(neg), f"negative view, call {i}")
            _close(trt(neg_t), m(neg_t), f"non-contiguous negative view, call {i}")
            _close(trt(x), m(x), f"plain after, call {i}")
    assert neg.is_neg(), "the caller's tensor is left as it was"


def test_several_engines_graph_path():
    """A torch segment between two engines: the graph path, EngineModule's calls."""
    m = _model()
    x, neg, _ = _inputs()
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1,
                             torch_executed_ops={"torch.ops.aten.max_pool2d_with_indices.default",
                                                 "torch.ops.aten.max_pool2d.default"})
    assert len(_accs(trt)) == 2, list(trt.named_children())
    with torch.no_grad():
        for i in range(3):
            _close(trt(neg), m(neg), f"call {i}")
            _close(trt(x), m(x), f"plain, call {i}")


def test_runtime_op_and_engine_module():
    """The runtime op called directly, and an engine submodule called with a negative view."""
    m = _model()
    x, neg, _ = _inputs()
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    acc = getattr(trt, _accs(trt)[0])
    with torch.no_grad():
        want = m(neg)
        for i in range(3):
            _close(torch.ops.torchtrt_c.execute_engine([neg], acc.engine, acc.meta)[0], want, f"op, call {i}")
            _close(acc(neg)[0], want, f"EngineModule, call {i}")
            _close(acc(x)[0], m(x), f"EngineModule plain, call {i}")


def test_torch_compile_backend():
    m = _model()
    x, neg, _ = _inputs()
    fast = torch.compile(m, backend="torchtrt_c")
    with torch.no_grad():
        _close(fast(x), m(x), "plain")
        for i in range(2):
            _close(fast(neg), m(neg), f"negative view, call {i}")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA torch and device")
def test_cuda_inputs():
    """CUDA tensors (the launch path, the shared-memory path or the host copies, whichever
    the machine takes)."""
    m = _model()
    x, _, _ = _inputs()
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1).to("cuda")
    mc = m.to("cuda")
    xc, neg, neg_t = _inputs("cuda")
    with torch.inference_mode():
        for i in range(3):
            _close(trt(neg), mc(neg), f"negative view, call {i}")
            _close(trt(neg_t), mc(neg_t), f"non-contiguous negative view, call {i}")
            _close(trt(xc), mc(xc), f"plain, call {i}")
