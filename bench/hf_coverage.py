"""Hugging Face architectures beyond the model tier's (tests/models/hf_more_cases.py, checked in
the slow tier by tests/models/test_hf_more.py): each at a tiny
configuration with random weights (nothing downloaded), compiled with default settings and
dynamic Input ranges (text: batch 1..4 x sequence 2..16 through input_ids/attention_mask, plus
decoder_input_ids for encoder-decoders; images: batch 1..4 at 32x32 through pixel_values), run
at three shapes against eager. One row each: engines / torch segments, the largest error
relative to each output's largest value, the compile time, and what falls back with the reason.

    PYTHONPATH=$PWD python3 bench/hf_coverage.py [name ...]     # all by default
"""
from __future__ import annotations

import contextlib
import io
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "models"))
import transformers as T  # noqa: E402

import torchtrt_c  # noqa: E402
from hf_more_cases import ALL, specs_inputs  # noqa: E402
from model_check import dry_run, fallback_ops, max_error, print_rows, segments  # noqa: E402


def row(name):
    torch.manual_seed(0)
    model = ALL[name]().eval()
    specs, ins = specs_inputs(name)
    t = time.time()
    gm = torchtrt_c.compile(model, kwarg_inputs=specs)
    secs = time.time() - t
    err = 0.0
    for kw in ins:
        with torch.no_grad():
            err = max(err, max_error(gm(**kw), model(**kw)))
    eng, tor = segments(gm)
    falls = ""
    if (eng, tor) != (1, 0):
        with contextlib.redirect_stdout(io.StringIO()):   # the dry run prints its report
            ops = fallback_ops(dry_run(model, specs))
        reasons = sorted({r for rs in ops.values() for r in rs})
        falls = f"{len(ops)} op kinds: " + "; ".join(reasons)[:300]
    return f"| {name} | {eng} / {tor} | {err:.1e} | {secs:.1f} s | {falls} |"


def main(names):
    print(f"torch {torch.__version__}, transformers {T.__version__}, device {torchtrt_c.default_device()}")
    print_rows(["model", "engines / torch segments", "max error", "compile", "falls back"], names or list(ALL), row)


if __name__ == "__main__":
    main(sys.argv[1:])
