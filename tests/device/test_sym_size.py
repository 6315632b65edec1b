"""aten.sym_size.int in engines: ViT/BERT/GPT-2 with a dynamic batch compile to one engine (the
batch size read with x.shape[0] only shapes views/expands, whose dims come from the IR), and a
size used as a number stays in torch without breaking the engine around it (scalars never cross
an engine boundary)."""
import pytest
import torch

import torchtrt_c
from zoo import assert_tree_close, build, submodules



def _dyn_input(x, lo=1, hi=8):
    return torchtrt_c.Input(min_shape=(lo,) + tuple(x.shape[1:]), opt_shape=tuple(x.shape),
                            max_shape=(hi,) + tuple(x.shape[1:]), dtype=x.dtype)


@pytest.mark.model
@pytest.mark.parametrize("name", ["vit_b16", "bert_base", "gpt2"])
def test_dynamic_batch_model_is_one_engine(name):
    model, make_input = build(name, "tiny")
    x = make_input(batch=4)
    trt = torchtrt_c.compile(model, inputs=[_dyn_input(x)], require_full_compilation=True, min_block_size=1)
    assert submodules(trt, "_run_on_acc_") == ["_run_on_acc_0"], list(trt.named_children())
    assert submodules(trt, "_run_on_gpu_") == []
    for b in (1, 3, 8):
        xb = make_input(batch=b)
        with torch.no_grad():
            want = model(xb)
        assert_tree_close(trt(xb), want, atol=2e-4, rtol=2e-4)


class _ExpandBySize(torch.nn.Module):
    """A learned row expanded to the batch read from the input (the ViT class-token pattern),
    then a view built from x.shape."""

    def __init__(self):
        super().__init__()
        self.row = torch.nn.Parameter(torch.randn(1, 1, 5))

    def forward(self, x):
        t = torch.cat([self.row.expand(x.shape[0], -1, -1), x], dim=1)
        return torch.tanh(t).reshape(x.shape[0], -1) * 2.0


def test_sym_size_feeding_expand_and_view_is_one_engine():
    m = _ExpandBySize().eval()
    x = torch.randn(3, 4, 5)
    trt = torchtrt_c.compile(m, inputs=[_dyn_input(x, 1, 9)], require_full_compilation=True, min_block_size=1)
    assert submodules(trt, "_run_on_acc_") == ["_run_on_acc_0"]
    for b in (1, 2, 9):
        xb = torch.randn(b, 4, 5)
        with torch.no_grad():
            assert_tree_close(trt(xb), m(xb), atol=1e-5, rtol=1e-5)


class _SizeAsNumber(torch.nn.Module):
    def forward(self, x):
        y = torch.relu(x) + 1.0
        return (y * x.shape[0]).sum(1) + torch.arange(x.shape[0], dtype=torch.float32)


def test_symbolic_size_used_as_a_number_runs_correctly(caplog):
    # The number is only known at run time: the ops that need it run in torch, the rest in
    # engines; no engine may take or give a scalar (that used to fail the engine build).
    m = _SizeAsNumber().eval()
    x = torch.randn(4, 7)
    with caplog.at_level("WARNING", logger="torchtrt_c"):
        trt = torchtrt_c.compile(m, inputs=[_dyn_input(x)], min_block_size=1)
    assert not [r for r in caplog.records if "engine build failed" in r.getMessage()], caplog.text
    assert submodules(trt, "_run_on_acc_"), list(trt.named_children())
    for b in (1, 3, 8):
        xb = torch.randn(b, 7)
        assert_tree_close(trt(xb), m(xb), atol=1e-4, rtol=1e-4)


def test_static_sym_size_is_a_number():
    # a static dim read with x.shape[1] is a plain int in the engine (folded or evaluated)
    class M(torch.nn.Module):
        def forward(self, x):
            return (x * x.shape[1]).reshape(x.shape[0], x.shape[1] * x.shape[2])

    m = M().eval()
    x = torch.randn(2, 3, 5)
    trt = torchtrt_c.compile(m, inputs=[_dyn_input(x, 1, 6)], require_full_compilation=True, min_block_size=1)
    assert submodules(trt, "_run_on_acc_") == ["_run_on_acc_0"]
    for b in (1, 6):
        xb = torch.randn(b, 3, 5)
        assert_tree_close(trt(xb), m(xb), atol=1e-5, rtol=1e-5)


class _SizeArithmeticInViews(torch.nn.Module):
    """x.shape[0] * 2 and // 2 (Python int arithmetic on SymInts, imported as py.mul /
    py.floordiv) only shape views: one engine."""

    def forward(self, x):
        b = x.shape[0]
        y = x.reshape(b * 2, -1)
        z = y.view(b, 2, -1).flatten(1)
        return torch.relu(z[:, : x.shape[1] // 2]) + 1


def test_size_arithmetic_feeding_views_is_one_engine():
    m = _SizeArithmeticInViews().eval()
    x = torch.randn(4, 6, 5)
    trt = torchtrt_c.compile(m, inputs=[_dyn_input(x)], require_full_compilation=True, min_block_size=1)
    assert submodules(trt, "_run_on_acc_") == ["_run_on_acc_0"], list(trt.named_children())
    for b in (1, 3, 8):
        xb = torch.randn(b, 6, 5)
        assert_tree_close(trt(xb), m(xb), atol=1e-6, rtol=1e-6)


class _SizeArithmeticAsNumbers(torch.nn.Module):
    def forward(self, x):
        b = x.shape[0]
        y = x.reshape(b * 2, -1)
        r = torch.arange(b * 2, dtype=torch.float32).unsqueeze(1)
        return torch.relu(y) + r * torch.full((b * 2, 1), 0.5) + x.shape[0] // 2


def test_size_arithmetic_used_as_numbers_splits_cleanly(caplog):
    m = _SizeArithmeticAsNumbers().eval()
    x = torch.randn(4, 6, 5)
    with caplog.at_level("WARNING", logger="torchtrt_c"):
        trt = torchtrt_c.compile(m, inputs=[_dyn_input(x)], min_block_size=1)
    assert not [r for r in caplog.records if "engine build failed" in r.getMessage()], caplog.text
    assert submodules(trt, "_run_on_acc_")
    for b in (1, 3, 8):
        xb = torch.randn(b, 6, 5)
        assert_tree_close(trt(xb), m(xb), atol=1e-5, rtol=1e-5)
