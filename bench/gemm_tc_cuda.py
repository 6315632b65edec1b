"""The tensor-core GEMM tiles in the CUDA launch path (what CUDA tensors get) beside cuBLAS.

    TORCHTRT_C_DEVICE=gpu python bench/gemm_tc_cuda.py [--tiles 42,49] [--shapes 4096x4096x4096,...]
        [--families tc,tf32] [--runs 50]

Per shape (M, N, K) and tile: a one-`linear` engine (x @ W^T + b, W a weight constant: the
TRANS_B kernel of the transformers) built untuned with the tile forced (TORCHTRT_C_GEMM_TILE;
no tile: the untuned default), loaded into the CUDA driver (_C.cuda_launch_new, the runtime's
CUDA launch path: dynamic shared memory beyond 48 KiB is only available there) and called
back to back on torch's stream; time per call from CUDA events around `--runs` calls, median of
5 such rounds, beside torch's F.linear (cuBLAS) timed the same way in the same rounds.
of_cublas = torch ms / engine ms. Every row's output is checked against a float64 product.
Prints one dict per row and a markdown table at the end.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
import torchtrt_c._C as C  # noqa: E402

# the tile itself, never cuBLAS in its place (the CUDA launch path's library steps, session 14)
os.environ["TORCHTRT_C_CUDA_LIBS"] = "0"
from convtest import DTYPES  # noqa: E402
from cuda_events import events_ms as _events  # noqa: E402

SHAPES = [(4096, 4096, 4096), (4096, 768, 768), (4096, 2304, 768), (4096, 3072, 768), (4096, 768, 3072),
          (6304, 3072, 768), (6304, 768, 3072)]


def _engine(m, n, k, dtype, precision, tf32, w, b):
    g = C.Graph()
    x = g.add_input("x", ("tensor", DTYPES[dtype], [m, k]))
    wi = g.add_tensor_constant("w", "float32", [n, k], w.numpy())
    bi = g.add_tensor_constant("b", "float32", [n], b.numpy())
    (y,) = g.add_node("aten.linear.default", [x, wi, bi], [("tensor", DTYPES[dtype], [m, n])])
    g.set_outputs([y])
    return C.Engine.build(g, name="gemm", cache_dir="", precision=precision, optimization_level=0, tf32_matmul=tf32)


def row(m, n, k, family, tile, runs):
    tf32 = family == "tf32"
    dtype = torch.float32 if tf32 else torch.float16
    gen = torch.Generator().manual_seed(m * 7 + n * 3 + k)
    w = (torch.randn(n, k, generator=gen) / k ** 0.5).float()
    b = torch.randn(n, generator=gen).float()
    if tile is None:
        os.environ.pop("TORCHTRT_C_GEMM_TILE", None)
    else:
        os.environ["TORCHTRT_C_GEMM_TILE"] = str(tile)
    try:
        eng = _engine(m, n, k, dtype, "fp32" if tf32 else "fp16", tf32, w, b)
    finally:
        os.environ.pop("TORCHTRT_C_GEMM_TILE", None)
    r = {"family": family, "M": m, "N": n, "K": k, "tile": list(eng.info()["tiles"].values())[0],
         "forced": tile is not None}
    cap, why = C.cuda_launch_new(eng, torch.cuda.current_device())
    if cap is None:
        r["error"] = f"CUDA launch refused: {why}"
        return r
    x = torch.randn(m, k, generator=gen).to(dtype).cuda()
    out = torch.empty(m, n, dtype=dtype, device="cuda")
    nb = C.cuda_launch_arena(cap, [(m, k)])
    arena = torch.empty(nb, dtype=torch.uint8, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    args = (cap, [x.data_ptr()], [(m, k)], [out.data_ptr()], arena.data_ptr(), nb, stream)

    def ours():
        why = C.cuda_launch_run(*args)
        if why is not None:
            raise RuntimeError(why)

    tw, tb = w.to(dtype).cuda(), b.to(dtype).cuda()
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        theirs = lambda: torch.nn.functional.linear(x, tw, tb)  # noqa: E731
        for _ in range(3):
            ours(), theirs()
        torch.cuda.synchronize()
        o_ms, t_ms = [], []
        for _ in range(5):
            o_ms.append(_events(ours, runs))
            t_ms.append(_events(theirs, runs))
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev
    ref = x.double() @ w.cuda().double().t() + b.cuda().double()
    ours()
    torch.cuda.synchronize()
    o, t = statistics.median(o_ms), statistics.median(t_ms)
    fl = 2.0 * m * n * k
    r["dyn_KiB"] = C.cuda_launch_stats(cap)["dyn_shared_max"] / 1024
    r.update(ttc_ms=round(o, 4), torch_ms=round(t, 4), ttc_TFLOPs=round(fl / o / 1e9, 1),
             torch_TFLOPs=round(fl / t / 1e9, 1), of_cublas=round(t / o, 3),
             rel_err=float((out.double() - ref).abs().max() / ref.abs().max()))
    del eng, cap
    return r


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--families", default="tc")
    ap.add_argument("--shapes", default="")
    ap.add_argument("--tiles", default="", help="candidate indices (comma-separated; 'd' = the untuned default)")
    ap.add_argument("--runs", type=int, default=30)
    a = ap.parse_args(argv)
    shapes = [tuple(int(v) for v in s.split("x")) for s in a.shapes.split(",") if s] or SHAPES
    fams = [f for f in a.families.split(",") if f]
    want = [v for v in a.tiles.split(",") if v] or ["d"]
    tiles = {t["index"]: t["family"] for t in C.gemm_tiles()}
    rows = []
    for (m, n, k) in shapes:
        for fam in fams:
            for tv in want:
                t = None if tv == "d" else int(tv)
                if t is not None and tiles.get(t) != fam:
                    continue
                try:
                    r = row(m, n, k, fam, t, a.runs)
                except Exception as ex:  # a tile that does not build/run here: say so, go on
                    r = {"family": fam, "M": m, "N": n, "K": k, "tile": tv, "error": str(ex)[:300]}
                rows.append(r)
                print(r, flush=True)
    print("\n| family | M x N x K | tile | forced | dyn KiB | ms | TFLOP/s | cuBLAS ms | cuBLAS TFLOP/s | of cuBLAS | rel err |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['family']} | {r['M']} x {r['N']} x {r['K']} | {r['tile']} | - | error: {r['error'][:80]} |")
            continue
        print(f"| {r['family']} | {r['M']} x {r['N']} x {r['K']} | {r['tile']} | {r['forced']} | {r['dyn_KiB']:g} | {r['ttc_ms']} | "
              f"{r['ttc_TFLOPs']} | {r['torch_ms']} | {r['torch_TFLOPs']} | {r['of_cublas']} | {r['rel_err']:.2g} |")
    return rows


if __name__ == "__main__":
    main()
