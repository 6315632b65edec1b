"""Depthwise 7x7 convolutions of ConvNeXt-T (stages 1-4) on the selected OpenCL device: the row
kernel (conv2d_dw.cl, TORCHTRT_C_DW=rows) against the column kernel (conv2d_dw_col.cl, the
default where it applies), kernel device time from OpenCL profiling events, the two variants
profiled alternately in one process (median of --rounds rounds of --runs calls).

    python bench/dw_ab.py [--batch 32] [--precision fp16] [--rounds 5] [--runs 10]
"""
from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import sys

import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torchtrt_c  # noqa: E402
from torchtrt_c.runtime import profile_engines  # noqa: E402

STAGES = [(96, 56), (192, 28), (384, 14), (768, 7)]
VARIANTS = {"rows": "rows", "col": ""}


def build(c, hw, batch, dtype, variant):
    os.environ["TORCHTRT_C_DW"] = VARIANTS[variant]
    m = torch.nn.Conv2d(c, c, 7, padding=3, groups=c).eval().to(dtype)
    x = torch.randn(batch, c, hw, hw).to(dtype)
    prec = {dtype}
    trt = torchtrt_c.compile(m, inputs=[x], enabled_precisions=prec, min_block_size=1)
    return trt, x


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--precision", default="fp16", choices=["fp16", "fp32"])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args(argv)
    dtype = torch.float16 if args.precision == "fp16" else torch.float32
    print(f"| C x HW (b{args.batch} {args.precision}) | rows us | col us | col / rows |")
    print("|---|---|---|---|")
    for c, hw in STAGES:
        mods = {v: build(c, hw, args.batch, dtype, v) for v in VARIANTS}
        os.environ.pop("TORCHTRT_C_DW", None)
        t = {v: [] for v in VARIANTS}
        for _ in range(args.rounds):
            for v, (trt, x) in mods.items():
                rows = profile_engines(trt, [x], runs=args.runs, warmup=2)
                t[v].append(sum(r["ms"] for r in rows if r["kind"] == "conv2d") * 1e3)
        med = {v: statistics.median(ts) for v, ts in t.items()}
        print(f"| {c} x {hw}x{hw} | {med['rows']:.1f} | {med['col']:.1f} | {med['col'] / med['rows']:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
