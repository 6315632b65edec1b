"""Where our engine of the torchao dynamic-int8 BERT departs from torch's execution (issue 35; the
"Error:" bullet of bench/RESULTS.md's dynamic int8 section). Same model and inputs as
bench/quant_dynamic.py (BERT-base config, random weights, batch 32 x sequence 128).

    PYTHONPATH=. python3 bench/quant_dynamic_err.py [--layers 2] [--parts ops engine f64ln oneulp fp32]

Parts:
  ops     each leaf module of the first encoder layer (and the embeddings' LayerNorm) compiled alone
          (min_block_size=1) and fed torch's own input of that module: max |ours - torch's| and
          how many elements differ (0 = torch's to the bit)
  engine  the whole engine vs torch's execution of the quantized model, per hidden state (h0 =
          embeddings' output, hK = layer K's): error (max |d| / max |torch's|), and what the
          next per-row quantize (torchao's choose_qparams_affine + quantize_affine, as torch
          computes them) makes of both: int8 values differing, by how many steps, rows, row
          scales differing
  f64ln   the same table for torch alone, the only change the embeddings' LayerNorm computed in
          float64 and rounded to float32 (a more accurate LayerNorm, ulp-level changes)
  oneulp  torch alone: one element of the embeddings' output, the one whose x / scale sits on a
          rounding tie, moved by one ulp (one int8 value of the first quantize flips, nothing
          else changes) -> error of each hidden state and how many rows it reaches
  fp32    our float32 engine vs eager float32, and torch's quantized model vs eager float32 (the
          quantization error itself), per hidden state"""
from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]   # see quant_dynamic.py
sys.path.insert(0, os.path.dirname(HERE))

import torch  # noqa: E402

import torchtrt_c  # noqa: E402
from bench.quant_dynamic import build, dyn8  # noqa: E402

EPS = 1.1920928955078125e-07   # torch.finfo(float32).eps, torchao's default for int8


def quant(x):
    """torchao's per-row symmetric int8 quantize as torch.export decomposes it (and torch runs it)."""
    x = x.reshape(-1, x.shape[-1])
    z = torch.zeros(1)
    mx = torch.maximum(-torch.minimum(x.amin(1, keepdim=True), z), torch.maximum(x.amax(1, keepdim=True), z))
    s = torch.clamp(mx / 127.5, min=EPS)
    return torch.clamp(torch.round(x * (torch.reciprocal(s) * 1.0)), -128, 127).to(torch.int8), s


def err(a, b):
    return float((a - b).abs().max() / b.abs().max())


def table(tag, hs, ref):
    for i, (a, b) in enumerate(zip(hs, ref)):
        qa, sa = quant(a)
        qb, sb = quant(b)
        dq = (qa.int() - qb.int()).abs()
        print(f"| {tag} | h{i} | {err(a, b):.2e} | {int((dq > 0).sum())} | {int(dq.max())} | "
              f"{int((dq.amax(1) > 0).sum())}/{qa.shape[0]} | {int((sa != sb).sum())} |", flush=True)


def table_head():
    print("| run | hidden state | err | int8 differing | max steps | rows with one | row scales differing |\n"
          "|---|---|---|---|---|---|---|")


def part_ops(q, kw):
    rec = {}
    hooks = [m.register_forward_hook(lambda mod, args, out, n=n: rec.__setitem__(n, (args, out)))
             for n, m in q.named_modules() if n and not list(m.children())]
    with torch.no_grad():
        q(**kw)
    for h in hooks:
        h.remove()
    mods = dict(q.named_modules())
    print("| module | kind | max abs diff | elements differing |\n|---|---|---|---|")
    for n, (args, out) in rec.items():
        if not (n == "embeddings.LayerNorm" or n.startswith("encoder.layer.0.")) or "dropout" in n:
            continue
        m = mods[n]
        e = torchtrt_c.compile(m, inputs=list(args), min_block_size=1, cache_built_engines=False,
                               reuse_cached_engines=False)
        kinds = {type(c).__name__ for c in e.children()}
        assert kinds == {"EngineModule"}, (n, kinds)   # an engine, not torch running it
        with torch.no_grad():
            d = (e(*args) - out).abs()
        print(f"| {n} | {type(m).__name__} | {float(d.max()):.2e} | {int((d > 0).sum())}/{d.numel()} |", flush=True)


def part_oneulp(q, ht):
    def run_layers(h):
        hs = [h]
        for layer in q.encoder.layer:
            o = layer(h)
            h = o[0] if isinstance(o, tuple) else o
            hs.append(h)
        return hs
    h0 = ht[0]
    assert torch.equal(run_layers(h0)[-1], ht[-1])
    x = h0.reshape(-1, h0.shape[-1])
    qt, st = quant(x)
    v = x * (torch.reciprocal(st) * 1.0)
    dist = (v - v.floor() - 0.5).abs()                            # distance to the rounding boundary
    dist[x.abs() == x.abs().amax(1, keepdim=True)] = 1            # not a row's max (its scale)
    r, c = divmod(int(dist.argmin()), x.shape[1])
    for tgt in (float("inf"), float("-inf")):
        y = torch.nextafter(x[r, c], torch.tensor(tgt))
        x2 = x.clone()
        x2[r, c] = y
        q2, s2 = quant(x2)
        if int((q2 != qt).sum()) == 1 and torch.equal(s2, st):
            break
    else:
        print("no single-flip neighbour found")
        return
    hp = run_layers(x2.reshape(h0.shape))
    rows = [int(((a - b).reshape(-1, a.shape[-1]).abs().amax(1) > 0).sum()) for a, b in zip(hp, ht)]
    print(f"row {r} col {c}: {float(x[r, c]):.9g} -> {float(y):.9g} (1 ulp), x / scale = {float(v[r, c]):.7f}: "
          f"int8 {int(qt[r, c])} -> {int(q2[r, c])}, the only one of {qt.numel()} changed")
    print("| hidden state | err vs torch | rows changed |\n|---|---|---|")
    for i, (a, b) in enumerate(zip(hp, ht)):
        print(f"| h{i} | {err(a, b):.2e} | {rows[i]}/{x.shape[0]} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--parts", nargs="+", default=["ops", "engine", "f64ln", "oneulp", "fp32"])
    a = ap.parse_args()
    model = build(a.layers)
    q = dyn8(model)
    g = torch.Generator().manual_seed(1)
    kw = {"input_ids": torch.randint(0, model.config.vocab_size, (a.batch, a.seq), generator=g),
          "attention_mask": torch.ones(a.batch, a.seq, dtype=torch.long)}
    print(f"# BertModel BERT-base config, {a.layers} layers, batch {a.batch} x seq {a.seq}; "
          f"TORCHTRT_C_NATIVE={os.environ.get('TORCHTRT_C_NATIVE', '(default)')}", flush=True)
    if "ops" in a.parts:
        part_ops(q, kw)
    for m in (model, q):
        m.config.output_hidden_states = True
    with torch.no_grad():
        ht = q(**kw).hidden_states
        if "engine" in a.parts or "f64ln" in a.parts:
            table_head()
        if "engine" in a.parts:
            e = torchtrt_c.compile(q, kwarg_inputs=kw, cache_built_engines=False, reuse_cached_engines=False)
            table("engine vs torch", e(**kw).hidden_states, ht)
            del e
        if "f64ln" in a.parts:
            ln = q.embeddings.LayerNorm
            ln.forward = lambda x: torch.nn.functional.layer_norm(
                x.double(), ln.normalized_shape, ln.weight.double(), ln.bias.double(), ln.eps).float()
            hp = q(**kw).hidden_states
            del ln.forward
            table("torch, f64 embeddings LN, vs torch", hp, ht)
        if "oneulp" in a.parts:
            part_oneulp(q, ht)
        if "fp32" in a.parts:
            hm = model(**kw).hidden_states
            e = torchtrt_c.compile(model, kwarg_inputs=kw, cache_built_engines=False, reuse_cached_engines=False)
            hf = e(**kw).hidden_states
            print("| hidden state | fp32 engine vs eager fp32 | torch dyn8 vs eager fp32 |\n|---|---|---|")
            for i in range(len(hm)):
                print(f"| h{i} | {err(hf[i], hm[i]):.2e} | {err(ht[i], hm[i]):.2e} |")


if __name__ == "__main__":
    main()
