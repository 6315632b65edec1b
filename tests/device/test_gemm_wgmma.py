"""Differential tests of the warpgroup-MMA GEMM tiles (gemm_tc.cl, FL & 8: sm_90a wgmma reading
both operands from 128-byte-swizzled local memory through descriptors) against torch eager.

On NVIDIA devices of compute capability 9.0 only the CUDA launch path runs these tiles (their
stages exceed OpenCL's local memory: tests/gpu/test_gemm_dynsmem.py runs them there); here the
OpenCL launch must refuse them by name. Elsewhere (PoCL in CI) the PTX prelude's emulation runs
them: it reads each half where the hardware's descriptor address and swizzle put it, from the
bytes the kernel's copies stored, so a copy layout, descriptor offset or fragment order that
disagreed with the hardware's would fail here (checked: dropping the XOR in the emulation's
address fails every shape below).
Shapes: partial tiles in M and N, K odd (synchronous loads), K a multiple of 8 but not of 64 (the
last slice zero-filled), K spanning more slices than the tile has stages (the stages rotate),
a single row; fp32 operands of an fp16 engine (converted on the way into local memory); a batch
of q @ k^T (TRANS_B with a batch stride on B); bias + relu as the epilogue.
The tensor-copy tiles (FL & 16) run FL & 8's copies here, with their own signature.
Tolerance 2e-2 (operands rounded to half, fp32 accumulation, half output), as the other
tensor-core tiles.
"""
import numpy as np
import pytest
import torch

import torchtrt_c._C as C
from convtest import DTYPES, assert_close, rand

TILES = C.gemm_tiles()
WG = [t["index"] for t in TILES if t["family"] == "tc" and t.get("fl", 0) & 8 and not t.get("fl", 0) & 16]
# the same fed by the tensor copy engine (FL & 16): half operands, K a multiple of 8
TMA = [t["index"] for t in TILES if t["family"] == "tc" and t.get("fl", 0) & 16]
DEV = C.devices()[C.default_device()]
NVIDIA = "NVIDIA" in DEV["vendor"] or "NVIDIA" in DEV["platform"]


def _force(monkeypatch, tile):
    monkeypatch.delenv("TORCHTRT_C_KERNELS", raising=False)
    monkeypatch.setenv("TORCHTRT_C_GEMM_TILE", str(tile))
    monkeypatch.setenv("TORCHTRT_C_NATIVE", "0")
    monkeypatch.setenv("TORCHTRT_C_CUDA_LIBS", "0")


def _linear_engine(cases, dtype):
    """One fp16 engine of relu(linear(x_i, W_i, b_i)) per case ((shape of x), n)."""
    ins = [(rand(*shape, seed=i) / shape[-1] ** 0.5).to(dtype) for i, (shape, _) in enumerate(cases)]
    ws = [(rand(n, shape[-1], seed=i + 10) / 2, rand(n, seed=i + 20)) for i, (shape, n) in enumerate(cases)]
    g = C.Graph()
    outs = []
    for i, (x, (w, b)) in enumerate(zip(ins, ws)):
        xi = g.add_input(f"x{i}", ("tensor", DTYPES[dtype], list(x.shape)))
        ot = ("tensor", "float16", list(x.shape[:-1]) + [w.shape[0]])
        wi = g.add_tensor_constant(f"w{i}", "float32", list(w.shape), w.numpy())
        bi = g.add_tensor_constant(f"b{i}", "float32", [w.shape[0]], b.numpy())
        (y,) = g.add_node("aten.linear.default", [xi, wi, bi], [ot])
        outs.append(g.add_node("aten.relu.default", [y], [ot])[0])
    g.set_outputs(outs)
    e = C.Engine.build(g, cache_dir="", precision="fp16")
    # the reference sees the weights as the engine stores them (half)
    refs = [torch.relu(x.double() @ w.half().double().t() + b.half().double()).float()
            for x, (w, b) in zip(ins, ws)]
    return e, ins, refs


def _run(e, ins, refs):
    outs = [np.empty(tuple(r.shape), np.float16) for r in refs]
    e.execute([t.contiguous().numpy() for t in ins], outs)
    return [torch.from_numpy(o).float() for o in outs]


CASES = [((130, 203), 300), ((257, 200), 129), ((1, 64), 70), ((2, 33, 520), 136)]


@pytest.mark.skipif(NVIDIA, reason="NVIDIA runs these tiles through the CUDA launch path only (tests/gpu)")
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize("tile", WG)
def test_linear_emulated(monkeypatch, tile, dtype):
    _force(monkeypatch, tile)
    e, ins, refs = _linear_engine(CASES, dtype)
    assert set(e.info()["tiles"].values()) == {tile}
    for i, (got, ref) in enumerate(zip(_run(e, ins, refs), refs)):
        assert_close(got, ref, 2e-2, 2e-2, f"wgmma tile {tile} {dtype} linear {CASES[i]}")


CASES_TMA = [((130, 200), 300), ((257, 72), 129), ((1, 64), 70), ((2, 33, 520), 136)]


@pytest.mark.skipif(NVIDIA, reason="NVIDIA runs these tiles through the CUDA launch path only (tests/gpu)")
@pytest.mark.parametrize("tile", TMA)
def test_linear_emulated_tensor_copies(monkeypatch, tile):
    """The tensor-copy tiles: the emulation runs FL & 8's copies (the maps are bound, unread), so
    this checks their signature, bindings and products; the copy engine itself runs on the GPU
    only (tests/gpu/test_gemm_dynsmem.py)."""
    _force(monkeypatch, tile)
    e, ins, refs = _linear_engine(CASES_TMA, torch.float16)
    assert set(e.info()["tiles"].values()) == {tile}
    for i, (got, ref) in enumerate(zip(_run(e, ins, refs), refs)):
        assert_close(got, ref, 2e-2, 2e-2, f"tensor-copy tile {tile} linear {CASES_TMA[i]}")


@pytest.mark.parametrize("case", ["fp32 input", "odd K"])
def test_tensor_copies_refuse_by_name(monkeypatch, case):
    """fp32 operands (the copy engine converts nothing) and a K whose rows are not whole 16-byte
    units (a tensor map's row stride) are refused when the tile is forced, saying what it needs."""
    _force(monkeypatch, TMA[0])
    cases = [((20, 64), 30)] if case == "fp32 input" else [((20, 203), 30)]
    with pytest.raises(Exception, match="tensor-copy GEMM needs float16 operands, K a multiple of 8"):
        _linear_engine(cases, torch.float32 if case == "fp32 input" else torch.float16)


@pytest.mark.skipif(NVIDIA, reason="NVIDIA runs these tiles through the CUDA launch path only (tests/gpu)")
@pytest.mark.parametrize("tile", [WG[-1], TMA[-1]])
def test_batched_q_kt(monkeypatch, tile):
    """q @ k^T over a batch: B transposed, its batch stride non-zero."""
    _force(monkeypatch, tile)
    q, k = rand(3, 70, 72, seed=1).half() / 8, rand(3, 65, 72, seed=2).half()
    ref = (q.float() @ k.float().transpose(-1, -2))
    g = C.Graph()
    iq = g.add_input("q", ("tensor", "float16", [3, 70, 72]))
    ik = g.add_input("k", ("tensor", "float16", [3, 65, 72]))
    (kt,) = g.add_node("aten.transpose.int", [ik, g.add_constant(-1), g.add_constant(-2)],
                       [("tensor", "float16", [3, 72, 65])])
    (y,) = g.add_node("aten.bmm.default", [iq, kt], [("tensor", "float16", [3, 70, 65])])
    g.set_outputs([y])
    e = C.Engine.build(g, cache_dir="", precision="fp16")
    assert set(e.info()["tiles"].values()) == {tile}
    out = np.empty((3, 70, 65), np.float16)
    e.execute([q.numpy(), k.numpy()], [out])
    assert_close(torch.from_numpy(out).float(), ref, 2e-2, 2e-2, f"wgmma tile {tile} q @ k^T")


@pytest.mark.parametrize("tile", WG[:1])
def test_row_major_b_is_refused_by_name(monkeypatch, tile):
    """x @ W with W [K, N] (not transposed): the forced tile cannot take it and says why."""
    _force(monkeypatch, tile)
    g = C.Graph()
    a = g.add_input("a", ("tensor", "float16", [20, 64]))
    b = g.add_input("b", ("tensor", "float16", [64, 30]))
    (y,) = g.add_node("aten.mm.default", [a, b], [("tensor", "float16", [20, 30])])
    g.set_outputs([y])
    with pytest.raises(Exception, match="warpgroup-MMA GEMM needs .*B transposed"):
        C.Engine.build(g, cache_dir="", precision="fp16")


@pytest.mark.skipif(not NVIDIA, reason="the OpenCL refusal concerns NVIDIA devices")
@pytest.mark.parametrize("tile", WG[:1])
def test_opencl_launch_refused_on_nvidia(monkeypatch, tile):
    """On NVIDIA the tile builds only on compute capability 9.0 and OpenCL never launches it: its
    stages exceed OpenCL's local memory, and its PTX carries sm_90a statements as comments."""
    _force(monkeypatch, tile)
    cases = [((130, 200), 136)]
    try:
        e, ins, refs = _linear_engine(cases, torch.float16)
    except Exception as ex:   # not an sm_90 device: refused by name at build
        assert "compute capability 9.0" in str(ex) or "warpgroup" in str(ex), ex
        return
    with pytest.raises(Exception, match="only the CUDA launch path runs"):
        _run(e, ins, refs)
