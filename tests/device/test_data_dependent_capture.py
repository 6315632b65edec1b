"""Capture failures on data-dependent values (issue 33: sym_not, resize_, a boolean mask
index): torch.export fails with its internals' words ("Could not guard on data-dependent
expression Eq(u0, 1) ... at _export/non_strict_utils.py"). torchtrt_c.compile's error says in
our words what the model does and where (the model's source line, from dynamo's explanation or
export's traceback) and what the user can do (torch.compile(backend="torchtrt_c"), keep the
value a tensor, or pass it in); the backend then runs the model and matches eager. A boolean
mask index over several axes compiles (the index runs in torch) and matches eager exactly,
fp32 and fp16."""
import pytest
import torch

import torchtrt_c
from convtest import rand


class SymNot(torch.nn.Module):
    def forward(self, x, flag):
        return x * 2 + torch.sym_not(flag)   # not of a tensor: its value as a Python bool


class NotBool(torch.nn.Module):
    def forward(self, x):
        y = x.relu()
        return y * (not bool(y.sum() > 100))


class ResizeToData(torch.nn.Module):
    def forward(self, x):
        n = int(x.abs().sum().item()) % 3 + 1
        return x.flatten().clone().resize_(n) * 2


CASES = [(SymNot, lambda: (rand(3, 5), torch.tensor(True)), "torch.sym_not(flag)"),
         (NotBool, lambda: (rand(4, 7),), "not bool(y.sum() > 100)"),
         (ResizeToData, lambda: (rand(2, 9),), "x.abs().sum().item()")]


@pytest.mark.parametrize("mod,inputs,line", CASES, ids=[c[0].__name__ for c in CASES])
def test_compile_error_says_where_and_what_to_do(mod, inputs, line):
    m = mod().eval()
    with pytest.raises(torchtrt_c.Error) as info:
        torchtrt_c.compile(m, inputs=list(inputs()), min_block_size=1)
    msg = str(info.value)
    assert "test_data_dependent_capture.py:" in msg and line in msg, msg
    assert "non_strict_utils" not in msg, msg
    for words in ('torch.compile(model, backend="torchtrt_c")', "keep the value a tensor",
                  "pass it in as an input"):
        assert words in msg, msg


@pytest.mark.parametrize("mod,inputs,line", CASES, ids=[c[0].__name__ for c in CASES])
def test_backend_runs_them(mod, inputs, line):
    torch._dynamo.reset()
    m = mod().eval()
    f = torch.compile(m, backend="torchtrt_c", options={"min_block_size": 1})
    ins = inputs()
    with torch.no_grad():
        got, want = f(*ins), m(*ins)
    assert got.shape == want.shape and torch.allclose(got, want, atol=1e-6), line


class MaskIndex(torch.nn.Module):
    def forward(self, x, m):
        return x[m] * 3


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("xs,ms", [((3, 5, 4), (3, 5)), ((2, 7, 3), (2, 7, 3)), ((5, 3), (5, 3))])
def test_multi_axis_boolean_mask_index(xs, ms, dtype):
    x, m = rand(*xs, dtype=dtype), rand(*ms) > 0
    trt = torchtrt_c.compile(MaskIndex().eval(), inputs=[x, m], min_block_size=1)
    for seed in (0, 1):
        x, m = rand(*xs, dtype=dtype, seed=seed), rand(*ms, seed=seed + 7) > 0
        assert torch.equal(trt(x, m), MaskIndex()(x, m))
