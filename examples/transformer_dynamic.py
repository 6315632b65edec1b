"""A BERT encoder from Hugging Face transformers, compiled once for a dynamic batch (1..32, tuned
for 8) and sequence length (4..64, tuned for 16), then run at several shapes; a batch outside
the range raises a clear InputError. Needs `pip install transformers`; the model is a small
configuration with random weights (nothing is downloaded).

    python examples/transformer_dynamic.py
"""
import torch
import transformers

import torchtrt_c


def main():
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=128)
    model = transformers.BertModel(config).eval()

    def batch_of(b, s):
        return {"input_ids": torch.randint(0, config.vocab_size, (b, s)),
                "attention_mask": torch.ones(b, s, dtype=torch.int64)}

    spec = dict(min_shape=(1, 4), opt_shape=(8, 16), max_shape=(32, 64), dtype=torch.int64)
    trt = torchtrt_c.compile(model, kwarg_inputs={"input_ids": torchtrt_c.Input(**spec),
                                                  "attention_mask": torchtrt_c.Input(**spec)})
    print("engines:", [n for n, _ in trt.named_children() if n.startswith("_run_on_acc_")])
    with torch.no_grad():
        for b, s in ((1, 4), (7, 33), (32, 64)):
            kw = batch_of(b, s)
            out, ref = trt(**kw), model(**kw)   # the same ModelOutput as the model's
            err = max((out.last_hidden_state - ref.last_hidden_state).abs().max().item(),
                      (out.pooler_output - ref.pooler_output).abs().max().item())
            print(f"batch {b:2d}, sequence {s:2d}: last_hidden_state {tuple(out.last_hidden_state.shape)}, "
                  f"max abs error {err:.2e}")
        try:
            trt(**batch_of(33, 16))
        except torchtrt_c.InputError as e:
            print("batch 33:", e)


if __name__ == "__main__":
    main()
