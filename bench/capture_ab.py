"""Capture + decompositions of the HF models, two settings of one TORCHTRT_C_* switch in ONE
process, round robin (issue 15): medians per setting, with the load average.

    PYTHONPATH=$PWD python3 bench/capture_ab.py --models hf_llama,hf_gpt2 --env TORCHTRT_C_LAZY_FX=0/1 --rounds 5

The switch must be one the capture path reads on every call (TORCHTRT_C_LAZY_FX,
TORCHTRT_C_LOCAL_DECOMPOSITIONS). Times are torchtrt_c.dynamo._capture.capture() and
decompose() as compile() calls them, for the model at batch 1.
"""
from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="hf_llama")
    ap.add_argument("--env", default="TORCHTRT_C_LAZY_FX=0/1", help="VAR=a/b")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    sys.path[:0] = [os.path.join(ROOT, "bench")]
    sys.path.append(ROOT)
    import torch  # noqa: F401
    from hf_models import build_hf
    from torchtrt_c._input import Input
    from torchtrt_c.dynamo._capture import capture, decompose
    var, _, vals = args.env.partition("=")
    vals = vals.split("/")
    if not var.startswith("TORCHTRT_C_") or len(vals) != 2:
        ap.error("--env must be TORCHTRT_C_<NAME>=a/b")
    old = os.environ.get(var)
    for name in [m for m in args.models.split(",") if m]:
        m, make = build_hf(name, "full")
        inp = [Input.from_tensor(make(1))]
        res = collections.defaultdict(list)
        for r in range(args.rounds):
            for v in (vals if r % 2 == 0 else vals[::-1]):
                os.environ[var] = v
                t0 = time.perf_counter()
                ep = capture(m, inp, {})
                t1 = time.perf_counter()
                decompose(ep)
                res[v].append((t1 - t0, time.perf_counter() - t1))
        with open("/proc/loadavg") as f:
            load = f.read().split()[0]
        for v in vals:
            cap = [a for a, _ in res[v]]
            dec = statistics.median(b for _, b in res[v])
            print(f"{name} {var}={v}: capture median {statistics.median(cap):.3f} s (best {min(cap):.3f}), "
                  f"decompositions {dec:.3f} s, load {load}", flush=True)
    if old is None:
        os.environ.pop(var, None)
    else:
        os.environ[var] = old
    return 0


if __name__ == "__main__":
    sys.exit(main())
