"""The kernels of a compile_llm step with the GPU kernel families (TORCHTRT_C_KERNELS=gpu, as a
GPU runs it), fp16 and fp32: a decoder layer launches no kernel that only copies (the fp16
engine's .to(float32) before each RMSNorm, stored as half: an identity copy), none for
rotate_half's negation (the concatenation reads its input negated) and none for the attention
output's transpose(1, 2) before o_proj (kv_reduce writes it transposed), and one kernel writes
the new keys and values into their caches. The rotary embedding's rotated keys and queries
(rotate_half's concatenation with its epilogue x * cos + rotate_half(x) * sin) are no kernels of
their own either: the slot write computes the keys it writes, the attention the queries it loads
(kir/fuse.c, inline_concat_reads). Per layer (kernels of a 3-layer model less a 2-layer one's):
fp16 18 -> 12 -> 10, fp32 16 -> 12 -> 10, the int8_weight_only step 12 -> 10 -> 7 (2026-12-07; 7:
the RMS norms inside the GEMVs they feed, rms_into_wq, and silu(gate) * up computed by the gate/up
GEMV, fuse_gated_wq). The
tokens and logits still match eager: fp32 greedy tokens identical, logits within 1e-5 of their
largest value; fp16 logits within 2e-2 (tests/gpu/test_llm_gpu.py's tolerance), prompt and
decode steps; and with the concatenations inlined the logits and the caches are bit-identical to
those of the same step with them as kernels of their own (TORCHTRT_C_INLINE_CONCAT=0)."""
from __future__ import annotations

import re

import pytest
import torch

import torchtrt_c

transformers = pytest.importorskip("transformers")
T = transformers

VOCAB = 101
MAX_SEQ = 48
PER_LAYER = {"fp16": 10, "fp32": 10, "int8": 7}   # were 18, 16 and 12, then 12, 12 and 12, then 10, 10, 10
DTYPE = {"fp16": torch.float16, "fp32": torch.float32, "int8": torch.float16}
ROTARY_READ = r"neg(_\d+)?\+cat_\d+\+mul_\d+\+mul_\d+\+add_\d+\+kv_attention(_\d+)?$"


def _llama(layers, dtype, heads=4, kv_heads=2, hidden=64, quantize=None, **settings):
    torch.manual_seed(0)
    cfg = T.LlamaConfig(hidden_size=hidden, intermediate_size=96, num_hidden_layers=layers,
                        num_attention_heads=heads, num_key_value_heads=kv_heads, vocab_size=VOCAB,
                        pad_token_id=0, bos_token_id=1, eos_token_id=2)
    m = T.LlamaForCausalLM(cfg).to(dtype).eval()
    kw = dict(quantize=quantize) if quantize else {}
    with torchtrt_c.settings.override(KERNELS="gpu", **settings):
        gen = torchtrt_c.compile_llm(m, max_seq_len=MAX_SEQ, max_batch_size=2, max_prompt_len=16, **kw)
    return m, gen


def _kernels(gen):
    (acc,) = [mod for n, mod in gen.runner.step.named_children() if n.startswith("_run_on_acc_")]
    entry = acc.__dict__.get("_ttc_entry")
    engine = acc.__dict__["_deferred"] if acc.__dict__.get("_deferred") is not None else entry.engine
    info = engine.info()
    assert info["gpu_kernels"], "the GPU kernel families were not used"
    return info["kernels"]


@pytest.mark.parametrize("kind", ["fp16", "fp32", "int8"])
def test_decoder_layer_kernel_count(kind):
    qz = "int8_weight_only" if kind == "int8" else None
    _, g2 = _llama(2, DTYPE[kind], quantize=qz)
    m3, g3 = _llama(3, DTYPE[kind], quantize=qz)
    k2, k3 = _kernels(g2), _kernels(g3)
    per_layer = len(k3) - len(k2)
    assert per_layer <= PER_LAYER[kind], f"{per_layer} kernels a layer:\n" + "\n".join(k3)
    for d in k3:
        # identity copies, a negation, the transpose's copy: none is a kernel of its own
        assert not re.search(r"elementwise: (_to_copy_\d+|neg(_\d+)?|view_\d+)$", d), d
    # the rotary concatenations (their negations read negated) are no kernels: the slot write
    # computes the rotated keys, the attention the rotated queries
    assert not any(re.search(r" concat: neg", d) for d in k3), k3
    assert sum(bool(re.search(r" slot_write: " + ROTARY_READ, d)) for d in k3) == 3, k3
    assert sum(bool(re.search(r" kv_attention: " + ROTARY_READ, d)) for d in k3) == 3, k3
    # the transposed attention output written by kv_reduce
    assert sum(bool(re.search(r"kv_reduce: .*\+view_\d+", d)) for d in k3) == 3, k3
    assert sum(" slot_write: " in d for d in k3) == 3, k3     # keys and values together
    if kind == "int8":
        assert sum(" wq_linear:" in d for d in k3) == 3 * 4 + 1 and not any(" gemm:" in d for d in k3), k3
        # the gated MLP's silu(gate) * up in the gate/up GEMV, no kernel of its own
        assert sum(bool(re.search(r" wq_linear: .*\+silu(_\d+)?\+mul_\d+$", d)) for d in k3) == 3, k3
        assert not any(" elementwise:" in d and "silu" in d for d in k3), k3


@pytest.mark.parametrize("kind", ["fp16", "fp32", "int8"])
def test_inlined_rotary_bit_identical(kind):
    """The step with the rotary concatenations inlined against the same step with them as kernels
    of their own (INLINE_CONCAT=0): logits of a prompt (batch 2, left padding) and 8 decode steps,
    and the caches after them, bit-identical."""
    qz = "int8_weight_only" if kind == "int8" else None
    ids, mask = _prompts()
    out = {}
    for inline in ("1", "0"):
        _, gen = _llama(2, DTYPE[kind], heads=8, kv_heads=2, hidden=128, quantize=qz, INLINE_CONCAT=inline)
        ks = _kernels(gen)
        assert sum(bool(re.search(r" concat: neg", d)) for d in ks) == (0 if inline == "1" else 2 * 2), ks
        logits, tok = [], torch.full((2, 1), 5)
        with gen.runner.pool.state(2) as st:
            logits.append(gen.runner.run(st, ids, mask).clone())
            for t in range(8):
                tok = (tok * 7 + t) % (VOCAB - 3) + 3
                logits.append(gen.runner.run(st, tok, None).clone())
            out[inline] = (logits, [c.clone() for c in st.caches])
        del gen
    (la, ca), (lb, cb) = out["1"], out["0"]
    for t, (a, b) in enumerate(zip(la, lb)):
        assert torch.equal(a, b), f"step {t}: logits differ by {(a.float() - b.float()).abs().max().item():.3e}"
    assert len(ca) == len(cb) == 4
    for i, (a, b) in enumerate(zip(ca, cb)):
        assert torch.equal(a, b), f"cache {i} differs by {(a.float() - b.float()).abs().max().item():.3e}"


def _prompts(b=2, p=7, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, VOCAB, (b, p), generator=g)
    mask = torch.ones(b, p, dtype=torch.int64)
    mask[1, :2] = 0          # left padding in the second row
    ids[1, :2] = 0
    return ids, mask


def test_fp32_tokens_and_logits_equal_eager():
    m, gen = _llama(2, torch.float32, heads=8, kv_heads=2, hidden=128)
    ids, mask = _prompts()
    ref = m.generate(ids, attention_mask=mask, do_sample=False, max_new_tokens=24, min_new_tokens=24)
    out = gen.generate(ids, attention_mask=mask, do_sample=False, max_new_tokens=24, min_new_tokens=24)
    assert torch.equal(out, ref), f"first differing (row, position) {(out != ref).nonzero()[:1].tolist()}"
    own = gen.generate_tokens(ids[:1], max_new_tokens=24)
    ref1 = m.generate(ids[:1], do_sample=False, max_new_tokens=24, min_new_tokens=24)
    assert torch.equal(own, ref1), f"generate_tokens differs at {(own != ref1).nonzero()[:1].tolist()}"
    _teacher_forced(m, gen, ref1, ids.shape[1], 1e-5)


def test_fp16_logits_match_eager():
    m, gen = _llama(2, torch.float16, heads=8, kv_heads=2, hidden=128)
    ids, _ = _prompts(b=2, p=9, seed=1)
    ids[1, :2] = 5
    ref = m.generate(ids, do_sample=False, max_new_tokens=16, min_new_tokens=16)
    _teacher_forced(m, gen, ref, ids.shape[1], 2e-2)


def _teacher_forced(m, gen, ref, p, tol):
    """The compiled step's logits at each position of eager's own tokens (prompt, then one token
    a step through the compiled cache) against eager's, relative to their largest magnitude."""
    b = ref.shape[0]
    with gen.runner.pool.state(b) as st:
        logits = gen.runner.run(st, ref[:, :p], None)
        for t in range(ref.shape[1] - p):
            with torch.no_grad():
                want = m(ref[:, :p + t]).logits[:, -1].float()
            err = (logits.float() - want).abs().max().item() / want.abs().max().item()
            assert err < tol, f"step {t}: logits differ by {err:.2e} of their largest magnitude"
            logits = gen.runner.run(st, ref[:, p + t:p + t + 1], None)
