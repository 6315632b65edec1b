"""fp32 SIMT GEMM candidates on the zoo's transformer linear shapes (BERT-base / ViT-B/16 rows
M = 128, 197 at batch 1 and 4096 at batch 32; weights [N, K], so TRANS_B) beside torch's
F.linear on CUDA (TF32 off); shapes BxMxNxK are batched attention products instead (bmm,
B not transposed; a trailing "t": q @ k^T, B transposed). Each candidate is forced with TORCHTRT_C_GEMM_TILE and timed by
its kernel's device time (Engine.profile: OpenCL profiling events, inputs resident); torch by
CUDA events. Then the untuned choice and the tuned one (optimization_level 3).

    python bench/gemm_small.py [--tiles 3,4,...] [--shapes 128x768x768,12x128x128x64t,...] [--no-tune]
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
import torchtrt_c._C as C  # noqa: E402
from convtest import Const, _add_arg  # noqa: E402
from cuda_events import events_ms  # noqa: E402

SHAPES = [f"{m}x{n}x{k}" for m in (128, 197, 4096) for (n, k) in ((768, 768), (3072, 768), (768, 3072))]
SIMT = [3, 4, 5, 6, 7, 8] + list(range(17, 26))


def _engine(ins, op, ref, level=1, cache_dir=""):
    g = C.Graph()
    names = [_add_arg(g, a, i, False) for i, a in enumerate(ins)]
    if op == "qkt":
        (kt,) = g.add_node("aten.transpose.int", [names[1], g.add_constant(-1), g.add_constant(-2)],
                           [("tensor", "float32", [ins[1].shape[0], ins[1].shape[2], ins[1].shape[1]])])
        names, op = [names[0], kt], "aten.matmul.default"
    (y,) = g.add_node(op, names, [("tensor", "float32", list(ref.shape))], name="op")
    g.set_outputs([y])
    return C.Engine.build(g, name="lin", optimization_level=level, cache_dir=cache_dir)


def _problem(shape):
    """(engine inputs, op, reference, torch callable on CUDA) of one shape string."""
    t = shape.endswith("t")
    dims = [int(v) for v in shape.rstrip("t").split("x")]
    torch.manual_seed(0)
    if len(dims) == 3:
        m, n, k = dims
        x, w, bias = torch.randn(m, k), torch.randn(n, k) / k ** 0.5, torch.randn(n)
        ref = torch.nn.functional.linear(x.double(), w.double(), bias.double()).float()
        return [x, Const(w), Const(bias)], [x], "aten.linear.default", ref, \
            lambda d: (lambda: torch.nn.functional.linear(*d)), [x, w, bias]
    b, m, n, k = dims
    a, bb = torch.randn(b, m, k) / k ** 0.5, (torch.randn(b, n, k) if t else torch.randn(b, k, n))
    ref = (a.double() @ (bb.double().transpose(-1, -2) if t else bb.double())).float()
    fn = (lambda d: (lambda: torch.matmul(d[0], d[1].transpose(-1, -2)))) if t else \
        (lambda d: (lambda: torch.bmm(*d)))
    return [a, bb], [a, bb], "qkt" if t else "aten.bmm.default", ref, fn, [a, bb]


def _time(e, ins, ref):
    out = np.empty(tuple(ref.shape), np.float32)
    e.execute([x.numpy() for x in ins], [out])
    err = float((torch.from_numpy(out) - ref).abs().max())
    rows = e.profile([x.numpy() for x in ins], runs=20, warmup=3)
    return sum(ms for _, ms in rows) * 1e3, err, list(e.info()["tiles"].values())


def _torch_us(fn, host, runs=50):
    torch.backends.cuda.matmul.allow_tf32 = False
    return events_ms(fn([t.cuda() for t in host]), runs, warm=5) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tiles", default=",".join(map(str, SIMT)))
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--no-tune", action="store_true")
    args = ap.parse_args()
    tiles = [int(t) for t in args.tiles.split(",") if t]
    shapes = [s for s in args.shapes.split(",") if s]
    cuda = torch.cuda.is_available()
    print(f"{'shape':>16} | " + " ".join(f"{t:>6}" for t in tiles) +
          " |  best    torch | untuned(tile) tuned(tile)   (us; device time)", flush=True)
    for shape in shapes:
        build_in, ins, op, ref, fn, host = _problem(shape)
        cells, best = [], (1e30, None)
        for t in tiles:
            os.environ["TORCHTRT_C_GEMM_TILE"] = str(t)
            try:
                us, err, _ = _time(_engine(build_in, op, ref), ins, ref)
                cells.append(f"{us:6.1f}" if err < 1e-3 else f"{'BAD':>6}")
                if err >= 1e-3:
                    print(f"  tile {t}: max error {err}", file=sys.stderr)
                elif us < best[0]:
                    best = (us, t)
            except Exception as exc:  # a candidate that fails to build/run is reported, not fatal
                cells.append(f"{'ERR':>6}")
                print(f"  tile {t}: {str(exc)[:200]}", file=sys.stderr)
            finally:
                del os.environ["TORCHTRT_C_GEMM_TILE"]
        tt = _torch_us(fn, host) if cuda else float("nan")
        extra = ""
        if not args.no_tune:
            us0, err0, t0 = _time(_engine(build_in, op, ref), ins, ref)
            with tempfile.TemporaryDirectory() as d:
                us1, err1, t1 = _time(_engine(build_in, op, ref, level=3, cache_dir=d), ins, ref)
            bad = "" if max(err0, err1) < 1e-3 else " BAD"
            extra = f" | {us0:6.1f}({t0[0]:>2}) {us1:6.1f}({t1[0]:>2}){bad}"
        print(f"{shape:>16} | " + " ".join(cells) + f" | {best[0]:6.1f}({best[1]:>2}) {tt:6.1f}" + extra,
              flush=True)


if __name__ == "__main__":
    main()
