"""Compile the tiny model zoo on the default OpenCL device and compare with eager.

    python bench/smoke.py [--size tiny|full] [--batch 2]
"""
import argparse
import sys
import time
import pathlib

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
import torchtrt_c  # noqa: E402
from zoo import build  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--size", default="tiny")
ap.add_argument("--batch", type=int, default=2)
ap.add_argument("--models", default="resnet18,resnet50,mobilenet_v2,vit_b16,bert_base,gpt2")
ap.add_argument("--fp16", action="store_true")
a = ap.parse_args()
print("devices:", torchtrt_c.devices())
for name in a.models.split(","):
    m, mk = build(name, a.size)
    x = mk(a.batch)
    try:
        t0 = time.time()
        prec = {torch.float16} if a.fp16 else {torch.float32}
        trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1, enabled_precisions=prec)
        ct = time.time() - t0
        with torch.no_grad():
            ref = m(x)
            out = trt(x)
        ref = ref[0] if isinstance(ref, (tuple, list)) else ref
        out = out[0] if isinstance(out, (tuple, list)) else out
        err = (out.float() - ref.float()).abs().max().item() / max(ref.abs().max().item(), 1e-12)
        kids = [n for n, _ in trt.named_children()]
        t0 = time.time()
        for _ in range(5):
            trt(x)
        dt = (time.time() - t0) / 5
        print(f"{name}: compile {ct:.1f}s, submodules {kids}, max rel err {err:.2e}, {dt*1e3:.1f} ms/call")
    except Exception as e:
        print(f"{name}: FAILED {type(e).__name__}: {str(e)[:400]}")
