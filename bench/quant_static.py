"""Static int8 (PT2E) vs float32 on our engines: torchvision ResNet-50 (random weights,
calibrated on random images) at batch 1 and 8, in one process (issue 35, item 4).

    PYTHONPATH=.:tests:.deps/vision python3 bench/quant_static.py [--batches 1 8] [--runs 5]
        [--modes dequant int8] [--model tv_resnet50]

Rows: eager fp32, eager int8 (torch's execution of the converted PT2E model: Q/DQ in float),
our fp32 engine, and our int8 engine in each TORCHTRT_C_QUANT_KERNELS form: `int8` (integer
QCONV2D/QGEMM layers: on a CPU whose oneDNN loads, oneDNN int8 native steps with u8 activations
between layers, csrc/backend/cpu/native_qconv.c; portable OpenCL kernels elsewhere; the default)
and `dequant` (Q/DQ as fused elementwise float math around float32 layers). Median ms per call
of --runs after 2 warm-up calls; the speed-up is fp32 engine / int8 engine. Needs torchao (the
PT2E flow)."""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, ".."), os.path.join(HERE, "..", "tests"), HERE]

import torch  # noqa: E402

import torchtrt_c  # noqa: E402
from torchtrt_c import settings  # noqa: E402


def _ms(fn, x, runs):
    with torch.no_grad():
        for _ in range(2):
            fn(x)
        ts = []
        for _ in range(runs):
            t0 = time.perf_counter()
            fn(x)
            ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def quantize(model, hw, calib_batches=2):
    warnings.simplefilter("ignore")
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (
        X86InductorQuantizer, get_default_x86_inductor_quantization_config)
    q = X86InductorQuantizer()
    q.set_global(get_default_x86_inductor_quantization_config())
    # batch norms folded into the convolutions first (torch.fx's conv-bn fusion)
    from torch.fx.experimental.optimization import fuse
    model = fuse(model)
    # torchvision's blocks call one nn.ReLU twice: the quantizer sees a partition with two
    # outputs ("Input partition has more than one output node"); each call becomes torch.relu
    for n in list(model.graph.nodes):
        if n.op == "call_module" and isinstance(model.get_submodule(n.target), torch.nn.ReLU):
            with model.graph.inserting_before(n):
                r = model.graph.call_function(torch.relu, n.args)
            n.replace_all_uses_with(r)
            model.graph.erase_node(n)
    model.recompile()
    ex = torch.randn(2, 3, hw, hw)
    gm = torch.export.export(model, (ex,), dynamic_shapes=({0: torch.export.Dim("b", max=256)},)).module()
    p = prepare_pt2e(gm, q)
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for _ in range(calib_batches):
            p(torch.randn(4, 3, hw, hw, generator=g))
    return convert_pt2e(p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="tv_resnet50")
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--modes", nargs="+", default=["int8", "dequant"])
    ap.add_argument("--size", default="full", choices=["full", "tiny"])
    a = ap.parse_args()
    from vision_models import build_vision
    model, make_input = build_vision(a.model, a.size)
    model.eval()
    hw = 224 if a.size == "full" else 64
    t0 = time.perf_counter()
    qm = quantize(model, hw)   # on the batch-norm-folded copy; `model` keeps its batch norms
    print(f"# {a.model} ({a.size}), PT2E X86InductorQuantizer, calibrated in {time.perf_counter() - t0:.1f} s; "
          f"device {torchtrt_c.devices()[0].name}; torch {torch.__version__}")
    print("| batch | eager fp32 ms | eager int8 (torch) ms | engine fp32 ms | " +
          " | ".join(f"engine int8 [{m}] ms | speed-up [{m}]" for m in a.modes) + " | max rel err vs torch int8 |")
    print("|---" * (5 + 2 * len(a.modes)) + "|")
    for b in a.batches:
        x = make_input(batch=b)
        row = [str(b), f"{_ms(model, x, a.runs):.1f}", f"{_ms(qm, x, a.runs):.1f}"]
        fp32 = torchtrt_c.compile(model, inputs=[x])
        t_fp32 = _ms(fp32, x, a.runs)
        row.append(f"{t_fp32:.1f}")
        del fp32
        errs = []
        with torch.no_grad():
            ref = qm(x)
        for m in a.modes:
            with settings.override(QUANT_KERNELS=m):
                eng = torchtrt_c.compile(qm, inputs=[x], cache_built_engines=False, reuse_cached_engines=False)
            t = _ms(eng, x, a.runs)
            with torch.no_grad():
                errs.append(f"{m}: {float((eng(x) - ref).abs().max() / ref.abs().max()):.1e}")
            row += [f"{t:.1f}", f"{t_fp32 / t:.2f}x"]
            del eng
        row.append(", ".join(errs))
        print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
