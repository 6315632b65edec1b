"""The model table (docs/models.md): model / engines / torch segments / dry-run coverage / max error,
for the transformers cases (default settings, dynamic Input ranges, several (batch, seq)).

    PYTHONPATH=$PWD python3 tests/models/table.py [name ...]
"""
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torchtrt_c  # noqa: E402
from hf_cases import CASES  # noqa: E402
from model_check import dry_run, fallback_ops, max_error, print_rows, segments  # noqa: E402


def row(name):
    case = CASES[name]
    model = case.build()
    specs = case.specs()
    t = time.time()
    rep = dry_run(model, specs)
    gm = torchtrt_c.compile(model, kwarg_inputs=specs)
    eng, tor = segments(gm)
    err = 0.0
    for b, s in case.runs:
        kw = case.inputs(b, s)
        with torch.no_grad():
            err = max(err, max_error(gm(**kw), model(**kw)))
    ops = ", ".join(f"{op} ({'; '.join(r)})" for op, r in fallback_ops(rep).items())
    return f"| {name} | {eng} | {tor} | {rep.coverage:.1%} | {err:.1e} | {time.time() - t:.0f} s | {ops} |"


def main(names):
    print_rows(["model", "engines", "torch segments", "coverage", "max error", "time", "falls back"],
               names or list(CASES), row)


if __name__ == "__main__":
    main(sys.argv[1:])
