"""Elementwise kernels that read a transposed view (NHWC <-> NCHW): the GPU kernel family
tiles them through local memory (codegen.c gen_elementwise_tiled, chosen by
ttc_codegen_tiled_leaf); forced here on PoCL with TORCHTRT_C_KERNELS=gpu. ConvNeXt's block
tail (layer scale * permuted linear output + residual) and its layer-norm input copy, plus
odd sizes (partial tiles on both sides), rank 3 and 5, a permute that moves the innermost dim
to the front, a dynamic batch, and cases too small to tile (which must keep the plain
kernel). Against torch eager on random inputs: fp32 exact to 1e-6, fp16 engines 1e-2
(relative to the output's scale: half inputs, one rounding per half op)."""
import pytest
import torch

import torchtrt_c
from convtest import rand


@pytest.fixture(autouse=True)
def gpu_family(monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")


def _sources(mod):
    from torchtrt_c.runtime import _execute
    return [_execute._plan(m.meta, m.engine).engine.info()["source"] for m in mod.modules()
            if hasattr(m, "engine") and hasattr(m, "meta")]


def _tiled(mod):
    return any("__local" in s and "tile[32][33]" in s for s in _sources(mod))


class BlockTail(torch.nn.Module):
    """ConvNeXt's CNBlock without the depthwise conv: permute, layer norm, linear, GELU,
    linear, permute back, layer scale, residual."""

    def __init__(self, c):
        super().__init__()
        self.ln = torch.nn.LayerNorm(c)
        self.fc1 = torch.nn.Linear(c, 2 * c)
        self.fc2 = torch.nn.Linear(2 * c, c)
        self.gamma = torch.nn.Parameter(torch.rand(c, 1, 1) + 0.5)

    def forward(self, x):
        y = x.permute(0, 2, 3, 1)
        y = self.fc2(torch.nn.functional.gelu(self.fc1(self.ln(y))))
        return self.gamma * y.permute(0, 3, 1, 2) + x


class PermuteOp(torch.nn.Module):
    def __init__(self, perm, residual):
        super().__init__()
        self.perm = perm
        self.residual = residual

    def forward(self, x, r):
        y = torch.relu(x.permute(*self.perm)) * 1.5 - 0.25
        return y + r if self.residual else y


def _check(m, xs, trt, prec, what):
    ref = m(*xs).float()
    got = trt(*xs).float()
    assert got.shape == ref.shape, f"{what}: shape {tuple(got.shape)} != {tuple(ref.shape)}"
    tol = 1e-6 if prec == torch.float32 else 1e-2
    err = (got - ref).abs().max().item() / max(ref.abs().max().item(), 1e-6)
    assert err <= tol, f"{what}: relative error {err:.3g} > {tol}"


@pytest.mark.parametrize("shape,perm", [
    ((2, 17, 19, 40), (0, 3, 1, 2)),     # NHWC -> NCHW, partial tiles on both sides
    ((1, 5, 7, 33), (0, 3, 1, 2)),
    ((2, 40, 17, 19), (0, 2, 3, 1)),    # NCHW -> NHWC (the layer-norm input copy)
    ((2, 40, 9, 11), (0, 2, 3, 1)),      # ... H and W as one side of 99 (neither alone fills a tile)
    ((3, 24, 7, 7), (0, 2, 3, 1)),       # ... ConvNeXt stage 4's 7 x 7 plane
    ((3, 37, 45), (0, 2, 1)),            # rank 3 transpose
    ((50, 3, 2, 18), (3, 0, 1, 2)),      # innermost dim to the front (no leading dims)
    ((2, 3, 20, 4, 21), (0, 1, 4, 2, 3)),  # rank 5, dims on both sides of the dense one
    ((2, 5, 6, 3, 20), (0, 3, 4, 1, 2)),   # rank 5, a dense run of two dims with one before
])
@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("prec", [torch.float32, torch.float16])
def test_permuted_elementwise(shape, perm, residual, prec):
    m = PermuteOp(perm, residual).eval()
    x = rand(*shape, seed=1).to(prec)
    oshape = tuple(shape[p] for p in perm)
    r = rand(*oshape, seed=2).to(prec)
    trt = torchtrt_c.compile(m, inputs=[x, r], enabled_precisions={prec}, min_block_size=1)
    assert _tiled(trt), f"{shape} {perm}: the transposing tile was not used"
    _check(m, (x, r), trt, prec, f"{shape} perm {perm} residual={residual} {prec}")


@pytest.mark.parametrize("shape,perm", [((2, 5, 7, 40), (0, 3, 1, 2)),   # 5 x 7 = 35 >= 16, C=40: tiles
                                        ((2, 3, 3, 40), (0, 3, 1, 2)),   # J = 9: too small
                                        ((2, 4, 30, 8), (0, 3, 1, 2))])  # P = 8: too small
def test_small_sides(shape, perm):
    """perm (0, 3, 1, 2): P = C, J = H * W; tiles need both >= 16."""
    m = PermuteOp(perm, True).eval()
    x = rand(*shape, seed=3)
    r = rand(*tuple(shape[p] for p in perm), seed=4)
    trt = torchtrt_c.compile(m, inputs=[x, r], min_block_size=1)
    J = 1
    for d in tuple(shape[p] for p in perm)[2:]:
        J *= d
    assert _tiled(trt) == (J >= 16 and shape[3] >= 16), f"{shape}: tiled={_tiled(trt)}"
    _check(m, (x, r), trt, torch.float32, f"{shape}")


def test_small_plane_not_tiled():
    """NCHW -> NHWC of a 3 x 3 plane: the dense side (H * W = 9) is too small to tile."""
    m = PermuteOp((0, 2, 3, 1), False).eval()
    x = rand(2, 40, 3, 3, seed=6)
    trt = torchtrt_c.compile(m, inputs=[x, x], min_block_size=1)
    assert not _tiled(trt)
    _check(m, (x, x), trt, torch.float32, "3 x 3 plane")


@pytest.mark.parametrize("c,hw", [(40, (9, 11)), (96, (14, 14))])
@pytest.mark.parametrize("prec", [torch.float32, torch.float16])
def test_convnext_block_tail(c, hw, prec):
    torch.manual_seed(c)
    m = BlockTail(c).eval().to(prec)
    x = rand(2, c, *hw, seed=5).to(prec)
    trt = torchtrt_c.compile(m, inputs=[x], enabled_precisions={prec}, min_block_size=1)
    assert _tiled(trt), "the block tail's transposed reads were not tiled"
    tol_model = m.float()
    ref = tol_model(x.float())
    got = trt(x).float()
    tol = 1e-4 if prec == torch.float32 else 2e-2
    err = (got - ref).abs().max().item() / ref.abs().max().item()
    assert err <= tol, f"c={c} hw={hw} {prec}: relative error {err:.3g} > {tol}"


def test_dynamic_batch():
    m = PermuteOp((0, 3, 1, 2), True).eval()
    spec_x = torchtrt_c.Input(min_shape=(1, 6, 7, 24), opt_shape=(2, 6, 7, 24), max_shape=(4, 6, 7, 24))
    spec_r = torchtrt_c.Input(min_shape=(1, 24, 6, 7), opt_shape=(2, 24, 6, 7), max_shape=(4, 24, 6, 7))
    trt = torchtrt_c.compile(m, inputs=[spec_x, spec_r], min_block_size=1)
    for b in (1, 3, 4):
        x, r = rand(b, 6, 7, 24, seed=b), rand(b, 24, 6, 7, seed=b + 10)
        _check(m, (x, r), trt, torch.float32, f"batch {b}")
    assert _tiled(trt)
