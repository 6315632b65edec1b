"""GEMM tiles whose stages live in a __local argument (fl & 4, csrc/kernels/gemm_tc.cl) through
the CUDA launch path, where the argument becomes dynamic shared memory beyond OpenCL's 48 KiB
(csrc/backend/cuda/exec_cuda.c, the PTX rewrite in csrc/backend/cuda/cuda_driver.c).

Each such tile is forced on a linear layer (odd M and N; K aligned, so that the copies are
async, and odd, so that they are not) and the engine is run both ways: through OpenCL on host
arrays (the stages OpenCL allows) and through the CUDA driver on CUDA tensors (as many stages
as the block may have). The stage count changes when slices are loaded, not the arithmetic, so
the two outputs must be equal bit for bit; both are checked against a float64 product too
(fp16: 2e-2 of max(|ref|, 1); TF32: 1e-2, what TF32 costs on these O(1) outputs).
The warpgroup-MMA tiles (fl & 8) run only through the CUDA launch path on NVIDIA (sm_90): their
OpenCL launch must be refused by name, and two CUDA calls must be equal bit for bit instead.
Those fed by the tensor copy engine (fl & 16) are refused by name at build where K is odd, and
run batched products too (test_tensor_copies_batched).
"""
import os

import numpy as np
import pytest
import torch

from torchtrt_c import _C

import convtest
from cudalaunch import why_not


pytestmark = pytest.mark.skipif(why_not() is not None, reason=str(why_not()))

TILES = _C.gemm_tiles()
LOCAL = [t["index"] for t in TILES if t["family"] in ("tc", "tf32") and t.get("fl", 0) & 4]
TMA = [t["index"] for t in TILES if t["family"] == "tc" and t.get("fl", 0) & 16]


def _engine(tile, m, n, k, tf32, seed):
    gen = torch.Generator().manual_seed(seed)
    w = torch.randn(n, k, generator=gen) / k ** 0.5
    b = torch.randn(n, generator=gen)
    dt = torch.float32 if tf32 else torch.float16
    g = _C.Graph()
    x = g.add_input("x", ("tensor", convtest.DTYPES[dt], [m, k]))
    wi = g.add_tensor_constant("w", "float32", [n, k], w.numpy())
    bi = g.add_tensor_constant("b", "float32", [n], b.numpy())
    (y,) = g.add_node("aten.linear.default", [x, wi, bi], [("tensor", convtest.DTYPES[dt], [m, n])])
    g.set_outputs([y])
    os.environ["TORCHTRT_C_GEMM_TILE"] = str(tile)
    os.environ["TORCHTRT_C_CUDA_LIBS"] = "0"   # the tile itself, never cuBLAS
    try:
        e = _C.Engine.build(g, cache_dir="", precision="fp32" if tf32 else "fp16", tf32_matmul=tf32)
    finally:
        os.environ.pop("TORCHTRT_C_GEMM_TILE", None)
        os.environ.pop("TORCHTRT_C_CUDA_LIBS", None)
    return e, (torch.randn(m, k, generator=gen) / 2).to(dt), w, b


def _sm90():
    return torch.cuda.get_device_capability(0) == (9, 0)


@pytest.mark.parametrize("tile", LOCAL)
@pytest.mark.parametrize("m,n,k", [(300, 270, 512), (129, 200, 203), (1, 64, 64), (640, 512, 1000)])
def test_cuda_launch_equals_opencl_and_reference(tile, m, n, k):
    """Every tile staging from a __local argument, through the CUDA driver with all its stages.
    The warpgroup-MMA tiles (fl & 8, sm_90 only) never run through OpenCL on NVIDIA: there its
    launch must be refused by name, and two CUDA calls must agree bit for bit instead."""
    tf32 = TILES[tile]["family"] == "tf32"
    wg = bool(TILES[tile]["fl"] & 8)
    if wg and not _sm90():
        pytest.skip("warpgroup MMA needs compute capability 9.0")
    if tile in TMA and k % 8:
        with pytest.raises(Exception, match="tensor-copy GEMM needs float16 operands, K a multiple of 8"):
            _engine(tile, m, n, k, tf32, seed=m + n + k)
        return
    e, x, w, b = _engine(tile, m, n, k, tf32, seed=m + n + k)
    assert set(e.info()["tiles"].values()) == {tile}
    dt = x.dtype
    host = np.empty((m, n), np.float32 if tf32 else np.float16)
    if wg:
        with pytest.raises(Exception, match="only the CUDA launch path runs"):
            e.execute([x.numpy()], [host])
    else:
        e.execute([x.numpy()], [host])
    cap, why = _C.cuda_launch_new(e, 0)
    assert cap is not None, f"CUDA launch refused: {why}"
    xd = x.cuda()
    out = torch.full((m, n), float("nan"), dtype=dt, device="cuda")
    nb = _C.cuda_launch_arena(cap, [(m, k)])
    arena = torch.empty(nb, dtype=torch.uint8, device="cuda")
    why = _C.cuda_launch_run(cap, [xd.data_ptr()], [(m, k)], [out.data_ptr()], arena.data_ptr(), nb,
                             torch.cuda.current_stream().cuda_stream)
    assert why is None, why
    torch.cuda.synchronize()
    st = _C.cuda_launch_stats(cap)
    t = TILES[tile]
    unit = (t["bm"] + t["bn"]) * t["bk"] * (4 if tf32 else 2)
    # the most stages the tile allows, and more than OpenCL's 48 KiB where that needs it
    assert st["dyn_shared_max"] == t["kw"] * unit, (st, unit)
    got = out.cpu()
    if wg:
        again = torch.full_like(out, float("nan"))
        why = _C.cuda_launch_run(cap, [xd.data_ptr()], [(m, k)], [again.data_ptr()], arena.data_ptr(), nb,
                                 torch.cuda.current_stream().cuda_stream)
        assert why is None, why
        torch.cuda.synchronize()
        host = again.cpu().numpy()
    same = torch.equal(got.view(torch.int16 if not tf32 else torch.int32),
                       torch.from_numpy(host).view(torch.int16 if not tf32 else torch.int32))
    diff = (got.float() - torch.from_numpy(host).float()).abs().max().item()
    assert same, f"tile {tile} {m}x{n}x{k}: CUDA launch and {'a second CUDA call' if wg else 'OpenCL'} differ by up to {diff:.3g}"
    ref = x.double() @ (w.half().double() if not tf32 else w.double()).t() + b.double()
    err = (got.double() - ref).abs().max().item()
    scale = max(ref.abs().max().item(), 1.0)
    tol = 1e-2 if tf32 else 2e-2
    assert err <= tol * scale, f"tile {tile} {m}x{n}x{k}: max abs error {err:.3g} vs float64 (scale {scale:.3g})"


@pytest.mark.parametrize("tile", TMA)
def test_tensor_copies_batched(tile):
    """The tensor-copy tiles (fl & 16) on batched products through the CUDA launch path: q @ k^T
    over a batch (each operand's batches are rows further down its tensor map) and a 3-D linear
    (A batched, the weight shared by every batch). Against float64, 2e-2 of max(|ref|, 1)."""
    if not _sm90():
        pytest.skip("warpgroup MMA needs compute capability 9.0")
    gen = torch.Generator().manual_seed(tile)
    q, kk = torch.randn(3, 70, 72, generator=gen).half() / 8, torch.randn(3, 65, 72, generator=gen).half()
    x = (torch.randn(2, 33, 520, generator=gen) / 4).half()
    w = torch.randn(136, 520, generator=gen) / 520 ** 0.5
    bias = torch.randn(136, generator=gen)
    g = _C.Graph()
    iq = g.add_input("q", ("tensor", "float16", [3, 70, 72]))
    ik = g.add_input("k", ("tensor", "float16", [3, 65, 72]))
    ix = g.add_input("x", ("tensor", "float16", [2, 33, 520]))
    (kt,) = g.add_node("aten.transpose.int", [ik, g.add_constant(-1), g.add_constant(-2)],
                       [("tensor", "float16", [3, 72, 65])])
    (y0,) = g.add_node("aten.bmm.default", [iq, kt], [("tensor", "float16", [3, 70, 65])])
    wi = g.add_tensor_constant("w", "float32", [136, 520], w.numpy())
    bi = g.add_tensor_constant("b", "float32", [136], bias.numpy())
    (y1,) = g.add_node("aten.linear.default", [ix, wi, bi], [("tensor", "float16", [2, 33, 136])])
    g.set_outputs([y0, y1])
    os.environ["TORCHTRT_C_GEMM_TILE"] = str(tile)
    os.environ["TORCHTRT_C_CUDA_LIBS"] = "0"
    try:
        e = _C.Engine.build(g, cache_dir="", precision="fp16")
    finally:
        os.environ.pop("TORCHTRT_C_GEMM_TILE", None)
        os.environ.pop("TORCHTRT_C_CUDA_LIBS", None)
    assert set(e.info()["tiles"].values()) == {tile}
    cap, why = _C.cuda_launch_new(e, 0)
    assert cap is not None, f"CUDA launch refused: {why}"
    ins = [t.cuda() for t in (q, kk, x)]
    shapes = [tuple(t.shape) for t in ins]
    outs = [torch.full((3, 70, 65), float("nan"), dtype=torch.half, device="cuda"),
            torch.full((2, 33, 136), float("nan"), dtype=torch.half, device="cuda")]
    nb = _C.cuda_launch_arena(cap, shapes)
    arena = torch.empty(max(nb, 1), dtype=torch.uint8, device="cuda")
    why = _C.cuda_launch_run(cap, [t.data_ptr() for t in ins], shapes, [o.data_ptr() for o in outs], arena.data_ptr(),
                             nb, torch.cuda.current_stream().cuda_stream)
    assert why is None, why
    torch.cuda.synchronize()
    refs = [q.double() @ kk.double().transpose(-1, -2), x.double() @ w.half().double().t() + bias.half().double()]
    for name, got, ref in zip(("q @ k^T", "linear"), outs, refs):
        err = (got.cpu().double() - ref).abs().max().item()
        scale = max(ref.abs().max().item(), 1.0)
        assert err <= 2e-2 * scale, f"tile {tile} {name}: max abs error {err:.3g} vs float64 (scale {scale:.3g})"
