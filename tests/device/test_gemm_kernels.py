"""Differential tests of the GEMM kernels (csrc/kernels/gemm_*.cl) against torch eager.

Every GEMM candidate of ttc_gemm_tiles (csrc/codegen/codegen.c, read through _C.gemm_tiles()) is
forced in turn with TORCHTRT_C_GEMM_TILE=<index>: the CPU kernel's work-group shapes and the
register-blocked GPU kernel's (SIMT) tiles, many of them splitting k among several k-groups of a
work-group, run on any OpenCL device, so PoCL in CI covers the GPU kernels; the NVIDIA
tensor-core (MMA) tiles (inline PTX) run only where the default device is NVIDIA.
Shapes are odd (1, 7, 33, 129, 257 ...) so that every tile has partial edges in M, N and K,
K takes both the aligned (multiple of 4) and the scalar load paths and spans one or several
double-buffered stages. Every tile runs the plain mm shapes; the epilogue/batch/fp16
variants run on the first plain SIMT tile, a one-row-per-work-item tile, a k-split tile and
the CPU kernel (each picked from the table by its shape), which between them cover every code path of gemm_gpu.cl (each distinct
kernel source costs PoCL a compile of a second or more).
Tolerances: fp32 atol 1e-4 + rtol 1e-4 (inputs scaled so that outputs are O(1); only the
summation order differs from torch); fp16 engines and the tensor-core kernels atol 2e-2 +
rtol 2e-2 (operands rounded to half, fp32 accumulation, half output storage).
"""
import numpy as np
import pytest
import torch

import torchtrt_c._C as C
from convtest import DTYPES, Const, assert_close, build, rand, run

TILES = C.gemm_tiles()
CPU_TILES = [t["index"] for t in TILES if t["family"] == "cpu"]
SIMT_TILES = [t["index"] for t in TILES if t["family"] == "simt"]
MMA_TILES = [t["index"] for t in TILES if t["family"] == "mma"]
N_TILES = len(TILES)


def _nvidia():
    try:
        d = C.devices()[C.default_device()]
    except Exception:
        return False
    return "NVIDIA" in d["vendor"] or "NVIDIA" in d["platform"]


def _first(pred):
    return next(t["index"] for t in TILES if t["family"] == "simt" and pred(t))


NVIDIA = _nvidia()
FP32_TILES = CPU_TILES + SIMT_TILES
WIDE_TILE = _first(lambda t: t["kw"] == 1)                # one k-group, several rows and columns per item
ROW_TILE = _first(lambda t: t["tm"] == 1)                  # one output row per work-item
KSPLIT_TILE = _first(lambda t: t["kw"] > 1)                # k split among k-groups of a work-group
RECT_TILE = _first(lambda t: t["kw"] == 1 and t["tm"] != t["tn"])  # rectangular per-item block
FEATURE_TILES = [CPU_TILES[0], WIDE_TILE, ROW_TILE, KSPLIT_TILE]
FP16_TILES = FEATURE_TILES + (MMA_TILES if NVIDIA else [])


def _sweep(tiles, keep):
    """tiles as parameters, those not in keep marked slow: the default run covers each code path
    once (keep), the slow run every tile (GPU kernels on PoCL take seconds per tile)."""
    return [pytest.param(t, marks=() if t in keep else pytest.mark.slow) for t in tiles]


def _force(monkeypatch, tile):
    monkeypatch.delenv("TORCHTRT_C_KERNELS", raising=False)
    monkeypatch.setenv("TORCHTRT_C_GEMM_TILE", str(tile))


def _scaled(*shape, seed, dtype=torch.float32):
    k = shape[-1] if len(shape) > 1 else 1
    return (rand(*shape, seed=seed) / k ** 0.5).to(dtype)


def _check(op, args, ref, tol, precision="fp32", tile=None):
    _, e = build(op, args, [ref], precision=precision)
    if tile is not None:
        assert list(e.info()["tiles"].values()) == [tile]
    (got,) = run(e, args, [ref])
    assert_close(got.float(), ref.float(), tol, tol, f"{op} tile {tile}")
    return e


def _graph_check(ins, body, refs, tol, tile, what, precision="fp32"):
    """Builds one engine over inputs `ins` (tensors) whose outputs body(g, input ids, output
    types) makes (several GEMMs share one program build), runs it, compares with refs."""
    g = C.Graph()
    ids = [g.add_input(f"x{i}", ("tensor", DTYPES[t.dtype], list(t.shape))) for i, t in enumerate(ins)]
    ots = [("tensor", DTYPES[r.dtype], list(r.shape)) for r in refs]
    g.set_outputs(body(g, ids, ots))
    e = C.Engine.build(g, cache_dir="", precision=precision)
    if tile is not None:
        assert set(e.info()["tiles"].values()) == {tile}
    outs = [np.empty(tuple(r.shape), {torch.float32: np.float32, torch.float16: np.float16}[r.dtype]) for r in refs]
    e.execute([t.contiguous().numpy() for t in ins], outs)
    for i, (o, r) in enumerate(zip(outs, refs)):
        assert_close(torch.from_numpy(o).float(), r.float(), tol, tol, f"{what} output {i} tile {tile}")


MM_SHAPES = [(1, 64, 33), (7, 33, 129), (33, 257, 17), (129, 128, 65), (257, 31, 7), (64, 16, 64), (70, 132, 68)]


@pytest.mark.parametrize("tile", _sweep(FP32_TILES, CPU_TILES + FEATURE_TILES + [RECT_TILE]))
def test_mm_odd_shapes(monkeypatch, tile):
    """One engine per shape: the kernel source depends on the tile, not the shape, so the
    device compiles it once."""
    _force(monkeypatch, tile)
    for i, (m, k, n) in enumerate(MM_SHAPES):
        a, b = _scaled(m, k, seed=i), rand(k, n, seed=i + 50)
        _check("aten.mm.default", [a, b], a @ b, 1e-4, tile=tile)


LINEAR_CASES = [((1, 768), 33), ((7, 129), 257), ((2, 17, 40), 9), ((65, 8), 129)]


def _linear_body(ws, relu):
    def body(g, ids, ots):
        outs = []
        for i, (ot, (w, bias)) in enumerate(zip(ots, ws)):
            wi = g.add_tensor_constant(f"w{i}", "float32", list(w.shape), w.numpy())
            bi = g.add_tensor_constant(f"b{i}", "float32", [w.shape[0]], bias.numpy())
            (y,) = g.add_node("aten.linear.default", [ids[i], wi, bi], [ot])
            outs.append(g.add_node("aten.relu.default", [y], [ot])[0] if relu else y)
        return outs
    return body


@pytest.mark.parametrize("tile", FEATURE_TILES + [RECT_TILE])
def test_linear_transposed_b_bias_relu(monkeypatch, tile):
    """Linear weights are [N, K] (the TRANS_B kernels); bias + relu fused as the epilogue."""
    _force(monkeypatch, tile)
    for i, (shape, n) in enumerate(LINEAR_CASES):
        x, w, bias = _scaled(*shape, seed=i), rand(n, shape[-1], seed=i + 10), rand(n, seed=i + 20)
        ref = torch.relu(torch.nn.functional.linear(x, w, bias))
        _graph_check([x], _linear_body([(w, bias)], True), [ref], 1e-4, tile, f"linear+relu {shape}x{n}")


@pytest.mark.parametrize("tile", FEATURE_TILES)
def test_addmm_residual_bmm_matmul(monkeypatch, tile):
    """addmm; a residual add fused into the epilogue; bmm; matmul broadcasting B over batch
    dims (batch stride 0) and with a transposed B view (q @ k^T)."""
    _force(monkeypatch, tile)
    m, k, n = 33, 70, 129
    bias, a, b, res = rand(n, seed=1), _scaled(m, k, seed=2), rand(k, n, seed=3), rand(m, n, seed=4)
    x, y = _scaled(3, 17, 20, seed=5), rand(3, 20, 9, seed=6)
    x4, w = _scaled(2, 5, 33, 24, seed=7), rand(24, 19, seed=8)
    q, kk = _scaled(2, 3, 9, 16, seed=9), rand(2, 3, 11, 16, seed=10)
    refs = [torch.addmm(bias, a, b), a @ b + res, torch.bmm(x, y), torch.matmul(x4, w),
            torch.matmul(q, kk.transpose(-1, -2))]

    def body(g, ids, ots):
        ia, ib, ires, ibias, ix, iy, ix4, iw, iq, ik = ids
        L = g.add_constant
        (am,) = g.add_node("aten.addmm.default", [ibias, ia, ib, L(1), L(1)], [ots[0]])
        (mm,) = g.add_node("aten.mm.default", [ia, ib], [ots[1]])
        (rs,) = g.add_node("aten.add.Tensor", [mm, ires, L(1)], [ots[1]])
        (bm,) = g.add_node("aten.bmm.default", [ix, iy], [ots[2]])
        (m4,) = g.add_node("aten.matmul.default", [ix4, iw], [ots[3]])
        (kt,) = g.add_node("aten.transpose.int", [ik, L(-1), L(-2)], [("tensor", "float32", [2, 3, 16, 11])])
        (qk,) = g.add_node("aten.matmul.default", [iq, kt], [ots[4]])
        return [am, rs, bm, m4, qk]

    _graph_check([a, b, res, bias, x, y, x4, w, q, kk], body, refs, 1e-4, tile, "addmm/residual/bmm/matmul")


@pytest.mark.parametrize("tile", _sweep(FP16_TILES, FEATURE_TILES + MMA_TILES[:2]))
def test_fp16(monkeypatch, tile):
    """Half x half GEMMs (fp32 accumulation, half output) and linear layers of an fp16 engine
    over fp32 inputs and weights."""
    _force(monkeypatch, tile)
    for i, (m, k, n) in enumerate([(1, 64, 33), (33, 72, 129), (129, 40, 7), (130, 256, 96)]):
        a, b = _scaled(m, k, seed=i, dtype=torch.float16), rand(k, n, seed=i + 9).half()
        _check("aten.mm.default", [a, b], (a.float() @ b.float()).half(), 2e-2, precision="fp16", tile=tile)
    x, y = _scaled(2, 19, 24, seed=7, dtype=torch.float16), rand(2, 24, 17, seed=8).half()
    _check("aten.bmm.default", [x, y], torch.bmm(x.float(), y.float()).half(), 2e-2, precision="fp16", tile=tile)
    for i, (shape, n) in enumerate(LINEAR_CASES):
        x, w, bias = _scaled(*shape, seed=i), rand(n, shape[-1], seed=i + 10), rand(n, seed=i + 20)
        ref = torch.nn.functional.linear(x, w, bias)
        _graph_check([x], _linear_body([(w, bias)], False), [ref], 2e-2, tile, f"fp16 engine linear {shape}x{n}",
                     precision="fp16")


def test_gpu_family_default_and_tuning(monkeypatch, tmp_path):
    """TORCHTRT_C_KERNELS=gpu: the untuned choice is a GPU tile by shape; tuning (level 3)
    times the GPU candidates and keeps a correct one."""
    monkeypatch.delenv("TORCHTRT_C_GEMM_TILE", raising=False)
    monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")
    a, b = _scaled(5, 48, seed=1), rand(48, 40, seed=2)
    e = _check("aten.mm.default", [a, b], a @ b, 1e-4)
    (t,) = e.info()["tiles"].values()
    assert t in SIMT_TILES + (MMA_TILES if NVIDIA else [])
    g, _ = build("aten.mm.default", [a, b], [a @ b])
    e = C.Engine.build(g, cache_dir=str(tmp_path), optimization_level=3)
    assert e.info()["tuned"] == 1
    (t,) = e.info()["tiles"].values()
    assert t in SIMT_TILES
    (got,) = run(e, [a, b], [a @ b])
    assert_close(got, a @ b, 1e-4, 1e-4, "tuned")


def test_forced_tile_errors(monkeypatch):
    a, b = rand(4, 8, seed=1), rand(8, 3, seed=2)
    monkeypatch.setenv("TORCHTRT_C_GEMM_TILE", str(N_TILES))
    with pytest.raises(Exception, match="TORCHTRT_C_GEMM_TILE"):
        build("aten.mm.default", [a, b], [a @ b])
    monkeypatch.setenv("TORCHTRT_C_GEMM_TILE", "x")
    with pytest.raises(Exception, match="TORCHTRT_C_GEMM_TILE"):
        build("aten.mm.default", [a, b], [a @ b])
    # the tensor-core tiles need NVIDIA and half operands: refused for a plain fp32 GEMM anywhere
    monkeypatch.setenv("TORCHTRT_C_GEMM_TILE", str(MMA_TILES[0]))
    with pytest.raises(Exception, match="tensor-core"):
        build("aten.mm.default", [a, b], [a @ b])
