"""The kernels of a compile_llm step with the GPU kernel families (TORCHTRT_C_KERNELS=gpu, as a
GPU runs it), fp16 and fp32: a decoder layer launches no kernel that only copies (the fp16
engine's .to(float32) before each RMSNorm, stored as half: an identity copy), none for
rotate_half's negation (the concatenation reads its input negated) and none for the attention
output's transpose(1, 2) before o_proj (kv_reduce writes it transposed), and one kernel writes
the new keys and values into their caches. Per layer (kernels of a 3-layer model less a 2-layer
one's): fp16 18 -> 12, fp32 16 -> 12 (2026-12-07). The tokens and
logits still match eager: fp32 greedy tokens identical, logits within 1e-5 of their largest
value; fp16 logits within 2e-2 (tests/gpu/test_llm_gpu.py's tolerance), prompt and decode steps."""
from __future__ import annotations

import re

import pytest
import torch

import torchtrt_c

transformers = pytest.importorskip("transformers")
T = transformers

VOCAB = 101
MAX_SEQ = 48
PER_LAYER = {torch.float16: 12, torch.float32: 12}   # were 18 and 16


def _llama(layers, dtype, heads=4, kv_heads=2, hidden=64):
    torch.manual_seed(0)
    cfg = T.LlamaConfig(hidden_size=hidden, intermediate_size=96, num_hidden_layers=layers,
                        num_attention_heads=heads, num_key_value_heads=kv_heads, vocab_size=VOCAB,
                        pad_token_id=0, bos_token_id=1, eos_token_id=2)
    m = T.LlamaForCausalLM(cfg).to(dtype).eval()
    with torchtrt_c.settings.override(KERNELS="gpu"):
        gen = torchtrt_c.compile_llm(m, max_seq_len=MAX_SEQ, max_batch_size=2, max_prompt_len=16)
    return m, gen


def _kernels(gen):
    (acc,) = [mod for n, mod in gen.runner.step.named_children() if n.startswith("_run_on_acc_")]
    entry = acc.__dict__.get("_ttc_entry")
    engine = acc.__dict__["_deferred"] if acc.__dict__.get("_deferred") is not None else entry.engine
    info = engine.info()
    assert info["gpu_kernels"], "the GPU kernel families were not used"
    return info["kernels"]


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=["fp16", "fp32"])
def test_decoder_layer_kernel_count(dtype):
    _, g2 = _llama(2, dtype)
    m3, g3 = _llama(3, dtype)
    k2, k3 = _kernels(g2), _kernels(g3)
    per_layer = len(k3) - len(k2)
    assert per_layer <= PER_LAYER[dtype], f"{per_layer} kernels a layer:\n" + "\n".join(k3)
    for d in k3:
        # identity copies, a negation, the transpose's copy: none is a kernel of its own
        assert not re.search(r"elementwise: (_to_copy_\d+|neg(_\d+)?|view_\d+)$", d), d
    # negations read by the concatenations, the transposed attention output written by kv_reduce
    assert sum(bool(re.search(r"concat: neg", d)) for d in k3) == 2 * 3, k3
    assert sum(bool(re.search(r"kv_reduce: .*\+view_\d+", d)) for d in k3) == 3, k3
    assert sum(" slot_write: " in d for d in k3) == 3, k3     # keys and values together


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
