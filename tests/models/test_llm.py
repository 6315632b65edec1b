"""LLM generation (torchtrt_c.compile_llm): Hugging Face causal LMs at tiny configs, random
weights, generated as users generate (model.generate(input_ids=..., attention_mask=...)), against
the same model's eager generate().

fp32 greedy tokens must be identical to eager's for 128 new tokens, batched prompts of different
lengths (left padding) included; sliding windows are exercised by windows shorter than the
generation. Bad input is a torchtrt_c.InputError before any work, after which the generator
still works."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import pytest
import torch

import torchtrt_c

transformers = pytest.importorskip("transformers")
T = transformers

VOCAB = 97
NEW = 128
PROMPT = 7
MAX_SEQ = PROMPT + NEW + 1


def _configs():
    small = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, vocab_size=VOCAB, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    return {
        "llama": lambda: T.LlamaForCausalLM(T.LlamaConfig(**small)),
        "qwen2": lambda: T.Qwen2ForCausalLM(T.Qwen2Config(**small)),
        # windows shorter than the generation, so that they matter
        "mistral": lambda: T.MistralForCausalLM(T.MistralConfig(**small, sliding_window=11)),
        "gemma2": lambda: T.Gemma2ForCausalLM(T.Gemma2Config(**small, head_dim=16, sliding_window=9)),
        "phi3": lambda: T.Phi3ForCausalLM(T.Phi3Config(**small)),
        "gpt2": lambda: T.GPT2LMHeadModel(T.GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=VOCAB,
                                                       bos_token_id=1, eos_token_id=2, pad_token_id=0)),
        "opt": lambda: T.OPTForCausalLM(T.OPTConfig(hidden_size=64, ffn_dim=96, num_hidden_layers=2,
                                                    num_attention_heads=4, vocab_size=VOCAB, word_embed_proj_dim=64,
                                                    pad_token_id=0, bos_token_id=1, eos_token_id=2)),
    }


ARCHS = sorted(_configs())
_cache = {}


def _model(arch):
    if arch not in _cache:
        torch.manual_seed(0)
        m = _configs()[arch]().eval()
        gen = torchtrt_c.compile_llm(m, max_seq_len=MAX_SEQ, max_batch_size=2, max_prompt_len=16)
        _cache[arch] = (m, gen)
    return _cache[arch]


def _prompts(b=2, p=PROMPT, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, VOCAB, (b, p), generator=g)
    mask = torch.ones(b, p, dtype=torch.int64)
    if b > 1:
        mask[1, :3] = 0          # the second prompt is 3 tokens shorter: left padding
        ids[1, :3] = 0
    return ids, mask


def _eager(m, ids, mask, **kw):
    return m.generate(ids, attention_mask=mask, do_sample=False, **kw)


@pytest.mark.parametrize("arch", ARCHS)
def test_greedy_tokens_equal_eager(arch):
    m, gen = _model(arch)
    names = [n for n, _ in gen.runner.step.named_children()]
    assert names == ["_run_on_acc_0"], f"{arch}: the step is not one engine: {names}"
    ids, mask = _prompts()
    # no eos: all 128 tokens compared
    ref = _eager(m, ids, mask, max_new_tokens=NEW, min_new_tokens=NEW)
    out = gen.generate(ids, attention_mask=mask, do_sample=False, max_new_tokens=NEW, min_new_tokens=NEW)
    diff = (out != ref).nonzero()
    assert out.shape == ref.shape and diff.numel() == 0, \
        f"{arch}: first differing (row, position) {diff[:1].tolist()} of {tuple(ref.shape)}"
    # our own loop, one prompt (no padding), no eos
    own = gen.generate_tokens(ids[:1], max_new_tokens=NEW)
    ref1 = _eager(m, ids[:1], None, max_new_tokens=NEW, min_new_tokens=NEW)
    assert torch.equal(own, ref1), f"{arch}: generate_tokens differs from eager at {(own != ref1).nonzero()[:1].tolist()}"


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_forward_logits_match(arch):
    """gen(input_ids) alone: the last position's logits of a whole prompt, within fp32 tolerance."""
    m, gen = _model(arch)
    ids, mask = _prompts(b=2, p=13, seed=3)
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        ref = m(input_ids=ids, attention_mask=mask, position_ids=pos).logits[:, -1]
    got = gen(input_ids=ids, attention_mask=mask, position_ids=pos).logits[:, -1]
    err = (got - ref).abs().max().item() / ref.abs().max().item()
    assert err < 1e-5, f"{arch}: logits differ by {err:.2e} of their largest value"


def test_bad_input_is_refused_and_generator_keeps_working():
    m, gen = _model("llama")
    ids, mask = _prompts()
    with pytest.raises(torchtrt_c.InputError, match="do not fit the cache"):
        gen.generate(ids, attention_mask=mask, max_new_tokens=MAX_SEQ)          # would overflow the cache
    with pytest.raises(torchtrt_c.InputError, match="prompt of 17 tokens"):
        gen.generate(torch.randint(3, VOCAB, (1, 17)), max_new_tokens=2)        # longer than max_prompt_len
    with pytest.raises(torchtrt_c.InputError, match="batch 3"):
        gen.generate(torch.randint(3, VOCAB, (3, 5)), max_new_tokens=2)         # over max_batch_size
    with pytest.raises(torchtrt_c.InputError, match="batch 3"):
        gen.generate_tokens(torch.randint(3, VOCAB, (3, 5)), max_new_tokens=2)
    with pytest.raises(torchtrt_c.InputError, match="do not fit the cache"):
        gen.generate_tokens(ids, max_new_tokens=MAX_SEQ)
    ref = _eager(m, ids, mask, max_new_tokens=8, min_new_tokens=8)
    out = gen.generate(ids, attention_mask=mask, do_sample=False, max_new_tokens=8, min_new_tokens=8)
    assert torch.equal(out, ref)


def test_generate_options():
    """eos stops a row (then padding), max_new_tokens, stopping criteria, a streamer and sampling
    go through transformers' own generate() machinery."""
    m, gen = _model("qwen2")
    ids, mask = _prompts()
    # eos: the token eager greedy produces at step 3 of row 0 becomes the eos id
    ref = _eager(m, ids, mask, max_new_tokens=10, min_new_tokens=10)
    eos = int(ref[0, PROMPT + 3])
    ref_eos = _eager(m, ids, mask, max_new_tokens=10, eos_token_id=eos)
    out_eos = gen.generate(ids, attention_mask=mask, do_sample=False, max_new_tokens=10, eos_token_id=eos)
    assert torch.equal(out_eos, ref_eos)

    class Count(T.StoppingCriteria):
        def __call__(self, input_ids, scores, **kw):
            return torch.full((input_ids.shape[0],), input_ids.shape[1] >= PROMPT + 4, dtype=torch.bool)

    out = gen.generate(ids, attention_mask=mask, do_sample=False, max_new_tokens=10,
                       stopping_criteria=T.StoppingCriteriaList([Count()]))
    assert out.shape[1] == PROMPT + 4 and torch.equal(out, ref[:, :PROMPT + 4])

    class Collect(T.generation.streamers.BaseStreamer):
        def __init__(self):
            self.got, self.ended = [], False

        def put(self, value):
            self.got.append(value.clone())

        def end(self):
            self.ended = True

    s = Collect()
    out = gen.generate(ids[:1], do_sample=False, max_new_tokens=5, min_new_tokens=5, streamer=s)
    assert s.ended and torch.equal(torch.cat([x.reshape(-1) for x in s.got[1:]]), out[0, PROMPT:])

    torch.manual_seed(5)
    a = gen.generate(ids, attention_mask=mask, do_sample=True, top_k=5, max_new_tokens=12, min_new_tokens=12)
    torch.manual_seed(5)
    b = gen.generate(ids, attention_mask=mask, do_sample=True, top_k=5, max_new_tokens=12, min_new_tokens=12)
    assert torch.equal(a, b) and a.shape == (2, PROMPT + 12) and int(a.max()) < VOCAB
    assert torch.equal(a[:, :PROMPT], ids)


def test_two_threads_keep_their_caches():
    m, gen = _model("llama")
    prompts = [_prompts(b=1, seed=s)[0] for s in (11, 12)]
    want = [gen.generate_tokens(p, max_new_tokens=24) for p in prompts]
    got = [None, None]
    errors = []

    def work(i):
        try:
            for _ in range(3):
                got[i] = gen.generate(prompts[i], do_sample=False, max_new_tokens=24, min_new_tokens=24)
                assert torch.equal(got[i], want[i])
        except Exception as ex:  # noqa: BLE001  (reported below)
            errors.append(ex)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    assert all(torch.equal(g, w) for g, w in zip(got, want))


def test_save_load_fresh_process(tmp_path):
    m, gen = _model("gpt2")
    ids, mask = _prompts()
    want = gen.generate(ids, attention_mask=mask, do_sample=False, max_new_tokens=20, min_new_tokens=20)
    path = tmp_path / "llm"
    gen.save(str(path))
    torch.save({"ids": ids, "mask": mask}, tmp_path / "in.pt")
    code = textwrap.dedent(f"""
        import torch, torchtrt_c
        d = torch.load({str(tmp_path / 'in.pt')!r})
        gen = torchtrt_c.load_llm({str(path)!r})
        out = gen.generate(d["ids"], attention_mask=d["mask"], do_sample=False, max_new_tokens=20, min_new_tokens=20)
        torch.save(out, {str(tmp_path / 'out.pt')!r})
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in [os.getcwd(), os.environ.get("PYTHONPATH", "")] if p))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert torch.equal(torch.load(tmp_path / "out.pt"), want)


def test_gpu_kernel_families_with_gemv_form():
    """The GPU's code path on this device: the GPU kernel families (TORCHTRT_C_KERNELS=gpu), no
    native steps, the GEMMs' GEMV form for the decode steps (TORCHTRT_C_GEMM_GEMV=1, launched
    for the 2-row steps, not for the 7-token prompts); greedy tokens equal eager's."""
    torch.manual_seed(0)
    m = _configs()["llama"]().eval()
    with torchtrt_c.settings.override(KERNELS="gpu", NATIVE="0", GEMM_GEMV="1"):
        gen = torchtrt_c.compile_llm(m, max_seq_len=MAX_SEQ, max_batch_size=2, max_prompt_len=16)
    ids, mask = _prompts()
    ref = _eager(m, ids, mask, max_new_tokens=24, min_new_tokens=24)
    out = gen.generate(ids, attention_mask=mask, do_sample=False, max_new_tokens=24, min_new_tokens=24)
    assert torch.equal(out, ref), f"first differing (row, position) {(out != ref).nonzero()[:1].tolist()}"
    (acc,) = [mod for n, mod in gen.runner.step.named_children() if n.startswith("_run_on_acc_")]
    entry = acc.__dict__.get("_ttc_entry")
    engine = acc.__dict__["_deferred"] if acc.__dict__.get("_deferred") is not None else entry.engine
    info = engine.info()
    assert info["gpu_kernels"] and info["gemv_launches"] >= 23 * 4, info["gemv_launches"]
