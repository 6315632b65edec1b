"""TORCHTRT_C_CUDA_GRAPHS (target/target.c) on any device: a value that is not a count is
refused by name when the engine is built (the segment then runs in torch, as for every engine
build failure, and the log says why); 0 and counts build. The graphs themselves run only in
the CUDA launch path: tests/gpu/test_cuda_graphs.py."""
import logging

import pytest
import torch

import torchtrt_c
from torchtrt_c import settings


def _accs(trt):
    return [n for n, _ in trt.named_children() if n.startswith("_run_on_acc_")]


@pytest.mark.parametrize("bad", ["yes", "-1", "4x"])
def test_bad_value_is_named(bad, monkeypatch, caplog):
    settings.set(CUDA_GRAPHS=bad)
    m = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU()).eval()
    x = torch.randn(3, 4)
    with caplog.at_level(logging.WARNING):
        trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    assert not _accs(trt)
    assert f"TORCHTRT_C_CUDA_GRAPHS={bad}" in caplog.text, caplog.text
    with torch.no_grad():
        torch.testing.assert_close(trt(x), m(x))


@pytest.mark.parametrize("good", ["0", "1", "8", "1000"])
def test_counts_build(good, monkeypatch):
    settings.set(CUDA_GRAPHS=good)
    m = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU()).eval()
    x = torch.randn(3, 4)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    assert _accs(trt)
    with torch.no_grad():
        torch.testing.assert_close(trt(x), m(x), rtol=1e-5, atol=1e-5)
