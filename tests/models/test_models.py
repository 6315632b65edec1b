"""Whole models (small configs of ResNet-18/50, MobileNetV2, ViT, BERT, GPT-2; tests/zoo.py) compile
with require_full_compilation=True to exactly one engine and no torch segment, and match eager:
every output leaf within atol = rtol = 2e-4, and the logits within max |err| / max |ref| <= 1e-4
(fp32). A missing converter fails the test with the op's name (require_full_compilation raises
naming it). Runs on the default OpenCL device (PoCL in CI, NVIDIA OpenCL on a GPU)."""
import pytest
import torch

import torchtrt_c
from zoo import MODELS, assert_tree_close, build, submodules


def _first(out):
    return out if isinstance(out, torch.Tensor) else out[0]


@pytest.mark.parametrize("name", MODELS)
def test_model_compiles_to_one_engine_and_matches_eager(name):
    model, make_input = build(name, "tiny")
    x = make_input(batch=2)
    trt = torchtrt_c.compile(model, inputs=[x], require_full_compilation=True, min_block_size=1)
    assert [n for n, _ in trt.named_children()] == ["_run_on_acc_0"], f"{name} split into {list(trt.named_children())}"
    with torch.no_grad():
        want = model(x)
        got = trt(x)
    assert_tree_close(got, want, atol=2e-4, rtol=2e-4)
    ref, out = _first(want), _first(got)
    rel = float((out - ref).abs().max() / ref.abs().max())
    assert rel <= 1e-4, f"{name}: max relative error {rel:.3g} on the logits"


@pytest.mark.parametrize("name", ["resnet18"])  # ViT, BERT, GPT-2: tests/device/test_sym_size.py
def test_model_dynamic_batch(name):
    model, make_input = build(name, "tiny")
    x = make_input(batch=4)
    inp = torchtrt_c.Input(min_shape=(1,) + tuple(x.shape[1:]), opt_shape=tuple(x.shape),
                           max_shape=(8,) + tuple(x.shape[1:]), dtype=x.dtype)
    trt = torchtrt_c.compile(model, inputs=[inp], require_full_compilation=True, min_block_size=1)
    assert len(submodules(trt, "_run_on_acc_")) == 1
    for b in (1, 3, 8):
        xb = make_input(batch=b)
        with torch.no_grad():
            want = model(xb)
        assert_tree_close(trt(xb), want, atol=2e-4, rtol=2e-4)
