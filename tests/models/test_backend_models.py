"""Model tier, the torch.compile backend: the project's vision and Hugging Face test models called
through `torch.compile(model, backend="torchtrt_c")` as a notebook would (batch and sequence
varying between calls) get the same engines as through torchtrt_c.compile, match eager, make no
graph break, and compile a bounded number of times (docs/torch_compile.md).

    PYTHONPATH=$PWD python3 -m pytest tests/models/test_backend_models.py -q
"""
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torchtrt_c  # noqa: E402
from model_check import check_close, segments  # noqa: E402
from zoo import record_compiles  # noqa: E402


def _graph_breaks():
    from torch._dynamo.utils import counters
    return dict(counters["graph_break"])


def _session(model, calls_kw, monkeypatch, what):
    """Runs the calls through torch.compile, checks each against eager; returns each compile's
    (input (min, max) shapes, (engines, torch segments))."""
    torch._dynamo.reset()
    from torch._dynamo.utils import counters
    counters["graph_break"].clear()  # reset() keeps them: an earlier test's breaks in this worker
    calls = record_compiles(monkeypatch)
    f = torch.compile(model, backend="torchtrt_c")
    for label, args, kw in calls_kw:
        with torch.no_grad():
            check_close(f(*args, **kw), model(*args, **kw), what=f"{what} through torch.compile at {label}")
    breaks = _graph_breaks()
    torch._dynamo.reset()
    assert not breaks, f"dynamo broke the graph: {breaks}"
    # taken now: compiles made after the session are not its own
    return [([(i.min_shape, i.max_shape) for i in inputs], segments(gm)) for _, inputs, gm in calls]


VISION = ["resnet18", pytest.param("mnasnet0_5", marks=pytest.mark.slow)]


@pytest.mark.parametrize("name", VISION)
def test_backend_vision_model(name, monkeypatch):
    from thirdparty import import_torchvision, randomize_constant_init
    tv = import_torchvision()
    torch.manual_seed(0)
    model = randomize_constant_init(getattr(tv.models, name)().eval())
    xs = [torch.randn(b, 3, 64, 64) for b in (2, 3, 2, 4)]
    calls = _session(model, [(f"batch {x.shape[0]}", (x,), {}) for x in xs], monkeypatch, name)
    ref = segments(torchtrt_c.compile(model, inputs=[xs[0]]))
    # batch 2 static, then dynamo's dynamic recompile: one engine over a batch range
    assert len(calls) == 2, calls
    assert all(seg == ref for _, seg in calls), f"torch.compile: {calls}; torchtrt_c.compile: {ref}"
    assert calls[1][0][0][0][0] <= 2 and calls[1][0][0][1][0] >= 4, calls


TEXT = ["gpt2", pytest.param("bert", marks=pytest.mark.slow)]


@pytest.mark.parametrize("name", TEXT)
def test_backend_hf_model_over_a_session(name, monkeypatch):
    """Batch and sequence vary as in a notebook: the first shape compiles static, dynamo's dynamic
    recompile compiles once over a bucket of sizes, and a longer sequence grows the bucket once
    (GPT-2), unless dynamo already bounded the sequence by the model's 32 positions (BERT)."""
    pytest.importorskip("transformers")
    from hf_cases import CASES
    case = CASES[name]
    model = case.build()
    pairs = [(2, 4), (3, 5), (4, 3), (2, 20), (3, 7)]   # the configs hold 32 positions
    calls = _session(model, [(f"batch {b}, seq {s}", (), case.inputs(b, s)) for b, s in pairs], monkeypatch, name)
    assert len(calls) == {"gpt2": 3, "bert": 2}[name], calls
    ref = segments(torchtrt_c.compile(model, kwarg_inputs=case.specs()))
    assert all(seg == ref for _, seg in calls), f"torch.compile: {calls}; torchtrt_c.compile: {ref}"


def _coverage_model(name):
    """(model, [(label, args, kwargs)]) of issue 33's model classes: a video CNN (3-D
    convolutions), a weight-standardised CNN (NF-Net: weights computed in the graph), a detection
    transformer (DETR: learned queries, a backbone's feature maps)."""
    from thirdparty import import_timm, import_torchvision, randomize_constant_init
    torch.manual_seed(0)
    if name == "r3d_18":
        m = randomize_constant_init(import_torchvision().models.video.r3d_18(weights=None).eval())
        return m, [(f"batch {b}", (torch.randn(b, 3, 8, 32, 32),), {}) for b in (2, 3)]
    if name == "nf_resnet26":
        m = randomize_constant_init(import_timm().create_model("nf_resnet26", pretrained=False).eval())
        return m, [(f"batch {b}", (torch.randn(b, 3, 64, 64),), {}) for b in (2, 3)]
    pytest.importorskip("transformers")
    from test_hf_detection import detr
    return detr(), [(f"batch {b}", (), {"pixel_values": torch.randn(b, 3, 64, 48)}) for b in (2, 3)]


@pytest.mark.parametrize("name", ["r3d_18", pytest.param("nf_resnet26", marks=pytest.mark.slow),
                                  pytest.param("detr", marks=pytest.mark.slow)])
def test_backend_coverage_models(name, monkeypatch):
    """The README's video CNN, weight-standardised CNN and detection model through
    torch.compile(backend="torchtrt_c"): each compile one engine with no torch segment, matching
    eager, no graph break (2026-12-07 on PoCL: errors 1.2e-6, 6.0e-7, 3.7e-7)."""
    try:
        model, calls_kw = _coverage_model(name)
    except ImportError as ex:
        pytest.skip(f"{name}: {ex}")
    calls = _session(model, calls_kw, monkeypatch, name)
    assert calls and all(seg == (1, 0) for _, seg in calls), calls
