"""Where the pipelined tensor-core GEMM's time goes (issue 12 item 2): one GEMM (bench/gemm_tc.py's
row) per tile and kernel variant, each after a 0.3 s cuBLAS burn so that the GPU runs at its
load clocks. The variants need a build with bench/probe/gemm_tc_diag.patch applied (a copy of
the tree on the GPU machine, never committed: the GEMM codegen then prepends $TTC_TC_DIAG to
gemm_tc.cl): TC_NOLOAD (no global->local copies in the k loop), TC_NOLDSM (fragments not read
from local memory), TC_NOMMA (no mma), TC_NOBAR (no barrier in the k loop), TC_NOEPI (no
stores); their results are wrong by design, only their times count (bench/RESULTS.md, session 8).
    git apply bench/probe/gemm_tc_diag.patch && python3 setup.py -q build_ext --inplace -j 16
    TORCHTRT_C_DEVICE=gpu python3 bench/probe/gemm_tc_diag.py --tiles 26,39 --shape 4096x4096x4096"""
import argparse, os, pathlib, subprocess, sys, time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import gemm_tc  # noqa: E402


def burn(s=0.3):
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.half)
    t = time.perf_counter()
    while time.perf_counter() - t < s:
        for _ in range(20):
            a @ a
        torch.cuda.synchronize()


ap = argparse.ArgumentParser()
ap.add_argument("--tiles", default="26")
ap.add_argument("--shape", default="4096x4096x4096")
ap.add_argument("--diags", default=",TC_NOLOAD,TC_NOLDSM,TC_NOMMA,TC_NOBAR,TC_NOLOAD TC_NOBAR")
a = ap.parse_args()
m, n, k = (int(v) for v in a.shape.split("x"))
for tile in (int(t) for t in a.tiles.split(",")):
    for d in a.diags.split(","):
        os.environ["TTC_TC_DIAG"] = "".join(f"#define {x} 1\n" for x in d.split())
        burn()
        clk = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm", "--format=csv,noheader"], capture_output=True,
                             text=True).stdout.strip()
        try:
            r = gemm_tc.row(m, n, k, "tc", tile, True)
            print({"tile": tile, "diag": d or "-", "TFLOPs": r["ttc_TFLOPs"], "ms": r["ttc_kernel_ms"],
                   "of_cublas": r["of_cublas"], "err": round(r["ttc_rel_err"], 4), "clk_after_burn": clk}, flush=True)
        except Exception as ex:
            print({"tile": tile, "diag": d, "error": str(ex)[:300]}, flush=True)
