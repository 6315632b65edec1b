"""The torch.compile backend "torchtrt_c"."""
import logging

import pytest
import torch
import torch.nn as nn

import torchtrt_c  # noqa: F401  (registers the backend)
from zoo import assert_tree_close



class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.l(x)) * 2


def test_backend_compiles_and_matches_eager():
    torch._dynamo.reset()
    m = Small().eval()
    x = torch.randn(3, 8)
    fast = torch.compile(m, backend="torchtrt_c", options={"min_block_size": 1})
    assert_tree_close(fast(x), m(x))
    fast2 = torchtrt_c.compile(m, ir="torch_compile", inputs=[x], min_block_size=1)
    assert_tree_close(fast2(x), m(x))


class Complex(nn.Module):
    def forward(self, x):
        return torch.view_as_real(torch.fft.rfft(x)).sum(-1)


def test_backend_runs_unsupported_ops_in_a_torch_segment(caplog):
    # a complex-valued op inside the graph is unsupported, not an error: the graph compiles,
    # rfft runs in a torch segment, and nothing falls back to eager (this test used to expect
    # the eager fallback from Complex, which stopped being true on torch 2.11 and 2.13 alike)
    torch._dynamo.reset()
    x = torch.randn(4, 8)
    with caplog.at_level(logging.WARNING, logger="torchtrt_c"):
        out = torch.compile(Complex(), backend="torchtrt_c")(x)
    assert_tree_close(out, Complex()(x))
    assert "running it eagerly" not in caplog.text, caplog.text


class ComplexInput(nn.Module):
    def forward(self, z):
        return torch.view_as_real(z * 2).sum(-1)


def test_backend_falls_back_to_eager_unless_pass_through(caplog):
    # a complex graph input: no engine or segment boundary takes one, so the compile itself fails
    torch._dynamo.reset()
    z = torch.randn(4, 7, dtype=torch.complex64)
    with caplog.at_level(logging.WARNING, logger="torchtrt_c"):
        out = torch.compile(ComplexInput(), backend="torchtrt_c")(z)
    assert_tree_close(out, ComplexInput()(z))
    assert "running it eagerly" in caplog.text and "complex64" in caplog.text, caplog.text
    torch._dynamo.reset()
    with pytest.raises(Exception, match="complex"):
        torch.compile(ComplexInput(), backend="torchtrt_c",
                      options={"pass_through_build_failures": True})(z)


class Scaled(nn.Module):
    """A Python float attribute (as HF models' dropout probabilities): dynamic dynamo passes it as
    a 0-d tensor input that the graph reads with .item()."""

    def __init__(self):
        super().__init__()
        self.l = nn.Linear(8, 6)
        self.p = 0.1
        self.scale = 1.5

    def forward(self, x):
        return torch.nn.functional.dropout(torch.relu(self.l(x)) * self.scale, self.p, False)


def _counting(monkeypatch):
    import torchtrt_c.dynamo._compiler as comp
    calls = []
    real = comp.compile_module

    def counted(*a, **k):
        calls.append([tuple(i.shape) for i in a[1]])
        return real(*a, **k)
    monkeypatch.setattr(comp, "compile_module", counted)
    return calls


@pytest.mark.parametrize("model", [Small, Scaled])
def test_backend_compiles_dynamic_graphs_per_shape(monkeypatch, model):
    """dynamic=True hands over symbolic sizes as graph inputs: each call's shapes are compiled
    when first seen (static shapes, sizes fixed), then reused; answers match eager."""
    torch._dynamo.reset()
    calls = _counting(monkeypatch)
    m = model().eval()
    f = torch.compile(m, backend="torchtrt_c", dynamic=True, options={"min_block_size": 1})
    for n in (3, 5, 3, 7, 5):
        x = torch.randn(n, 8)
        with torch.no_grad():
            assert_tree_close(f(x), m(x))
    shapes = sorted({s for c in calls for s in c if s in ((3, 8), (5, 8), (7, 8))})   # x, beside the weights
    assert len(calls) == 3 and shapes == [(3, 8), (5, 8), (7, 8)], calls


def test_backend_dynamic_shape_limit_and_pass_through(monkeypatch, caplog):
    """Past TORCHTRT_C_BACKEND_SHAPES signatures a dynamic graph runs eagerly (logged once); a
    shape whose compile fails raises with pass_through_build_failures."""
    torch._dynamo.reset()
    monkeypatch.setenv("TORCHTRT_C_BACKEND_SHAPES", "1")
    calls = _counting(monkeypatch)
    m = Small().eval()
    with caplog.at_level(logging.WARNING, logger="torchtrt_c"):
        f = torch.compile(m, backend="torchtrt_c", dynamic=True, options={"min_block_size": 1})
        for n in (3, 5, 6):
            x = torch.randn(n, 8)
            assert_tree_close(f(x), m(x))
    assert len(calls) == 1 and "new ones run eagerly" in caplog.text, (calls, caplog.text)
    assert caplog.text.count("new ones run eagerly") == 1, caplog.text
    torch._dynamo.reset()
    z = torch.randn(4, 7, dtype=torch.complex64)
    with pytest.raises(Exception, match="complex"):
        torch.compile(ComplexInput(), backend="torchtrt_c", dynamic=True,
                      options={"pass_through_build_failures": True})(z)


def test_backend_rejects_bad_options():
    torch._dynamo.reset()
    with pytest.raises(Exception, match="min_blok_size"):
        torch.compile(Small(), backend="torchtrt_c", options={"min_blok_size": 1})(torch.randn(2, 8))
