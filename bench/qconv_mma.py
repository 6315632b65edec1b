"""PT2E int8 convolutions (torchtrt_c.qconv2d: uint8 activations with a zero point, int8 weights,
int32 sums) at torchvision ResNet-50's layer shapes: our engine's int8 tensor-core kernel
(codegen_qgemm.c gen_qconv2d_mma, TORCHTRT_C_QGEMM_MMA=1), its portable kernel (=0) and, as a
yardstick, torch's float16 conv2d of the same shape (cuDNN on CUDA), side by side in one process;
medians of --runs timings, TOPS and the ratios. The two engine forms must agree exactly: checked
once per shape. Zero point 0 (activations after a ReLU): the kernel's zp * sum(w) correction runs.

    PYTHONPATH=$PWD python3 bench/qconv_mma.py [--batch 8] [--runs 5] [--shapes 0 3]
"""
import argparse
import os
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from int_mm import timed  # noqa: E402
from llm import sync  # noqa: E402

# (C, H=W, OC, k, stride, pad): the stem, bottleneck 1x1 / 3x3 convolutions, a strided 3x3 and
# the 1x1 stride-2 downsample
SHAPES = [(3, 224, 64, 7, 2, 3), (64, 56, 64, 1, 1, 0), (64, 56, 64, 3, 1, 1), (64, 56, 256, 1, 1, 0),
          (128, 56, 128, 3, 2, 1), (256, 14, 256, 3, 1, 1), (512, 7, 512, 3, 1, 1), (1024, 14, 2048, 1, 2, 0)]


class QConv(torch.nn.Module):
    def __init__(self, w, stride, pad):
        super().__init__()
        self.register_buffer("w", w)
        self.register_buffer("ws", torch.ones(w.shape[0]))
        self.stride, self.pad = stride, pad

    def forward(self, x):
        return torch.ops.torchtrt_c.qconv2d(x, 1.0, 0, self.w, self.ws, None, [self.stride] * 2, [self.pad] * 2,
                                            [1, 1], 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--shapes", type=int, nargs="*", default=None, help="indices into SHAPES (default: all)")
    ap.add_argument("--device", default=None)
    a = ap.parse_args()
    import torchtrt_c
    from torchtrt_c.dynamo import _quant  # noqa: F401  (registers torch.ops.torchtrt_c.qconv2d)
    dev = torch.device(a.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "CPU"
    reps = 20 if dev.type == "cuda" else 2
    print(f"# int8 conv2d (PT2E qconv2d) at batch {a.batch} on {name}; torch {torch.__version__}; medians of {a.runs}")
    print("| C | HxW | OC | k/s | engine int8 mma ms | engine portable ms | torch conv ms (fp16 CUDA, fp32 CPU) | mma TOPS | "
          "portable / mma | torch / mma |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    g = torch.Generator().manual_seed(0)
    # the OpenCL kernels: on a CPU with oneDNN the layer is otherwise a native step
    os.environ["TORCHTRT_C_NATIVE_QCONV"] = "0"
    for i in a.shapes if a.shapes is not None else range(len(SHAPES)):
        C, H, OC, k, s, p = SHAPES[i]
        w = torch.randint(-128, 128, (OC, C, k, k), generator=g, dtype=torch.int8)
        x = torch.randint(0, 256, (a.batch, C, H, H), generator=g, dtype=torch.uint8).to(dev)
        m = QConv(w, s, p).to(dev).eval()
        out, ys = {}, {}
        for mode in ("1", "0"):
            os.environ["TORCHTRT_C_QGEMM_MMA"] = mode
            trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
            with torch.no_grad():
                ys[mode] = trt(x)
                out[mode] = statistics.median(timed(lambda: trt(x), dev, reps) for _ in range(a.runs))
            del trt
        os.environ.pop("TORCHTRT_C_QGEMM_MMA", None)
        assert torch.equal(ys["1"], ys["0"]), "the tensor-core and portable engines differ"
        xh, wh = x.to(torch.float16 if dev.type == "cuda" else torch.float32), m.w.to(x.device).to(
            torch.float16 if dev.type == "cuda" else torch.float32)
        with torch.no_grad():
            tt = statistics.median(timed(lambda: torch.nn.functional.conv2d(xh, wh, None, s, p), dev, reps)
                                   for _ in range(a.runs))
        OH = (H + 2 * p - k) // s + 1
        ops = 2 * a.batch * OH * OH * OC * C * k * k
        print(f"| {C} | {H}x{H} | {OC} | {k}/{s} | {out['1'] * 1e3:.3f} | {out['0'] * 1e3:.3f} | {tt * 1e3:.3f} | "
              f"{ops / out['1'] / 1e12:.2f} | {out['0'] / out['1']:.2f}x | {tt / out['1']:.2f}x |", flush=True)
    os.environ.pop("TORCHTRT_C_NATIVE_QCONV", None)


if __name__ == "__main__":
    main()
