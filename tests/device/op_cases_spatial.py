"""Differential cases for issue 11's spatial, padding, resize, sort and scatter ops (format:
tests/opcase.py). ModelCase: the op reaches the engine through a decomposition
(torchtrt_c/dynamo/lowering/_decompositions_spatial.py or torch's defaults); Case: a C
converter."""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from convtest import rand
from opcase import Case, ModelCase

aten = torch.ops.aten


def _r(*s, seed=None):
    return lambda: (rand(*s, seed=seed),)


CASES: dict = {}


def _add(op, *cases):
    CASES.setdefault(op, []).extend(cases)


# ---------------------------------------------------------------- pooling 1d / 3d
_add("aten.adaptive_avg_pool1d.default",
     ModelCase(lambda x: F.adaptive_avg_pool1d(x, 3), _r(2, 3, 10)),
     ModelCase(lambda x: F.adaptive_avg_pool1d(x, 4), _r(3, 7), id="unbatched-odd"))
_add("aten.avg_pool1d.default",
     ModelCase(lambda x: F.avg_pool1d(x, 3, 2, 1), _r(2, 3, 11)),
     ModelCase(lambda x: F.avg_pool1d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), _r(2, 5, 10)))
_add("aten.max_pool1d.default",
     ModelCase(lambda x: F.max_pool1d(x, 3, 2, 1), _r(2, 3, 11)),
     ModelCase(lambda x: F.max_pool1d(x, 2, 1, 0, dilation=2, ceil_mode=True), _r(2, 5, 10)))
_add("aten.avg_pool3d.default",
     ModelCase(lambda x: F.avg_pool3d(x, 3, 2, 1), _r(2, 3, 5, 7, 6)),
     ModelCase(lambda x: F.avg_pool3d(x, (2, 3, 1), (1, 2, 1), (1, 1, 0), ceil_mode=True, count_include_pad=False),
               _r(1, 2, 5, 6, 7)),
     ModelCase(lambda x: F.avg_pool3d(x, 2, divisor_override=3), _r(2, 4, 6, 5), id="unbatched-divisor"))
_add("aten.max_pool3d.default",
     ModelCase(lambda x: F.max_pool3d(x, 3, 2, 1), _r(2, 3, 5, 7, 6)),
     ModelCase(lambda x: F.max_pool3d(x, (2, 3, 2), (2, 1, 2), (1, 1, 0), dilation=(1, 2, 1), ceil_mode=True),
               _r(1, 2, 5, 7, 7)),
     ModelCase(lambda x: F.max_pool3d(x, 2), _r(3, 4, 6, 5), id="unbatched"))
_add("aten.adaptive_avg_pool3d.default",
     ModelCase(lambda x: F.adaptive_avg_pool3d(x, (2, 3, 2)), _r(2, 3, 5, 7, 6)),
     ModelCase(lambda x: F.adaptive_avg_pool3d(x, 1), _r(2, 3, 5, 7, 6), id="global"),
     ModelCase(lambda x: F.adaptive_avg_pool3d(x, (3, None, 4)), _r(3, 7, 5, 9), id="unbatched-none"))
_add("aten._adaptive_avg_pool3d.default",
     ModelCase(lambda x: aten._adaptive_avg_pool3d(x, [3, 2, 4]), _r(2, 3, 7, 5, 9)))

# ---------------------------------------------------------------- 3-D convolution (issue 33)
# aten.convolution.default with a 5-D weight: decomposed into 2-D convolutions
# (torchtrt_c/dynamo/lowering/_decompositions_conv3d.py); every execution path and more shapes
# in tests/device/test_conv3d.py (float16 there: the harness's path forms run cases in float32).
def _mod(make, dtype=torch.float32):
    torch.manual_seed(0)
    return make().eval().to(dtype)


_add("aten.convolution.default",
     ModelCase(_mod(lambda: nn.Conv3d(3, 5, 3, stride=(2, 1, 2), padding=(1, 2, 0), dilation=(2, 1, 1))),
               _r(2, 3, 7, 9, 6), tol=1e-4, id="3d"),
     ModelCase(_mod(lambda: nn.Conv3d(4, 6, (3, 1, 2), groups=2, padding=1, bias=False)), _r(4, 5, 7, 5),
               tol=1e-4, id="3d-groups-unbatched"),
     ModelCase(_mod(lambda: nn.ConvTranspose3d(3, 4, 3, stride=2, padding=1, output_padding=1)),
               _r(1, 3, 3, 5, 4), tol=1e-4, id="transposed-3d"))

# ---------------------------------------------------------------- padding
for mode in ("reflect", "replicate", "circular"):
    _add("aten.pad.default",
         ModelCase(lambda x, m=mode: F.pad(x, (1, 2), mode=m), _r(2, 3, 5), id=f"{mode}-1d"),
         ModelCase(lambda x, m=mode: F.pad(x, (2, 1, 1, 3), mode=m), _r(2, 3, 5, 7), id=f"{mode}-2d"),
         ModelCase(lambda x, m=mode: F.pad(x, (1, 2, 0, 1, 2, 1), mode=m), _r(1, 2, 3, 5, 4), id=f"{mode}-3d"))
_add("aten.pad.default",
     ModelCase(lambda x: F.pad(x, (1, 2, 2, 1), value=0.5), _r(2, 3, 5, 7), id="constant"),
     ModelCase(lambda x: F.pad(x, (-1, 2, 1, -2), mode="circular"), _r(2, 3, 5, 7), id="circular-crop"))
_add("aten._pad_circular.default",
     ModelCase(lambda x: aten._pad_circular(x, [2, 1, 1, 3]), _r(2, 3, 5, 7)))
for n, pad in ((1, [2, 1]), (2, [1, 2, 2, 0]), (3, [1, 0, 2, 1, 1, 2])):
    shape = (2, 3, 5, 7, 6)[:2 + n]
    _add(f"aten.reflection_pad{n}d.default",
         ModelCase(lambda x, p=pad, n=n: getattr(aten, f"reflection_pad{n}d")(x, p), _r(*shape)),
         ModelCase(lambda x, p=pad, n=n: getattr(aten, f"reflection_pad{n}d")(x, p), _r(*shape[1:]), id="unbatched"))
    _add(f"aten.replication_pad{n}d.default",
         ModelCase(lambda x, p=pad, n=n: getattr(aten, f"replication_pad{n}d")(x, p), _r(*shape)),
         ModelCase(lambda x, p=pad, n=n: getattr(aten, f"replication_pad{n}d")(x, p), _r(*shape[1:]), id="unbatched"))

# ---------------------------------------------------------------- pixel shuffle
# (a block of views alone is left to torch by the partitioner: no compute op; so an add leads)
_add("aten.pixel_shuffle.default",
     ModelCase(lambda x: F.pixel_shuffle(x + 1, 2), _r(2, 8, 3, 5)),
     ModelCase(lambda x: F.pixel_shuffle(x + 1, 3), _r(9, 5, 7), id="unbatched"))
_add("aten.pixel_unshuffle.default",
     ModelCase(lambda x: F.pixel_unshuffle(x + 1, 2), _r(2, 3, 6, 4)),
     ModelCase(lambda x: F.pixel_unshuffle(x + 1, 3), _r(2, 9, 6), id="unbatched"))

# ---------------------------------------------------------------- upsampling
_add("aten.upsample_bicubic2d.vec",
     ModelCase(lambda x: F.interpolate(x, scale_factor=2, mode="bicubic"), _r(2, 3, 5, 7), tol=1e-4),
     ModelCase(lambda x: F.interpolate(x, size=(9, 4), mode="bicubic", align_corners=True), _r(2, 3, 5, 7), tol=1e-4),
     ModelCase(lambda x: F.interpolate(x, scale_factor=(1.5, 0.7), mode="bicubic"), _r(1, 2, 7, 9), tol=1e-4))
_add("aten.upsample_bicubic2d.default",
     ModelCase(lambda x: aten.upsample_bicubic2d(x, [8, 11], False), _r(2, 3, 5, 7), tol=1e-4),
     ModelCase(lambda x: aten.upsample_bicubic2d(x, [3, 4], True), _r(2, 3, 5, 7), tol=1e-4))
_add("aten.upsample_linear1d.vec",
     ModelCase(lambda x: F.interpolate(x, scale_factor=2, mode="linear"), _r(2, 3, 5)),
     ModelCase(lambda x: F.interpolate(x, size=11, mode="linear", align_corners=True), _r(2, 3, 5)),
     ModelCase(lambda x: F.interpolate(x, scale_factor=0.6, mode="linear"), _r(2, 3, 9)))
_add("aten.upsample_linear1d.default",
     ModelCase(lambda x: aten.upsample_linear1d(x, [13], False), _r(2, 3, 7)),
     ModelCase(lambda x: aten.upsample_linear1d(x, [4], True), _r(2, 3, 7)))
_add("aten.upsample_nearest1d.vec",
     ModelCase(lambda x: F.interpolate(x, scale_factor=2, mode="nearest"), _r(2, 3, 5)),
     ModelCase(lambda x: F.interpolate(x, size=8, mode="nearest"), _r(2, 3, 5)),
     ModelCase(lambda x: F.interpolate(x, scale_factor=0.5, mode="nearest"), _r(2, 3, 9)))
_add("aten.upsample_nearest3d.vec",
     ModelCase(lambda x: F.interpolate(x, scale_factor=2, mode="nearest"), _r(2, 3, 5, 4, 3)),
     ModelCase(lambda x: F.interpolate(x, size=(3, 7, 5), mode="nearest"), _r(1, 2, 5, 4, 3)))
_add("aten.upsample_trilinear3d.vec",
     ModelCase(lambda x: F.interpolate(x, scale_factor=2, mode="trilinear"), _r(2, 3, 5, 4, 3)),
     ModelCase(lambda x: F.interpolate(x, size=(3, 7, 5), mode="trilinear", align_corners=True), _r(1, 2, 5, 4, 3)),
     ModelCase(lambda x: F.interpolate(x, scale_factor=(1.5, 0.5, 2.0), mode="trilinear"), _r(1, 2, 5, 6, 3)))
_add("aten.upsample_trilinear3d.default",
     ModelCase(lambda x: aten.upsample_trilinear3d(x, [7, 5, 6], False), _r(1, 2, 5, 4, 3)),
     ModelCase(lambda x: aten.upsample_trilinear3d(x, [3, 5, 2], True), _r(1, 2, 5, 4, 3)))

# ---------------------------------------------------------------- grid sampling
def _grid(*s):
    return lambda: (rand(*s[0]), rand(*s[1], low=-1.2, high=1.2, seed=1))


for gm in ("bilinear", "nearest"):
    for pm in ("zeros", "border", "reflection"):
        for ac in (False, True):
            _add("aten.grid_sampler_2d.default",
                 ModelCase(lambda x, g, gm=gm, pm=pm, ac=ac: F.grid_sample(x, g, mode=gm, padding_mode=pm, align_corners=ac),
                           _grid((2, 3, 5, 7), (2, 4, 6, 2)), tol=1e-4, id=f"{gm}-{pm}-{ac}"))
_add("aten.grid_sampler.default",
     ModelCase(lambda x, g: aten.grid_sampler(x, g, 0, 0, False), _grid((1, 2, 7, 5), (1, 3, 9, 2)), tol=1e-4))

# ---------------------------------------------------------------- slice_scatter
_add("aten.slice_scatter.default",
     ModelCase(lambda x, s: torch.slice_scatter(x, s, 1, 1, 5, 2), lambda: (rand(3, 7), rand(3, 2, seed=1))),
     ModelCase(lambda x, s: torch.slice_scatter(x, s, 0, 2, 5), lambda: (rand(7, 3), rand(3, 3, seed=1))),
     ModelCase(lambda x, s: torch.slice_scatter(x, s, -1, -4, None, 3), lambda: (rand(2, 3, 9), rand(2, 3, 2, seed=1))),
     ModelCase(lambda x, s: torch.slice_scatter(x, s, 1), lambda: (rand(2, 5), rand(2, 5, seed=1)), id="whole"))

# ---------------------------------------------------------------- distances
for p in (2.0, 1.0, float("inf"), 0.0, 3.0):
    _add("aten._cdist_forward.default",
         ModelCase(lambda a, b, p=p: torch.cdist(a, b, p=p), lambda: (rand(2, 5, 3), rand(2, 4, 3, seed=1)), tol=1e-4,
                   id=f"p{p}"),
         ModelCase(lambda a, b, p=p: torch.cdist(a, b, p=p), lambda: (rand(7, 5), rand(3, 5, seed=1)), tol=1e-4,
                   id=f"2d-p{p}"))
    _add("aten._pdist_forward.default",
         ModelCase(lambda a, p=p: F.pdist(a, p=p), lambda: (rand(5, 3),), tol=1e-4, id=f"p{p}"),
         ModelCase(lambda a, p=p: F.pdist(a, p=p), lambda: (rand(8, 7),), tol=1e-4, id=f"8x7-p{p}"))

# ---------------------------------------------------------------- embedding_bag (1-d indices + offsets,
# empty bags included; the auxiliary outputs are compared too where the op returns them)
def _bag_inputs(n_rows=10, n=8, offsets=(0, 2, 2, 5)):
    g = torch.Generator().manual_seed(3)
    return rand(n_rows, 4), torch.randint(0, n_rows, (n,), generator=g), torch.tensor(offsets)


for mode in ("sum", "mean", "max"):
    _add("aten.embedding_bag.padding_idx",
         ModelCase(lambda w, i, o, m=mode: F.embedding_bag(i, w, o, mode=m), _bag_inputs, id=mode),
         ModelCase(lambda w, i, o, m=mode: F.embedding_bag(i, w, o, mode=m, include_last_offset=True),
                   lambda: _bag_inputs(7, 9, (0, 3, 3, 8, 9)), id=f"{mode}-last-offset"),
         ModelCase(lambda w, i, m=mode: F.embedding_bag(i, w, mode=m), lambda: (rand(9, 5), torch.tensor([[1, 8, 3], [0, 0, 4]])),
                   id=f"{mode}-2d"))
_add("aten.embedding_bag.padding_idx",
     ModelCase(lambda w, i, o, p: F.embedding_bag(i, w, o, mode="sum", per_sample_weights=p),
               lambda: _bag_inputs() + (rand(8, seed=2),), id="sum-weights"))
for m in (0, 1, 2):
    _add("aten._embedding_bag.default",
         ModelCase(lambda w, i, o, m=m: tuple(t for t in aten._embedding_bag(w, i, o, False, m) if t.numel()),
                   _bag_inputs, id=f"all-outputs-mode{m}"))
    _add("aten._embedding_bag_forward_only.default",
         ModelCase(lambda w, i, o, m=m: tuple(t for t in aten._embedding_bag_forward_only(w, i, o, False, m) if t.numel()),
                   _bag_inputs, id=f"all-outputs-mode{m}"))
