"""A/B of the decompositions step in one process (issue 15): torch's whole-program re-trace
(ExportedProgram.run_decompositions) against torchtrt_c's node-by-node path
(lowering/_local_decomp.py), round robin on freshly captured programs, same table.

    PYTHONPATH=$PWD python3 bench/decomp_ab.py --models hf_bert,tv_resnet50 [--rounds 3] [--batch 1]

Prints per model the capture time and the median seconds of each variant, their ratio, whether
both give the same ops, and the load average (a shared machine: compare ratios, not seconds).
"""
from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _ops(ep):
    return collections.Counter(str(n.target) for n in ep.graph.nodes if n.op == "call_function")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="hf_bert,tv_resnet50")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=1)
    args = ap.parse_args(argv)
    sys.path[:0] = [os.path.join(ROOT, "tests"), os.path.join(ROOT, "bench"), ROOT]
    import torch
    from torchtrt_c._input import Input
    from torchtrt_c.dynamo._capture import capture
    from torchtrt_c.dynamo.lowering import get_decompositions
    from torchtrt_c.dynamo.lowering._local_decomp import decompose_locally
    from hf_models import HF_MODELS, build_hf
    from vision_models import build_vision
    print("| model | capture s | re-trace s | local s | re-trace / local | same ops | load |")
    print("|---|---|---|---|---|---|---|")
    for name in [s for s in args.models.split(",") if s]:
        m, make = build_hf(name) if name in HF_MODELS else build_vision(name, "full")
        x = make(args.batch)
        inputs = [Input.from_tensor(x)]
        caps, full, local = [], [], []
        same = True
        for r in range(args.rounds):
            for variant in (("full", "local") if r % 2 == 0 else ("local", "full")):
                t = time.perf_counter()
                ep = capture(m, inputs, {})
                caps.append(time.perf_counter() - t)
                table = get_decompositions()
                t = time.perf_counter()
                if variant == "full":
                    out = ep.run_decompositions(table)
                    full.append(time.perf_counter() - t)
                    ref_ops = _ops(out)
                else:
                    out = decompose_locally(ep, table)
                    if out is None:  # this program needs the re-trace: what compile then does
                        out = ep.run_decompositions(table)
                    local.append(time.perf_counter() - t)
                    loc_ops = _ops(out)
            same = same and ref_ops == loc_ops
        f, lo = statistics.median(full), statistics.median(local)
        load = open("/proc/loadavg").read().split()[0]
        print(f"| {name} | {statistics.median(caps):.2f} | {f:.2f} | {lo:.2f} | {f / lo:.1f}x | "
              f"{'yes' if same else 'NO'} | {load} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
