"""Model tier, a torchvision detection model through the torch.compile backend: its post-processing
(score thresholds, top-k over a data-dependent count, NMS) has sizes that depend on the data, so
torchtrt_c.compile cannot capture it (and says which operator and what to use instead); through
`torch.compile(model, backend="torchtrt_c")` dynamo breaks the graph there, the backbone, FPN and
heads become engines, and the detections match eager on an input where eager finds boxes.

Where torchvision's C extension does not load (beside the CPU build of torch, tests/thirdparty.py)
`torchvision::nms` has a schema but no kernel; only then this test registers a plain greedy NMS
written with torch ops for it, so that eager and the compiled model run the same post-processing.
"""
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torchtrt_c  # noqa: E402
from model_check import segments  # noqa: E402
from zoo import ops_in, record_compiles  # noqa: E402

_nms_lib = None


def _greedy_nms(boxes, scores, iou_threshold: float):
    """Indices of the boxes kept, by decreasing score: each box suppresses the later ones whose
    IoU with it exceeds the threshold (what torchvision::nms computes)."""
    order = scores.argsort(descending=True)
    b = boxes[order]
    area = (b[:, 2] - b[:, 0]).clamp(min=0) * (b[:, 3] - b[:, 1]).clamp(min=0)
    lt = torch.maximum(b[:, None, :2], b[None, :, :2])
    rb = torch.minimum(b[:, None, 2:], b[None, :, 2:])
    inter = (rb - lt).clamp(min=0).prod(-1)
    iou = inter / (area[:, None] + area[None, :] - inter)
    keep = torch.ones(len(order), dtype=torch.bool)
    for i in range(len(order)):
        if keep[i]:
            keep[i + 1:] &= iou[i, i + 1:] <= iou_threshold
    return order[keep]


def _nms_kernel(tv, monkeypatch):
    """Registers _greedy_nms as torchvision::nms's CPU kernel where it has none, and lets
    torchvision's Python call it (it checks that its extension loaded first)."""
    global _nms_lib
    if tv.extension._has_ops():
        return
    if _nms_lib is None:
        _nms_lib = torch.library.Library("torchvision", "IMPL", "CPU")
        _nms_lib.impl("nms", _greedy_nms)
    monkeypatch.setattr(tv.extension, "_has_ops", lambda: True)


def _scene(size=160, seed=0):
    """An image with a few bright rectangles on a dark background."""
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(3, size, size, generator=g) * 0.1
    for k in range(4):
        y0, x0 = (torch.randint(0, size - 48, (2,), generator=g)).tolist()
        x[:, y0:y0 + 40, x0:x0 + 40] = torch.rand(3, 1, 1, generator=g)
    return x


def _model(tv):
    torch.manual_seed(0)
    # random weights; a low score threshold so that eager finds boxes on a random network
    m = tv.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
        weights=None, weights_backbone=None, num_classes=5, box_score_thresh=0.0,
        min_size=160, max_size=160, rpn_pre_nms_top_n_test=60, rpn_post_nms_top_n_test=30,
        box_detections_per_img=10)
    return m.eval()


def _summary(module, gm) -> dict:
    """How many convolutions dynamo's graph had, the compiled module's segments, and the ops its
    torch segments run."""
    convs = sum(1 for n in module.gm.graph.nodes if "conv2d" in str(n.target))
    in_torch = set().union(*[ops_in(m) for n, m in gm.named_children() if n.startswith("_run_on_gpu_")])
    return {"convolutions": convs, "segments": segments(gm), "torch ops": sorted(in_torch)}


@pytest.mark.slow   # 8 min on 2 busy cores: a dozen graphs between dynamo's breaks
def test_detection_model_through_the_backend(monkeypatch):
    from thirdparty import import_torchvision
    tv = import_torchvision()
    _nms_kernel(tv, monkeypatch)
    model = _model(tv)
    imgs = [_scene(seed=0), _scene(seed=1)]
    with torch.no_grad():
        ref = model(imgs)
    assert all(len(r["boxes"]) > 0 for r in ref), "eager finds no box: the test input is not useful"

    with pytest.raises(torchtrt_c.Error, match='backend="torchtrt_c"'):
        torchtrt_c.compile(model, inputs=[torch.stack(imgs)], dryrun=True)

    torch._dynamo.reset()
    rec = record_compiles(monkeypatch)
    f = torch.compile(model, backend="torchtrt_c")
    with torch.no_grad():
        out = f(imgs)
        out = f(imgs)
    torch._dynamo.reset()
    calls = [_summary(module, gm) for module, _, gm in rec]
    for r, o in zip(ref, out):
        assert torch.equal(o["labels"], r["labels"]), (o["labels"], r["labels"])
        torch.testing.assert_close(o["boxes"], r["boxes"], atol=1e-3, rtol=1e-4)
        torch.testing.assert_close(o["scores"], r["scores"], atol=1e-4, rtol=1e-4)
    print(*calls, sep="\n")
    # the graphs with the backbone, FPN and heads: their convolutions all run in engines
    heavy = [c for c in calls if c["convolutions"]]
    assert heavy and all(c["segments"][0] >= 1 for c in heavy), calls
    assert not any("aten.convolution.default" in c["torch ops"] for c in heavy), calls
