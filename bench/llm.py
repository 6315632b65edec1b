"""LLM generation side by side, in one process on one device: time to first token (prefill),
decode ms/token and tokens/s, for

  eager          Hugging Face generate(), default (dynamic) cache
  hf-static      generate(cache_implementation="static"): transformers compiles the forward with
                 Inductor (its default compile config; --max-autotune adds mode="max-autotune")
  ttc-loop       torchtrt_c.compile_llm(...).generate_tokens (our loop; on CUDA greedy decode
                 replays one recorded CUDA graph per token)
  ttc-generate   the same compiled model under transformers' generate()
  bound          weight bytes / the device's measured copy bandwidth (a decode step reads every
                 weight once, an untied input embedding only in the rows it gathers: not counted;
                 the KV cache adds a little)

A Llama model with random weights: --config 1b is Llama-3.2-1B-shaped (hidden 2048, 16 layers,
32 heads, 8 KV heads, intermediate 8192, vocab 128256, tied embeddings), --config small is
hidden 512, 4 layers, 8 heads, intermediate 1376, vocab 32000 (the CPU target). Greedy, no EOS
(min_new_tokens), prompts of random tokens. Decode ms/token = (time of N new tokens - time to
first token) / (N - 1), medians of --runs runs after a warm-up; compile seconds are the first
call's (ours: compile_llm; Inductor: the first generate() minus a warm one).

    python bench/llm.py --config 1b --dtype fp16 --batches 1,8 --prompts 128 --new 128
    python bench/llm.py --config small --dtype fp32 --batches 1,8 --prompts 128 --new 128   # CPU

Prints a markdown table and writes --json.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import torch

_HERE = os.path.dirname(os.path.abspath(__file__))
# bench/kernels.py would shadow the `kernels` package transformers imports: not bench/ on the path
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))

CONFIGS = {
    "1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
               num_key_value_heads=8, vocab_size=128256, tie_word_embeddings=True, max_position_embeddings=4096,
               rope_theta=500000.0),
    "small": dict(hidden_size=512, intermediate_size=1376, num_hidden_layers=4, num_attention_heads=8,
                  num_key_value_heads=8, vocab_size=32000, max_position_embeddings=2048),
    "tiny": dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, vocab_size=1000, max_position_embeddings=1024),
}


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def timed(fn, dev):
    sync(dev)
    t = time.perf_counter()
    out = fn()
    sync(dev)
    return time.perf_counter() - t, out


def copy_bandwidth(dev) -> float:
    """Bytes per second of a large device copy (read + write counted)."""
    n = (1 << 30) if dev.type == "cuda" else (1 << 27)
    a = torch.empty(n, dtype=torch.uint8, device=dev)
    b = torch.empty_like(a)
    b.copy_(a)
    ts = [timed(lambda: b.copy_(a), dev)[0] for _ in range(5)]
    return 2 * n / statistics.median(ts)


def measure(gen_fn, B, P, N, runs, dev):
    """(ttft s, decode s/token) medians: gen_fn(ids, n_new) generates n_new tokens."""
    ids = torch.randint(10, 1000, (B, P), device=dev)
    gen_fn(ids, 2)  # warm
    gen_fn(ids, N)
    firsts = [timed(lambda: gen_fn(ids, 1), dev)[0] for _ in range(runs)]
    fulls = [timed(lambda: gen_fn(ids, N), dev)[0] for _ in range(runs)]
    ttft = statistics.median(firsts)
    return ttft, max(statistics.median(fulls) - ttft, 0.0) / (N - 1)


def profile_decode(gen, dev, B, steps=5):
    """Device time per kernel of `steps` eager decode steps (no graph), with the engine's kernel
    list (k<i> -> what it computes) to read the names by."""
    from torch.profiler import ProfilerActivity, profile
    ids = torch.randint(10, 1000, (B, 16), device=dev)
    with gen.runner.pool.state(B) as st:
        logits = gen.runner.run(st, ids, None)
        nxt = logits.argmax(-1)[:, None]
        gen.runner.run(st, nxt, None)
        sync(dev)
        with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
            for _ in range(steps):
                nxt = gen.runner.run(st, nxt, None).argmax(-1)[:, None]
            sync(dev)
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=30), flush=True)
    for name, mod in gen.runner.step.named_children():
        eng = getattr(mod, "engine_obj", None)
        info = None
        try:
            from torchtrt_c.runtime._execute import ENGINES
            from torchtrt_c.runtime import EngineMeta
            e = ENGINES.peek(EngineMeta.from_json(mod.meta).id)
            info = e.info() if e is not None else None
        except Exception as ex:  # noqa: BLE001
            print("no engine info:", ex)
        if info:
            ks = info.get("kernels", [])
            print(f"{name}: {len(ks)} kernels; first 40:", *ks[:40], sep="\n  ")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="small", choices=sorted(CONFIGS))
    ap.add_argument("--dtype", default="fp32", choices=["fp32", "fp16"])
    ap.add_argument("--device", default=None, help="cuda or cpu (default: cuda if available)")
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--prompts", default="128")
    ap.add_argument("--new", type=int, default=128)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ways", default="eager,hf-static,ttc-loop,ttc-generate")
    ap.add_argument("--max-autotune", action="store_true", help="also hf-static with mode=max-autotune")
    ap.add_argument("--json", default=None)
    ap.add_argument("--profile", action="store_true",
                    help="CUDA: the compiled decode step's kernels by device time (torch.profiler)")
    a = ap.parse_args()
    import transformers
    import torchtrt_c
    dev = torch.device(a.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    dtype = torch.float16 if a.dtype == "fp16" else torch.float32
    batches = [int(x) for x in a.batches.split(",")]
    prompts = [int(x) for x in a.prompts.split(",")]
    ways = a.ways.split(",")
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(**CONFIGS[a.config])
    model = transformers.LlamaForCausalLM(cfg).to(dev, dtype).eval()
    model.generation_config.pad_token_id = 0
    seen, wbytes = set(), 0
    for p in model.parameters():
        if p.data_ptr() not in seen:
            seen.add(p.data_ptr())
            wbytes += p.numel() * p.element_size()
    # a decode step gathers B rows of the input embedding: an untied table is not read whole
    emb, head = model.get_input_embeddings().weight, model.get_output_embeddings().weight
    if emb.data_ptr() != head.data_ptr():
        wbytes -= emb.numel() * emb.element_size()
    bw = copy_bandwidth(dev)
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "CPU (%d threads)" % torch.get_num_threads()
    print(f"# {a.config} Llama {a.dtype} on {name}: weights read per step {wbytes / 1e9:.3f} GB, copy bandwidth "
          f"{bw / 1e12:.3f} TB/s, bound {wbytes / bw * 1e3:.3f} ms/step; torch {torch.__version__}, "
          f"transformers {transformers.__version__}", flush=True)
    rows = []
    gen = None
    max_len = max(prompts) + a.new + 8
    if any(w.startswith("ttc") for w in ways):
        t, gen = timed(lambda: torchtrt_c.compile_llm(model, max_seq_len=max_len, max_batch_size=max(batches),
                                                     max_prompt_len=max(prompts)), dev)
        rows.append({"way": "ttc compile", "compile_s": t})
        print(f"compile_llm: {t:.1f} s", flush=True)
        if a.profile and dev.type == "cuda":
            profile_decode(gen, dev, batches[0])

    def hf(static, mode=None):
        kw = {"do_sample": False}
        if static:
            kw["cache_implementation"] = "static"
            cc = transformers.CompileConfig(mode=mode) if mode else transformers.CompileConfig()
            cc._compile_all_devices = True   # transformers compiles on CUDA only unless asked
            kw["compile_config"] = cc

        def run(ids, n):
            return model.generate(ids, max_new_tokens=n, min_new_tokens=n, **kw)
        return run

    def ttc_loop(ids, n):
        return gen.generate_tokens(ids, max_new_tokens=n)

    def ttc_generate(ids, n):
        return gen.generate(ids, do_sample=False, max_new_tokens=n, min_new_tokens=n)

    table = {"eager": hf(False), "hf-static": hf(True), "ttc-loop": ttc_loop, "ttc-generate": ttc_generate}
    if a.max_autotune:
        table["hf-static-max-autotune"] = hf(True, "max-autotune")
        ways.append("hf-static-max-autotune")
    for B in batches:
        for P in prompts:
            for w in ways:
                fn = table[w]
                try:
                    t0 = time.perf_counter()
                    ttft, dec = measure(fn, B, P, a.new, a.runs, dev)
                    wall = time.perf_counter() - t0
                except Exception as ex:  # noqa: BLE001  (a way that cannot run is reported, not fatal)
                    print(f"{w} B={B} P={P}: failed: {type(ex).__name__}: {str(ex)[:300]}", flush=True)
                    rows.append({"way": w, "batch": B, "prompt": P, "error": f"{type(ex).__name__}: {ex}"[:500]})
                    continue
                r = {"way": w, "batch": B, "prompt": P, "ttft_ms": ttft * 1e3, "decode_ms": dec * 1e3,
                     "tokens_s": B / dec if dec > 0 else float("inf"), "wall_s": wall,
                     "bound_ms": wbytes / bw * 1e3}
                rows.append(r)
                print(f"{w:24s} B={B} P={P}: ttft {r['ttft_ms']:.2f} ms, decode {r['decode_ms']:.3f} ms/token "
                      f"({r['tokens_s']:.0f} tok/s), bound {r['bound_ms']:.3f} (wall {wall:.0f} s)", flush=True)
    # x eager: against the eager row of the same batch and prompt, whichever way ran first
    for r in rows:
        if "decode_ms" not in r:
            continue
        base = next((e for e in rows if e.get("way") == "eager" and e.get("batch") == r["batch"]
                     and e.get("prompt") == r["prompt"] and "decode_ms" in e), None)
        r["vs_eager"] = base["decode_ms"] / r["decode_ms"] if base and r["decode_ms"] else None
    print("\n| way | batch | prompt | TTFT ms | decode ms/token | tokens/s | x eager (decode) | bound ms/step |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "decode_ms" in r:
            print(f"| {r['way']} | {r['batch']} | {r['prompt']} | {r['ttft_ms']:.2f} | {r['decode_ms']:.3f} | "
                  f"{r['tokens_s']:.0f} | {r.get('vs_eager') or 0:.2f} | {r['bound_ms']:.3f} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"config": a.config, "dtype": a.dtype, "device": name, "weights_bytes": wbytes,
                       "copy_bw": bw, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
