"""repeat/tile of tensors of 5 and more dims (issue 33, "rank above 8"): torch's decomposition
views each dim as [1, s] and expands it to [r, s], which doubles the rank (a 5-D repeat was a
10-D view and failed at import with "rank 10 exceeds 8"). Ours splits out only the repeated dims
and repeats in stages where that still passes 8 dims. An output of more than 8 dims stays in
torch, with the reason in the dry run.

Differential against eager: fp32 exact (a repeat copies values), fp16 exact; static and dynamic
batch (at the minimum, an odd size and the maximum)."""
import pytest
import torch

import torchtrt_c
from convtest import rand


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def _compile(fn, inputs):
    trt = torchtrt_c.compile(Fn(fn).eval(), inputs=inputs, min_block_size=1)
    names = [n for n, _ in trt.named_children()]
    assert names == ["_run_on_acc_0"], names
    return trt


CASES = [
    ("repeat-all-5d", lambda x: x.repeat(2, 3, 1, 2, 2) + 1, (2, 3, 4, 5, 3)),
    ("repeat-one-5d", lambda x: x.repeat(2, 1, 1, 1, 1) + 1, (1, 3, 4, 8, 8)),
    ("repeat-mid-5d", lambda x: x.repeat(1, 1, 2, 1, 1) + 1, (2, 1, 3, 8, 7)),
    ("repeat-new-dims", lambda x: x.repeat(4, 2, 3, 1, 2) + 1, (2, 3)),
    ("tile-5d", lambda x: torch.tile(x, (2, 1, 2, 1, 3)) + 1, (2, 3, 4, 5, 3)),
    ("tile-7d", lambda x: torch.tile(x, (2, 1, 2, 1, 3, 1, 2)) + 1, (2, 1, 3, 1, 2, 3, 1)),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("name,fn,shape", CASES, ids=[c[0] for c in CASES])
def test_repeat_high_rank_static(name, fn, shape, dtype):
    x = rand(*shape, dtype=dtype)
    trt = _compile(fn, [x])
    assert torch.equal(trt(x), fn(x)), name


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
def test_repeat_high_rank_dynamic_batch(dtype):
    fn = lambda x: x.repeat(2, 1, 3, 1, 2) + 1  # noqa: E731
    trt = _compile(fn, [torchtrt_c.Input(min_shape=(1, 3, 4, 5, 3), opt_shape=(2, 3, 4, 5, 3),
                                         max_shape=(5, 3, 4, 5, 3), dtype=dtype)])
    for b in (1, 3, 5):
        x = rand(b, 3, 4, 5, 3, dtype=dtype, seed=b)
        assert torch.equal(trt(x), fn(x)), f"batch {b}"


@pytest.mark.parametrize("reps,shape", [((2, 3), (3,)), ((2, 3, 4), (1, 2, 3)), ((4, 2, 3, 1, 2), (2, 3))])
def test_repeat_dynamic_from_minimum(reps, shape):
    """Torch-TensorRT's dynamic repeat cases: min == opt, max larger along dim 0."""
    fn = lambda x: x.repeat(*reps) + 1  # noqa: E731
    mx = (3 * shape[0],) + shape[1:]
    trt = _compile(fn, [torchtrt_c.Input(min_shape=shape, opt_shape=shape, max_shape=mx)])
    for n in (shape[0], shape[0] + 1, mx[0]):
        x = rand(n, *shape[1:], seed=n)
        assert torch.equal(trt(x), fn(x)), f"dim 0 = {n}"


def test_output_above_8_dims_stays_in_torch_with_the_reason(capsys):
    fn = lambda x: x.repeat(1, 1, 1, 1, 1, 1, 1, 1, 2)  # noqa: E731  (9-D output)
    x = rand(1, 1, 1, 1, 1, 1, 1, 3)
    r = torchtrt_c.compile(Fn(fn).eval(), inputs=[x], min_block_size=1, dryrun=True).dryrun_report
    reasons = [why for _, whys in r.unsupported.values() for why in whys]
    assert any("9-D output; engines hold tensors of at most 8 dims" in w for w in reasons), str(r)
    trt = torchtrt_c.compile(Fn(fn).eval(), inputs=[x], min_block_size=1)
    assert torch.equal(trt(x), fn(x))


def test_repeat_high_rank_gpu_kernel_families(monkeypatch):
    """The GPU kernel families (TORCHTRT_C_KERNELS=gpu: on PoCL their emulation)."""
    monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")
    fn = CASES[0][1]
    for dtype in (torch.float32, torch.float16):
        x = rand(2, 3, 4, 5, 3, dtype=dtype)
        assert torch.equal(_compile(fn, [x])(x), fn(x)), dtype
