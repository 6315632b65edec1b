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


def test_backend_falls_back_to_eager_unless_pass_through(caplog):
    torch._dynamo.reset()
    x = torch.randn(4, 8)
    with caplog.at_level(logging.WARNING, logger="torchtrt_c"):
        out = torch.compile(Complex(), backend="torchtrt_c")(x)
    assert_tree_close(out, Complex()(x))
    assert "running it eagerly" in caplog.text
    torch._dynamo.reset()
    with pytest.raises(Exception, match="complex"):
        torch.compile(Complex(), backend="torchtrt_c",
                      options={"pass_through_build_failures": True})(x)


def test_backend_rejects_bad_options():
    torch._dynamo.reset()
    with pytest.raises(Exception, match="min_blok_size"):
        torch.compile(Small(), backend="torchtrt_c", options={"min_blok_size": 1})(torch.randn(2, 8))
