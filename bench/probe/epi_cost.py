"""What the library epilogue kernels (<kernel>_e, codegen.c gen_lib_epi) cost on the CUDA
launch path: Linear(96 -> 384) at ConvNeXt-T stage 1's batch-32 shape ([32, 56, 56, 96]
channels-last), TORCHTRT_C_CUDA_LIBS=1 (cuBLAS, then the epilogue), per activation and
precision; beside torch's own kernels on the same [32, 56, 56, 384] tensor (the activation
alone, and a copy as the memory-bound floor). Device microseconds per call from torch.profiler.
    python3 bench/probe/epi_cost.py"""
import collections
import os
import sys

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [ROOT]
os.environ["TORCHTRT_C_CUDA_LIBS"] = "1"
import torchtrt_c  # noqa: E402

ACTS = {"none": lambda y: y, "relu": F.relu, "gelu": F.gelu, "gelu_tanh": lambda y: F.gelu(y, approximate="tanh"),
        "gelu+add": None}


class M(torch.nn.Module):
    def __init__(self, act):
        super().__init__()
        self.l, self.act = torch.nn.Linear(96, 384), act

    def forward(self, x, r):
        y = self.l(x)
        return F.gelu(y) + r if self.act == "gelu+add" else ACTS[self.act](y)


def prof(fn, runs=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(runs):
            fn()
        torch.cuda.synchronize()
    out = collections.defaultdict(float)
    for ev in p.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA:
            out[ev.name] += ev.device_time / runs
    return out


def main():
    print(torch.cuda.get_device_name(), torch.__version__)
    for dt in (torch.float16, torch.float32):
        x = torch.randn(32, 56, 56, 96, dtype=dt)
        r = torch.randn(32, 56, 56, 384, dtype=dt)
        n = r.numel()
        y = r.cuda()
        t = prof(lambda: y.clone())
        print(f"{dt}: torch copy of {n} elements {sum(t.values()):.1f} us "
              f"({2 * n * y.element_size() / sum(t.values()) / 1e3:.0f} GB/s)")
        for name, fn in (("gelu", F.gelu), ("gelu_tanh", lambda v: F.gelu(v, approximate="tanh")), ("relu", F.relu)):
            t = prof(lambda: fn(y))
            print(f"{dt}: torch {name} {sum(t.values()):.1f} us")
        for act in ACTS:
            m = M(act).eval().to(dt)
            trt = torchtrt_c.compile(m, inputs=[x, r], min_block_size=1,
                                     enabled_precisions={dt})
            xc, rc = x.cuda(), r.cuda()
            t = prof(lambda: trt(xc, rc))
            e = {k: v for k, v in t.items() if k.endswith("_e")}
            rest = {k: v for k, v in t.items() if not k.endswith("_e")}
            print(f"{dt}: ttc linear+{act}: epilogue {sum(e.values()):.1f} us {sorted(e)}; rest "
                  + ", ".join(f"{k[:28]} {v:.1f}" for k, v in rest.items()))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
