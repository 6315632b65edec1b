"""Runs the cases of op_cases_elementwise.py (issue 11, converters A) until the shared op
harness (test_op_harness.py) runs every family's cases, and checks that the ops that stay
with torch say why in the partition report."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pytest
import torch

import op_cases_elementwise as cases_mod

PARAMS = [pytest.param(op, c, id=f"{op}-{c.id or i}") for op, cs in cases_mod.CASES.items() for i, c in enumerate(cs)]


@pytest.mark.parametrize("op,case", PARAMS)
def test_case(op, case):
    case.run(op)


def _partition_reasons(fn, *inputs):
    import torchtrt_c

    class M(torch.nn.Module):
        def forward(self, *a):
            return fn(*a)

    trt = torchtrt_c.compile(M().eval(), arg_inputs=list(inputs), min_block_size=1)
    with torch.no_grad():
        got, ref = trt(*inputs), fn(*inputs)
    return trt, got, ref


def test_nonzero_reason_in_report(capsys):
    """nonzero stays with torch; the dry-run report names it with the reason (resize_ is
    functionalised away by export: tests/unit/test_fallback_reasons.py checks it on the IR)."""
    import torchtrt_c

    class M(torch.nn.Module):
        def forward(self, x):
            return torch.nonzero(x * 2.0 > 0.5)

    torchtrt_c.compile(M().eval(), arg_inputs=[torch.rand(3, 5)], min_block_size=1, dryrun=True)
    out = capsys.readouterr().out
    op = "aten.nonzero.default"
    line = [ln for ln in out.splitlines() if op in ln and "x1:" in ln]
    assert line, f"{op} not in the dry-run report:\n{out}"
    assert cases_mod.FALLBACKS[op] in line[0], f"reason missing for {op}: {line[0]}"


def test_nonzero_runs_through_torch():
    """The compiled module still computes nonzero (in a torch segment) and matches eager."""
    x = torch.rand(4, 7)
    trt, got, ref = _partition_reasons(lambda t: torch.nonzero(t * 2.0 > 0.7), x)
    assert any(n.startswith("_run_on_gpu_") for n, _ in trt.named_children())
    assert torch.equal(got, ref)
