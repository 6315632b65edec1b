"""Weight-only quantization side by side (issue 35), in one process on one device: a Llama's
decode ms/token through torchtrt_c.compile_llm with float weights (fp32 or fp16, --dtype) and
with quantize="int8_weight_only" / "int4_weight_only", plus one decode-shaped linear layer
(x [1, K] times W [N, K], the 1B model's MLP up projection by default) as an engine of its own.

Configs are bench/llm.py's (random weights): --config 1b is Llama-3.2-1B-shaped (the GPU target:
fp16 bound 0.74 ms on an H100), --config small the CPU one. Decode ms/token = (time of N new
tokens - time to first token) / (N - 1) with generate_tokens (our loop), medians of --runs runs;
"bound" = the bytes a decode step reads (every linear weight once, packed, with its scales) /
the measured copy bandwidth.

    python bench/quant.py --config 1b --dtype fp16 --group 128          # GPU
    python bench/quant.py --config small --dtype fp32 --group 32         # CPU (PoCL)

Prints a markdown table and writes --json.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import time

import torch

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))
_spec = importlib.util.spec_from_file_location("bench_llm", os.path.join(_HERE, "llm.py"))
L = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(L)

MODES = {"float": None, "int8": "int8_weight_only", "int4": "int4_weight_only"}


def step_bytes(model, mode, group) -> int:
    """Bytes of the weights one decode step reads: every linear (the LM head included)."""
    total = 0
    for m in model.modules():
        if isinstance(m, torch.nn.Linear):
            N, K = m.weight.shape
            if mode == "float":
                total += N * K * m.weight.element_size()
            elif mode == "int8":
                total += N * K + N * 4
            else:
                total += N * K // 2 + 2 * N * (K // min(group, K)) * 4
    return total


def linear_layer(dev, dtype, N, K, group, runs):
    """ms of one x [1, K] @ W^T [N, K] engine call per mode."""
    import torchtrt_c
    torch.manual_seed(0)
    lin = torch.nn.Sequential(torch.nn.Linear(K, N, bias=False)).to(dev, dtype).eval()
    x = torch.randn(1, K, device=dev, dtype=dtype)
    out = {}
    for mode, qz in MODES.items():
        trt = torchtrt_c.compile(lin, inputs=[x], min_block_size=1, quantize=qz, quantize_group_size=group,
                                 enabled_precisions={dtype})
        for _ in range(3):
            trt(x)
        reps = 20 if dev.type == "cuda" else 5
        ts = []
        for _ in range(runs):
            t, _ = L.timed(lambda: [trt(x) for _ in range(reps)], dev)
            ts.append(t / reps)
        out[mode] = statistics.median(ts) * 1e3
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="small", choices=sorted(L.CONFIGS))
    ap.add_argument("--dtype", default="fp32", choices=["fp32", "fp16"])
    ap.add_argument("--device", default=None)
    ap.add_argument("--group", type=int, default=128, help="int4 group size (must divide every K)")
    ap.add_argument("--batches", default="1")
    ap.add_argument("--prompt", type=int, default=32)
    ap.add_argument("--new", type=int, default=32)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--modes", default="float,int8,int4")
    ap.add_argument("--linear", default="8192,2048", help="N,K of the single-layer case ('' skips it)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--profile", action="store_true",
                    help="CUDA: each mode's batch-1 decode step kernels by device time (torch.profiler)")
    a = ap.parse_args()
    import transformers
    import torchtrt_c
    dev = torch.device(a.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    dtype = torch.float16 if a.dtype == "fp16" else torch.float32
    batches = [int(b) for b in a.batches.split(",")]
    modes = a.modes.split(",")
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**L.CONFIGS[a.config])).to(dev, dtype).eval()
    bw = L.copy_bandwidth(dev)
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "CPU (%d threads)" % torch.get_num_threads()
    print(f"# {a.config} Llama {a.dtype} on {name}: copy bandwidth {bw / 1e12:.3f} TB/s; torch {torch.__version__}",
          flush=True)
    rows = []
    for mode in modes:
        qz = MODES[mode]
        t, gen = L.timed(lambda: torchtrt_c.compile_llm(model, max_seq_len=a.prompt + a.new + 8,
                                                       max_batch_size=max(batches), max_prompt_len=a.prompt,
                                                       quantize=qz, quantize_group_size=a.group), dev)
        wb = step_bytes(model, mode, a.group)
        for B in batches:
            ttft, dec = L.measure(lambda ids, n: gen.generate_tokens(ids, max_new_tokens=n), B, a.prompt, a.new,
                                  a.runs, dev)
            r = {"mode": mode if mode != "float" else a.dtype, "batch": B, "compile_s": t, "ttft_ms": ttft * 1e3,
                 "decode_ms": dec * 1e3, "step_bytes": wb, "bound_ms": wb / bw * 1e3}
            rows.append(r)
            print(f"{r['mode']:5s} B={B}: compile {t:.1f} s, ttft {r['ttft_ms']:.2f} ms, decode {r['decode_ms']:.3f} "
                  f"ms/token, weights read {wb / 1e6:.1f} MB, bound {r['bound_ms']:.3f} ms", flush=True)
        if a.profile and dev.type == "cuda":
            print(f"## {mode}: decode step kernels, batch 1", flush=True)
            L.profile_decode(gen, dev, 1)
        del gen
    lin = {}
    if a.linear:
        N, K = (int(v) for v in a.linear.split(","))
        lin = linear_layer(dev, dtype, N, K, a.group, a.runs)
        print(f"linear [1, {K}] x [{N}, {K}]^T: " + ", ".join(f"{m} {v:.3f} ms" for m, v in lin.items()), flush=True)
    base = {r["batch"]: r["decode_ms"] for r in rows if r["mode"] == a.dtype}
    print(f"\n| weights | batch | decode ms/token | x {a.dtype} | weights read MB | bound ms | TTFT ms | compile s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        x = base.get(r["batch"], 0) / r["decode_ms"] if r["decode_ms"] else 0
        print(f"| {r['mode']} | {r['batch']} | {r['decode_ms']:.3f} | {x:.2f} | {r['step_bytes'] / 1e6:.1f} | "
              f"{r['bound_ms']:.3f} | {r['ttft_ms']:.2f} | {r['compile_s']:.1f} |")
    if lin:
        print(f"\n| one linear [1, {K}] x [{N}, {K}]^T | " + " | ".join(lin) + " |")
        print("|---|" + "---|" * len(lin))
        print("| ms | " + " | ".join(f"{v:.3f}" for v in lin.values()) + " |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"config": a.config, "dtype": a.dtype, "device": name, "copy_bw": bw, "rows": rows,
                       "linear": lin}, f, indent=1)


if __name__ == "__main__":
    main()
