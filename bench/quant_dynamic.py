"""Dynamic int8 (torchao's Int8DynamicActivationInt8WeightConfig) vs float32 and int8 weight-only
on our engines: transformers' BertModel with the BERT-base config (random weights) at batch 32 x
sequence 128, in one process (issue 35, item 6's BERT row).

    PYTHONPATH=. python3 bench/quant_dynamic.py [--batch 32] [--seq 128] [--layers 12] [--runs 3]
        [--rows eager_fp32 eager_dyn8 fp32 dyn8 dyn8_portable wo8 wo8_blas wo4 eager_pt2e_x86 pt2e_x86
                eager_pt2e_xnnpack pt2e_xnnpack] [--interleave]

Rows (each a separate model/engine, timed the same way):
  eager_fp32     torch eager, float32
  eager_dyn8     torch eager of the torchao-quantized model (its _int_mm on torch's CPU kernel)
  eager_pt2e_x86, eager_pt2e_xnnpack
                 torch running the PT2E dynamic model (prepare/convert_pt2e with the X86 dynamic
                 config, or XNNPACK symmetric per-channel dynamic; exported at the timed shape):
                 dequantized weights, per-tensor run-time activation Q/DQ, float linears
  pt2e_x86, pt2e_xnnpack
                 our engine of that model (one engine: the run-time qparams in float32 aten ops,
                 torchtrt_c/dynamo/_quant.py lower_dynamic_qparams)
  fp32           our engine, float32 (oneDNN matmuls, native attention/norms on the CPU)
  dyn8           our engine of the torchao-quantized model: per-row activation quantize in the
                 engine, aten._int_mm as a oneDNN s8 x s8 matmul native step (native_qmm.c),
                 scales/bias/GELU in C after it (the default)
  dyn8_portable  the same with TORCHTRT_C_NATIVE_QMM=0: the portable OpenCL int8 kernel
  wo8            our engine with quantize="int8_weight_only" (int8 weights, float activations)
  wo8_blas       the same with TORCHTRT_C_NATIVE_GEMM=blas: the dequantized weight blocks at large M
                 through OpenBLAS's sgemm (the path before oneDNN's matmul took them)
  wo4            our engine with quantize="int4_weight_only" (int4 weights in groups of 128)
Median ms per call of --runs after one warm-up (--interleave: all rows built, then --runs + 1 rounds
of one call per row, the first a warm-up); ratios against our fp32 engine. --layers < 12
keeps that many encoder layers (say so when quoting figures). Error: max |out - torch's| / max
|torch's| of last_hidden_state, against eager fp32 for fp32/wo8/wo4 and eager torchao for dyn8."""
from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
# not bench/ itself: its kernels.py would shadow the `kernels` package transformers imports
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.path.dirname(HERE))

import torch  # noqa: E402

import torchtrt_c  # noqa: E402
from torchtrt_c import settings  # noqa: E402


def _ms(fn, kw, runs):
    with torch.no_grad():
        fn(**kw)
        ts = []
        for _ in range(runs):
            t0 = time.perf_counter()
            fn(**kw)
            ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts), ts


def _out(fn, kw):
    with torch.no_grad():
        out = fn(**kw)
    return out["last_hidden_state"] if isinstance(out, dict) else getattr(out, "last_hidden_state", out[0])


def build(layers):
    from transformers import BertConfig, BertModel
    torch.manual_seed(0)
    cfg = BertConfig(num_hidden_layers=layers, attn_implementation="sdpa")   # BERT-base otherwise
    return BertModel(cfg).eval()


def dyn8(model):
    from torchao.quantization import Int8DynamicActivationInt8WeightConfig, quantize_
    q = copy.deepcopy(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantize_(q, Int8DynamicActivationInt8WeightConfig())
    return q


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rows", nargs="+", default=["eager_fp32", "eager_dyn8", "fp32", "dyn8", "wo8"])
    ap.add_argument("--interleave", action="store_true",
                    help="build every row first, then time one call of each row a round (load swings on a "
                         "shared machine hit the rows alike)")
    a = ap.parse_args()
    model = build(a.layers)
    g = torch.Generator().manual_seed(1)
    kw = {"input_ids": torch.randint(0, model.config.vocab_size, (a.batch, a.seq), generator=g),
          "attention_mask": torch.ones(a.batch, a.seq, dtype=torch.long)}
    qmodel = dyn8(model) if any("dyn8" in r for r in a.rows) else None
    # PT2E rows without the (all ones) attention mask: XNNPACK's prepare_pt2e breaks its path
    # in torch (an aten.index of float indices)
    ids_only = {"input_ids": kw["input_ids"]}
    pt2e = {}
    for quant in ("x86", "xnnpack"):
        if any(r.endswith("pt2e_" + quant) for r in a.rows):
            sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
            from models.test_quant import _pt2e_dynamic
            pt2e[quant] = _pt2e_dynamic(copy.deepcopy(model), (), quant, kwargs=ids_only)
    dev = torchtrt_c.devices()[0].name
    nat = torchtrt_c._C.native_cpu()
    print(f"# BertModel BERT-base config, {a.layers} layers, random weights, batch {a.batch} x seq {a.seq}; "
          f"device {dev}; int_mm step: {nat.get('int_mm') or 'portable'}; torch {torch.__version__}", flush=True)
    ref = {}
    res = {}
    all_kw = kw
    qz = {"wo8": "int8_weight_only", "wo8_blas": "int8_weight_only", "wo4": "int4_weight_only"}

    def kw_of(row):
        return ids_only if "pt2e" in row else all_kw

    def ctx(row):
        return (settings.override(NATIVE_QMM=False) if row == "dyn8_portable" else
                settings.override(NATIVE_GEMM="blas") if row == "wo8_blas" else settings.override())

    def make(row):
        t0 = time.perf_counter()
        if row.startswith("eager"):
            return (model if row == "eager_fp32" else pt2e[row[11:]] if "pt2e" in row else qmodel), 0.0
        src = qmodel if row.startswith("dyn8") else pt2e[row[5:]] if "pt2e" in row else model
        extra = {"quantize": qz[row]} if row in qz else {}
        with ctx(row):
            fn = torchtrt_c.compile(src, kwarg_inputs=kw_of(row), cache_built_engines=False,
                                    reuse_cached_engines=False, **extra)
        return fn, time.perf_counter() - t0

    def report(row, fn, ms, ts, compile_s):
        with ctx(row):
            out = _out(fn, kw_of(row))
        if row.startswith("eager"):
            ref[row] = out
        want = ref.get("eager_dyn8" if "dyn8" in row else "eager_" + row if "pt2e" in row else "eager_fp32")
        err = float((out - want).abs().max() / want.abs().max()) if want is not None else float("nan")
        res[row] = ms
        parts = "" if row.startswith("eager") else " | engines/torch segments " + "/".join(
            str(sum(n.startswith(p) for n, _ in fn.named_children())) for p in ("_run_on_acc_", "_run_on_gpu_"))
        print(f"| {row} | {ms:.0f} | runs {', '.join(f'{t:.0f}' for t in ts)} | compile {compile_s:.1f} s | "
              f"err {err:.1e}{parts} |", flush=True)

    if a.interleave:   # every row built first, then one call of each row per round
        fns = {row: make(row) for row in a.rows}
        ts = {row: [] for row in a.rows}
        with torch.no_grad():
            for r in range(a.runs + 1):   # round 0: the warm-up
                for row, (fn, _) in fns.items():
                    with ctx(row):
                        t0 = time.perf_counter()
                        fn(**kw_of(row))
                        if r:
                            ts[row].append((time.perf_counter() - t0) * 1e3)
        for row, (fn, compile_s) in fns.items():
            report(row, fn, statistics.median(ts[row]), ts[row], compile_s)
    for row in ([] if a.interleave else a.rows):
        fn, compile_s = make(row)
        try:
            with ctx(row):
                ms, ts = _ms(fn, kw_of(row), a.runs)
        except Exception as e:   # noqa: BLE001  (eager torchao may not run on this torch)
            print(f"| {row} | failed: {type(e).__name__}: {str(e)[:120]} |", flush=True)
            continue
        report(row, fn, ms, ts, compile_s)
        del fn
    base = res.get("fp32")
    print("\n| row | median ms | fp32 engine / row |\n|---|---|---|")
    for row, ms in res.items():
        print(f"| {row} | {ms:.0f} | {base / ms:.2f}x |" if base else f"| {row} | {ms:.0f} | |")


if __name__ == "__main__":
    main()
