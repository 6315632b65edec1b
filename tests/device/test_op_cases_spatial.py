"""Runs every case of op_cases_spatial.py and op_cases_select.py (until tests/device/test_op_harness.py runs them all)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pytest  # noqa: E402

import op_cases_select  # noqa: E402
import op_cases_spatial  # noqa: E402

PARAMS = [pytest.param(op, c, id=f"{op}-{i}{'-' + c.id if c.id else ''}")
          for mod in (op_cases_spatial, op_cases_select) for op, cs in mod.CASES.items() for i, c in enumerate(cs)]


@pytest.mark.parametrize("op,case", PARAMS)
def test_case(op, case):
    case.run(op)
