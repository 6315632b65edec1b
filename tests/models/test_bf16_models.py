"""bfloat16 checkpoints as users run them: a Hugging Face Llama (input_ids + attention_mask,
its default SDPA attention and cache) and torchvision's ResNet-18, cast with .to(torch.bfloat16),
compiled with default settings: one engine, no torch segment, matching eager bfloat16
(convtest.assert_bf16_close: within 2^-5 of each output's magnitude, and no further from float32
eager on the same bfloat16 weights than eager bfloat16 itself is). The engines take and return
bfloat16 and compute in float (tests/device/test_bf16.py). tests/gpu/test_bf16_gpu.py runs the
same models on a GPU with CUDA tensors.
"""
import copy
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torchtrt_c  # noqa: E402
from convtest import assert_bf16_close  # noqa: E402
from model_check import segments  # noqa: E402
from thirdparty import import_torchvision, randomize_constant_init  # noqa: E402


def test_llama_bf16():
    pytest.importorskip("transformers")
    from hf_cases import CASES
    case = CASES["llama"]
    m = case.build().to(torch.bfloat16)
    up = copy.deepcopy(m).float()      # the same bfloat16 weights, computed in float32
    gm = torchtrt_c.compile(m, kwarg_inputs=case.specs())
    assert segments(gm) == (1, 0), f"engines / torch segments: {segments(gm)}"
    for b, s in case.runs:
        kw = case.inputs(b, s)
        with torch.no_grad():
            assert_bf16_close(gm(**kw), m(**kw), up(**kw), f"llama bf16 at batch {b}, seq {s}")


def test_resnet18_bf16():
    tv = import_torchvision()
    torch.manual_seed(0)
    m = randomize_constant_init(tv.models.resnet18(num_classes=10).eval()).to(torch.bfloat16)
    up = copy.deepcopy(m).float()
    spec = torchtrt_c.Input(min_shape=(1, 3, 64, 64), opt_shape=(2, 3, 64, 64), max_shape=(4, 3, 64, 64),
                            dtype=torch.bfloat16)
    gm = torchtrt_c.compile(m, inputs=[spec])
    assert segments(gm) == (1, 0), f"engines / torch segments: {segments(gm)}"
    for b in (2, 1, 3):
        x = torch.randn(b, 3, 64, 64).to(torch.bfloat16)
        with torch.no_grad():
            assert_bf16_close(gm(x), m(x), up(x.float()), f"resnet18 bf16 at batch {b}")
