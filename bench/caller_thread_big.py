"""Whether PoCL's caller-thread companion slows engines that stay on the worker threads.

    for i in 1 2 3; do
      for v in 0 1; do TORCHTRT_C_CALLER_THREAD=$v PYTHONPATH=$PWD python3 bench/caller_thread_big.py; done
    done

TORCHTRT_C_CALLER_THREAD=0 leaves PoCL's devices as they were (no basic device, one-device
contexts); the default adds the basic device to the pthread device's context, which every
buffer, program and queue of the process then lives in. The companion is process-wide, so the
comparison is between processes: run the settings alternately and compare medians. Prints the
median end-to-end call (ms) of each model and how many of its engines run on the caller's
thread (big engines: none).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests"), os.path.join(ROOT, "bench")]

import torchtrt_c  # noqa: E402
from torchtrt_c.runtime import _execute  # noqa: E402
from torchtrt_c.runtime._shapes import EngineMeta  # noqa: E402


class BigSoftmax(torch.nn.Module):
    """OpenCL kernels with real work (no native steps): softmax rows, then a sigmoid."""

    def forward(self, x):
        return torch.sigmoid(torch.softmax(x, -1) * 4096.0)


def _model(name):
    if name == "softmax_512x4096":
        return BigSoftmax().eval(), torch.randn(512, 4096)
    from zoo import build as zb
    m, make = zb(name, "full")
    torch.manual_seed(1)
    return m.eval(), make(1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="softmax_512x4096,resnet18")
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args(argv)
    setting = os.environ.get("TORCHTRT_C_CALLER_THREAD", "default")
    for name in args.models.split(","):
        m, x = _model(name)
        xs = x if isinstance(x, (tuple, list)) else (x,)
        trt = torchtrt_c.compile(m, inputs=list(xs), min_block_size=1)
        with torch.no_grad():
            for _ in range(3):
                trt(*xs)
            ts = []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                trt(*xs)
                ts.append((time.perf_counter() - t0) * 1e3)
        accs = [mod for n, mod in trt.named_children() if n.startswith("_run_on_acc_")]
        on = sum(bool(_execute.ENGINES.get(EngineMeta.from_json(a.meta).id, a.engine)[0].info()["caller_thread"])
                 for a in accs)
        with open("/proc/loadavg") as f:
            load = f.read().split()[0]
        print(f"CALLER_THREAD={setting:8s} {name:18s} median {statistics.median(ts):9.2f} ms  "
              f"min {min(ts):9.2f} ms  engines on the caller thread {on}/{len(accs)}  load {load}")


if __name__ == "__main__":
    main()
