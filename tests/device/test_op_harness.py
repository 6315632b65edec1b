"""The op harness: every case of every tests/device/op_cases_<family>.py module, run
against torch eager (ids: op name + index), and the coverage check over the core's op
table: every op with a converter in _C.ops() (evaluators aside: prim.Constant,
prim.ListConstruct, sym_size and py.* size arithmetic compute no tensor) must have a case.

Run one family:  pytest tests/device/test_op_harness.py -k scaled_dot_product
"""
import importlib
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from torchtrt_c import _C  # noqa: E402

# Converters that have no case yet, each with the reason; the coverage test fails when an op
# listed here gains a case (so the list only shrinks) or when a converter is in neither.
PENDING: dict = {}


def _modules():
    return sorted(p.stem for p in HERE.glob("op_cases_*.py"))


def _all_cases():
    """op -> [(module, case)], over every op_cases_* module."""
    out = {}
    for name in _modules():
        mod = importlib.import_module(name)
        cases = getattr(mod, "CASES", None)
        if not isinstance(cases, dict):
            raise TypeError(f"{name}.py must define CASES = {{op name: [Case, ...]}}")
        for op, lst in cases.items():
            out.setdefault(op, []).extend((name, c) for c in lst)
    return out


ALL = _all_cases()
PARAMS = [pytest.param(op, case, id=f"{op}-{i}") for op in sorted(ALL) for i, (_, case) in enumerate(ALL[op])]


@pytest.mark.parametrize("op,case", PARAMS)
def test_op_case(op, case):
    case.run(op)


def _converter_ops():
    return {o["name"] for o in _C.ops() if o["converter"] and not o["evaluator"]}


def test_every_converter_has_a_case():
    need = _converter_ops()
    have = {op for op, lst in ALL.items() if lst}
    missing = sorted(need - have - set(PENDING))
    stale = sorted(set(PENDING) & have)
    unknown = sorted(set(PENDING) - need)
    msg = []
    if missing:
        msg.append(f"{len(missing)} converter(s) without a case in tests/device/op_cases_*.py: " + ", ".join(missing))
    if stale:
        msg.append("in PENDING but covered now (remove them): " + ", ".join(stale))
    if unknown:
        msg.append("in PENDING but not converters in _C.ops(): " + ", ".join(unknown))
    assert not msg, "\n".join(msg)


def test_case_names_are_real_ops():
    """A case keyed by a misspelt op name would cover nothing: every key must be an ATen
    overload this torch has."""
    import torch
    bad = []
    for op in ALL:
        ns, name, overload = op.split(".")
        if getattr(getattr(getattr(torch.ops, ns), name, None), overload, None) is None:
            bad.append(op)
    assert not bad, f"case keys that are not ATen overloads: {bad}"
