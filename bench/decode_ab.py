"""A/B of settings on an LLM's decode step, in one process on one device: for each weight mode
(fp16/fp32 float, int8, int4) and each variant (a set of TORCHTRT_C_ settings applied while
compiling), compile_llm's decode ms/token and TTFT (batch 1, and --batches) and where the batch-1 the step's device time goes, by
kernel (torch.profiler, CUDA only), plus the registers and spills of the step's kernels where
ptxas is found (triton's copy).

    python bench/decode_ab.py --config 1b --dtype fp16 --modes int8,int4 \
        --variants base "WQ_MB=1" "WQ_MB=1,WQ_U=4" "WQ_SPLIT=1"

A variant is "base" (no setting) or NAME=VALUE[,NAME=VALUE...] (names without TORCHTRT_C_).
Prints one block per mode and variant; --json writes them all.
"""
from __future__ import annotations

import argparse
import collections
import glob
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import torch

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))
_spec = importlib.util.spec_from_file_location("bench_llm", os.path.join(_HERE, "llm.py"))
L = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(L)

MODES = {"float": None, "int8": "int8_weight_only", "int4": "int4_weight_only"}


def parse_variant(v: str) -> dict:
    if v == "base":
        return {}
    out = {}
    for kv in v.split(","):
        k, _, val = kv.partition("=")
        if not k or not val:
            raise SystemExit(f"variant {v!r}: expected NAME=VALUE[,NAME=VALUE...]")
        out[k.strip()] = val.strip()
    return out


def kernel_names(gen) -> dict:
    """k<i> -> what it computes, from the step's engines."""
    from torchtrt_c.runtime import EngineMeta
    from torchtrt_c.runtime._execute import ENGINES
    names = {}
    for _, mod in gen.runner.step.named_children():
        meta = getattr(mod, "meta", None)
        if meta is None:
            continue
        e = ENGINES.peek(EngineMeta.from_json(meta).id)
        for line in (e.info().get("kernels", []) if e is not None else []):
            k, _, what = line.partition(" ")
            names.setdefault(k, what)
    return names


def step_profile(gen, dev, steps=5) -> list:
    """(kernel, what, calls a step, us a call) of `steps` batch-1 decode steps, by total time."""
    from torch.profiler import ProfilerActivity, profile
    ids = torch.randint(10, 1000, (1, 16), device=dev)
    with gen.runner.pool.state(1) as st:
        nxt = gen.runner.run(st, ids, None).argmax(-1)[:, None]
        gen.runner.run(st, nxt, None)
        L.sync(dev)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(steps):
                nxt = gen.runner.run(st, nxt, None).argmax(-1)[:, None]
            L.sync(dev)
    what = kernel_names(gen)
    tot, cnt = collections.Counter(), collections.Counter()
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA:
            us = ev.device_time if hasattr(ev, "device_time") else ev.cuda_time
            tot[ev.name] += us
            cnt[ev.name] += 1
    rows = [(n, what.get(n, ""), cnt[n] / steps, tot[n] / cnt[n]) for n, _ in tot.most_common()]
    return rows


def ptxas_path():
    try:
        import triton
        p = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")
        if os.path.exists(p):
            return p
    except Exception:  # noqa: BLE001
        pass
    return shutil.which("ptxas")


def registers(cache_dir: str, since: float, kernels: set) -> dict:
    """kernel -> 'R regs, S spill' for the PTX programs written to cache_dir since `since`."""
    px = ptxas_path()
    if not px:
        return {}
    out = {}
    for f in glob.glob(os.path.join(cache_dir, "prog-*.bin")):
        if os.path.getmtime(f) < since:
            continue
        with open(f, "rb") as fh:
            data = fh.read()
        if not any((".entry " + k + "(").encode() in data for k in kernels):
            continue
        with tempfile.NamedTemporaryFile(suffix=".ptx", delete=False) as t:
            t.write(data.rstrip(b"\0"))
        try:
            r = subprocess.run([px, "-arch=sm_90a", "-v", t.name, "-o", os.devnull], capture_output=True, text=True,
                               timeout=120)
        except Exception as ex:  # noqa: BLE001
            print("ptxas:", ex)
            continue
        finally:
            os.unlink(t.name)
        cur = None
        for line in r.stderr.splitlines():
            m = re.search(r"Compiling entry function '(\w+)'", line)
            if m:
                cur = m.group(1)
            m = re.search(r"(\d+) bytes spill stores", line)
            if m and cur:
                out.setdefault(cur, {})["spill"] = int(m.group(1))
            m = re.search(r"Used (\d+) registers", line)
            if m and cur:
                out.setdefault(cur, {})["regs"] = int(m.group(1))
    return {k: v for k, v in out.items() if k in kernels}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="1b", choices=sorted(L.CONFIGS))
    ap.add_argument("--dtype", default="fp16", choices=["fp32", "fp16"])
    ap.add_argument("--modes", default="int8,int4")
    ap.add_argument("--group", type=int, default=128)
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new", type=int, default=32)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--batches", default="1", help="decode batches measured (the profile: batch 1)")
    ap.add_argument("--top", type=int, default=12, help="kernels listed per variant")
    ap.add_argument("--variants", nargs="+", default=["base"])
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    import transformers
    import torchtrt_c
    from torchtrt_c import settings as knobs
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    batches = sorted({1, *(int(b) for b in a.batches.split(","))})
    dtype = torch.float16 if a.dtype == "fp16" else torch.float32
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**L.CONFIGS[a.config])).to(dev, dtype).eval()
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "CPU"
    print(f"# decode A/B: {a.config} Llama {a.dtype} on {name}, prompt {a.prompt}, {a.new} new, medians of {a.runs}",
          flush=True)
    cache_dir = os.environ.get("TORCHTRT_C_CACHE_DIR", os.path.expanduser("~/.cache/torchtrt_c"))
    results = []
    for mode in a.modes.split(","):
        for v in a.variants:
            sets = parse_variant(v)
            t0 = time.time()
            try:
                with knobs.override(**sets):
                    gen = torchtrt_c.compile_llm(model, max_seq_len=a.prompt + a.new + 8, max_batch_size=max(batches),
                                                 max_prompt_len=a.prompt, quantize=MODES[mode],
                                                 quantize_group_size=a.group)
                    per_b = {B: L.measure(lambda ids, n: gen.generate_tokens(ids, max_new_tokens=n), B, a.prompt,
                                          a.new, a.runs, dev) for B in batches}
                    ttft, dec = per_b[1]
            except Exception as ex:  # noqa: BLE001
                print(f"## {mode} [{v}]: failed: {type(ex).__name__}: {ex}", flush=True)
                continue
            comp = time.time() - t0
            rows = step_profile(gen, dev) if dev.type == "cuda" else []
            regs = registers(cache_dir, t0, {r[0] for r in rows[:a.top]}) if dev.type == "cuda" else {}
            dev_us = sum(c * us for _, _, c, us in rows)
            print(f"## {mode} [{v}]: decode {dec * 1e3:.3f} ms/token, ttft {ttft * 1e3:.1f} ms, "
                  f"device {dev_us / 1e3:.3f} ms a step ({comp:.0f} s)" +
                  "".join(f"; batch {B}: decode {d * 1e3:.3f} ms/token, ttft {t * 1e3:.1f} ms"
                          for B, (t, d) in per_b.items() if B != 1), flush=True)
            for n, what, c, us in rows[:a.top]:
                rg = regs.get(n, {})
                rs = f" [{rg.get('regs', '?')} regs, {rg.get('spill', 0)} spill]" if rg else ""
                print(f"   {us:8.1f} us x {c:4.1f}  {n} {what[:70]}{rs}", flush=True)
            results.append({"mode": mode, "variant": v, "decode_ms": dec * 1e3, "ttft_ms": ttft * 1e3,
                            "batches": {B: {"decode_ms": d * 1e3, "ttft_ms": t * 1e3} for B, (t, d) in per_b.items()},
                            "device_ms": dev_us / 1e3, "kernels": rows, "regs": regs})
            del gen
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": name, "config": a.config, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
