"""Quickstart: compile a small CNN with torchtrt_c and run it on the default OpenCL device.

    python examples/quickstart.py

Prints the OpenCL devices, how the model was split, the max error against eager PyTorch and
the time per call of both.
"""
import time

import torch
import torch.nn as nn

import torchtrt_c


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


def bench(fn, x, n=20):
    fn(x)
    t0 = time.perf_counter()
    for _ in range(n):
        fn(x)
    return (time.perf_counter() - t0) / n * 1e3


def main():
    print("OpenCL devices:")
    for d in torchtrt_c.devices():
        print("  ", d)
    print("default:", torchtrt_c.default_device())

    torch.manual_seed(0)
    model = SmallCNN().eval()
    x = torch.randn(8, 3, 32, 32)
    trt = torchtrt_c.compile(model, inputs=[torchtrt_c.Input.from_tensor(x)], min_block_size=3)
    engines = [n for n, _ in trt.named_children() if n.startswith("_run_on_acc_")]
    fallbacks = [n for n, _ in trt.named_children() if n.startswith("_run_on_gpu_")]
    print(f"compiled: {len(engines)} engine(s) {engines}, {len(fallbacks)} torch segment(s) {fallbacks}")

    with torch.no_grad():
        want = model(x)
        got = trt(x)
        err = (got - want).abs().max().item()
        print(f"max abs error vs eager: {err:.2e}")
        t_eager, t_trt = bench(model, x), bench(trt, x)
        print(f"eager:      {t_eager:8.3f} ms/call")
        print(f"torchtrt_c: {t_trt:8.3f} ms/call")
        if t_trt <= t_eager:
            print(f"speed-up over eager: {t_eager / t_trt:.2f}x")
        else:
            print(f"slower than eager: {t_trt / t_eager:.2f}x")
    if err > 1e-3:
        raise SystemExit(f"error {err} is too large")


if __name__ == "__main__":
    main()
