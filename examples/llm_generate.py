"""Text generation with a Hugging Face causal LM: compile_llm puts every step (prompt and
decode) in one engine that keeps the KV cache on the device, and transformers' own generate()
runs unchanged on the compiled model. A small Llama configuration with random weights (nothing
is downloaded; any transformers causal LM, e.g. AutoModelForCausalLM.from_pretrained(...), is
compiled the same way). Prints the compiled model's tokens against eager's and both speeds.

    python examples/llm_generate.py            # CUDA if torch sees a GPU, else the CPU
"""
import time

import torch
import transformers

import torchtrt_c


def main():
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.float16 if dev == "cuda" else torch.float32
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=1000, hidden_size=128, intermediate_size=256,
                                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                      pad_token_id=0, bos_token_id=1, eos_token_id=2)
    model = transformers.LlamaForCausalLM(config).to(dev, dtype).eval()

    gen = torchtrt_c.compile_llm(model, max_seq_len=128, max_batch_size=2, max_prompt_len=32)

    # a batch of two prompts of different lengths, left-padded as transformers pads for generation
    ids = torch.randint(3, config.vocab_size, (2, 12), device=dev)
    mask = torch.ones_like(ids)
    ids[1, :4], mask[1, :4] = config.pad_token_id, 0
    kw = dict(attention_mask=mask, do_sample=False, max_new_tokens=48, min_new_tokens=48)

    def timed(fn):
        fn()   # warm
        if dev == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        out = fn()
        if dev == "cuda":
            torch.cuda.synchronize()
        return out, (time.perf_counter() - t) * 1e3

    ref, t_eager = timed(lambda: model.generate(ids, **kw))
    out, t_ours = timed(lambda: gen.generate(ids, **kw))           # transformers' generate()
    loop, t_loop = timed(lambda: gen.generate_tokens(ids, attention_mask=mask, max_new_tokens=48))
    same = int((out[:, ids.shape[1]:] == ref[:, ids.shape[1]:]).all(0).sum())
    print(f"device {dev}: engines {[n for n, _ in gen.runner.step.named_children()]}")
    print(f"generate(): {same} of 48 new tokens equal to eager's; loop equal: {torch.equal(loop, out)}")
    print(f"48 tokens, batch 2: eager {t_eager:.0f} ms, compiled generate() {t_ours:.0f} ms, "
          f"compiled loop {t_loop:.0f} ms")


if __name__ == "__main__":
    main()
