"""cuBLAS library steps on/off in the CUDA launch path, one process: per model, eager, Inductor
(unless --no-inductor) and two compiled modules (TORCHTRT_C_CUDA_LIBS=0 and =auto, or the
values of --libs, read when the engines are made; "auto:lt0" also sets TORCHTRT_C_CUDA_LT=0,
"auto:nhwc0" TORCHTRT_C_CUDA_NHWC=0, "0:tile59" forces GEMM tile 59 with the libraries off, ":wide0" sets TORCHTRT_C_GEMM_WIDE=0), timed round robin per call with
torch.cuda.synchronize (medians, ms; CUDA tensors in and out), with the engines' library
counters. torch's TF32 switches are left at their defaults unless --tf32-matmul.
    python3 bench/probe/cuda_libs_ab.py --models hf_bert,tv_vit_b_16 --batch 32 --precision fp16"""
import argparse
import copy
import os
import statistics
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [os.path.join(ROOT, "tests"), os.path.join(ROOT, "bench"), ROOT]
import torchtrt_c  # noqa: E402
from torchtrt_c.runtime import _cuda_launch, _execute  # noqa: E402
import zoo  # noqa: E402
from hf_models import HF_MODELS, build_hf  # noqa: E402
from vision_models import VISION_MODELS, build_vision  # noqa: E402


def lib_stats(trt):
    tot = {}
    for n, mod in trt.named_children():
        if n.startswith("_run_on_acc_"):
            for k, v in _cuda_launch.stats(_execute._plan(mod.meta, mod.engine)).items():
                if k.startswith("lib_"):
                    tot[k] = tot.get(k, 0) + v
    return tot


def first(o):
    while isinstance(o, (list, tuple)):
        o = o[0]
    return getattr(o, "last_hidden_state", o)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="hf_bert")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--precision", default="fp16")
    ap.add_argument("--libs", default="0,auto")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--no-inductor", action="store_true")
    ap.add_argument("--tf32-matmul", action="store_true")
    ap.add_argument("--json", default=None, help="append one JSON line per model here")
    a = ap.parse_args()
    if a.tf32_matmul:
        torch.backends.cuda.matmul.allow_tf32 = True
    dt = torch.float16 if a.precision == "fp16" else torch.float32
    print(f"device {torch.cuda.get_device_name()}, torch {torch.__version__}, matmul TF32 "
          f"{torch.backends.cuda.matmul.allow_tf32}, cuDNN TF32 {torch.backends.cudnn.allow_tf32}", flush=True)
    for name in a.models.split(","):
        builder = build_hf if name in HF_MODELS else build_vision if name in VISION_MODELS else zoo.build
        m, make = builder(name, "full")
        x = make(a.batch)
        if x.is_floating_point():
            x = x.to(dt)
        m = m.to(dt).eval()
        xd = x.to("cuda")
        fns = {"eager": copy.deepcopy(m).to("cuda")}
        t0 = time.perf_counter()
        if not a.no_inductor:
            fns["inductor"] = torch.compile(copy.deepcopy(m).to("cuda"))
        for v in a.libs.split(","):
            # "auto:lt0": cuBLASLt epilogues off (TORCHTRT_C_CUDA_LT=0); ":nhwc0" likewise; ":tileN" forces
            # GEMM tile N (TORCHTRT_C_GEMM_TILE) on every GEMM
            lib, *opts = v.split(":")
            os.environ["TORCHTRT_C_CUDA_LIBS"] = lib
            os.environ["TORCHTRT_C_CUDA_LT"] = "0" if "lt0" in opts else "1"
            os.environ["TORCHTRT_C_CUDA_NHWC"] = "0" if "nhwc0" in opts else "1"
            if "wide0" in opts:
                os.environ["TORCHTRT_C_GEMM_WIDE"] = "0"
            tile = next((o[4:] for o in opts if o.startswith("tile")), None)
            if tile:
                os.environ["TORCHTRT_C_GEMM_TILE"] = tile
            try:
                fns[f"ttc libs={v}"] = torchtrt_c.compile(copy.deepcopy(m), inputs=[x], enabled_precisions={dt}).to("cuda")
            except Exception as ex:
                print(f"  {name} libs={v}: not compiled: {type(ex).__name__}: {str(ex)[:300]}", flush=True)
            os.environ.pop("TORCHTRT_C_GEMM_TILE", None)
            os.environ.pop("TORCHTRT_C_GEMM_WIDE", None)
        os.environ.pop("TORCHTRT_C_CUDA_LIBS", None)
        os.environ.pop("TORCHTRT_C_CUDA_LT", None)
        os.environ.pop("TORCHTRT_C_CUDA_NHWC", None)
        ts = {k: [] for k in fns}
        outs = {}
        with torch.inference_mode():
            for k, f in fns.items():
                for _ in range(3):
                    outs[k] = first(f(xd))
            torch.cuda.synchronize()
            for _ in range(a.runs):
                for k, f in fns.items():
                    t1 = time.perf_counter()
                    f(xd)
                    torch.cuda.synchronize()
                    ts[k].append((time.perf_counter() - t1) * 1e3)
        med = {k: statistics.median(v) for k, v in ts.items()}
        ref = outs["eager"].float()
        scale = max(ref.abs().max().item(), 1.0)
        line = [f"{name} b{a.batch} {a.precision} (setup {time.perf_counter() - t0:.0f} s):"]
        for k in fns:
            err = (outs[k].float() - ref).abs().max().item() / scale
            r = f" {k} {med[k]:.3f} ms ({med[k] / med['eager']:.2f} eager"
            if "inductor" in med:
                r += f", {med[k] / med['inductor']:.2f} inductor"
            line.append(r + f", err {err:.1e})")
        print(";".join(line), flush=True)
        libs = {}
        for k, f in fns.items():
            if k.startswith("ttc"):
                libs[k] = lib_stats(f)
                print(f"  {k}: {libs[k]}", flush=True)
        if a.json:
            import json
            with open(a.json, "a") as fh:
                fh.write(json.dumps({"model": name, "batch": a.batch, "precision": a.precision,
                                     "device": torch.cuda.get_device_name(), "torch": torch.__version__,
                                     "tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
                                     "tf32_cudnn": torch.backends.cudnn.allow_tf32, "median_ms": med,
                                     "runs": a.runs, "lib_stats": libs}) + "\n")
        del fns, outs
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
