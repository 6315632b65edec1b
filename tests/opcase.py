"""The op harness's case format: every op the core converts, and every op we handle by a
decomposition, has differential cases against torch eager.

Each family keeps its cases in its own module `tests/device/op_cases_<family>.py`, which exports

    CASES = {
        # a converter: one ATen node built directly into an engine (convtest.check_op)
        "aten.cumsum.default": [Case(lambda: [rand(3, 5), 1]), Case(lambda: [rand(2, 7, 9), -1])],
        # an op that never reaches the C table (decomposed in Python): the whole compile path,
        # which must put everything in engines (no torch segment) and match eager
        "aten.acos.default": [ModelCase(torch.acos, lambda: (rand(3, 5, low=-0.9, high=0.9),))],
    }

Arguments of a Case follow the ATen schema order (kwarg-only ones included), as in
convtest.check_op; use several shapes, odd sizes included. The harness
(tests/device/test_op_harness.py) runs every case and fails when an op with a converter in
`_C.ops()` has no case.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import torch

from convtest import assert_close, check_op


@dataclass
class Case:
    """One converter case: `args()` builds the ATen op's arguments (tensors become engine
    inputs, convtest.Const(t) a weight, scalars/lists/None prim constants)."""
    args: Callable[[], list]
    tol: float = 1e-5
    rtol: Optional[float] = None
    precision: str = "fp32"
    dynamic: Optional[tuple] = None
    keep: Optional[Sequence[int]] = None
    ref: Optional[Callable] = None
    id: str = ""

    def run(self, op: str):
        return check_op(op, self.args(), tol=self.tol, rtol=self.rtol, dynamic=self.dynamic,
                        precision=self.precision, ref=self.ref, keep=self.keep)


class _Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


@dataclass
class ModelCase:
    """One case through torchtrt_c.compile (min_block_size=1): `fn(*inputs())` must compile
    to engines only and match eager within atol=tol, rtol=rtol (default tol)."""
    fn: Callable
    inputs: Callable[[], tuple]
    tol: float = 1e-5
    rtol: Optional[float] = None
    settings: dict = field(default_factory=dict)
    id: str = ""

    def run(self, op: str):
        import torchtrt_c
        ins = self.inputs()
        m = _Fn(self.fn).eval()
        with torch.no_grad():
            ref = m(*ins)
        settings = {"min_block_size": 1, **self.settings}
        trt = torchtrt_c.compile(m, arg_inputs=list(ins), **settings)
        fallback = [n for n, _ in trt.named_children() if n.startswith("_run_on_gpu_")]
        assert not fallback, f"{op}: torch segments {fallback} (expected everything in engines)"
        with torch.no_grad():
            got = trt(*ins)
        refs = list(ref) if isinstance(ref, (tuple, list)) else [ref]
        gots = list(got) if isinstance(got, (tuple, list)) else [got]
        assert len(refs) == len(gots), f"{op}: {len(gots)} outputs, expected {len(refs)}"
        for i, (a, b) in enumerate(zip(gots, refs)):
            assert_close(a, b, self.tol, self.tol if self.rtol is None else self.rtol, f"{op} output {i}")
        return trt


