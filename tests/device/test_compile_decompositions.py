"""torchtrt_c.compile decomposes static programs node by node (no torch re-trace) and keeps the
re-trace where only it is right (dynamic shapes); both give eager's results (issue 15)."""
import pytest
import torch
import torch.nn as nn

import torchtrt_c
from zoo import assert_tree_close


class SmallCNN(nn.Module):
    """conv2d + batch norm + in-place ReLU + residual add_ + dropout: the ops torchvision
    models bring to decompositions."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 6, 3, padding=1)
        self.b1 = nn.BatchNorm2d(6)
        self.c2 = nn.Conv2d(6, 6, 3, padding=1)
        self.fc = nn.Linear(6, 4)
        self.drop = nn.Dropout(0.3)

    def forward(self, x):
        y = torch.relu_(self.b1(self.c1(x)))
        z = self.c2(y)
        z += y
        z = torch.flatten(nn.functional.adaptive_avg_pool2d(z, 1), 1)
        return self.fc(self.drop(z))


def _model():
    torch.manual_seed(0)
    m = SmallCNN().eval()
    with torch.no_grad():
        m.b1.running_mean.uniform_(-0.5, 0.5)
        m.b1.running_var.uniform_(0.5, 1.5)
    return m


def _count_retraces(monkeypatch):
    calls = []
    orig = torch.export.ExportedProgram.run_decompositions

    def spy(self, *a, **k):
        calls.append(1)
        return orig(self, *a, **k)
    monkeypatch.setattr(torch.export.ExportedProgram, "run_decompositions", spy)
    return calls


def test_static_compile_needs_no_retrace(monkeypatch):
    calls = _count_retraces(monkeypatch)
    m = _model()
    x = torch.randn(2, 3, 9, 7)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    assert not calls, "a static program went through torch's whole-program re-trace"
    with torch.no_grad():
        assert_tree_close(trt(x), m(x))


@pytest.mark.parametrize("force", ["env", "dynamic"])
def test_retrace_when_forced_or_dynamic(monkeypatch, force):
    calls = _count_retraces(monkeypatch)
    m = _model()
    if force == "env":
        monkeypatch.setenv("TORCHTRT_C_LOCAL_DECOMPOSITIONS", "0")
        inp, xs = [torch.randn(2, 3, 9, 7)], [torch.randn(2, 3, 9, 7)]
    else:
        inp = [torchtrt_c.Input(min_shape=(1, 3, 9, 7), opt_shape=(2, 3, 9, 7), max_shape=(4, 3, 9, 7))]
        xs = [torch.randn(b, 3, 9, 7) for b in (1, 3)]
    trt = torchtrt_c.compile(m, inputs=inp, min_block_size=1)
    assert calls, "the re-trace was expected"
    with torch.no_grad():
        for x in xs:
            assert_tree_close(trt(x), m(x))
