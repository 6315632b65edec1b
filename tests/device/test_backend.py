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


def test_backend_runs_dynamic_graphs_eagerly_unless_pass_through(caplog):
    # dynamic=True hands over symbolic sizes as graph inputs, which the backend does not compile
    torch._dynamo.reset()
    m = Small().eval()
    with caplog.at_level(logging.WARNING, logger="torchtrt_c"):
        f = torch.compile(m, backend="torchtrt_c", dynamic=True)
        for n in (3, 5):
            x = torch.randn(n, 8)
            assert_tree_close(f(x), m(x))
    assert "running eagerly" in caplog.text, caplog.text
    torch._dynamo.reset()
    with pytest.raises(Exception, match="symbolic"):
        torch.compile(m, backend="torchtrt_c", dynamic=True,
                      options={"pass_through_build_failures": True})(torch.randn(3, 8))


def test_backend_rejects_bad_options():
    torch._dynamo.reset()
    with pytest.raises(Exception, match="min_blok_size"):
        torch.compile(Small(), backend="torchtrt_c", options={"min_blok_size": 1})(torch.randn(2, 8))
