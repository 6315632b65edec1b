"""embedding_bag against eager (issue 36): every mode (sum, mean, max), with and without
include_last_offset, per_sample_weights (sum), padding_idx (none, a row, counted from the end),
int32 and int64 indices and offsets, empty bags, and a last offset short of len(indices) (torch's
CPU kernel then cuts the last bag short for sum and mean's sum, but not for max nor mean's
divisor: dynamo/lowering/_decompositions_spatial.py says how; eager is the reference whatever it
does). Each shape is one compile of a module returning every variant, which must be one engine
(no torch segment). Tolerance 1e-5 absolute and relative (float32 sums of a few rows)."""
import pytest
import torch
import torch.nn.functional as F

import torchtrt_c

aten = torch.ops.aten

MODES = ("sum", "mean", "max")


class Bags(torch.nn.Module):
    """Every mode x include_last_offset x padding_idx (None, `pad`, `pad - rows`), and
    per-sample weights for sum, over one weight, indices, offsets."""

    def __init__(self, pad, rows):
        super().__init__()
        self.pads = (None, pad, pad - rows)

    def forward(self, w, idx, off, psw):
        outs = []
        for last in (False, True):
            for p in self.pads:
                for mode in MODES:
                    outs.append(F.embedding_bag(idx, w, off, mode=mode, include_last_offset=last, padding_idx=p))
                outs.append(F.embedding_bag(idx, w, off, mode="sum", per_sample_weights=psw,
                                            include_last_offset=last, padding_idx=p))
        return tuple(outs)


def _names(pads):
    return [f"last={last} pad={p} {m}" for last in (False, True) for p in pads for m in MODES + ("sum+weights",)]


def _check(m, ins, what):
    with torch.no_grad():
        want = m(*ins)
    trt = torchtrt_c.compile(m, arg_inputs=list(ins), min_block_size=1)
    kids = [n for n, _ in trt.named_children()]
    assert not [n for n in kids if n.startswith("_run_on_gpu_")], f"{what}: torch segments {kids}"
    with torch.no_grad():
        got = trt(*ins)
    names = _names(m.pads) if isinstance(m, Bags) else [str(i) for i in range(len(want))]
    bad = []
    for name, a, b in zip(names, got, want):
        if a.shape != b.shape or a.dtype != b.dtype:
            bad.append(f"{name}: {a.dtype}{tuple(a.shape)} vs eager {b.dtype}{tuple(b.shape)}")
            continue
        if b.is_floating_point():
            err = (a.double() - b.double()).abs()
            lim = 1e-5 + 1e-5 * b.double().abs()
            if (err > lim).any():
                bad.append(f"{name}: {int((err > lim).sum())} of {b.numel()} elements off, max {float(err.max()):.3g}")
        elif not torch.equal(a, b):
            bad.append(f"{name}: {int((a != b).sum())} of {b.numel()} elements differ")
    assert not bad, f"{what}:\n" + "\n".join(bad)


def _inputs(rows, dim, n, offsets, idt, seed):
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(rows, dim, generator=g)
    idx = torch.randint(0, rows, (n,), generator=g).to(idt)
    idx[1::4] = 2  # the padded row appears in most bags
    psw = torch.randn(n, generator=g)
    return w, idx, torch.tensor(offsets, dtype=idt), psw


# (rows, dim, len(indices), offsets): the issue's shape with a last offset short of the end,
# last offset == len(indices), empty bags first/middle/last, one bag, odd sizes
SHAPES = [
    (10, 2, 11, (0, 2, 4)),
    (10, 2, 11, (0, 5, 11)),
    (7, 3, 9, (0, 0, 3, 3, 8, 9)),
    (13, 5, 17, (0, 4, 4, 9, 17, 17)),
    (6, 1, 5, (0, 5)),
    (9, 7, 12, (0, 3, 7, 9)),
]


# every shape with one index dtype (int64 and int32 in turn), the rest in the slow tier
SWEEP = [pytest.param(shape, idt, id=f"{r}x{d}-n{n}-off{len(o)}-end{o[-1]}-{str(idt)[6:]}",
                      marks=() if (i % 2 == 0) == (idt is torch.int64) else pytest.mark.slow)
         for i, shape in enumerate(SHAPES) for r, d, n, o in [shape] for idt in (torch.int64, torch.int32)]


@pytest.mark.parametrize("shape,idt", SWEEP)
def test_every_variant_matches_eager(shape, idt):
    rows, dim, n, offsets = shape
    m = Bags(pad=2, rows=rows).eval()
    _check(m, _inputs(rows, dim, n, offsets, idt, seed=rows * n), f"{shape} {idt}")


def test_issue_case():
    """weight (10, 2) f32, indices (11,) int32, offsets (3,) int32, include_last_offset: mean
    and max were wrong (2 of 4 elements, up to 0.46)."""
    g = torch.Generator().manual_seed(0)
    w = torch.randn(10, 2, generator=g)
    idx = torch.tensor([1, 2, 4, 5, 4, 3, 2, 6, 8, 1, 2], dtype=torch.int32)
    off = torch.tensor([0, 2, 4], dtype=torch.int32)

    class M(torch.nn.Module):
        def forward(self, w, i, o):
            return tuple(F.embedding_bag(i, w, o, mode=mode, include_last_offset=True) for mode in MODES)

    _check(M().eval(), (w, idx, off), "issue 36 case")


@pytest.mark.parametrize("op", ["_embedding_bag", "_embedding_bag_forward_only"])
@pytest.mark.parametrize("last", [False, True])
def test_auxiliary_outputs(op, last):
    """The ATen ops' four outputs (offset2bag, bag_size, max_indices in the index dtype)."""
    fn = getattr(aten, op)

    class M(torch.nn.Module):
        def forward(self, w, i, o, psw):
            outs = []
            for mode in (0, 1, 2):
                for pad in (-1, 2):
                    outs += [t for t in fn(w, i, o, False, mode, False, None, last, pad) if t.numel()]
            outs += [t for t in fn(w, i, o, False, 0, False, psw, last, -1) if t.numel()]
            return tuple(outs)

    _check(M().eval(), _inputs(9, 4, 13, (0, 3, 3, 10, 13), torch.int32, seed=5), f"{op} last={last}")


def test_fp16_weights():
    """float16 weights (the fast kernels in eager) in an fp16 engine: 2e-3 relative."""
    w, idx, off, psw = _inputs(10, 6, 11, (0, 2, 4), torch.int64, seed=9)
    w, psw = w.half(), psw.half()

    class M(torch.nn.Module):
        def forward(self, w, i, o, psw):
            return tuple([F.embedding_bag(i, w, o, mode=mode, include_last_offset=last)
                          for last in (False, True) for mode in MODES] +
                         [F.embedding_bag(i, w, o, mode="sum", per_sample_weights=psw, include_last_offset=True)])

    m = M().eval()
    ins = (w, idx, off, psw)
    with torch.no_grad():
        want = m(*ins)
    trt = torchtrt_c.compile(m, arg_inputs=list(ins), min_block_size=1, enabled_precisions={torch.float16})
    assert not [n for n, _ in trt.named_children() if n.startswith("_run_on_gpu_")]
    with torch.no_grad():
        got = trt(*ins)
    for i, (a, b) in enumerate(zip(got, want)):
        assert a.dtype == b.dtype and a.shape == b.shape, (i, a.dtype, b.dtype, a.shape, b.shape)
        err = (a.float() - b.float()).abs().max().item()
        assert err <= 2e-3 * max(b.float().abs().max().item(), 1.0), f"output {i}: max error {err:.3g}"
