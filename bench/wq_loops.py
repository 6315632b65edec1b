"""The weight-only int8/int4 CPU step's GEMV loops side by side (issue 35): one decode-shaped
torchtrt_c.wq_linear engine a layout (x [M, K] times the dequantized W [N, K]^T, the 1B model's
MLP up projection by default), run with each loop of backend/cpu/native_wq.c as the cap
(TORCHTRT_C_NATIVE_WQ_ISA = avx2, avx512, vnni: read on every call, so one engine serves all),
interleaved, medians of --runs batches of 10 calls. GB/s = bytes of the packed weights with their
scales (and zero points) / time. Loops the CPU lacks run as the best it has (the table says
which ran).

    PYTHONPATH=$PWD python3 bench/wq_loops.py --nk 8192,2048 --rows 1,4,8

--crossover: the GEMV against the large-M path (dequantized weight blocks + the float32 matmul,
TORCHTRT_C_NATIVE_WQ_GEMV_MAX_M=0; also read on every call) on one engine a shape, layout and M,
the GEMV with each loop of --loops as the cap (float loops up to --float-max-m rows), all
interleaved; --nk takes several shapes (8192,2048:768,768). The path that ran is checked by the
GEMV's counters. Medians of --runs batches (of calls adding up to ~30 ms).

    PYTHONPATH=$PWD python3 bench/wq_loops.py --crossover --nk 768,768:3072,768 --rows 1,8,16,32,64
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))

LOOPS = ("avx2", "avx512", "vnni")


class WQ(torch.nn.Module):
    def __init__(self, q, s, z, group, bits):
        super().__init__()
        self.register_buffer("q", q)
        self.register_buffer("s", s)
        self.register_buffer("z", z)
        self.group, self.bits = group, bits

    def forward(self, x):
        return torch.ops.torchtrt_c.wq_linear(x, self.q, self.s, self.z, self.group, self.bits)


def weights(N, K, group, bits):
    from torchtrt_c.dynamo._weight_only import pack_int4
    g = torch.Generator().manual_seed(0)
    s = torch.rand(N, K // group, generator=g) * 0.05 + 0.01
    if bits == 8:
        return torch.randint(-128, 128, (N, K), generator=g, dtype=torch.int8), s, None
    return pack_int4(torch.randint(0, 16, (N, K), generator=g)), s, torch.randint(0, 16, s.shape, generator=g).float()


def crossover(a):
    import torchtrt_c
    import torchtrt_c._C as C
    loops = a.loops.split(",")
    cols = loops + ["matmul"]
    print(f"# wq_linear GEMV loops vs dequantized blocks + matmul on CPU, step threads "
          f"{C.native_cpu()['step_threads']}, best loop {C.native_cpu()['wq_isa']}, matmul {C.native_cpu()['gemm']}; "
          f"load {os.getloadavg()[0]:.2f}")
    print("| N x K | layout | M | " + " | ".join(f"{c} ms" for c in cols) + " | matmul / best GEMV |")
    print("|---|---|---|" + "---|" * (len(cols) + 1))
    for nk in a.nk.split(":"):
        N, K = (int(v) for v in nk.split(","))
        for layout in a.layouts.split(","):
            b, g = layout.split(":")
            bits, group = int(b[3:]), (K if g == "K" else int(g))
            q, s, z = weights(N, K, group, bits)
            for M in (int(m) for m in a.rows.split(",")):
                x = torch.randn(M, K)
                trt = torchtrt_c.compile(WQ(q, s, z, group, bits).eval(), inputs=[x], min_block_size=1)
                run = [c for c in cols if c in ("vnni", "matmul") or M <= a.float_max_m]
                times = {c: [] for c in run}
                ran = {}

                def setup(c):
                    if c == "matmul":
                        os.environ["TORCHTRT_C_NATIVE_WQ_GEMV_MAX_M"] = "0"
                        os.environ.pop("TORCHTRT_C_NATIVE_WQ_ISA", None)
                    else:
                        os.environ["TORCHTRT_C_NATIVE_WQ_GEMV_MAX_M"] = "100000"
                        os.environ["TORCHTRT_C_NATIVE_WQ_ISA"] = c

                reps = {}
                with torch.no_grad():
                    for c in run:   # warm-up, and the calls a batch
                        setup(c)
                        trt(x)
                        t = time.perf_counter()
                        trt(x)
                        reps[c] = max(1, min(10, int(0.03 / (time.perf_counter() - t))))
                    for _ in range(a.runs):
                        for c in run:   # interleaved: the machine's load hits every path alike
                            setup(c)
                            before = C.native_cpu()["wq_calls"]
                            t = time.perf_counter()
                            for _ in range(reps[c]):
                                trt(x)
                            times[c].append((time.perf_counter() - t) / reps[c])
                            after = C.native_cpu()["wq_calls"]
                            d = {k: after[k] - before[k] for k in after}
                            ran[c] = "matmul" if not any(d.values()) else max(d, key=d.get)
                for v in ("TORCHTRT_C_NATIVE_WQ_GEMV_MAX_M", "TORCHTRT_C_NATIVE_WQ_ISA"):
                    os.environ.pop(v, None)
                med = {c: statistics.median(times[c]) for c in run}
                cells = [("-" if c not in med else f"{med[c] * 1e3:.3f}" + ("" if ran[c] == c else f" [{ran[c]}]"))
                         for c in cols]
                best = min(med[c] for c in run if c != "matmul")
                print(f"| {N}x{K} | int{bits} g{g} | {M} | " + " | ".join(cells) + f" | {med['matmul'] / best:.2f} |",
                      flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--crossover", action="store_true")
    ap.add_argument("--loops", default="vnni,avx512,avx2", help="--crossover: the GEMV loops to time")
    ap.add_argument("--float-max-m", type=int, default=32, help="--crossover: the float loops up to these rows")
    ap.add_argument("--nk", default="8192,2048")
    ap.add_argument("--rows", default="1,4,8")
    ap.add_argument("--layouts", default="int8:K,int8:32,int4:32,int4:128", help="bits:group (K: per channel)")
    ap.add_argument("--runs", type=int, default=7)
    a = ap.parse_args()
    if a.crossover:
        return crossover(a)
    import torchtrt_c
    import torchtrt_c._C as C
    N, K = (int(v) for v in a.nk.split(","))
    print(f"# wq_linear [M, {K}] x [{N}, {K}]^T on CPU, step threads {C.native_cpu()['step_threads']}, "
          f"best loop {C.native_cpu()['wq_isa']}; load {os.getloadavg()[0]:.2f}")
    print("| layout | M | " + " | ".join(f"{l} ms (GB/s)" for l in LOOPS) + " | vnni x avx2 |")
    print("|---|---|" + "---|" * (len(LOOPS) + 1))
    for layout in a.layouts.split(","):
        b, g = layout.split(":")
        bits, group = int(b[3:]), (K if g == "K" else int(g))
        q, s, z = weights(N, K, group, bits)
        nbytes = q.numel() + 4 * s.numel() * (2 if z is not None else 1)
        for M in (int(m) for m in a.rows.split(",")):
            x = torch.randn(M, K)
            trt = torchtrt_c.compile(WQ(q, s, z, group, bits).eval(), inputs=[x], min_block_size=1)
            times = {l: [] for l in LOOPS}
            ran = {}
            with torch.no_grad():
                for _ in range(a.runs):
                    for l in LOOPS:   # interleaved: the machine's load hits every loop alike
                        os.environ["TORCHTRT_C_NATIVE_WQ_ISA"] = l
                        trt(x)
                        before = C.native_cpu()["wq_calls"]
                        t = time.perf_counter()
                        for _ in range(10):
                            trt(x)
                        times[l].append((time.perf_counter() - t) / 10)
                        after = C.native_cpu()["wq_calls"]
                        ran[l] = max(after, key=lambda k: after[k] - before[k])
            os.environ.pop("TORCHTRT_C_NATIVE_WQ_ISA", None)
            med = {l: statistics.median(times[l]) for l in LOOPS}
            cells = [f"{med[l] * 1e3:.3f} ({nbytes / med[l] / 1e9:.1f})" + ("" if ran[l] == l else f" [{ran[l]}]")
                     for l in LOOPS]
            print(f"| int{bits} g{g} | {M} | " + " | ".join(cells) + f" | {med['avx2'] / med['vnni']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
