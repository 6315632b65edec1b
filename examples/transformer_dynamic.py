"""A small BERT-style encoder compiled once for a dynamic batch (1..32, tuned for 8) and run
at several batch sizes; a batch outside the range raises a clear InputError.

    python examples/transformer_dynamic.py
"""
import os
import sys

import torch

import torchtrt_c

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from zoo import build  # noqa: E402


def main():
    model, make_input = build("bert_base", size="tiny")
    seq = make_input(batch=8).shape[1]
    spec = torchtrt_c.Input(min_shape=(1, seq), opt_shape=(8, seq), max_shape=(32, seq), dtype=torch.int64)
    trt = torchtrt_c.compile(model, inputs=[spec], min_block_size=1)
    print("engines:", [n for n, _ in trt.named_children() if n.startswith("_run_on_acc_")])
    with torch.no_grad():
        for batch in (1, 7, 32):
            ids = make_input(batch=batch)
            hidden, pooled = trt(ids)
            ref_h, ref_p = model(ids)
            err = max((hidden - ref_h).abs().max().item(), (pooled - ref_p).abs().max().item())
            print(f"batch {batch:2d}: hidden {tuple(hidden.shape)}, max abs error {err:.2e}")
        try:
            trt(make_input(batch=33))
        except torchtrt_c.InputError as e:
            print("batch 33:", e)


if __name__ == "__main__":
    main()
