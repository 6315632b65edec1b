"""Integer GEMMs (aten._int_mm: int8 x int8 -> int32, what torchao's dynamic int8 linears run)
at BERT-base's shapes (batch 32 x 128 tokens = 4096 rows): our engine's int8 tensor-core kernel
(codegen_qgemm.c gen_qgemm_mma, TORCHTRT_C_QGEMM_MMA=1), its portable kernel (=0) and torch's own
_int_mm (cuBLASLt on CUDA), side by side in one process; medians of --runs timings, TOPS and the
ratio to torch. Results must be exact (int32): checked once per shape.

    PYTHONPATH=$PWD python3 bench/int_mm.py [--rows 4096] [--runs 5]
"""
import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from llm import sync  # noqa: E402

SHAPES = [(768, 768), (3072, 768), (768, 3072)]   # (N, K): attention projections, FFN up, FFN down


class IntMM(torch.nn.Module):
    def __init__(self, w):
        super().__init__()
        self.register_buffer("w", w)

    def forward(self, x):
        return torch._int_mm(x, self.w.t())


def timed(fn, dev, reps):
    fn()
    sync(dev)
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    sync(dev)
    return (time.perf_counter() - t) / reps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--device", default=None)
    a = ap.parse_args()
    import torchtrt_c
    dev = torch.device(a.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "CPU"
    reps = 20 if dev.type == "cuda" else 2
    print(f"# _int_mm [{a.rows}, K] x [K, N] on {name}; torch {torch.__version__}; medians of {a.runs}")
    print("| N | K | engine int8 mma ms | engine portable ms | torch._int_mm ms | mma TOPS | mma / torch |")
    print("|---|---|---|---|---|---|---|")
    g = torch.Generator().manual_seed(0)
    for N, K in SHAPES:
        w = torch.randint(-128, 128, (N, K), generator=g, dtype=torch.int8)
        x = torch.randint(-128, 128, (a.rows, K), generator=g, dtype=torch.int8).to(dev)
        m = IntMM(w).to(dev).eval()
        ref = torch._int_mm(x, m.w.t())
        out = {}
        # the OpenCL kernels: on a CPU with oneDNN the product is otherwise a native step
        # (native_qmm.c, timed by bench/quant_dynamic.py), which neither row would time
        os.environ["TORCHTRT_C_NATIVE_QMM"] = "0"
        for mode in ("1", "0"):
            os.environ["TORCHTRT_C_QGEMM_MMA"] = mode
            trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
            with torch.no_grad():
                assert torch.equal(trt(x), ref), f"engine (QGEMM_MMA={mode}) differs from torch._int_mm"
                out[mode] = statistics.median(timed(lambda: trt(x), dev, reps) for _ in range(a.runs))
            del trt
        os.environ.pop("TORCHTRT_C_QGEMM_MMA", None)
        os.environ.pop("TORCHTRT_C_NATIVE_QMM", None)
        tt = statistics.median(timed(lambda: torch._int_mm(x, m.w.t()), dev, reps) for _ in range(a.runs))
        ops = 2 * a.rows * N * K
        print(f"| {N} | {K} | {out['1'] * 1e3:.3f} | {out['0'] * 1e3:.3f} | {tt * 1e3:.3f} | "
              f"{ops / out['1'] / 1e12:.1f} | {tt / out['1']:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
