"""bfloat16 models: engines take bfloat16 inputs and weights and return bfloat16 outputs; they
compute in float (half in fp16 engines) and round each output to bfloat16 once (nearest, ties to
even, as torch does; convert/convert.c). No OpenCL device we target has a bfloat16 type, so the
kernels convert by bit manipulation (codegen_spell.c), and the same engines run on every device.

Checked against eager (convtest.assert_bf16_close: within 2^-5 of each output's magnitude of
eager bfloat16, and no further from float32 eager on the same values than eager bfloat16 is,
plus 2^-7) on each execution path of this device: its own kernels with native steps (oneDNN /
BLAS on PoCL), OpenCL kernels only (TORCHTRT_C_NATIVE=0), the GPU kernel families forced
(TORCHTRT_C_KERNELS=gpu), PoCL's caller-thread device (TORCHTRT_C_CALLER_THREAD=all), an fp16
engine; and through both call paths of the runtime (the general one and the FastCall of later
calls). tests/device/test_op_harness.py runs the converter cases in bfloat16;
tests/models/test_bf16_models.py Hugging Face Llama and torchvision's ResNet-18;
tests/gpu/test_bf16_gpu.py the same on a GPU with CUDA tensors.
"""
import copy

import pytest
import torch
import torch.nn as nn

import torchtrt_c
from convtest import assert_bf16_close
from zoo import build as build_model

PATHS = {
    "default": {},
    "opencl": {"TORCHTRT_C_NATIVE": "0"},
    "gpu-kernels": {"TORCHTRT_C_KERNELS": "gpu"},
    "caller-thread": {"TORCHTRT_C_NATIVE": "0", "TORCHTRT_C_CALLER_THREAD": "all"},
    "fp16-engine": {},
}
KNOBS = ("TORCHTRT_C_NATIVE", "TORCHTRT_C_KERNELS", "TORCHTRT_C_CALLER_THREAD")


def _set_path(path, monkeypatch):
    """The execution path, by the knobs read when engines are built."""
    for k in KNOBS:
        monkeypatch.delenv(k, raising=False)
    for k, v in PATHS[path].items():
        monkeypatch.setenv(k, v)


def _bf16(model):
    return copy.deepcopy(model).to(torch.bfloat16).eval()


def _refs(model_bf16, args):
    """Eager bfloat16, and float32 eager on the same values (the bfloat16 weights and inputs
    cast to float32 exactly)."""
    m32 = copy.deepcopy(model_bf16).float()
    up = [a.float() if a.is_floating_point() else a for a in args]
    with torch.no_grad():
        return model_bf16(*args), m32(*up)


def _one_engine(trt):
    engines = [n for n, _ in trt.named_children() if n.startswith("_run_on_acc_")]
    torch_segs = [n for n, _ in trt.named_children() if n.startswith("_run_on_gpu_")]
    assert len(engines) == 1 and not torch_segs, f"engines {engines}, torch segments {torch_segs}"


def _calls(trt, args):
    """The outputs of a first call (general path), a second (the FastCall, for plain CPU
    tensors) and a call with non-contiguous copies of the float inputs (general path): one
    engine, so the three agree bit for bit."""
    with torch.no_grad():
        a = trt(*args)
        b = trt(*args)
        nc = [x.transpose(0, -1).contiguous().transpose(0, -1) if x.dim() > 1 and x.is_floating_point() else x
              for x in args]
        assert any(not x.is_contiguous() for x in nc) or not any(x.is_floating_point() for x in args)
        c = trt(*nc)
    for other, how in ((b, "second call"), (c, "non-contiguous inputs")):
        for x, y in zip(torch.utils._pytree.tree_leaves(a), torch.utils._pytree.tree_leaves(other)):
            assert torch.equal(x, y), f"{how}: outputs differ from the first call's"
    return a


class Mini(nn.Module):
    """A convolution, a pool, a GEMM, a norm, a softmax and a residual: the kernel kinds of the
    zoo's models in a few kernels, so that every path runs in the default tier."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, padding=1)
        self.fc = nn.Linear(6, 7)
        self.ln = nn.LayerNorm(7)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        y = nn.functional.max_pool2d(y, 2, ceil_mode=True) + 1.5
        z = self.ln(self.fc(y.mean((2, 3))))
        return torch.softmax(z, -1), y


def _build(name):
    if name == "mini":
        torch.manual_seed(0)
        return Mini().eval(), lambda batch=1: torch.randn(batch, 3, 9, 11)
    return build_model(name)


# every path with Mini by default; the zoo's ResNet-18 and GPT-2 on their default path by
# default, on the others in the slow tier (the GPU kernel families on PoCL: minutes each)
MODEL_PATHS = [pytest.param(n, p, marks=() if n == "mini" or p == "default" else pytest.mark.slow)
               for n in ("mini", "resnet18", "gpt2") for p in PATHS]


@pytest.mark.parametrize("name,path", MODEL_PATHS)
def test_bf16_model(name, path, monkeypatch):
    _set_path(path, monkeypatch)
    model, make = _build(name)
    m = _bf16(model)
    x = make(batch=2)
    args = [x.to(torch.bfloat16) if x.is_floating_point() else x]
    prec = {torch.float16} if path == "fp16-engine" else {torch.float32}
    trt = torchtrt_c.compile(m, inputs=args, enabled_precisions=prec)
    _one_engine(trt)
    got = _calls(trt, args)
    ref_bf16, ref_f32 = _refs(m, args)
    assert_bf16_close(got, ref_bf16, ref_f32, f"{name} ({path})")


def test_bf16_dynamic_batch():
    """A bfloat16 input with a dynamic batch: one engine, run at its min, opt and an odd size."""
    model, make = build_model("resnet18")
    m = _bf16(model)
    spec = torchtrt_c.Input(min_shape=(1, 3, 32, 32), opt_shape=(2, 3, 32, 32), max_shape=(5, 3, 32, 32),
                            dtype=torch.bfloat16)
    trt = torchtrt_c.compile(m, inputs=[spec])
    _one_engine(trt)
    for b in (2, 1, 5, 3):
        x = make(batch=b).to(torch.bfloat16)
        with torch.no_grad():
            got = trt(x)
        assert_bf16_close(got, *_refs(m, [x]), what=f"batch {b}")


class Passes(nn.Module):
    """bfloat16 inputs returned as they are, as views, cast, and next to float32 results."""

    def forward(self, x, y):
        return x, x[:, 1:], x.float() * 2, (x * y).sum(-1), y.to(torch.float16)


def test_bf16_inputs_outputs():
    x = torch.randn(3, 7).to(torch.bfloat16)
    y = torch.randn(3, 7).to(torch.bfloat16)
    m = Passes().eval()
    trt = torchtrt_c.compile(m, inputs=[x, y], min_block_size=1)
    _one_engine(trt)
    got = _calls(trt, [x, y])
    ref_bf16, ref_f32 = _refs(m, [x, y])
    assert torch.equal(got[0], x) and torch.equal(got[1], x[:, 1:]), "copies of a bfloat16 input changed"
    assert_bf16_close(got, ref_bf16, ref_f32, "Passes")


class Rounds(nn.Module):
    def forward(self, x):
        return x.to(torch.bfloat16)


def test_bf16_rounding_is_torchs():
    """float32 -> bfloat16 in the engine rounds as torch does: to nearest, ties to even
    (1 + 2^-8 -> 1, 1 + 3 * 2^-8 -> 1 + 2^-6), overflow to inf, NaN stays NaN, signed zeros
    and subnormals kept: the bits equal torch's."""
    t = 2.0 ** -8
    vals = [1 + t, 1 + 3 * t, -(1 + t), 1 + t + 2 ** -20, 3.3895e38, 3.4e38, -3.4e38, float("inf"),
            float("-inf"), float("nan"), 0.0, -0.0, 1e-39, -1e-40, 2 ** -133, 0.1, -7.7, 65504.0]
    x = torch.tensor(vals * 3, dtype=torch.float32).reshape(3, -1)
    trt = torchtrt_c.compile(Rounds().eval(), inputs=[x], min_block_size=1)
    _one_engine(trt)
    with torch.no_grad():
        got = trt(x)
    want = x.to(torch.bfloat16)
    assert got.dtype == torch.bfloat16
    same = got.view(torch.int16) == want.view(torch.int16)
    nan = torch.isnan(want) & torch.isnan(got)
    bad = ~(same | nan)
    assert not bad.any(), f"bits differ at {x[bad].tolist()}: got {got[bad].tolist()}, torch {want[bad].tolist()}"


class AutocastLike(nn.Module):
    """A float32 model that computes its matmul in bfloat16 (as autocast writes it)."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(9, 5))

    def forward(self, x):
        y = x.to(torch.bfloat16) @ self.w.to(torch.bfloat16)
        return torch.softmax(y.float(), -1)


def test_bf16_casts_inside_a_float32_model():
    m = AutocastLike().eval()
    x = torch.randn(4, 9)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    _one_engine(trt)
    with torch.no_grad():
        got, ref = trt(x), m(x)
        exact = torch.softmax(x @ m.w, -1)
    # eager rounds x and w to bfloat16: both results sit within bfloat16's resolution of it
    assert (got - ref).abs().max() <= 2.0 ** -5, f"max error {(got - ref).abs().max():.3g}"
    assert (got - exact).abs().max() <= (ref - exact).abs().max() + 2.0 ** -7


def test_bf16_save_load(tmp_path):
    model, make = build_model("resnet18")
    m = _bf16(model)
    x = make(batch=2).to(torch.bfloat16)
    trt = torchtrt_c.compile(m, inputs=[x])
    _one_engine(trt)
    with torch.no_grad():
        want = trt(x)
    torchtrt_c.save(trt, tmp_path / "m.ep", inputs=[x])
    back = torchtrt_c.load(tmp_path / "m.ep")
    with torch.no_grad():
        got = back(x)
    assert got.dtype == torch.bfloat16 and torch.equal(got, want)


def test_bf16_enabled_precision():
    """enabled_precisions may name torch.bfloat16 (Torch-TensorRT's spelling for a bfloat16
    model): engines still compute in float, as for {torch.float32}."""
    x = torch.randn(3, 7).to(torch.bfloat16)
    m = Passes().eval()
    a = torchtrt_c.compile(m, inputs=[x, x], min_block_size=1, enabled_precisions={torch.bfloat16})
    _one_engine(a)
    b = torchtrt_c.compile(m, inputs=[x, x], min_block_size=1)
    with torch.no_grad():
        for p, q in zip(a(x, x), b(x, x)):
            assert torch.equal(p, q)
