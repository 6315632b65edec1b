"""The torch.compile backend "torchtrt_c"."""
import logging

import pytest
import torch
import torch.nn as nn

import torchtrt_c  # noqa: F401  (registers the backend)
from zoo import assert_tree_close, record_compiles
from torchtrt_c import settings



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


def _ranges(calls):
    """The (min, max) shapes of each compile's inputs."""
    return [[(i.min_shape, i.max_shape) for i in inputs] for _, inputs, _ in calls]


@pytest.mark.parametrize("model", [Small, Scaled])
def test_backend_compiles_a_dynamic_graph_once_over_a_range(monkeypatch, model):
    """dynamic=True hands over symbolic sizes as graph inputs: the graph is compiled once over a
    range of sizes (the weights are constants, so x is its only input); a size past the range
    compiles it again over a grown range; answers match eager."""
    torch._dynamo.reset()
    calls = record_compiles(monkeypatch)
    m = model().eval()
    f = torch.compile(m, backend="torchtrt_c", dynamic=True, options={"min_block_size": 1})
    for n in (3, 5, 3, 7, 5):
        x = torch.randn(n, 8)
        with torch.no_grad():
            assert_tree_close(f(x), m(x))
    assert len(calls) == 1, _ranges(calls)
    [[(lo, hi)]] = _ranges(calls)
    assert lo[1:] == hi[1:] == (8,) and lo[0] <= 3 and hi[0] >= 7, (lo, hi)
    for n in (40, 3, 33):
        x = torch.randn(n, 8)
        with torch.no_grad():
            assert_tree_close(f(x), m(x))
    assert len(calls) == 2, _ranges(calls)
    [(lo2, hi2)] = _ranges(calls)[1]
    assert lo2[0] <= 3 and hi2[0] >= 40, (lo2, hi2)


def test_backend_takes_mark_dynamic_bounds(monkeypatch):
    torch._dynamo.reset()
    calls = record_compiles(monkeypatch)
    m = Small().eval()
    f = torch.compile(m, backend="torchtrt_c", options={"min_block_size": 1})
    for n in (3, 60, 100, 2):
        x = torch.randn(n, 8)
        torch._dynamo.mark_dynamic(x, 0, min=2, max=100)
        with torch.no_grad():
            assert_tree_close(f(x), m(x))
    assert _ranges(calls) == [[((2, 8), (100, 8))]], _ranges(calls)


def test_backend_dynamic_shape_limit_and_pass_through(monkeypatch, caplog):
    """Past TORCHTRT_C_BACKEND_SHAPES compiles a graph runs eagerly (logged once); a shape whose
    compile fails raises with pass_through_build_failures."""
    torch._dynamo.reset()
    settings.set(BACKEND_SHAPES="1")
    calls = record_compiles(monkeypatch)
    m = Small().eval()
    with caplog.at_level(logging.WARNING, logger="torchtrt_c"):
        f = torch.compile(m, backend="torchtrt_c", dynamic=True, options={"min_block_size": 1})
        for n in (3, 5, 300, 400, 4):
            x = torch.randn(n, 8)
            with torch.no_grad():
                assert_tree_close(f(x), m(x))
    assert len(calls) == 1 and "new shapes and values run eagerly" in caplog.text, (calls, caplog.text)
    assert caplog.text.count("run eagerly") == 1, caplog.text
    torch._dynamo.reset()
    z = torch.randn(4, 7, dtype=torch.complex64)
    with pytest.raises(Exception, match="complex"):
        torch.compile(ComplexInput(), backend="torchtrt_c", dynamic=True,
                      options={"pass_through_build_failures": True})(z)


def test_backend_weights_are_engine_constants(monkeypatch):
    """dynamo passes the parameters and buffers as graph inputs; the backend freezes them, so a
    CNN's convolutions (which need constant weights) are one engine, as with torchtrt_c.compile."""
    from zoo import build, submodules

    def segments_of(g):
        return len(submodules(g, "_run_on_acc_")), len(submodules(g, "_run_on_gpu_"))
    torch._dynamo.reset()
    calls = record_compiles(monkeypatch)
    m, make = build("resnet18", size="tiny")
    m.eval()
    x = make(batch=2)
    f = torch.compile(m, backend="torchtrt_c")
    with torch.no_grad():
        assert_tree_close(f(x), m(x))
    [(_, inputs, gm)] = calls
    assert [i.shape for i in inputs] == [tuple(x.shape)], inputs     # only x is a runtime input
    ref = torchtrt_c.compile(m, inputs=[x])
    assert segments_of(gm) == segments_of(ref) == (1, 0), (segments_of(gm), segments_of(ref))


def test_backend_recompiles_when_a_weight_changes(monkeypatch, caplog):
    """Frozen weights are checked at every call: an in-place change under no_grad, load_state_dict
    and a new Parameter each compile the graph again with the new values (logged)."""
    torch._dynamo.reset()
    calls = record_compiles(monkeypatch)
    m = Small().eval()
    x = torch.randn(3, 8)
    f = torch.compile(m, backend="torchtrt_c", options={"min_block_size": 1})
    changes = [
        lambda: m.l.weight.mul_(2),
        lambda: m.load_state_dict({k: torch.randn_like(v) for k, v in m.state_dict().items()}),
        lambda: setattr(m.l, "bias", nn.Parameter(torch.randn(8))),
    ]
    with torch.no_grad(), caplog.at_level(logging.WARNING, logger="torchtrt_c"):
        assert_tree_close(f(x), m(x))
        assert_tree_close(f(x), m(x))
        assert len(calls) == 1
        for k, change in enumerate(changes):
            change()
            assert_tree_close(f(x), m(x))
            assert_tree_close(f(x), m(x))
            assert len(calls) == k + 2, f"change {k}: {len(calls)} compiles"
    assert caplog.text.count("compiling it again") == len(changes), caplog.text


def test_backend_rejects_bad_options():
    torch._dynamo.reset()
    with pytest.raises(Exception, match="min_blok_size"):
        torch.compile(Small(), backend="torchtrt_c", options={"min_blok_size": 1})(torch.randn(2, 8))


class DataDependent(nn.Module):
    """A size that depends on the data (as detection post-processing has): torch.export cannot
    capture it, dynamo breaks the graph there."""

    def __init__(self):
        super().__init__()
        self.l = nn.Linear(8, 8)
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        h = torch.relu(self.l(x))
        keep = torch.nonzero(h.sum(-1) > 0).squeeze(-1)
        if keep.numel() == 0:       # a branch on the data: torch.export cannot take it
            return h.new_zeros(0, 4)
        return self.head(h[keep]) * 2


def test_data_dependent_model_compile_names_the_operator_and_the_backend_runs_it(monkeypatch):
    m = DataDependent().eval()
    x = torch.randn(6, 8)
    with pytest.raises(torchtrt_c.Error, match=r"aten\.nonzero\.default .*test_backend\.py.*backend=\"torchtrt_c\""):
        torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    torch._dynamo.reset()
    calls = record_compiles(monkeypatch)
    f = torch.compile(m, backend="torchtrt_c", options={"min_block_size": 1})
    with torch.no_grad():
        for n in (6, 9):
            x = torch.randn(n, 8)
            assert_tree_close(f(x), m(x))
    # the graph before the break (Linear + relu + the condition) and after it (the head) are engines
    assert len(calls) >= 2 and all(len([c for c in gm.named_children() if c[0].startswith("_run_on_acc_")]) >= 1
                                   for _, _, gm in calls), _ranges(calls)
