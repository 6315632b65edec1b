"""Whole models (small configs of ResNet, MobileNetV2, ViT, BERT, GPT-2; tests/zoo.py) compile
with require_full_compilation=True to exactly one engine and match eager. A missing converter
fails the test with the op's name (require_full_compilation raises naming it)."""
import pytest
import torch

import torchtrt_c
from zoo import MODELS, assert_tree_close, build, submodules



@pytest.mark.parametrize("name", MODELS)
def test_model_compiles_to_one_engine_and_matches_eager(name):
    model, make_input = build(name, "tiny")
    x = make_input(batch=2)
    trt = torchtrt_c.compile(model, inputs=[x], require_full_compilation=True, min_block_size=1)
    assert submodules(trt, "_run_on_acc_") == ["_run_on_acc_0"], list(trt.named_children())
    assert submodules(trt, "_run_on_gpu_") == []
    with torch.no_grad():
        want = model(x)
    assert_tree_close(trt(x), want, atol=2e-4, rtol=2e-4)


@pytest.mark.parametrize("name", ["bert_base", "resnet18"])
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
