"""CUDA graphs on/off in the CUDA launch path, one process: per model, two compiled modules
(TORCHTRT_C_CUDA_GRAPHS=8 and =0 when the engines are made), timed round robin per call with
torch.cuda.synchronize (medians, ms), with the engines' launch counters.
    python3 bench/probe/cuda_graphs_ab.py --models resnet18,bert_base --batch 1 --precision fp32"""
import argparse
import copy
import os
import statistics
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [os.path.join(ROOT, "tests"), ROOT]
import torchtrt_c  # noqa: E402
from torchtrt_c.runtime import _cuda_launch, _execute  # noqa: E402
import zoo  # noqa: E402


def stats(trt):
    out = []
    for n, mod in trt.named_children():
        if n.startswith("_run_on_acc_"):
            out.append(_cuda_launch.stats(_execute._plan(mod.meta, mod.engine)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="resnet18")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--runs", type=int, default=200)
    a = ap.parse_args()
    dt = torch.float16 if a.precision == "fp16" else torch.float32
    for name in a.models.split(","):
        m, make = zoo.build(name)
        x = make(a.batch)
        if x.is_floating_point():
            x = x.to(dt)
        m = m.to(dt).eval()
        mods = {}
        for g in ("8", "0"):
            os.environ["TORCHTRT_C_CUDA_GRAPHS"] = g
            mods[g] = torchtrt_c.compile(copy.deepcopy(m), inputs=[x], min_block_size=1,
                                         enabled_precisions={dt}).to("cuda")
        os.environ.pop("TORCHTRT_C_CUDA_GRAPHS")
        xd = x.to("cuda")
        ts = {g: [] for g in mods}
        with torch.inference_mode():
            outs = {g: mods[g](xd) for g in mods}
            for _ in range(3):
                for g in mods:
                    outs[g] = mods[g](xd)
            same = all(torch.equal(a_, b_) for a_, b_ in zip(
                outs["8"] if isinstance(outs["8"], (list, tuple)) else [outs["8"]],
                outs["0"] if isinstance(outs["0"], (list, tuple)) else [outs["0"]]))
            torch.cuda.synchronize()
            for _ in range(a.runs):
                for g in mods:
                    t0 = time.perf_counter()
                    outs[g] = mods[g](xd)
                    torch.cuda.synchronize()
                    ts[g].append((time.perf_counter() - t0) * 1e3)
        on, off = statistics.median(ts["8"]), statistics.median(ts["0"])
        print(f"{name} b{a.batch} {a.precision}: graphs {on:.3f} ms, plain {off:.3f} ms, ratio {on / off:.2f}; "
              f"same bits {same}; stats on {stats(mods['8'])}; off {stats(mods['0'])}", flush=True)


if __name__ == "__main__":
    main()
