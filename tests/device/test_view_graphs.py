"""Graphs of views only (issue 33): views are aliases in torch, so a block of them alone is no
engine; but a reshape of a permuted, broadcast or inner-sliced tensor, and a contiguous() of one
that the program returns, copy in torch as in an engine, and count as compute. Before, such
graphs (pixel_shuffle, repeat, flatten after transpose, permute().contiguous()) never became
engines, and the dry run said "100.0% coverage", "engines: 0" and "nothing is supported" at once.

Differential against eager, exact (views and copies move values): odd shapes, fp32 and fp16, the
device's kernel families and the GPU ones (TORCHTRT_C_KERNELS=gpu), a dynamic batch. Views that
are aliases stay in torch and still alias the input, as in eager; the dry run says why."""
import pytest
import torch
import torch.nn.functional as F

import torchtrt_c
from convtest import rand


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


COPIES = [
    ("pixel_shuffle", lambda x: F.pixel_shuffle(x, 2), (1, 8, 3, 5)),
    ("pixel_shuffle-3", lambda x: F.pixel_shuffle(x, 3), (2, 9, 5, 7)),
    ("pixel_unshuffle", lambda x: F.pixel_unshuffle(x, 2), (1, 3, 6, 10)),
    ("permute-contiguous", lambda x: x.permute(0, 2, 1).contiguous(), (2, 3, 5)),
    ("expand-contiguous", lambda x: x.expand(4, 3, 5).contiguous(), (1, 3, 5)),
    ("expand-reshape", lambda x: x.expand(4, 3, 5).reshape(12, 5), (1, 3, 5)),
    ("transpose-flatten", lambda x: x.transpose(0, 1).flatten(), (7, 5)),
    ("repeat", lambda x: x.repeat(2, 1, 3), (2, 3, 5)),
    ("inner-slice-reshape", lambda x: x[:, 1:4].reshape(-1), (3, 7)),
]


def _names(trt):
    return [n for n, _ in trt.named_children()]


@pytest.mark.parametrize("families", ["default", "gpu"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("name,fn,shape", COPIES, ids=[c[0] for c in COPIES])
def test_copying_views_are_engines(name, fn, shape, dtype, families, monkeypatch):
    if families == "gpu":
        monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")
    else:
        monkeypatch.delenv("TORCHTRT_C_KERNELS", raising=False)
    x = rand(*shape, dtype=dtype)
    trt = torchtrt_c.compile(Fn(fn).eval(), inputs=[x], min_block_size=1)
    assert _names(trt) == ["_run_on_acc_0"], (name, _names(trt))
    got, want = trt(x), fn(x)
    assert got.shape == want.shape and torch.equal(got, want), name
    assert got.is_contiguous() and got.data_ptr() != x.data_ptr()


def test_pixel_shuffle_dynamic_batch():
    fn = lambda x: F.pixel_shuffle(x, 2)  # noqa: E731
    trt = torchtrt_c.compile(Fn(fn).eval(), inputs=[torchtrt_c.Input(min_shape=(1, 8, 3, 5), opt_shape=(2, 8, 3, 5),
                                                                     max_shape=(5, 8, 3, 5))], min_block_size=1)
    assert _names(trt) == ["_run_on_acc_0"]
    for b in (1, 3, 5):
        x = rand(b, 8, 3, 5, seed=b)
        assert torch.equal(trt(x), fn(x)), b


ALIASES = [
    ("permute", lambda x: x.permute(0, 2, 1), (2, 3, 5)),
    ("expand", lambda x: x.expand(4, 3, 5), (1, 3, 5)),
    ("split", lambda x: x.split(2, 1), (2, 5, 3)),
    ("diagonal", lambda x: x.diagonal(), (4, 5)),
    ("squeeze-slice", lambda x: x[:, 1:3].squeeze(0), (1, 5, 3)),
]


@pytest.mark.parametrize("name,fn,shape", ALIASES, ids=[c[0] for c in ALIASES])
def test_alias_views_stay_in_torch_and_the_dry_run_says_why(name, fn, shape, capsys):
    x = rand(*shape)
    r = torchtrt_c.compile(Fn(fn).eval(), inputs=[x], min_block_size=1, dryrun=True).dryrun_report
    assert not r.engines and r.coverage == 1.0
    assert "nothing is supported" not in r.recommendation, r.recommendation
    assert "views only" in r.recommendation and "no engine is needed" in r.recommendation
    assert any("views only, which torch runs as aliases" in k for k in r.kept_in_torch), r.kept_in_torch
    assert "supported ops kept in torch:" in str(r)
    trt = torchtrt_c.compile(Fn(fn).eval(), inputs=[x], min_block_size=1)
    got, want = trt(x), fn(x)
    got, want = (list(got), list(want)) if isinstance(want, tuple) else ([got], [want])
    for g, w in zip(got, want):
        assert torch.equal(g, w) and g.stride() == w.stride(), name
        assert g.untyped_storage().data_ptr() == x.untyped_storage().data_ptr(), f"{name}: not an alias"
