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

from convtest import Const, assert_close, check_op, check_op_bf16, check_op_paths


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
    # bfloat16 (run_bf16): float_ref=False where torch's float32 result on the same values is
    # not the op's result in bfloat16 (a default that depends on the dtype); skip: why the case
    # has no bfloat16 form
    # (bf16_float_ref applies to the float16 form too)
    bf16_float_ref: bool = True
    bf16_skip: str = ""

    def run(self, op: str):
        return check_op(op, self.args(), tol=self.tol, rtol=self.rtol, dynamic=self.dynamic,
                        precision=self.precision, ref=self.ref, keep=self.keep)

    def run_build(self, op: str, build, form: str):
        """The case on one execution path (tests/oppaths.py: the engine built once with the
        build's device and knobs, run by each of its calls) in one form: "fp32" as defined,
        "fp16" with its float32 tensors in float16 in an fp16 engine (convtest.check_op_paths)."""
        runs = ["host" if c == "host" else ("cuda", build.cuda) for c in build.calls]
        with build.knobs():
            e, stats = check_op_paths(op, self.args(), runs, tol=self.tol, rtol=self.rtol, dynamic=self.dynamic,
                                      precision=self.precision, ref=self.ref, keep=self.keep, half=form == "fp16",
                                      float_ref=self.bf16_float_ref, device=build.device)
        build.check(e.info(), op)
        return e, stats

    def bf16_args(self):
        """The case's arguments with every float32 tensor (input or weight) in bfloat16, or None
        when it has none (or is an fp16-engine case)."""
        if self.precision != "fp32" or self.bf16_skip:
            return None
        args, any_bf16 = [], False
        for a in self.args():
            t = a.t if isinstance(a, Const) else a
            if isinstance(t, torch.Tensor) and t.dtype == torch.float32:
                t, any_bf16 = t.to(torch.bfloat16), True
                a = Const(t) if isinstance(a, Const) else t
            args.append(a)
        return args if any_bf16 else None

    def run_bf16(self, op: str):
        """The case with bfloat16 tensors (convtest.check_op_bf16)."""
        args = self.bf16_args()
        if args is None:
            raise ValueError(f"{op}: the case has no float32 tensor to run in bfloat16")
        return check_op_bf16(op, args, tol=self.tol, rtol=self.rtol, dynamic=self.dynamic, ref=self.ref,
                             keep=self.keep, float_ref=self.bf16_float_ref)


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

    def run_build(self, op: str, build, form: str):
        """The case on one execution path (tests/oppaths.py), compiled once with the build's
        device and knobs (build failures raised, not run in torch) and called by each of its
        calls: "host" with CPU tensors (the OpenCL queue), "cuda" with CUDA tensors (which must
        take the CUDA launch path). form "fp16": float32 inputs in float16 and an fp16 engine
        (enabled_precisions), checked against fn on the same values in float32 within
        convtest.F16_ATOL of each output's largest magnitude and F16_RTOL besides tol."""
        import torchtrt_c
        from convtest import F16_ATOL, F16_RTOL
        ins = self.inputs()
        half = form == "fp16"
        if half:
            ins = tuple(t.half() if isinstance(t, torch.Tensor) and t.dtype == torch.float32 else t for t in ins)
        up = tuple(t.float() if half and isinstance(t, torch.Tensor) and t.dtype == torch.float16 else t for t in ins)
        m = m32 = _Fn(self.fn).eval()
        if half and isinstance(self.fn, torch.nn.Module):
            # a module's float32 weights in float16 too; the float32 reference on their values
            import copy
            m = _Fn(copy.deepcopy(self.fn).half()).eval()
            m32 = copy.deepcopy(m).float()
        with torch.no_grad():
            ref = m32(*up)
            dtypes = None
            if half:
                try:
                    dtypes = [t.dtype for t in _leaves(m(*ins))]
                except (RuntimeError, NotImplementedError):   # no CPU half kernel in torch
                    pass
        settings = {"min_block_size": 1, "pass_through_build_failures": True, "device": build.device, **self.settings}
        if half:
            settings["enabled_precisions"] = {torch.float16}
        with build.knobs():
            trt = torchtrt_c.compile(m, arg_inputs=list(ins), **settings)
        fallback = [n for n, _ in trt.named_children() if n.startswith("_run_on_gpu_")]
        assert not fallback, f"{op}: torch segments {fallback} (expected everything in engines)"
        refs = _leaves(ref)
        tol, rtol = self.tol, self.tol if self.rtol is None else self.rtol
        results = []
        for how in build.calls:
            if how == "host":
                with torch.no_grad():
                    results.append(("", trt(*ins)))
                continue
            # twice: the second call with the same pointers and shapes records a CUDA graph
            from torchtrt_c import runtime
            dev = torch.device("cuda", build.cuda)
            call_ins = tuple(t.to(dev) if isinstance(t, torch.Tensor) else t for t in ins)
            for k in range(2):
                with torch.no_grad():
                    got = trt(*call_ins)
                torch.cuda.synchronize(dev)
                assert runtime.cuda_path()["path"] == "launch", f"{op}: not the CUDA launch path: {runtime.cuda_path()}"
                results.append((f" (CUDA launch, call {k + 1})", got))
        for where, got in results:
            gots = _leaves(got)
            assert len(refs) == len(gots), f"{op}: {len(gots)} outputs, expected {len(refs)}"
            for i, (a, b) in enumerate(zip(gots, refs)):
                a = a.cpu()
                if not half:
                    assert_close(a, b, tol, rtol, f"{op} output {i}{where}")
                    continue
                if dtypes is not None:
                    assert a.dtype == dtypes[i], f"{op} output {i}{where}: dtype {a.dtype}, eager float16 gives {dtypes[i]}"
                if not b.is_floating_point():
                    assert_close(a, b, 0, 0, f"{op} output {i}{where}")
                    continue
                scale = float(b.float().abs().nan_to_num(0, 0, 0).max()) if b.numel() else 0.0
                assert_close(a.float(), b.float(), tol + F16_ATOL * scale, rtol + F16_RTOL,
                             f"{op} output {i}{where} against float32 on the same float16 values")
        return trt


def _leaves(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


