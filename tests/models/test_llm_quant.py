"""compile_llm with weight-only quantized weights (issue 35): decode runs on int8/int4 weights
(every linear of the step is a wq_linear kernel, none a GEMM), on a tiny HF Llama (random
weights, initialised as transformers does).

- quantize="int8_weight_only" / "int4_weight_only" (groups of 16): 64 greedy tokens equal
  torch's greedy tokens on a copy of the model holding the same dequantized weights; against the
  fp32 model the agreement of the 64 greedy tokens is printed (int8 1.0 here; int4 lower: random
  weights give near-uniform logits that small errors reorder), and the logits teacher-forced on
  the fp32 tokens keep a cosine >= 0.999 (int8) / >= 0.99 (int4) at every one of the 64 steps.
- torchao-quantized models (Int8WeightOnlyConfig, IntxWeightOnlyConfig int4): tokens equal
  torch's generate() on the same quantized model.
"""
from __future__ import annotations

import copy

import pytest
import torch

import torchtrt_c
import torchtrt_c._C as C
from torchtrt_c.dynamo._weight_only import dequantize, quantize_int4, quantize_int8
from zoo import Logits

T = pytest.importorskip("transformers")

VOCAB, PROMPT, NEW, GROUP = 97, 7, 64, 16


def _llama():
    torch.manual_seed(0)
    cfg = T.LlamaConfig(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                        num_key_value_heads=2, vocab_size=VOCAB, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    return T.LlamaForCausalLM(cfg).eval()


def _prompt():
    return torch.randint(3, VOCAB, (1, PROMPT), generator=torch.Generator().manual_seed(0))


def _greedy(m, ids):
    with torch.no_grad():
        return m.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW, min_new_tokens=NEW,
                          do_sample=False)


def _step_kernels(gen):
    step = gen.runner.step
    out = []
    for name, mod in step.named_children():
        if name.startswith("_run_on_acc"):
            out += C.Engine.deserialize(bytes(mod.engine.numpy()), cache_dir="").info()["kernels"]
    return out


def _weight_gemms(ks):
    """The float GEMM kernels but the rotary position product inv_freq @ position_ids (its node
    "matmul", a GEMM of K = 1 under the GPU kernel families; an elementwise product elsewhere)."""
    return [k for k in ks if " gemm:" in k and not k.split(": ", 1)[1].startswith("matmul")]


def _dequantize_setting(w, qz):
    """w [N, K] as the quantize= setting leaves it, dequantized."""
    if qz == "int8_weight_only":
        q, s = quantize_int8(w)
        return dequantize(q, s, None, w.shape[1], 8)
    gs = min(GROUP, w.shape[1])
    q, s, z = quantize_int4(w, gs)
    return dequantize(q, s, z, gs, 4)


def _dequantized_copy(model, qz):
    """model with every linear's weight (nn.Linear [N, K]; transformers' Conv1D [K, N]) as the
    quantize= setting leaves it, dequantized."""
    from transformers.pytorch_utils import Conv1D
    dq = copy.deepcopy(model)
    for mod in dq.modules():
        if isinstance(mod, torch.nn.Linear):
            mod.weight = torch.nn.Parameter(_dequantize_setting(mod.weight.data, qz))
        elif isinstance(mod, Conv1D):
            mod.weight = torch.nn.Parameter(_dequantize_setting(mod.weight.data.t(), qz).t().contiguous())
    return dq


@pytest.mark.parametrize("families", ["default", "gpu"])
@pytest.mark.parametrize("qz", ["int8_weight_only", "int4_weight_only"])
def test_compile_llm_quantize(qz, families, monkeypatch):
    """families gpu: the GPU kernel families (the decode GEMV, the RMS norms inside it)."""
    if families == "gpu":
        monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")
    model = _llama()
    ids = _prompt()
    gen = torchtrt_c.compile_llm(model, max_seq_len=PROMPT + NEW + 1, quantize=qz, quantize_group_size=GROUP)
    ks = _step_kernels(gen)
    # 7 linears a layer (q, k, v, o, gate, up, down) and the LM head
    # 4 a layer (q/k/v and gate/up fused: fuse_parallel_linear) + the head
    assert sum(" wq_linear:" in k for k in ks) == 2 * 4 + 1 and not _weight_gemms(ks), ks
    if families == "gpu":   # each layer's two norms inside the GEMVs; the final norm stays
        assert sum(" norm:" in k for k in ks) == 1, ks
    out = _greedy(gen, ids)
    ref = _greedy(model, ids)
    assert torch.equal(out, _greedy(_dequantized_copy(model, qz), ids))
    agree = (out[0, PROMPT:] == ref[0, PROMPT:]).float().mean().item()
    cos = []
    with torch.no_grad():
        for t in range(NEW):   # teacher-forced on the fp32 model's tokens
            seq = ref[:, :PROMPT + t]
            a = gen(seq, attention_mask=torch.ones_like(seq))
            a = (a.logits if hasattr(a, "logits") else a).reshape(1, -1)
            b = model(seq).logits[:, -1]
            cos.append(torch.nn.functional.cosine_similarity(a, b).item())
    print(f"{qz}: greedy tokens agreeing with fp32 over {NEW} steps: {agree:.3f}; "
          f"teacher-forced logits cosine min {min(cos):.5f} mean {sum(cos) / len(cos):.5f}")
    assert min(cos) >= (0.999 if qz == "int8_weight_only" else 0.99), cos
    if qz == "int8_weight_only":
        assert agree >= 0.9, agree


@pytest.mark.parametrize("cfg", ["int8", "intx_int4"])
def test_compile_llm_torchao(cfg):
    pytest.importorskip("torchao")
    from torchao.quantization import Int8WeightOnlyConfig, IntxWeightOnlyConfig, quantize_
    from torchao.quantization.granularity import PerGroup
    model = _llama()
    quantize_(model, Int8WeightOnlyConfig() if cfg == "int8" else
              IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(GROUP)))
    ids = _prompt()
    gen = torchtrt_c.compile_llm(model, max_seq_len=PROMPT + NEW + 1)
    ks = _step_kernels(gen)
    # 4 a layer (q/k/v and gate/up fused: fuse_parallel_linear) + the head
    assert sum(" wq_linear:" in k for k in ks) == 2 * 4 + 1 and not _weight_gemms(ks), ks
    assert torch.equal(_greedy(gen, ids), _greedy(model, ids))


def test_compile_llm_quantized_on_tensor_cores(monkeypatch):
    """fp16 with the GPU kernel families and TORCHTRT_C_WQ_MMA=1 (and =auto: the prompt's rows on
    tensor cores, decode's on the GEMV): the products whose K is a
    multiple of 64 (q/k/v, o, gate/up, the head; not down, K = 96) run the tensor-core form
    (through the emulation here); prefill and decode logits, teacher-forced on one token
    sequence, keep a cosine >= 0.999 with the same engine's GEMV form at every step."""
    monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")
    model = _llama().half()
    ids = _prompt()
    logits = {}
    for mma in ("0", "1", "auto"):
        monkeypatch.setenv("TORCHTRT_C_WQ_MMA", mma)
        gen = torchtrt_c.compile_llm(model, max_seq_len=PROMPT + 17, quantize="int8_weight_only")
        src = "".join(C.Engine.deserialize(bytes(mod.engine.numpy()), cache_dir="").info()["source"]
                      for name, mod in gen.runner.step.named_children() if name.startswith("_run_on_acc"))
        assert ("uint a[4] = {wa[2 * s], wb[2 * s]" in src) == (mma != "0")
        out = _greedy_n(gen, ids, 16)
        with torch.no_grad():
            logits[mma] = [gen(out[:, :PROMPT + t], attention_mask=torch.ones_like(out[:, :PROMPT + t])).logits
                           .reshape(1, -1).float() for t in range(0, 16, 5)]
        del gen
    for mma in ("1", "auto"):
        for a, b in zip(logits["0"], logits[mma]):
            assert torch.nn.functional.cosine_similarity(a, b).item() >= 0.999


def _greedy_n(m, ids, n):
    with torch.no_grad():
        return m.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, min_new_tokens=n, do_sample=False)


@pytest.mark.parametrize("qz", ["int8_weight_only", "int4_weight_only"])
def test_compile_llm_quantized_gated_gemv(qz, monkeypatch):
    """The GPU kernel families (TORCHTRT_C_KERNELS=gpu): each layer's joined gate/up GEMV writes
    silu(gate) * up itself (kir/fuse.c fuse_gated_wq), no silu * mul kernel of its own; 64 greedy
    tokens equal torch's on the dequantized copy and the unfused engine's (TORCHTRT_C_WQ_GLU=0),
    and the logits teacher-forced on those tokens keep a cosine >= 0.999 with the unfused
    engine's at every 8th step."""
    model = _llama()
    ids = _prompt()
    monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")
    monkeypatch.setenv("TORCHTRT_C_WQ_GLU", "0")
    base = torchtrt_c.compile_llm(model, max_seq_len=PROMPT + NEW + 1, quantize=qz, quantize_group_size=GROUP)
    assert sum(" elementwise:" in k and "silu" in k for k in _step_kernels(base)) == 2
    base_out = _greedy(base, ids)
    monkeypatch.delenv("TORCHTRT_C_WQ_GLU")
    gen = torchtrt_c.compile_llm(model, max_seq_len=PROMPT + NEW + 1, quantize=qz, quantize_group_size=GROUP)
    ks = _step_kernels(gen)
    assert not any(" elementwise:" in k and "silu" in k for k in ks), ks
    assert sum(" wq_linear:" in k and "silu" in k for k in ks) == 2, ks
    assert sum(" wq_linear:" in k for k in ks) == 2 * 4 + 1 and not _weight_gemms(ks), ks
    out = _greedy(gen, ids)
    assert torch.equal(out, base_out)
    assert torch.equal(out, _greedy(_dequantized_copy(model, qz), ids))
    with torch.no_grad():
        for t in range(0, NEW, 8):
            seq = out[:, :PROMPT + t]
            a, b = (m(seq, attention_mask=torch.ones_like(seq)) for m in (gen, base))
            a, b = ((v.logits if hasattr(v, "logits") else v).reshape(1, -1) for v in (a, b))
            assert torch.nn.functional.cosine_similarity(a, b).item() >= 0.999


@pytest.mark.parametrize("qz", ["int8_weight_only", "int4_weight_only"])
def test_quantize_setting_takes_gpt2_conv1d(qz):
    """GPT-2's projections are transformers' Conv1D (addmm(bias, x, W) with W [K, N]), not
    nn.Linear: the quantize= setting takes them too. Forward (input_ids=): 4 wq_linear kernels a
    layer (c_attn, attention c_proj, c_fc, MLP c_proj) and the LM head, no float GEMM, logits
    within 1e-4 of the largest of torch's on the dequantized copy; compile_llm: 64 greedy tokens
    equal the dequantized copy's."""
    torch.manual_seed(0)
    model = T.GPT2LMHeadModel(T.GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=VOCAB, n_positions=128,
                                           bos_token_id=1, eos_token_id=2)).eval()
    dq = _dequantized_copy(model, qz)
    ids = _prompt()

    trt = torchtrt_c.compile(Logits(model), inputs=[ids], quantize=qz, quantize_group_size=GROUP)
    ks = []
    for name, mod in trt.named_children():
        if name.startswith("_run_on_acc"):
            ks += C.Engine.deserialize(bytes(mod.engine.numpy()), cache_dir="").info()["kernels"]
    assert sum(" wq_linear:" in k for k in ks) == 2 * 4 + 1 and not _weight_gemms(ks), ks
    assert "_run_on_gpu" not in str(trt.graph)
    with torch.no_grad():
        got, want = trt(ids), dq(input_ids=ids).logits
    assert float((got - want).abs().max()) <= 1e-4 * float(want.abs().max())
    gen = torchtrt_c.compile_llm(model, max_seq_len=PROMPT + NEW + 1, quantize=qz, quantize_group_size=GROUP)
    assert not _weight_gemms(_step_kernels(gen))
    assert torch.equal(gen.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW,
                                    min_new_tokens=NEW, do_sample=False), _greedy(dq, ids))
