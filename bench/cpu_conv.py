"""Convolution GFLOP/s on the CPU, side by side in one process, round robin: the engines' native
path (oneDNN through backend/cpu/native_conv_dnnl.c, x and y NHWC as between native convolutions,
weights reordered once, bias as a post-op; called through torchtrt_c._C.native_conv so that no
NCHW reorder at an engine boundary is counted) against torch.conv2d (+ bias) on the same cores,
with NCHW tensors (what eager runs on an NCHW model) and channels-last ones (what Inductor passes
its convolutions; the layout ours runs in). The shapes are the CPU zoo's convolutions:
ResNet-18/50 (7x7/2 stem, 3x3, 1x1, stride-2), MobileNetV2/V3 and EfficientNet-B0 (depthwise
3x3/5x5, the 1x1 expansions/projections), ConvNeXt-T (4x4/4 patchify, 7x7 depthwise, 2x2/2
downsampling), at batch 1 and 8. This is the "kernel table shows convolution GFLOP/s beside
torch.conv2d" item of issue 14.

    python bench/cpu_conv.py [--batch 1,8] [--shapes resnet,mobile,convnext] [--rounds 5]

Each round runs every variant back to back (the median of a few calls each); a variant's figure
is its best round, the one least disturbed on a shared machine. There read the ratios, not the
absolutes; the load average is printed first and last. torch's thread count is the cores'
(torch.set_num_threads); oneDNN (libgomp) takes OMP_NUM_THREADS, default the cores too.
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

# (name, C, OC, H(=W), k, stride, pad, groups) at batch 1; the batch multiplies N
SHAPES = {
    "resnet": [("r stem 7x7/2", 3, 64, 224, 7, 2, 3, 1),
               ("r18 3x3 64@56", 64, 64, 56, 3, 1, 1, 1),
               ("r18 3x3/2 64>128@56", 64, 128, 56, 3, 2, 1, 1),
               ("r18 3x3 128@28", 128, 128, 28, 3, 1, 1, 1),
               ("r18 3x3 256@14", 256, 256, 14, 3, 1, 1, 1),
               ("r18 3x3 512@7", 512, 512, 7, 3, 1, 1, 1),
               ("r18 1x1/2 64>128@56", 64, 128, 56, 1, 2, 0, 1),
               ("r50 1x1 64>256@56", 64, 256, 56, 1, 1, 0, 1),
               ("r50 1x1 256>64@56", 256, 64, 56, 1, 1, 0, 1),
               ("r50 1x1 512>128@28", 512, 128, 28, 1, 1, 0, 1),
               ("r50 1x1 1024>256@14", 1024, 256, 14, 1, 1, 0, 1),
               ("r50 1x1 2048>512@7", 2048, 512, 7, 1, 1, 0, 1)],
    "mobile": [("mv2 dw3x3 96@112/2", 96, 96, 112, 3, 2, 1, 96),
               ("mv2 dw3x3 144@56", 144, 144, 56, 3, 1, 1, 144),
               ("mv2 dw3x3 384@14", 384, 384, 14, 3, 1, 1, 384),
               ("mv3 dw5x5 72@56/2", 72, 72, 56, 5, 2, 2, 72),
               ("mv3 dw5x5 672@14/2", 672, 672, 14, 5, 2, 2, 672),
               ("eb0 dw5x5 240@28", 240, 240, 28, 5, 1, 2, 240),
               ("mv2 1x1 24>144@56", 24, 144, 56, 1, 1, 0, 1),
               ("mv2 1x1 144>24@56", 144, 24, 56, 1, 1, 0, 1),
               ("mv3 1x1 160>960@7", 160, 960, 7, 1, 1, 0, 1)],
    "convnext": [("cnx patchify 4x4/4", 3, 96, 224, 4, 4, 0, 1),
                 ("cnx dw7x7 96@56", 96, 96, 56, 7, 1, 3, 96),
                 ("cnx dw7x7 384@14", 384, 384, 14, 7, 1, 3, 384),
                 ("cnx down 2x2/2 96>192@56", 96, 192, 56, 2, 2, 0, 1)],
}


def timed(f, runs):
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def bench_shape(sh, batch, rounds):
    name, c, oc, hw, k, s, p, g = sh
    torch.manual_seed(0)
    x = torch.randn(batch, c, hw, hw)
    w = torch.randn(oc, c // g, k, k) / (c // g * k * k) ** 0.5
    b = torch.randn(oc)
    oh = (hw + 2 * p - k) // s + 1
    flop = 2 * batch * oc * oh * oh * (c // g) * k * k
    runs = max(3, min(30, int(2e9 / flop)))
    x_cl, w_cl = x.contiguous(memory_format=torch.channels_last), w.contiguous(memory_format=torch.channels_last)
    xn = x.permute(0, 2, 3, 1).contiguous().numpy()             # NHWC, as between native convolutions
    yn = np.empty((batch, oh, oh, oc), np.float32)
    wn, bn = w.numpy(), b.numpy()
    wino = k == 3 and s == 1 and g == 1   # engines ask oneDNN for Winograd there (TORCHTRT_C_CONV_WINOGRAD)
    fns = {
        "ours": lambda: statistics.median(C.native_conv(xn, wn, bn, yn, (s, s), (p, p), groups=g, nhwc=True,
                                                        runs=runs, winograd=wino)),
        "ours direct": lambda: statistics.median(C.native_conv(xn, wn, bn, yn, (s, s), (p, p), groups=g, nhwc=True,
                                                               runs=runs)),
        "torch nchw": lambda: timed(lambda: F.conv2d(x, w, b, s, p, 1, g), runs),
        "torch cl": lambda: timed(lambda: F.conv2d(x_cl, w_cl, b, s, p, 1, g), runs),
    }
    if not wino:
        del fns["ours direct"]   # the same call
    with torch.inference_mode():
        ref = F.conv2d(x, w, b, s, p, 1, g)
        for kk in [kk for kk in fns if kk.startswith("ours")]:
            fns[kk]()
            err = float((torch.from_numpy(yn).permute(0, 3, 1, 2) - ref).abs().max())
            if not err <= 1e-3 * (1 + float(ref.abs().max())):
                raise SystemExit(f"{name} b{batch}: {kk} result differs from torch.conv2d by {err}")
        for f in fns.values():
            f()
        res = {kk: [] for kk in fns}
        for _ in range(rounds):
            for kk, f in fns.items():
                res[kk].append(f())
    return flop, {kk: min(v) for kk, v in res.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", default="1,8")
    ap.add_argument("--shapes", default="resnet,mobile,convnext")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    torch.set_num_threads(os.cpu_count() or 1)
    nat = C.native_cpu()
    print(f"load {open('/proc/loadavg').read().split()[:3]}; torch {torch.__version__} "
          f"({torch.get_num_threads()} threads, {torch.backends.mkldnn.is_available() and 'oneDNN inside'}); "
          f"ours: {nat.get('conv_library')}; OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '(unset)')}")
    print("GFLOP/s count the direct convolution's flops (2 N OC OH OW C/g KH KW) for every variant; 'ours' is "
          "what an engine runs (Winograd for 3x3 stride 1, with the reorders between NHWC and its blocked layout), "
          "'ours direct' the direct NHWC kernel there")
    print("| shape | batch | GFLOP | ours GFLOP/s | ours direct GFLOP/s | torch NCHW GFLOP/s | "
          "torch channels-last GFLOP/s | ours time / best torch |")
    print("|---|---|---|---|---|---|---|---|")
    for batch in [int(v) for v in a.batch.split(",")]:
        for group in a.shapes.split(","):
            for sh in SHAPES[group]:
                flop, md = bench_shape(sh, batch, a.rounds)
                best = min(md["torch nchw"], md["torch cl"])
                gf = {kk: flop / v / 1e9 for kk, v in md.items()}
                direct = f"{gf['ours direct']:.1f}" if "ours direct" in gf else "="
                print(f"| {sh[0]} | {batch} | {flop / 1e9:.3f} | {gf['ours']:.1f} | {direct} | {gf['torch nchw']:.1f} | "
                      f"{gf['torch cl']:.1f} | {md['ours'] / best:.2f} |", flush=True)
    print(f"load {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
