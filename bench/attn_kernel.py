"""Attention at the zoo's batch-32 shapes: one-op SDPA engines beside torch's SDPA.

    python bench/attn_kernel.py [--tiles 4x64,8x64] [--runs 20] [--batch 32] [--precision fp32]

Per shape (ViT-B/16, BERT-base with its bool padding mask and with an additive [B,1,1,S] one,
GPT-2 causal, Llama-style GQA causal): the tensor-core kernel (attn_mma.cl for fp16,
attn_tf32.cl for fp32; each tile of
--tiles forced through TORCHTRT_C_ATTN_TILE), the row kernel (TORCHTRT_C_ATTN_MMA=0) and
torch.nn.functional.scaled_dot_product_attention on the torch device (CUDA: its flash /
memory-efficient kernels). Engine times: Engine.benchmark (inputs resident in device buffers,
launches + one clFinish per run), median ms; torch: CUDA events around each call, median.
TFLOP/s counts 4 B H L S D (half that for causal). err: max |engine - torch fp32 reference|.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
from convtest import build, run  # noqa: E402

SDPA = "aten.scaled_dot_product_attention.default"


def shapes(b):
    # name, (q shape, kv shape, mask shape or None, mask dtype, causal, gqa)
    return [
        ("vit_b16", (b, 12, 197, 64), (b, 12, 197, 64), None, None, False, False),
        ("bert_bool_mask", (b, 12, 128, 64), (b, 12, 128, 64), (b, 1, 128, 128), torch.bool, False, False),
        ("bert_add_mask", (b, 12, 128, 64), (b, 12, 128, 64), (b, 1, 1, 128), torch.float16, False, False),
        ("gpt2_causal", (b, 12, 128, 64), (b, 12, 128, 64), None, None, True, False),
        ("llama_gqa_causal", (b, 12, 128, 64), (b, 4, 128, 64), None, None, True, True),
    ]


def make_inputs(qs, ks, ms, mdt, seed=0, dtype=torch.float16):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(s, generator=g).to(dtype) for s in (qs, ks, ks))
    m = None
    if ms is not None:
        if mdt == torch.bool:
            m = torch.ones(ms, dtype=torch.bool)
            m[: ms[0] // 2, ..., 100:] = False     # padding in half the batch
        else:
            m = torch.zeros(ms, dtype=mdt if dtype == torch.float16 else torch.float32)
            m[: ms[0] // 2, ..., 100:] = float("-inf")
    return q, k, v, m


def time_engine(env, args, ref, runs, precision):
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    dt = torch.float16 if precision == "fp16" else torch.float32
    try:
        _, e = build(SDPA, args, [ref.to(dt)], precision=precision)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    got = run(e, args, [ref.to(dt)])[0].float()
    err = float((got - ref).abs().max())
    ins = [a.contiguous().numpy() for a in args if isinstance(a, torch.Tensor)]
    ms = statistics.median(e.benchmark(ins, runs=runs, warmup=3))
    src = e.info()["source"]
    return ms, err, "attn_mma" in src or "attn_tf32" in src


def time_torch(q, k, v, m, causal, gqa, dev, runs):
    q, k, v = (t.to(dev) for t in (q, k, v))
    m = m.to(dev) if m is not None else None
    fn = lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=causal, enable_gqa=gqa)  # noqa: E731
    for _ in range(3):
        fn()
    if dev.type != "cuda":
        import time
        ts = []
        for _ in range(runs):
            t0 = time.perf_counter()
            fn()
            ts.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(ts)
    ts = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tiles", default="4x64")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--no-row", action="store_true", help="skip the row kernel")
    ap.add_argument("--precision", default="fp16", choices=["fp16", "fp32"])
    a = ap.parse_args()
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    print(f"torch {torch.__version__} on {dev}; batch {a.batch}; runs {a.runs}; {a.precision}")
    dt = torch.float16 if a.precision == "fp16" else torch.float32
    for name, qs, ks, ms, mdt, causal, gqa in shapes(a.batch):
        q, k, v, m = make_inputs(qs, ks, ms, mdt, dtype=dt)
        mref = m if m is None or m.dtype == torch.bool else m.double()
        ref = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), attn_mask=mref, is_causal=causal,
                                             enable_gqa=gqa).float()
        args = [q, k, v, m, 0.0, causal, None, gqa]
        flop = 4 * qs[0] * qs[1] * qs[2] * ks[2] * qs[3] * (0.5 if causal else 1.0)
        tms = time_torch(q, k, v, m, causal, gqa, dev, a.runs)
        terr = float((F.scaled_dot_product_attention(*(t.to(dev) for t in (q, k, v)), attn_mask=None if m is None else
                                                     m.to(dev), is_causal=causal, enable_gqa=gqa).float().cpu()
                      - ref).abs().max())
        print(f"{name:18s} torch sdpa         {tms:8.3f} ms {flop / tms / 1e9:7.1f} TFLOP/s  err {terr:.2e}")
        for t in a.tiles.split(","):
            ems, err, mma = time_engine({"TORCHTRT_C_ATTN_MMA": "1", "TORCHTRT_C_ATTN_TILE": t}, args, ref, a.runs,
                                        a.precision)
            print(f"{name:18s} attn_mma {t:>6s}{'' if mma else ' (not taken)'}   {ems:8.3f} ms {flop / ems / 1e9:7.1f} "
                  f"TFLOP/s  {ems / tms:5.2f}x torch  err {err:.2e}")
        if not a.no_row:
            ems, err, _ = time_engine({"TORCHTRT_C_ATTN_MMA": "0"}, args, ref, max(3, a.runs // 4), a.precision)
            print(f"{name:18s} row kernel         {ems:8.3f} ms {flop / ems / 1e9:7.1f} TFLOP/s  {ems / tms:5.2f}x torch  "
                  f"err {err:.2e}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
