"""out= overloads (issue 33): an op writing into an `out` tensor the caller passes is an input
the program writes in place (dynamo/_mutations.py). Torch-TensorRT's atan2.out case (an `out`
of the inputs' shape, and one of another shape that torch resizes) failed at call time with
"treespec.unflatten: leaves has length 2 but the spec holds 1" before input mutations were
supported. The result and the caller's `out` against eager on copies, fp32 and fp16, within
atol = rtol = 1e-5 (fp32) / 1e-3 (fp16); the atan2 runs in an engine."""
import pytest
import torch

import torchtrt_c
from convtest import assert_close, rand


class Atan2Out(torch.nn.Module):
    def forward(self, a, b, out):
        return torch.ops.aten.atan2.out(a, b, out=out)


class AddOut(torch.nn.Module):
    def forward(self, a, b, out):
        torch.add(a, b, alpha=2, out=out)
        return out * 3


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.float16, 1e-3)], ids=["fp32", "fp16"])
@pytest.mark.parametrize("mod,shape,out_shape", [(Atan2Out, (10,), (10,)), (Atan2Out, (3, 7), (3, 7)),
                                                 (Atan2Out, (10,), (5,)), (AddOut, (2, 5, 9), (2, 5, 9))],
                         ids=["atan2", "atan2-2d", "atan2-resized", "add"])
def test_out_overload(mod, shape, out_shape, dtype, tol):
    a, b = rand(*shape, dtype=dtype, seed=1), rand(*shape, dtype=dtype, seed=2)
    out = torch.zeros(out_shape, dtype=dtype)
    m = mod().eval()
    trt = torchtrt_c.compile(m, inputs=[a, b, out.clone()], min_block_size=1)
    assert any(n.startswith("_run_on_acc_") for n, _ in trt.named_children())
    ref_out, got_out = out.clone(), out.clone()
    want = m(a, b, ref_out)
    got = trt(a, b, got_out)
    assert_close(got, want, tol, tol, "result")
    assert_close(got_out, ref_out, tol, tol, "the caller's out tensor")
