"""Small engines on PoCL's caller-thread companion against its worker threads (issue 13 item 4).

    PYTHONPATH=$PWD python3 bench/caller_thread_ab.py [--runs 400] [--sizes 4x64,64x256,...]

For each model and size, the model's engine is deserialised twice, TORCHTRT_C_CALLER_THREAD=0
(PoCL's pthread device: kernels on its worker threads) and =all (every launch on the calling
thread), and both engines' Engine.execute (numpy in and out) are called round robin in this process (one call of each per round,
so load from other processes hits both alike). Prints the work-items of the engine's launches
(what the default threshold, TORCHTRT_C_CALLER_THREAD_ITEMS, compares), the medians and p10s
of both and their ratio: where caller/workers passes 1, the threshold should stop.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

import torchtrt_c


class SoftmaxCumsum(torch.nn.Module):
    """Reductions that do not fuse with each other: 2 * n kernels."""

    def __init__(self, n=5):
        super().__init__()
        self.n = n

    def forward(self, x):
        for _ in range(self.n):
            x = torch.cumsum(torch.softmax(x, -1), -1)
        return x


class Elementwise(torch.nn.Module):
    """One fused elementwise kernel per reduction-free block; a sum splits it."""

    def forward(self, x):
        y = torch.sigmoid(x) * x + 1.0
        y = y - y.mean(-1, keepdim=True)
        return torch.tanh(y) * 0.5


def _engines(model, x):
    """The model's one engine, deserialised twice: on PoCL's workers and on the caller's thread."""
    trt = torchtrt_c.compile(model, inputs=[x], min_block_size=1)
    accs = [m for n, m in trt.named_children() if n.startswith("_run_on_acc_")]
    if len(accs) != 1:
        raise SystemExit(f"expected one engine, got {len(accs)}")
    blob = accs[0].engine.numpy().tobytes()
    old = os.environ.get("TORCHTRT_C_CALLER_THREAD")
    engs = []
    try:
        for mode in ("0", "all"):
            os.environ["TORCHTRT_C_CALLER_THREAD"] = mode
            engs.append(torchtrt_c._C.Engine.deserialize(blob))
    finally:
        if old is None:
            del os.environ["TORCHTRT_C_CALLER_THREAD"]
        else:
            os.environ["TORCHTRT_C_CALLER_THREAD"] = old
    return engs


def _loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=400)
    ap.add_argument("--sizes", default="4x64,16x256,64x256,64x1024,256x1024,1024x1024")
    ap.add_argument("--models", default="softmax_cumsum,elementwise")
    args = ap.parse_args(argv)
    torch.manual_seed(0)
    # devices discovered before any knob is set: TORCHTRT_C_CALLER_THREAD=0 at discovery leaves
    # PoCL's devices alone (no companion for the process)
    torchtrt_c.devices()
    models = {"softmax_cumsum": SoftmaxCumsum(), "elementwise": Elementwise()}
    print(f"# load average {_loadavg()} at the start; {args.runs} rounds")
    print(f"{'model':16s} {'size':>10s} {'kernels':>7s} {'items':>9s} {'workers us':>11s} {'p10':>7s} "
          f"{'caller us':>10s} {'p10':>7s} {'caller/workers':>15s}")
    for mname in args.models.split(","):
        model = models[mname].eval()
        for size in args.sizes.split(","):
            r, c = (int(v) for v in size.split("x"))
            x = torch.randn(r, c)
            a, b = _engines(model, x)
            ib = b.info()
            if not ib.get("caller_thread"):
                print(f"{mname:16s} {size:>10s}: no caller-thread companion on this device")
                return
            with torch.no_grad():
                ref = model(x).numpy()
            xin = [x.numpy()]
            outs = [ref.copy() * 0, ref.copy() * 0]
            for k, e in enumerate((a, b)):
                e.execute(xin, [outs[k]])
                torch.testing.assert_close(torch.from_numpy(outs[k]), torch.from_numpy(ref), rtol=1e-4, atol=1e-4)
            ts = {0: [], 1: []}
            for _ in range(10):
                a.execute(xin, [outs[0]]), b.execute(xin, [outs[1]])
            clock = time.perf_counter_ns
            for _ in range(args.runs):
                for k, e in ((0, a), (1, b)):
                    t0 = clock()
                    e.execute(xin, [outs[k]])
                    ts[k].append((clock() - t0) / 1e3)
            med = [statistics.median(ts[k]) for k in (0, 1)]
            p10 = [sorted(ts[k])[len(ts[k]) // 10] for k in (0, 1)]
            print(f"{mname:16s} {size:>10s} {ib['n_kernels']:7d} {ib['launch_items']:9d} {med[0]:11.1f} {p10[0]:7.1f} "
                  f"{med[1]:10.1f} {p10[1]:7.1f} {med[1] / med[0]:15.2f}")
    print(f"# load average {_loadavg()} at the end")


if __name__ == "__main__":
    main()
