"""One scaled-dot-product attention engine, built native (backend/cpu/native_attn.c) and with
TORCHTRT_C_NATIVE_ATTN=0 (the OpenCL kernel), beside torch's SDPA on the same tensors, round
robin in one process (medians of rounds, ms). The machine may be shared: read ratios.

    python bench/cpu_attention.py [--shape 1,12,128,64] [--rounds 7] [--causal]
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torchtrt_c._C as C  # noqa: E402


def engine(native, shape, causal):
    os.environ["TORCHTRT_C_NATIVE_ATTN"] = "1" if native else "0"
    t = ("tensor", "float32", list(shape))
    g = C.Graph()
    ins = [g.add_input(n, t) for n in "qkv"]
    L = g.add_constant
    (y,) = g.add_node("aten.scaled_dot_product_attention.default",
                      ins + [L(None), L(0.0), L(causal), L(None), L(False)], [t])
    g.set_outputs([y])
    return C.Engine.build(g, name="attention", cache_dir="")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", default="1,12,128,64", help="B,H,L,E (BERT-base at sequence 128 by default)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--causal", action="store_true")
    a = ap.parse_args()
    shape = tuple(int(x) for x in a.shape.split(","))
    old = os.environ.get("TORCHTRT_C_NATIVE_ATTN")
    q, k, v = (torch.randn(shape) for _ in range(3))
    xs, out = [t.numpy() for t in (q, k, v)], np.empty(shape, np.float32)
    fns = {n: (lambda e=engine(n == "native", shape, a.causal): e.execute(xs, [out])) for n in ("native", "opencl")}
    if old is None:
        os.environ.pop("TORCHTRT_C_NATIVE_ATTN", None)
    else:
        os.environ["TORCHTRT_C_NATIVE_ATTN"] = old
    fns["torch"] = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=a.causal)
    res = {n: [] for n in fns}
    with torch.inference_mode():
        for _ in range(a.rounds):
            for n, f in fns.items():
                f()
                ts = []
                for _ in range(a.runs):
                    t0 = time.perf_counter()
                    f()
                    ts.append(time.perf_counter() - t0)
                res[n].append(statistics.median(ts))
    md = {n: statistics.median(v) * 1e3 for n, v in res.items()}
    print(f"attention {shape}{' causal' if a.causal else ''}: " + "  ".join(f"{n} {ms:.3f} ms" for n, ms in md.items())
          + f"  | native/opencl {md['native'] / md['opencl']:.2f}  native/torch {md['native'] / md['torch']:.2f}")


if __name__ == "__main__":
    main()
