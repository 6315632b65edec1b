"""Differential cases for sort/topk and the scatter family (issue 11, converters B; format:
tests/opcase.py). Ties: the kernel's order is stable (equal values keep index order, NaN is
the largest), so cases with ties compare with torch's stable sort, whose order is defined."""
from __future__ import annotations

import torch

from convtest import rand
from opcase import Case, ModelCase

aten = torch.ops.aten


def _ties(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-3, 4, shape, generator=g).float()


def _with_nan(*shape):
    x = rand(*shape)
    x.view(-1)[::5] = float("nan")
    x.view(-1)[1::7] = float("inf")
    return x


def _stable_sort(x, dim=-1, descending=False):
    return torch.sort(x, dim=dim, descending=descending, stable=True)


def _stable_topk(x, k, dim=-1, largest=True, sorted=True):
    v, i = torch.sort(x, dim=dim, descending=largest, stable=True)
    return v.narrow(dim, 0, k), i.narrow(dim, 0, k)


def _perm_index(rows, n, k, seed=0):
    """[rows, k] distinct positions per row in [0, n) (scatter targets without duplicates)."""
    g = torch.Generator().manual_seed(seed)
    return torch.stack([torch.randperm(n, generator=g)[:k] for _ in range(rows)])


CASES: dict = {}


def _add(op, *cases):
    CASES.setdefault(op, []).extend(cases)


# ---------------------------------------------------------------- sort / topk
_add("aten.sort.default",
     Case(lambda: [rand(3, 7), -1, False]),
     Case(lambda: [rand(4, 5, 6), 1, True]),
     Case(lambda: [rand(9), 0, True], id="1d"),
     Case(lambda: [_ties(5, 9), 1, False], ref=lambda x, d, s: _stable_sort(x, d, s), id="ties"),
     Case(lambda: [_ties(6, 5, 3), 0, True], ref=lambda x, d, s: _stable_sort(x, d, s), id="ties-desc-dim0"),
     Case(lambda: [_with_nan(3, 11), 1, False], ref=lambda x, d, s: _stable_sort(x, d, s), id="nan-inf"),
     Case(lambda: [_with_nan(3, 11), 1, True], ref=lambda x, d, s: _stable_sort(x, d, s), id="nan-inf-desc"),
     Case(lambda: [torch.randint(-50, 50, (4, 13)), -1, True], ref=lambda x, d, s: _stable_sort(x, d, s), id="int64"),
     Case(lambda: [rand(5, 7), 1, False], dynamic=(1, 5, 8), id="dynamic-batch"),
     Case(lambda: [rand(3, 7), -1, True], precision="fp16", tol=2e-3, id="fp16"))
_add("aten.sort.stable",
     Case(lambda: [_ties(4, 10), True, -1, False]),
     Case(lambda: [_ties(4, 10, 3, seed=1), True, 1, True]),
     Case(lambda: [rand(2, 3, 17), None, 2, False], id="stable-none",
          bf16_skip="rounded to bfloat16 the values tie, and an unstable sort may order ties either way"))
_add("aten.topk.default",
     Case(lambda: [rand(3, 7), 3, -1, True, True]),
     Case(lambda: [rand(4, 9, 5), 2, 1, False, True]),
     Case(lambda: [rand(6, 4), 6, 0, True, True], id="k-all"),
     Case(lambda: [rand(5, 8), 1, 1, True, True], id="k1"),
     Case(lambda: [_ties(5, 12), 4, 1, True, True], ref=lambda x, k, d, l, s: _stable_topk(x, k, d, l), id="ties"),
     Case(lambda: [_ties(5, 12, seed=2), 5, 1, False, True], ref=lambda x, k, d, l, s: _stable_topk(x, k, d, l),
          id="ties-smallest"),
     Case(lambda: [_with_nan(4, 9), 3, 1, True, True], ref=lambda x, k, d, l, s: _stable_topk(x, k, d, l), id="nan"),
     Case(lambda: [rand(5, 7), 2, 1, True, True], dynamic=(1, 5, 8), id="dynamic-batch"),
     Case(lambda: [rand(3, 7), 3, -1, True, True], precision="fp16", tol=2e-3, id="fp16"))

# ---------------------------------------------------------------- scatter
_add("aten.scatter.src",
     Case(lambda: [rand(3, 7), 1, _perm_index(3, 7, 4), rand(3, 5, seed=1)]),
     Case(lambda: [rand(5, 4), 0, _perm_index(4, 5, 3).t().contiguous(), rand(3, 4, seed=1)], id="dim0"),
     Case(lambda: [rand(4, 6), 1, _perm_index(2, 6, 3), rand(3, 5, seed=1)], id="small-index"),
     Case(lambda: [rand(2, 5, 3), 1, _perm_index(6, 5, 5).view(2, 3, 5).transpose(1, 2).contiguous(),
                   rand(2, 5, 3, seed=1)], id="3d"),
     Case(lambda: [rand(3, 7), 1, _perm_index(3, 7, 4), rand(3, 5, seed=1)], precision="fp16", tol=2e-3, id="fp16"),
     Case(lambda: [rand(5, 7), 1, _perm_index(5, 7, 4), rand(5, 6, seed=1)], dynamic=(1, 5, 8), id="dynamic-batch"))
_add("aten.scatter.value",
     Case(lambda: [rand(3, 7), 1, _perm_index(3, 7, 4), 2.5]),
     Case(lambda: [rand(5, 4), 0, _perm_index(4, 5, 2).t().contiguous(), -1.0], id="dim0"),
     Case(lambda: [torch.randint(0, 9, (3, 7)), -1, _perm_index(3, 7, 2), 7], id="int64"))

# ---------------------------------------------------------------- index_put / index_copy (through compile:
# the index list is a list of tensors)
_add("aten.index_put.default",
     ModelCase(lambda x, i, v: torch.index_put(x, (i,), v), lambda: (rand(5, 3), torch.tensor([4, 0, 2]), rand(3, 3, seed=1))),
     ModelCase(lambda x, i, v: torch.index_put(x, (i,), v, accumulate=True),
               lambda: (rand(5, 3), torch.tensor([4, 0, 4, -1]), rand(4, 3, seed=1)), id="accumulate-dup-neg"),
     ModelCase(lambda x, i, v: torch.index_put(x, (i,), v), lambda: (rand(6, 4), torch.tensor([5, 1]), rand(4, seed=1)),
               id="broadcast-values"),
     ModelCase(lambda x, i, j, v: torch.index_put(x, (i, j), v),
               lambda: (rand(4, 5, 3), torch.tensor([0, 3, 3, 1]), torch.tensor([4, 0, 2, 2]), rand(4, 3, seed=1)),
               id="two-indices"),
     ModelCase(lambda x, i, v: aten.index_put(x, [None, i], v),
               lambda: (rand(3, 6, 2), torch.tensor([1, 5, 2]), rand(3, 3, 2, seed=1)), id="none-first"),
     ModelCase(lambda x, i, v: torch.index_put(x, (i,), v, accumulate=True),
               lambda: (rand(7, 2, 3), torch.tensor([[1, 6], [1, 0]]), rand(2, 2, 2, 3, seed=1)), id="2d-index-acc"))
_add("aten.index_copy.default",
     ModelCase(lambda x, i, s: x.index_copy(0, i, s), lambda: (rand(5, 3), torch.tensor([4, 0, 2]), rand(3, 3, seed=1))),
     ModelCase(lambda x, i, s: x.index_copy(1, i, s), lambda: (rand(2, 7, 3), torch.tensor([6, 1]), rand(2, 2, 3, seed=1)),
               id="dim1"))
