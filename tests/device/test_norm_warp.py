"""Layer norm with the GPU kernel family: one warp per row (norm_warp.cl: shuffles through
the PTX prelude; its emulation here on PoCL via TORCHTRT_C_KERNELS=gpu). Rows from 1 to
more than a warp's multiple, odd row counts (the last group's idle warps), with and without
affine weights, a fused epilogue, fp16 engines, a dynamic batch; group norm keeps its
work-group-per-row kernel. Against torch eager on random inputs. Tolerance: fp32 1e-5
relative to the output's scale, fp16 engines 1e-2."""
import pytest
import torch

import torchtrt_c


@pytest.fixture(autouse=True)
def gpu_family(monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")


def _sources(mod):
    from torchtrt_c.runtime import _execute
    return [_execute._plan(m.meta, m.engine).engine.info()["source"] for m in mod.modules()
            if hasattr(m, "engine") and hasattr(m, "meta")]


class _LN(torch.nn.Module):
    def __init__(self, n, affine):
        super().__init__()
        self.ln = torch.nn.LayerNorm(n, elementwise_affine=affine)
        if affine:
            with torch.no_grad():
                self.ln.weight.normal_()
                self.ln.bias.normal_()

    def forward(self, x):
        return torch.nn.functional.gelu(self.ln(x)) + 0.5


def _check(m, x, trt, prec, what):
    ref = m(x)
    got = trt(x).float()
    tol = 1e-5 if prec == torch.float32 else 1e-2
    err = (got - ref).abs().max().item() / max(ref.abs().max().item(), 1e-6)
    assert err <= tol, f"{what}: relative error {err:.3g} > {tol}"


@pytest.mark.parametrize("rows,n", [(1, 1), (3, 7), (5, 33), (9, 96), (2, 768), (1, 1000), (1, 2048), (3, 2600)])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("prec", [torch.float32, torch.float16])
def test_layer_norm_rows(rows, n, affine, prec):
    torch.manual_seed(rows * 100 + n)
    m = _LN(n, affine).eval()
    x = torch.randn(rows, n) * 3 + 1
    trt = torchtrt_c.compile(m, inputs=[x], enabled_precisions={prec}, min_block_size=1)
    assert any("TTC_PTX_SCRATCH(scr, RPW)" in s for s in _sources(trt)), "the warp-per-row kernel was not used"
    _check(m, x, trt, prec, f"{rows}x{n} affine={affine} {prec}")


def test_layer_norm_dynamic_batch():
    torch.manual_seed(3)
    m = _LN(40, True).eval()
    spec = torchtrt_c.Input(min_shape=(1, 3, 40), opt_shape=(2, 3, 40), max_shape=(5, 3, 40))
    trt = torchtrt_c.compile(m, inputs=[spec], min_block_size=1)
    for b in (1, 2, 5):
        _check(m, torch.randn(b, 3, 40), trt, torch.float32, f"batch {b}")


def test_group_norm_keeps_group_kernel():
    torch.manual_seed(4)
    m = torch.nn.GroupNorm(2, 6).eval()
    x = torch.randn(2, 6, 5, 3)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    assert not any("TTC_PTX_SCRATCH(scr, RPW)" in s for s in _sources(trt))
    assert (trt(x) - m(x)).abs().max().item() <= 1e-5


class _RMS(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(n))

    def forward(self, x):
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
        return y * self.w + 0.25


@pytest.mark.parametrize("split", ["1", "0"])
@pytest.mark.parametrize("rows,n", [(1, 2048), (2, 1000), (3, 97), (4, 2048), (4, 1), (5, 2048)])
@pytest.mark.parametrize("kind", ["layer", "rms"])
def test_split_rows(monkeypatch, split, rows, n, kind):
    """At most 4 rows (decode steps): with NORM_SPLIT=1 the work-group's 4 warps split each row;
    5 rows and NORM_SPLIT=0 (the default until it is measured on a GPU) take a warp a row. Same
    answers either way."""
    monkeypatch.setenv("TORCHTRT_C_NORM_SPLIT", split)
    torch.manual_seed(rows * 10 + n)
    m = (_LN(n, True) if kind == "layer" else _RMS(n)).eval()
    x = torch.randn(rows, n) * 3 + 1
    # fp16 with the split only (the single-warp form's fp16 is test_layer_norm_rows')
    for prec in (torch.float32, torch.float16) if split == "1" else (torch.float32,):
        trt = torchtrt_c.compile(m, inputs=[x], enabled_precisions={prec}, min_block_size=1)
        srcs = _sources(trt)
        assert any("TTC_PTX_SCRATCH(scr, RPW)" in s for s in srcs), "the warp-per-row kernel was not used"
        assert any(f"#define SPLIT {split}" in s for s in srcs)
        _check(m, x, trt, prec, f"{kind} {rows}x{n} split={split} {prec}")


def test_split_rows_dynamic(monkeypatch):
    """A dynamic row count crossing the split rule's 4 rows in one engine."""
    monkeypatch.setenv("TORCHTRT_C_NORM_SPLIT", "1")
    torch.manual_seed(5)
    m = _RMS(2048).eval()
    spec = torchtrt_c.Input(min_shape=(1, 2048), opt_shape=(2, 2048), max_shape=(9, 2048))
    trt = torchtrt_c.compile(m, inputs=[spec], min_block_size=1)
    for b in (1, 3, 4, 5, 9):
        _check(m, torch.randn(b, 2048), trt, torch.float32, f"rows {b}")
