"""capture() builds torch.export's intermediate graph modules lazily (issue 15): the program
it returns is the same as with eager recompiles, runs the same, and export's passes regenerate
less Python code on the way (a no_grad + autocast region, as in Llama's rotary embedding, made
export split, re-inline and recompile the whole graph several times)."""
import collections

import pytest
import torch

from torchtrt_c._input import Input
from torchtrt_c.dynamo._capture import capture, decompose
from torchtrt_c import settings


class Rotary(torch.nn.Module):
    """Llama-style: a no_grad + autocast(enabled=False) region computing cos/sin, then used."""

    def __init__(self, d=8):
        super().__init__()
        self.proj = torch.nn.Linear(d, d)
        self.register_buffer("inv", 1.0 / (100.0 ** (torch.arange(0, d, 2).float() / d)), persistent=False)

    @torch.no_grad()
    def _angles(self, x):
        pos = torch.arange(x.shape[1], dtype=torch.float32)
        with torch.autocast(device_type="cpu", enabled=False):
            f = pos[:, None] * self.inv[None, :]
            e = torch.cat((f, f), dim=-1)
            return e.cos(), e.sin()

    def forward(self, x):
        cos, sin = self._angles(x)
        h = self.proj(x)
        h1, h2 = h[..., : h.shape[-1] // 2], h[..., h.shape[-1] // 2:]
        return h * cos + torch.cat((-h2, h1), dim=-1) * sin


def _targets(ep):
    return [str(n.target) for n in ep.graph.nodes]


def _count_real_recompiles(fn):
    n = collections.Counter()
    orig = torch.fx.GraphModule.recompile

    def counting(self):
        n["recompiles"] += 1
        return orig(self)

    torch.fx.GraphModule.recompile = counting
    try:
        out = fn()
    finally:
        torch.fx.GraphModule.recompile = orig
    return out, n["recompiles"]


@pytest.mark.parametrize("shape", [(1, 5, 8), (3, 7, 8)])
def test_lazy_capture_same_program_and_results(monkeypatch, shape):
    torch.manual_seed(0)
    m = Rotary().eval()
    x = torch.randn(shape)
    inputs = [Input.from_tensor(x)]
    settings.set(LAZY_FX="0")
    eager_ep, eager_n = _count_real_recompiles(lambda: capture(m, inputs, {}))
    settings.set(LAZY_FX="1")
    lazy_ep, lazy_n = _count_real_recompiles(lambda: capture(m, inputs, {}))
    assert _targets(lazy_ep) == _targets(eager_ep), "lazy capture changed the program"
    # the program's own module is an ordinary one: it runs (its code exists)
    assert "def forward" in lazy_ep.graph_module.code
    ref = m(x)
    for ep in (lazy_ep, decompose(lazy_ep)):
        out = ep.module()(x)
        err = (out - ref).abs().max().item()
        assert err <= 1e-6, f"captured program differs from eager by {err:.3g}"
    assert lazy_n < eager_n, f"lazy capture recompiled {lazy_n} graph modules, eager {eager_n}"


def test_lazy_switch_restored_after_capture():
    """The lazy mode is only on during export: graph modules made later are ordinary."""
    from torch.fx._lazy_graph_module import _LazyGraphModule
    m = Rotary().eval()
    x = torch.randn(1, 5, 8)
    capture(m, [Input.from_tensor(x)], {})
    gm = torch.fx.symbolic_trace(torch.nn.ReLU())
    assert not isinstance(gm, _LazyGraphModule)
