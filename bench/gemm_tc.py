"""The tensor-core GEMMs beside cuBLAS (torch on CUDA) on the same GPU: fp16 and TF32.

    TORCHTRT_C_DEVICE=gpu python bench/gemm_tc.py [--families tc,mma,tf32] [--shapes 4096x4096x4096,...]
        [--tiles 26,34] [--no-sweep] [--ptx DIR]

Per shape (M, N, K) and family: every candidate tile of the family forced in turn
(TORCHTRT_C_GEMM_TILE, engines built untuned), and the untuned default. fp16 rows are
`linear` layers (x @ W^T + b, W a weight constant: the TRANS_B kernels, as in the transformers)
and square `mm` of two inputs; TF32 rows the same in an fp32 engine built with tf32_matmul,
beside torch with torch.backends.cuda.matmul.allow_tf32 on. Times: the engine kernel's device
time (Engine.profile, profiling events) and torch's per call (CUDA events around back-to-back
calls); of_cublas = torch time / engine kernel time (1.0: as fast as cuBLAS). TF32 rows also
give the relative error (max |out - fp64 reference| / max |reference|) of the engine and of
torch's TF32, and of torch in true fp32. Prints one dict per row and a table at the end.
--ptx DIR writes each row's program binary (PTX text on NVIDIA's OpenCL) to DIR, to look for
local-memory spills (ld.local) or unexpected code in the main loop.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
import torchtrt_c._C as C  # noqa: E402
from convtest import DTYPES  # noqa: E402
from cuda_events import events_ms  # noqa: E402

# 4096^3, then BERT-base / GPT-2 linear layers at batch 32 x 128 tokens, ViT-B/16's MLP at batch
# 32 x 197 tokens, then batch 1
SHAPES = [(4096, 4096, 4096), (4096, 768, 768), (4096, 2304, 768), (4096, 3072, 768), (4096, 768, 3072),
          (6304, 3072, 768), (6304, 768, 3072), (128, 768, 768)]


def _engine(m, n, k, dtype, linear, precision, tf32):
    g = C.Graph()
    x = g.add_input("x", ("tensor", DTYPES[dtype], [m, k]))
    ot = ("tensor", DTYPES[dtype], [m, n])
    gen = torch.Generator().manual_seed(m * 7 + n * 3 + k)
    if linear:
        w = (torch.randn(n, k, generator=gen) / k ** 0.5).float()
        b = torch.randn(n, generator=gen).float()
        wi = g.add_tensor_constant("w", "float32", [n, k], w.numpy())
        bi = g.add_tensor_constant("b", "float32", [n], b.numpy())
        (y,) = g.add_node("aten.linear.default", [x, wi, bi], [ot])
        consts = (w, b)
    else:
        bi = g.add_input("bm", ("tensor", DTYPES[dtype], [k, n]))
        (y,) = g.add_node("aten.mm.default", [x, bi], [ot])
        consts = None
    g.set_outputs([y])
    return C.Engine.build(g, name="gemm", cache_dir="", precision=precision, optimization_level=0,
                          tf32_matmul=tf32), consts


TDEV = torch.device("cuda" if torch.cuda.is_available() else "cpu")   # cpu: dry runs only


def _torch_ms(fn, runs=20):
    if TDEV.type != "cuda":
        import time
        t = time.perf_counter()
        for _ in range(3):
            fn()
        return (time.perf_counter() - t) / 3 * 1e3
    return events_ms(fn, runs, warm=3)


def _rel(out, ref):
    return float((out.double() - ref).abs().max() / ref.abs().max())


def _dump_ptx(eng, path):
    """The program binary inside the engine blob: on NVIDIA, PTX text from `.version` on."""
    blob = bytes(eng.serialize())
    i = blob.find(b".version")
    if i >= 0:
        j = blob.find(b"\0", i)
        pathlib.Path(path).write_bytes(blob[i:j if j >= 0 else len(blob)])


def row(m, n, k, family, tile, linear, errors=False, ptx=None):
    tf32 = family == "tf32"
    dtype = torch.float32 if tf32 else torch.float16
    precision = "fp32" if tf32 else "fp16"
    if tile is None:
        os.environ.pop("TORCHTRT_C_GEMM_TILE", None)
    else:
        os.environ["TORCHTRT_C_GEMM_TILE"] = str(tile)
    try:
        eng, consts = _engine(m, n, k, dtype, linear, precision, tf32)
    finally:
        os.environ.pop("TORCHTRT_C_GEMM_TILE", None)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(m, k, generator=gen).to(dtype)
    ins = [x] if linear else [x, torch.randn(k, n, generator=gen).to(dtype)]
    np_in = [t.numpy() for t in ins]
    prof = eng.profile(np_in, runs=10, warmup=2)
    k_ms = sum(ms for name, ms in prof if "gemm" in name)
    wall = sorted(eng.benchmark(np_in, runs=10, warmup=2))[5]
    dev = [t.to(TDEV) for t in ins]
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        if linear:
            w, b = (c.to(dtype).to(TDEV) for c in consts)
            t_ms = _torch_ms(lambda: torch.nn.functional.linear(dev[0], w, b))
        else:
            t_ms = _torch_ms(lambda: torch.mm(dev[0], dev[1]))
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev
    flops = 2.0 * m * n * k
    r = {"family": family, "op": "linear" if linear else "mm", "M": m, "N": n, "K": k,
         "tile": list(eng.info()["tiles"].values())[0], "forced": tile is not None,
         "ttc_kernel_ms": round(k_ms, 4), "ttc_wall_ms": round(wall, 4), "torch_ms": round(t_ms, 4),
         "ttc_TFLOPs": round(flops / k_ms / 1e9, 1), "torch_TFLOPs": round(flops / t_ms / 1e9, 1),
         "of_cublas": round(t_ms / k_ms, 3)}
    # every row checks its output against a float64 product on the torch device
    out = np.empty((m, n), np.float32 if tf32 else np.float16)
    eng.execute(np_in, [out])
    xs = [t.to(TDEV).double() for t in ins]
    ref = xs[0] @ (consts[0].to(TDEV).double().t() if linear else xs[1])
    if linear:
        ref = ref + consts[1].to(TDEV).double()
    r["ttc_rel_err"] = _rel(torch.from_numpy(out).to(TDEV), ref)
    if errors:
        if linear:
            tw, tb = (c.to(dtype).to(TDEV) for c in consts)
            fn = lambda: torch.nn.functional.linear(dev[0], tw, tb)  # noqa: E731
        else:
            fn = lambda: torch.mm(dev[0], dev[1])  # noqa: E731
        for flag, key in ((True, "torch_tf32_rel_err"), (False, "torch_fp32_rel_err")):
            torch.backends.cuda.matmul.allow_tf32 = flag
            r[key] = _rel(fn(), ref)
        torch.backends.cuda.matmul.allow_tf32 = prev
    if ptx:
        os.makedirs(ptx, exist_ok=True)
        _dump_ptx(eng, os.path.join(ptx, f"{family}_{r['op']}_{m}x{n}x{k}_t{r['tile']}.ptx"))
    del eng
    return r


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--families", default="tc,mma,tf32")
    ap.add_argument("--shapes", default="")
    ap.add_argument("--no-sweep", action="store_true", help="only the untuned default tile")
    ap.add_argument("--tiles", default="", help="only these candidate indices (comma-separated)")
    ap.add_argument("--ptx", default="", help="directory for each row's program binary (PTX on NVIDIA)")
    a = ap.parse_args(argv)
    shapes = [tuple(int(v) for v in s.split("x")) for s in a.shapes.split(",") if s] or SHAPES
    tiles = C.gemm_tiles()
    rows = []
    only = {int(v) for v in a.tiles.split(",") if v}
    # shapes outermost: a run cut short still has every family's rows for the first shapes
    for (m, n, k) in shapes:
        for fam in [f for f in a.families.split(",") if f]:
            cand = [t["index"] for t in tiles if t["family"] == fam and (not only or t["index"] in only)]
            for linear in ((True, False) if m == n == k else (True,)):
                todo = [None] + ([] if a.no_sweep else cand)
                if fam == "mma":
                    todo = cand   # the older kernels: forced only (the default is the family above)
                for t in todo:
                    try:
                        r = row(m, n, k, fam, t, linear, errors=(fam == "tf32" and t is None), ptx=a.ptx or None)
                    except Exception as ex:  # a tile that does not build/run here: say so, go on
                        r = {"family": fam, "M": m, "N": n, "K": k, "tile": t, "error": str(ex)[:200]}
                    rows.append(r)
                    print(r, flush=True)
    print("\n| family | op | M | N | K | default tile | default of cuBLAS | best tile | best TFLOP/s | cuBLAS TFLOP/s | best of cuBLAS | worst rel err |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    keys = sorted({(r["family"], r.get("op"), r["M"], r["N"], r["K"]) for r in rows if "error" not in r},
                  key=lambda x: (x[0], x[2:], x[1]))
    for key in keys:
        rs = [r for r in rows if "error" not in r and (r["family"], r["op"], r["M"], r["N"], r["K"]) == key]
        d = [r for r in rs if not r["forced"]]
        best = max(rs, key=lambda r: r["of_cublas"])
        print(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {key[4]} | {d[0]['tile'] if d else '-'} | "
              f"{d[0]['of_cublas'] if d else '-'} | {best['tile']} | {best['ttc_TFLOPs']} | {best['torch_TFLOPs']} | "
              f"{best['of_cublas']} | {max(r['ttc_rel_err'] for r in rs):.2g} |")
    return rows


if __name__ == "__main__":
    main()
