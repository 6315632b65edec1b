"""GPU tier, the torch.compile backend on CUDA tensors (issue 37): a CNN and an HF Llama (whose
rotary embedding made capture fail with "found two different devices cuda:0, cpu" when the
backend traced on CPU example inputs) get the engines of torchtrt_c.compile and match eager; a
graph that mixes host-side tensors with CUDA ones runs its host part in torch and the rest in an
engine. Needs torch with CUDA besides a GPU OpenCL device; skipped otherwise.

    TORCHTRT_C_DEVICE=gpu PYTHONPATH=$PWD python3 -m pytest tests/gpu/test_backend_cuda.py -q
"""
import sys
from pathlib import Path

import pytest
import torch
import torch.nn as nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "models"))

import torchtrt_c  # noqa: E402
from model_check import check_close, segments  # noqa: E402
from zoo import record_compiles  # noqa: E402

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs torch with CUDA")


def test_backend_cnn_on_cuda(monkeypatch):
    from zoo import build
    torch._dynamo.reset()
    m, make = build("resnet18", size="tiny")
    m = m.eval().cuda()
    x = make(batch=2).cuda()
    calls = record_compiles(monkeypatch)
    with torch.no_grad():
        out = torch.compile(m, backend="torchtrt_c")(x)
        check_close(out, m(x), what="resnet18 tiny on CUDA through torch.compile")
    assert out.device == x.device
    assert [segments(gm) for _, _, gm in calls] == [(1, 0)]


def test_backend_hf_llama_on_cuda(monkeypatch):
    pytest.importorskip("transformers")
    from hf_cases import CASES
    case = CASES["llama"]
    model = case.build().cuda()
    torch._dynamo.reset()
    calls = record_compiles(monkeypatch)
    f = torch.compile(model, backend="torchtrt_c")
    for b, s in [(2, 8), (3, 11), (2, 5)]:
        kw = {k: v.cuda() for k, v in case.inputs(b, s).items()}
        with torch.no_grad():
            check_close(f(**kw), model(**kw), what=f"Llama on CUDA through torch.compile at ({b}, {s})")
    torch._dynamo.reset()
    segs = [segments(gm) for _, _, gm in calls]
    assert segs and all(s == (1, 0) for s in segs), segs


class HostPositions(nn.Module):
    """Position ids made on the host (as some models build them) meeting CUDA weights."""

    def __init__(self):
        super().__init__()
        self.l = nn.Linear(16, 16)
        self.register_buffer("inv_freq", torch.rand(16))

    def forward(self, x):
        pos = torch.arange(x.shape[1]).float() * 0.5           # on the CPU
        ang = pos.to(x.device)[:, None] * self.inv_freq[None, :]
        return torch.relu(self.l(x * ang.cos() + ang.sin()))


def test_backend_mixed_devices(monkeypatch):
    torch._dynamo.reset()
    m = HostPositions().eval().cuda()
    x = torch.randn(2, 7, 16, device="cuda")
    calls = record_compiles(monkeypatch)
    with torch.no_grad():
        check_close(torch.compile(m, backend="torchtrt_c", options={"min_block_size": 1})(x), m(x),
                    what="host positions + CUDA weights")
    segs = [segments(gm) for _, _, gm in calls]
    assert len(segs) == 1 and segs[0][0] >= 1, segs
