"""Differential cases (tests/opcase.py format) for the converter gaps of issue 11 closed late:
upsample .default overloads (retargeted to .vec before decomposition), scatter with reductions
(aten.scatter_reduce.two, a converter; scatter_add, scatter.reduce/value_reduce and
index_reduce decompose into it), pooling with indices, bicubic grid sampling.

Tolerance: atol = rtol = 1e-5 for fp32 unless a case says otherwise (bicubic weights: 1e-4);
integer results and indices must match exactly.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from convtest import rand
from op_cases_elementwise import ints
from opcase import Case, ModelCase

aten = torch.ops.aten

CASES: dict = {}


def _add(op, *cases):
    CASES.setdefault(op, []).extend(cases)


def _r(*s, seed=None):
    return lambda: (rand(*s, seed=seed),)


# ---------------------------------------------------------------- upsample .default overloads
_add("aten.upsample_nearest1d.default",
     ModelCase(lambda x: aten.upsample_nearest1d.default(x, [11]), _r(2, 3, 7)),
     ModelCase(lambda x: aten.upsample_nearest1d.default(x, [4]), _r(2, 5, 9), id="down"),
     ModelCase(lambda x: aten.upsample_nearest1d.default(x, [11], 1.7), _r(2, 3, 7), id="scale"))
_add("aten.upsample_nearest2d.default",
     ModelCase(lambda x: aten.upsample_nearest2d.default(x, [9, 11]), _r(2, 3, 5, 7)),
     ModelCase(lambda x: aten.upsample_nearest2d.default(x, [9, 11], 1.9, 1.6), _r(1, 2, 5, 7), id="scales"))
_add("aten.upsample_nearest3d.default",
     ModelCase(lambda x: aten.upsample_nearest3d.default(x, [5, 7, 9]), _r(2, 3, 3, 5, 4)),
     ModelCase(lambda x: aten.upsample_nearest3d.default(x, [2, 3, 7]), _r(1, 2, 5, 4, 3), id="mixed"))
_add("aten._upsample_nearest_exact1d.default",
     ModelCase(lambda x: aten._upsample_nearest_exact1d.default(x, [11]), _r(2, 3, 7)))
_add("aten._upsample_nearest_exact2d.default",
     ModelCase(lambda x: aten._upsample_nearest_exact2d.default(x, [9, 4]), _r(2, 3, 5, 7)))
_add("aten._upsample_nearest_exact3d.default",
     ModelCase(lambda x: aten._upsample_nearest_exact3d.default(x, [5, 7, 2]), _r(1, 2, 3, 5, 4)))
_add("aten.upsample_bilinear2d.default",
     ModelCase(lambda x: aten.upsample_bilinear2d.default(x, [9, 11], False), _r(2, 3, 5, 7)),
     ModelCase(lambda x: aten.upsample_bilinear2d.default(x, [3, 11], True), _r(2, 3, 5, 7), id="align"))
# the .vec forms these become, with output sizes and with scales
_add("aten.upsample_linear1d.default",
     ModelCase(lambda x: aten.upsample_linear1d.default(x, [11], False, 1.7), _r(2, 3, 7), id="scale"))
_add("aten.upsample_trilinear3d.vec",
     ModelCase(lambda x: aten.upsample_trilinear3d.vec(x, None, False, [1.5, 2.0, 0.7]), _r(1, 2, 4, 3, 7), id="scales"))
_add("aten.upsample_bicubic2d.default",
     ModelCase(lambda x: aten.upsample_bicubic2d.default(x, [9, 13], True, 1.9, 1.9), _r(2, 3, 5, 7), tol=1e-4,
               id="scales"))


# ---------------------------------------------------------------- scatter with reductions
def _scatter_inputs(xs, dim, ishape, sshape, dtype=torch.float32, seed=0):
    def f():
        n = xs[dim]
        if dtype == torch.float32:
            x, s = rand(*xs, seed=seed), rand(*sshape, seed=seed + 1)
        else:
            x, s = ints(*xs, low=-7, high=8, seed=seed), ints(*sshape, low=-5, high=6, seed=seed + 1)
        return [x, dim, ints(*ishape, low=0, high=n, seed=seed + 2), s]
    return f


_REDUCE_SHAPES = [  # (x, dim, index, src): index smaller than x off dim, longer than x along it
    ((4, 5), 0, (6, 5), (6, 5)),
    ((3, 7, 5), 1, (3, 9, 4), (3, 10, 5)),
    ((5, 3, 6), -1, (2, 3, 11), (4, 3, 11)),
]

for red in ("sum", "prod", "mean", "amax", "amin"):
    for incl in (True, False):
        for i, (xs, d, ishape, sshape) in enumerate(_REDUCE_SHAPES):
            _add("aten.scatter_reduce.two",
                 Case(lambda xs=xs, d=d, ishape=ishape, sshape=sshape, red=red, incl=incl:
                      _scatter_inputs(xs, d, ishape, sshape, seed=i)() + [red, incl],
                      tol=1e-4 if red == "prod" else 1e-5, id=f"{red}-{incl}-{i}"))
        _add("aten.scatter_reduce.two",
             Case(lambda red=red, incl=incl: _scatter_inputs((5, 4), 0, (7, 3), (7, 4), torch.int64)() + [red, incl],
                  tol=0, id=f"{red}-{incl}-int64"))


def _half_ref(x, d, i, s, red, incl):
    return torch.scatter_reduce(x.float(), d, i, s.float(), red, include_self=incl).half()


# fp16 engines (the combination runs in float): atol = rtol = 2e-3
for red in ("sum", "mean", "amax", "prod"):
    _add("aten.scatter_reduce.two",
         Case(lambda red=red: [rand(3, 7, 5, dtype=torch.float16), 1, ints(3, 9, 4, low=0, high=7),
                               rand(3, 10, 5, dtype=torch.float16, seed=1), red, red != "mean"],
              tol=2e-3, precision="fp16", ref=_half_ref, id=f"{red}-fp16"))
# a dynamic leading dim (every tensor's dim 0 is the symbol)
_add("aten.scatter_reduce.two",
     Case(lambda: _scatter_inputs((5, 7, 3), 1, (5, 9, 3), (5, 9, 3))() + ["sum", True], dynamic=(1, 5, 8),
          id="sum-dynamic"),
     Case(lambda: _scatter_inputs((4, 6), 1, (4, 8), (4, 8))() + ["amin", False], dynamic=(1, 4, 8),
          id="amin-dynamic"))

_add("aten.scatter_add.default",
     ModelCase(lambda x, i, s: torch.scatter_add(x, 1, i, s),
               lambda: (rand(3, 7, 5), ints(3, 9, 4, low=0, high=7), rand(3, 10, 5, seed=1))),
     ModelCase(lambda x, i, s: torch.scatter_add(x, 0, i, s),
               lambda: (rand(4, 5), ints(6, 5, low=0, high=4), rand(6, 5, seed=1)), id="dim0"))
_add("aten.scatter.reduce",
     ModelCase(lambda x, i, s: torch.scatter(x, 1, i, s, reduce="add"),
               lambda: (rand(3, 7, 5), ints(3, 9, 4, low=0, high=7), rand(3, 10, 5, seed=1)), id="add"),
     ModelCase(lambda x, i, s: torch.scatter(x, 0, i, s, reduce="multiply"),
               lambda: (rand(4, 5), ints(6, 5, low=0, high=4), rand(6, 5, seed=1)), id="multiply"))
_add("aten.scatter.value_reduce",
     ModelCase(lambda x, i: torch.scatter(x, 1, i, 1.5, reduce="add"),
               lambda: (rand(3, 7, 5), ints(3, 9, 4, low=0, high=7)), id="add"),
     ModelCase(lambda x, i: torch.scatter(x, 0, i, -0.5, reduce="multiply"),
               lambda: (rand(4, 5), ints(6, 5, low=0, high=4)), id="multiply"))
for red in ("prod", "mean", "amax", "amin"):
    for incl in (True, False):
        _add("aten.index_reduce.default",
             ModelCase(lambda x, i, s, red=red, incl=incl: x.index_reduce(1, i, s, red, include_self=incl),
                       lambda: (rand(2, 5, 3), ints(7, low=0, high=5), rand(2, 7, 3, seed=1)), tol=1e-4,
                       id=f"{red}-{incl}"))
_add("aten.index_reduce.default",
     ModelCase(lambda x, i, s: x.index_reduce(0, i, s, "amax"),
               lambda: (rand(6, 4), ints(9, low=0, high=6), rand(9, 4, seed=1)), id="dim0"))


# ---------------------------------------------------------------- pooling with indices
# inputs are random floats, so a window has one maximum: indices compare exactly
_add("aten.max_pool3d_with_indices.default",
     ModelCase(lambda x: F.max_pool3d(x, 2, return_indices=True), _r(2, 3, 4, 6, 5), id="k2"),
     ModelCase(lambda x: F.max_pool3d(x, 3, 2, 1, return_indices=True), _r(1, 2, 5, 7, 6), id="k3s2p1"),
     ModelCase(lambda x: F.max_pool3d(x, (2, 3, 2), (2, 1, 2), (1, 1, 0), dilation=(1, 2, 1), ceil_mode=True,
                                      return_indices=True), _r(1, 2, 5, 7, 7), id="ceil-dil"),
     ModelCase(lambda x: F.max_pool3d(x, 2, return_indices=True)[0] * 2, _r(3, 4, 6, 5), id="values-only-unbatched"),
     ModelCase(lambda x: F.max_pool3d(x, 2, return_indices=True)[1] + 1, _r(2, 2, 4, 4, 5), id="indices-only"))
_add("aten.max_pool2d_with_indices.default",
     ModelCase(lambda x: F.max_pool2d(x, 2, return_indices=True), _r(2, 3, 5, 7), id="both"),
     ModelCase(lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True), _r(1, 3, 8, 9), id="ceil-pad"),
     ModelCase(lambda x: F.max_pool2d(x, 3, 1, 1, dilation=2, return_indices=True)[1] * 3, _r(2, 2, 7, 6),
               id="indices-used"),
     ModelCase(lambda x: F.max_pool1d(x, 3, 2, 1, return_indices=True), _r(2, 3, 11), id="1d"),
     ModelCase(lambda x: F.max_pool1d(x, 3, 2, 1, return_indices=True)[0] * 2, _r(2, 3, 11), id="1d-values-only"),
     # one pool's indices used, another's not: the compiler decomposes every max_pool2d_with_indices
     # of the graph after all, the plain pool included
     ModelCase(lambda x: F.max_pool2d(F.relu(F.max_pool2d(x, 2, 1)) + 0.5, 2, return_indices=True),
               _r(2, 3, 8, 9), id="mixed"))


# ---------------------------------------------------------------- bicubic grid sampling
def _grid(*s):
    return lambda: (rand(*s[0]), rand(*s[1], low=-1.2, high=1.2, seed=1))


for pm in ("zeros", "border", "reflection"):
    for ac in (False, True):
        _add("aten.grid_sampler_2d.default",
             ModelCase(lambda x, g, pm=pm, ac=ac: F.grid_sample(x, g, mode="bicubic", padding_mode=pm, align_corners=ac),
                       _grid((2, 3, 5, 7), (2, 4, 6, 2)), tol=1e-4, id=f"bicubic-{pm}-{ac}"),
             ModelCase(lambda x, g, pm=pm, ac=ac: F.grid_sample(x, g, mode="bicubic", padding_mode=pm, align_corners=ac),
                       _grid((1, 2, 4, 3), (1, 7, 5, 2)), tol=1e-4, id=f"bicubic-{pm}-{ac}-small"))


# ---------------------------------------------------------------- batch norm with runtime statistics
# (statistics/parameters that are graph inputs, not constants: the converter folds constants
# only, so the compiler decomposes the op into elementwise math after all)
def _bn_inputs(*s):
    c = s[1] if len(s) > 1 else s[0]
    return lambda: (rand(*s), rand(c, low=-0.5, high=0.5, seed=1), rand(c, low=0.5, high=1.5, seed=2),
                    rand(c, low=0.5, high=1.5, seed=3), rand(c, low=-0.5, high=0.5, seed=4))


_add("aten._native_batch_norm_legit_no_training.default",
     ModelCase(lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b, False, 0.1, 1e-5), _bn_inputs(2, 3, 5, 7),
               id="runtime-stats"),
     ModelCase(lambda x, m, v, w, b: F.batch_norm(x, m, v, None, None, False, 0.1, 1e-3), _bn_inputs(3, 5, 9),
               id="runtime-stats-no-affine"),
     ModelCase(lambda x, m, v, w, b: F.batch_norm(x * 2, m * 2, v, w, b, False, 0.1, 1e-5), _bn_inputs(4, 6),
               id="computed-stats-2d"))

# ---------------------------------------------------------------- resize_ of an intermediate
# (functionalized by export into as_strided over the dense result, which we decompose; resizing
# a graph input is rejected by torch.export itself)
_add("aten.resize_.default",
     ModelCase(lambda x: (x * 2).resize_(2, 3) + 1, _r(3, 5)),
     ModelCase(lambda x: (x + 1).resize_(7) * 3, _r(2, 3, 5), id="flat"))


# ---------------------------------------------------------------- math ops real models use
# (_decompositions_math.py; tolerance 1e-5 unless stated: instance norm's variance 1e-4)
_add("aten.clamp.Tensor",
     ModelCase(lambda x, lo, hi: torch.clamp(x, lo, hi + 1.5), lambda: (rand(3, 5), rand(3, 5, seed=1),
                                                                        rand(3, 5, seed=2))),
     ModelCase(lambda x, lo: torch.clamp(x, min=lo), lambda: (rand(2, 7, 9), rand(7, 1, seed=1)), id="min-broadcast"),
     ModelCase(lambda x, hi: torch.clamp(x, max=hi), lambda: (rand(4, 6), rand(6, seed=1)), id="max-only"),
     ModelCase(lambda x, lo, hi: torch.clamp(x, lo, hi - 3), lambda: (rand(3, 5), rand(3, 5, seed=1),
                                                                      rand(3, 5, seed=2)), id="min-above-max"))
_add("aten.round.decimals",
     ModelCase(lambda x: torch.round(x * 10, decimals=2), _r(3, 5)),
     ModelCase(lambda x: torch.round(x * 1000, decimals=-2), _r(2, 7, 9), id="negative"))
_add("aten.linalg_vector_norm.default",
     ModelCase(lambda x: F.normalize(x, dim=1), _r(3, 5), id="normalize"),
     ModelCase(lambda a, b: F.cosine_similarity(a, b, dim=-1), lambda: (rand(2, 7, 9), rand(2, 7, 9, seed=1)),
               id="cosine"),
     ModelCase(lambda x: torch.linalg.vector_norm(x, float("inf"), (0, 2)), _r(3, 5, 4), id="inf"),
     ModelCase(lambda x: torch.linalg.vector_norm(x, -float("inf"), -1), _r(3, 5), id="-inf"),
     ModelCase(lambda x: torch.linalg.vector_norm(x, 1, -1, keepdim=True), _r(3, 5), id="l1-keepdim"),
     ModelCase(lambda x: torch.linalg.vector_norm(x, 3), _r(4, 7), id="p3-all", tol=1e-4),
     ModelCase(lambda x: torch.linalg.vector_norm(x, 0, 1), _r(3, 5), id="l0"))
_add("aten._native_batch_norm_legit.no_stats",
     ModelCase(lambda x: F.instance_norm(x), _r(2, 3, 5, 7), tol=1e-4),
     ModelCase(lambda x: F.instance_norm(x, weight=torch.linspace(0.5, 2, 3), bias=torch.linspace(-1, 1, 3), eps=1e-3),
               _r(2, 3, 9), tol=1e-4, id="affine-1d"))
_add("aten.unfold.default",
     ModelCase(lambda x: x.unfold(1, 3, 2) + 1, _r(3, 9)),
     ModelCase(lambda x: x.unfold(-1, 4, 4) * 2, _r(2, 3, 13), id="last-dim"),
     ModelCase(lambda x: x.unfold(0, 2, 1) - 1, _r(5, 3), id="dim0-overlap"))


# ---------------------------------------------------------------- adaptive max pooling
_add("aten.adaptive_max_pool2d.default",
     ModelCase(lambda x: F.adaptive_max_pool2d(x, 1), _r(2, 3, 7, 5), id="global"),
     ModelCase(lambda x: F.adaptive_max_pool2d(x, (3, 2)), _r(2, 3, 7, 5), id="uneven"),
     ModelCase(lambda x: F.adaptive_max_pool2d(x, (3, 2), return_indices=True), _r(2, 3, 7, 5), id="uneven-indices"),
     ModelCase(lambda x: F.adaptive_max_pool2d(x, (2, 3), return_indices=True), _r(3, 6, 9), id="even-indices-unbatched"),
     ModelCase(lambda x: F.adaptive_max_pool1d(x, 4, return_indices=True), _r(2, 3, 11), id="1d-indices"),
     ModelCase(lambda x: F.adaptive_max_pool2d(x, (7, 5)) * 2, _r(1, 2, 7, 5), id="identity"))


# ---------------------------------------------------------------- cumprod / logcumsumexp (the scan kernel)
# float rows multiply values in [0.5, 1.5] (no overflow); tolerance 1e-5 (torch accumulates in
# double on the CPU, we in float), fp16 engines 2e-3
_add("aten.cumprod.default",
     Case(lambda: [rand(3, 5, low=0.5, high=1.5), 1, None], id="float-dim1"),
     Case(lambda: [rand(2, 7, 9, low=-1.5, high=1.5), -1, None], id="float-last-signs"),
     Case(lambda: [rand(7, 3, 5, low=0.5, high=1.5), 0, None], id="float-dim0"),
     Case(lambda: [ints(4, 9, low=-3, high=4), 1, None], id="int64"),
     Case(lambda: [rand(2, 11, 3, low=0.5, high=1.5), 1, None], dynamic=(1, 2, 4), id="dynamic"),
     Case(lambda: [rand(3, 17, low=0.8, high=1.2), 1, None], tol=2e-3, rtol=2e-3, precision="fp16", id="fp16"))
_add("aten.logcumsumexp.default",
     Case(lambda: [rand(3, 5, low=-5, high=5), 1], id="dim1"),
     Case(lambda: [rand(2, 7, 9, low=-30, high=30), -1], id="wide-range"),
     Case(lambda: [rand(7, 3, 5), 0], id="dim0"),
     Case(lambda: [torch.tensor([[-float("inf"), 1.0, float("inf"), 2.0], [float("inf"), float("inf"), 0.0, -1.0],
                                 [-float("inf"), -float("inf"), 3.0, float("nan")]]), 1], id="inf-nan"),
     Case(lambda: [rand(2, 11, 3), 1], dynamic=(1, 2, 4), id="dynamic"),
     Case(lambda: [rand(3, 17), 1], tol=2e-3, rtol=2e-3, precision="fp16", id="fp16"))
