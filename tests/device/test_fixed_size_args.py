"""Sizes written into a model whose inputs are dynamic (issue 33, Torch-TensorRT's dynamic
group-norm cases: native_group_norm(x, w, b, N=5, C=4, HxW=4, ...) with x dynamic): torch.export
failed in its reshape with "shape '[5, 1, 4, 4]' is invalid for input of size 4*s53*s77" (a raw
RuntimeError). torchtrt_c.compile says what the model does, where, and what to do; the advised
form (F.group_norm, sizes from the tensor) compiles over the range and matches eager within
atol = rtol = 1e-4 (fp32) / 1e-2 (fp16) at the minimum, an odd size and the maximum."""
import pytest
import torch
import torch.nn.functional as F

import torchtrt_c
from convtest import assert_close, rand


class FixedArgs(torch.nn.Module):
    def forward(self, x, w, b):
        return torch.ops.aten.native_group_norm.default(x, w, b, 5, 4, 4, 1, 1e-05)[0]


class FromShape(torch.nn.Module):
    def forward(self, x, w, b):
        return F.group_norm(x, 2, w, b, 1e-5)


def _specs(mn, opt, mx, dtype=torch.float32):
    return [torchtrt_c.Input(min_shape=mn, opt_shape=opt, max_shape=mx, dtype=dtype),
            torchtrt_c.Input(shape=(mn[1],), dtype=dtype), torchtrt_c.Input(shape=(mn[1],), dtype=dtype)]


def test_fixed_sizes_with_dynamic_dims_say_what_to_do():
    with pytest.raises(torchtrt_c.Error) as info:
        torchtrt_c.compile(FixedArgs().eval(), inputs=_specs((2, 4, 2), (3, 4, 2), (5, 4, 4)), min_block_size=1)
    msg = str(info.value)
    assert "fixed sizes [5, 1, 4, 4]" in msg and "test_fixed_size_args.py:" in msg, msg
    assert "native_group_norm" in msg and "min == max" in msg, msg


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-4), (torch.float16, 1e-2)], ids=["fp32", "fp16"])
@pytest.mark.parametrize("mn,mx", [((2, 4, 2), (5, 4, 4)), ((3, 6, 3, 3), (5, 6, 6, 3)), ((3, 4, 2, 3, 2), (8, 4, 6, 3, 2))])
def test_group_norm_from_the_shape_is_dynamic(mn, mx, dtype, tol):
    m = FromShape().eval()
    trt = torchtrt_c.compile(m, inputs=_specs(mn, mn, mx, dtype), min_block_size=1)
    assert [n for n, _ in trt.named_children()] == ["_run_on_acc_0"]
    w, b = rand(mn[1], dtype=dtype, seed=1), rand(mn[1], dtype=dtype, seed=2)
    odd = tuple(a + (c - a) // 2 | 1 if c > a else a for a, c in zip(mn, mx))
    for shape in (mn, odd, mx):
        x = rand(*shape, dtype=dtype, seed=sum(shape))
        want = m(x.float(), w.float(), b.float()).to(dtype)
        assert_close(trt(x, w, b), want, tol, tol, f"shape {shape}")
