"""Acceptance: ResNet-, MobileNetV2-, BERT- (and ViT-, GPT-2-) style networks each convert
to ONE engine and match torch eager: max |err| / max |ref| <= 1e-4 on the logits (fp32).
Runs on the default OpenCL device (PoCL in CI; NVIDIA OpenCL through the device tool)."""
import pytest
import torch

import torchtrt_c

import zoo


@pytest.mark.parametrize("name", ["resnet18", "resnet50", "mobilenet_v2", "bert_base", "vit_b16", "gpt2"])
def test_model_is_one_engine_and_matches_eager(name):
    m, make = zoo.build(name, "tiny")
    x = make(2)
    trt = torchtrt_c.compile(m, ir="dynamo", inputs=[x], min_block_size=1)
    subs = [n for n, _ in trt.named_children()]
    assert subs == ["_run_on_acc_0"], f"{name} split into {subs}"
    with torch.no_grad():
        ref = m(x)
        got = trt(x)
    ref = ref if isinstance(ref, torch.Tensor) else ref[0]
    got = got if isinstance(got, torch.Tensor) else got[0]
    rel = float((got - ref).abs().max() / ref.abs().max())
    assert rel <= 1e-4, f"{name}: max relative error {rel:.3g}"
