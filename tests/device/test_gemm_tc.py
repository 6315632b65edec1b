"""Differential tests of the pipelined tensor-core GEMM (csrc/kernels/gemm_tc.cl): half
operands on mma m16n8k16 (family 'tc') and TF32 (family 'tf32', fp32 engines built with
tf32_matmul), against torch eager.

Every candidate is forced with TORCHTRT_C_GEMM_TILE=<index> (read from _C.gemm_tiles()). On
NVIDIA they run the PTX instructions (cp.async pipeline, ldmatrix, mma.sync); elsewhere (PoCL in
CI) the PTX prelude's emulation with the same per-lane semantics, where each distinct kernel
costs PoCL 10-20 s to compile: the default run covers the smallest and the largest tile of each
family, the slow run every tile; the rasterised grid (tiles with gm > 0, the default among
them) runs on more tile rows than one group holds. Shapes are odd (partial tiles in M, N and K,
K not a multiple of the 16-byte chunk: the synchronous zero-filling loads) and aligned (the
async copies on the GPU), with several k slices so that the stages rotate.
Tolerances: half operands 2e-2 (rounded to half, fp32 accumulation, half output); TF32 1e-4
against the product of the operands rounded to TF32 (nearest, ties away: what ttc_tf32 does)
computed in float64 (only the fp32 summation differs), which fails when the operands are not
rounded (the data below makes TF32 and fp32 products differ by more than 5x that), and 1e-2
against the exact fp32 product (what TF32 costs on these O(1) outputs).
"""
import numpy as np
import pytest
import torch

import torchtrt_c._C as C
from convtest import DTYPES, assert_close, rand

TILES = C.gemm_tiles()
# the warpgroup-MMA tiles (fl & 8: TRANS_B only) have their own tests (test_gemm_wgmma.py)
TC = [t["index"] for t in TILES if t["family"] == "tc" and not t.get("fl", 0) & 8]
TF32 = [t["index"] for t in TILES if t["family"] == "tf32"]
# tiles whose grid is rasterised in groups of gm tile rows
GM = [t["index"] for t in TILES if t["family"] in ("tc", "tf32") and t.get("gm", 0) > 0 and not t.get("fl", 0) & 8]


def _nvidia():
    d = C.devices()[C.default_device()]
    return "NVIDIA" in d["vendor"] or "NVIDIA" in d["platform"]


NVIDIA = _nvidia()


def _by_size(tiles):
    area = lambda i: TILES[i]["bm"] * TILES[i]["bn"]  # noqa: E731
    return sorted(tiles, key=area)


def _sweep(tiles):
    """The smallest tile and the family's first (its 8-warp 128x128 workhorse) by default, the
    rest in the slow run (PoCL compile time)."""
    keep = {_by_size(tiles)[0], tiles[0]}
    return [pytest.param(t, marks=() if t in keep else pytest.mark.slow) for t in tiles]


def _force(monkeypatch, tile):
    monkeypatch.delenv("TORCHTRT_C_KERNELS", raising=False)
    monkeypatch.setenv("TORCHTRT_C_GEMM_TILE", str(tile))
    # float GEMMs on a CPU device would otherwise run through the host BLAS, tile or not
    monkeypatch.setenv("TORCHTRT_C_NATIVE", "0")


def _scaled(*shape, seed, dtype=torch.float32):
    return (rand(*shape, seed=seed) / shape[-1] ** 0.5).to(dtype)


def _tf32(t):
    """t rounded to TF32 (10 mantissa bits), nearest with ties away from zero."""
    u = t.float().contiguous().view(torch.int32)
    return ((u + 0x1000) & -8192).view(torch.float32)


def _engine(ins, body, refs, precision="fp32", tf32=False):
    g = C.Graph()
    ids = [g.add_input(f"x{i}", ("tensor", DTYPES[t.dtype], list(t.shape))) for i, t in enumerate(ins)]
    ots = [("tensor", DTYPES[r.dtype], list(r.shape)) for r in refs]
    g.set_outputs(body(g, ids, ots))
    return C.Engine.build(g, cache_dir="", precision=precision, tf32_matmul=tf32)


def _run(e, ins, refs):
    outs = [np.empty(tuple(r.shape), {torch.float32: np.float32, torch.float16: np.float16}[r.dtype]) for r in refs]
    e.execute([t.contiguous().numpy() for t in ins], outs)
    return [torch.from_numpy(o).float() for o in outs]


def _linear(g, x, w, bias, ot, relu):
    wi = g.add_tensor_constant(f"w{x}", "float32", list(w.shape), w.numpy())
    bi = g.add_tensor_constant(f"b{x}", "float32", [w.shape[0]], bias.numpy())
    (y,) = g.add_node("aten.linear.default", [x, wi, bi], [ot])
    return g.add_node("aten.relu.default", [y], [ot])[0] if relu else y


# (M, K, N): odd K (synchronous loads), aligned K over several slices, a single row
MM = [(33, 72, 129), (7, 50, 20), (130, 256, 96), (1, 40, 9)]


def _mm_case(dtype, seed=0):
    ins, refs_in = [], []
    for i, (m, k, n) in enumerate(MM):
        ins += [_scaled(m, k, seed=seed + i, dtype=dtype), rand(k, n, seed=seed + i + 20).to(dtype)]
    return ins


def _mm_body(n_mm, extra=None):
    def body(g, ids, ots):
        outs = [g.add_node("aten.mm.default", [ids[2 * i], ids[2 * i + 1]], [ots[i]])[0] for i in range(n_mm)]
        return outs + (extra(g, ids[2 * n_mm:], ots[n_mm:]) if extra else [])
    return body


@pytest.mark.parametrize("tile", _sweep(TC))
def test_half_mm_bmm_and_transposed_b(monkeypatch, tile):
    """half x half mm of odd and aligned shapes; bmm; q @ k^T (TRANS_B over a batch)."""
    _force(monkeypatch, tile)
    ins = _mm_case(torch.float16)
    x, y = _scaled(3, 19, 40, seed=7, dtype=torch.float16), rand(3, 40, 17, seed=8).half()
    q, kk = _scaled(2, 9, 24, seed=9, dtype=torch.float16), rand(2, 11, 24, seed=10).half()
    ins += [x, y, q, kk]
    refs = [(ins[2 * i].float() @ ins[2 * i + 1].float()).half() for i in range(len(MM))]
    refs += [torch.bmm(x.float(), y.float()).half(), (q.float() @ kk.float().transpose(-1, -2)).half()]

    def extra(g, ids, ots):
        ix, iy, iq, ik = ids
        L = g.add_constant
        (bm,) = g.add_node("aten.bmm.default", [ix, iy], [ots[0]])
        (kt,) = g.add_node("aten.transpose.int", [ik, L(-1), L(-2)], [("tensor", "float16", [2, 24, 11])])
        (qk,) = g.add_node("aten.bmm.default", [iq, kt], [ots[1]])
        return [bm, qk]

    e = _engine(ins, _mm_body(len(MM), extra), refs, precision="fp16")
    assert set(e.info()["tiles"].values()) == {tile}
    for i, (got, ref) in enumerate(zip(_run(e, ins, refs), refs)):
        assert_close(got, ref.float(), 2e-2, 2e-2, f"tc tile {tile} output {i}")


@pytest.mark.parametrize("tile", _sweep(TC))
def test_half_engine_linear_float_operands(monkeypatch, tile):
    """An fp16 engine keeps fp32 inputs as declared: A_F32 (rounded to half on the way into local
    memory), the weight [N, K] as TRANS_B, bias + relu fused as the epilogue."""
    _force(monkeypatch, tile)
    cases = [((7, 129), 57), ((2, 17, 40), 9), ((65, 64), 130)]
    ins = [_scaled(*shape, seed=i) for i, (shape, _) in enumerate(cases)]
    ws = [(rand(n, shape[-1], seed=i + 10), rand(n, seed=i + 20)) for i, (shape, n) in enumerate(cases)]
    refs = [torch.relu(torch.nn.functional.linear(x, w, b)) for x, (w, b) in zip(ins, ws)]
    e = _engine(ins, lambda g, ids, ots: [_linear(g, ids[i], *ws[i], ots[i], True) for i in range(len(ids))],
                refs, precision="fp16")
    assert set(e.info()["tiles"].values()) == {tile}
    for i, (got, ref) in enumerate(zip(_run(e, ins, refs), refs)):
        assert_close(got, ref, 2e-2, 2e-2, f"tc tile {tile} fp16-engine linear {i}")


def _check_tf32(got, a, b, what, trans_b=False, epi=lambda y: y):
    bt = b.transpose(-1, -2) if trans_b else b
    ref_tf = epi((_tf32(a).double() @ _tf32(bt).double()).float())
    ref_32 = epi((a.double() @ bt.double()).float())
    assert_close(got, ref_tf, 1e-4, 1e-4, f"{what} vs the TF32-rounded product")
    assert_close(got, ref_32, 1e-2, 1e-2, f"{what} vs the fp32 product")
    return (ref_tf - ref_32).abs().max().item()


@pytest.mark.parametrize("tile", _sweep(TF32))
def test_tf32_mm_linear_bmm(monkeypatch, tile):
    """fp32 engines built with tf32_matmul: mm (odd and aligned shapes), linear (TRANS_B) with
    bias + relu, bmm; each against the TF32-rounded product and the fp32 one."""
    _force(monkeypatch, tile)
    ins = _mm_case(torch.float32, seed=30)
    x, y = _scaled(3, 19, 40, seed=37), rand(3, 40, 17, seed=38)
    xl, w, bias = _scaled(2, 17, 72, seed=39), rand(33, 72, seed=40), rand(33, seed=41)
    ins += [x, y, xl]
    refs = [ins[2 * i] @ ins[2 * i + 1] for i in range(len(MM))]
    refs += [torch.bmm(x, y), torch.relu(torch.nn.functional.linear(xl, w, bias))]

    def extra(g, ids, ots):
        (bm,) = g.add_node("aten.bmm.default", [ids[0], ids[1]], [ots[0]])
        return [bm, _linear(g, ids[2], w, bias, ots[1], True)]

    e = _engine(ins, _mm_body(len(MM), extra), refs, tf32=True)
    assert set(e.info()["tiles"].values()) == {tile}
    assert e.info()["tf32"]["matmul"] is True
    got = _run(e, ins, refs)
    gaps = [_check_tf32(got[i], ins[2 * i], ins[2 * i + 1], f"tf32 tile {tile} mm {MM[i]}") for i in range(len(MM))]
    gaps.append(_check_tf32(got[len(MM)], x, y, f"tf32 tile {tile} bmm"))
    gaps.append(_check_tf32(got[len(MM) + 1], xl, w, f"tf32 tile {tile} linear", trans_b=True,
                            epi=lambda t: torch.relu(t + bias)))
    # the data tells TF32 from fp32 apart: a kernel that skipped the rounding would fail above
    assert max(gaps) > 5e-4, f"TF32 and fp32 products differ by only {max(gaps):.3g}"


@pytest.mark.parametrize("fam", ["tc", "tf32"])
def test_rasterised_grid_places_every_tile(monkeypatch, fam):
    """A gm-rasterised tile (the smallest of the family) on a grid of gm + 1 tile rows, the last
    partial (two groups, the second short) by 3 tile columns, the last partial, over a batch of
    2: every output block computed once and stored at its place."""
    tiles = [i for i in GM if TILES[i]["family"] == fam]
    if not tiles:
        pytest.skip(f"no rasterised {fam} tile")
    tile = _by_size(tiles)[0]
    t = TILES[tile]
    m, n, k = (t["gm"] + 1) * t["bm"] - 5, 2 * t["bn"] + 7, 40
    _force(monkeypatch, tile)
    dtype = torch.float16 if fam == "tc" else torch.float32
    a, b = _scaled(2, m, k, seed=50, dtype=dtype), rand(2, k, n, seed=51).to(dtype)
    refs = [torch.bmm(a.float(), b.float()).to(dtype)]
    e = _engine([a, b], lambda g, ids, ots: [g.add_node("aten.bmm.default", ids, [ots[0]])[0]], refs,
                precision="fp16" if fam == "tc" else "fp32", tf32=fam == "tf32")
    assert set(e.info()["tiles"].values()) == {tile}
    (got,) = _run(e, [a, b], refs)
    if fam == "tc":
        assert_close(got, refs[0].float(), 2e-2, 2e-2, f"tc tile {tile} rasterised bmm {m}x{n}x{k}")
    else:
        _check_tf32(got, a, b, f"tf32 tile {tile} rasterised bmm {m}x{n}x{k}")


def test_tf32_tiles_need_the_policy(monkeypatch):
    a, b = rand(9, 16, seed=1), rand(16, 8, seed=2)
    refs = [a @ b]
    monkeypatch.setenv("TORCHTRT_C_GEMM_TILE", str(TF32[0]))
    with pytest.raises(Exception, match="tf32_matmul"):
        _engine([a, b], _mm_body(1), refs)                       # fp32 engine, no TF32
    with pytest.raises(Exception, match="tf32_matmul"):
        _engine([a.half(), b.half()], _mm_body(1), [r.half() for r in refs], precision="fp16", tf32=True)
    monkeypatch.setenv("TORCHTRT_C_GEMM_TILE", str(TC[0]))
    with pytest.raises(Exception, match="tensor-core"):
        _engine([a, b], _mm_body(1), refs, tf32=True)            # half tiles need half operands


@pytest.mark.parametrize("tf32", [False, True])
def test_untuned_choice_follows_policy_and_device(monkeypatch, tf32):
    """Untuned (level 0) on the device's own families: tensor-core tiles only on NVIDIA, TF32
    ones only with the policy on; the engine is correct either way."""
    monkeypatch.delenv("TORCHTRT_C_GEMM_TILE", raising=False)
    monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")
    a, b = _scaled(300, 64, seed=3), rand(64, 272, seed=4)
    refs = [a @ b]
    g = C.Graph()
    ia = g.add_input("a", ("tensor", "float32", [300, 64]))
    ib = g.add_input("b", ("tensor", "float32", [64, 272]))
    (y,) = g.add_node("aten.mm.default", [ia, ib], [("tensor", "float32", [300, 272])])
    g.set_outputs([y])
    e = C.Engine.build(g, cache_dir="", optimization_level=0, tf32_matmul=tf32)
    (tile,) = e.info()["tiles"].values()
    fam = TILES[tile]["family"]
    assert e.info()["tf32_active"]["matmul"] is (tf32 and NVIDIA)
    assert (fam == "tf32") is (tf32 and NVIDIA), f"tile {tile} ({fam}), tf32={tf32}, NVIDIA={NVIDIA}"
    (got,) = _run(e, [a, b], refs)
    if fam == "tf32":
        _check_tf32(got, a, b, f"default tf32 tile {tile}")
    else:
        assert_close(got, refs[0], 1e-4, 1e-4, f"default tile {tile}")


# tiles whose epilogue is staged through local memory (fl & 2): stored by rows, lane = column
STAGED = [t["index"] for t in TILES if t["family"] in ("tc", "tf32") and t.get("fl", 0) & 2 and not t.get("fl", 0) & 8]


@pytest.mark.parametrize("tile", [pytest.param(t, marks=() if t == _by_size([i for i in STAGED if TILES[i]["family"]
                                                                              == TILES[t]["family"]])[0]
                                               else pytest.mark.slow) for t in STAGED])
def test_staged_epilogue_places_every_output(monkeypatch, tile):
    """The staged epilogue over a batched linear with bias + a residual read by the epilogue
    (x @ W^T + b + r): N neither a multiple of 32 nor of the tile (columns past N in the last
    tile and in a warp's strip), M partial in the last tile row, a batch of 2 (the store index
    (b * M + m) * N + n); and N smaller than one warp's columns."""
    _force(monkeypatch, tile)
    t = TILES[tile]
    fam = t["family"]
    dtype = torch.float16 if fam == "tc" else torch.float32
    cases = [(2, t["bm"] + 9, 40, t["bn"] + 21), (1, 5, 24, 7)]
    ins, ws = [], []
    for i, (bt, m, k, n) in enumerate(cases):
        ins += [_scaled(bt, m, k, seed=60 + i, dtype=dtype), rand(bt, m, n, seed=70 + i).to(dtype)]
        ws.append((rand(n, k, seed=80 + i), rand(n, seed=90 + i)))

    def body(g, ids, ots):
        outs = []
        for i in range(len(cases)):
            (y,) = g.add_node("aten.linear.default", [ids[2 * i], *[g.add_tensor_constant(
                f"{nm}{i}", "float32", list(v.shape), v.numpy()) for nm, v in zip("wb", ws[i])]], [ots[i]])
            outs.append(g.add_node("aten.add.Tensor", [y, ids[2 * i + 1], g.add_constant(1)], [ots[i]])[0])
        return outs

    refs = []
    for i in range(len(cases)):
        x, r = ins[2 * i], ins[2 * i + 1]
        w, bias = ws[i]
        if fam == "tc":
            refs.append((torch.nn.functional.linear(x.float(), w.half().float(), bias) + r.float()).to(dtype))
        else:
            refs.append(torch.nn.functional.linear(_tf32(x), _tf32(w), bias) + r)
    e = _engine(ins, body, refs, precision="fp16" if fam == "tc" else "fp32", tf32=fam == "tf32")
    assert set(e.info()["tiles"].values()) == {tile}
    for i, (got, ref) in enumerate(zip(_run(e, ins, refs), refs)):
        tol = 2e-2 if fam == "tc" else 1e-4
        assert_close(got, ref.float(), tol, tol, f"{fam} tile {tile} staged epilogue case {cases[i]}")


# tiles whose stages come from a __local argument, their count an argument too (fl & 4): as many
# as fit the device's local memory per work-group (the CUDA launch path gives them more:
# tests/gpu/test_gemm_dynsmem.py)
LOCAL = [t["index"] for t in TILES if t["family"] in ("tc", "tf32") and t.get("fl", 0) & 4]


@pytest.mark.parametrize("tile", [_by_size([i for i in LOCAL if TILES[i]["family"] == f])[0]
                                  for f in ("tc", "tf32") if any(TILES[i]["family"] == f for i in LOCAL)])
def test_local_argument_stages(monkeypatch, tile):
    """The smallest such tile of each family on the mm / bmm / q @ k^T (tc) or mm / bmm / linear
    (TF32) cases above: odd shapes and K over several slices, so that the stages rotate."""
    if TILES[tile]["family"] == "tc":
        test_half_mm_bmm_and_transposed_b(monkeypatch, tile)
    else:
        test_tf32_mm_linear_bmm(monkeypatch, tile)
