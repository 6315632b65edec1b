"""GPU tier (TORCHTRT_C_DEVICE=gpu; skipped elsewhere by tests/conftest.py): quantized models
on a GPU's own choice, which is the int8 kernels (QCONV2D/QGEMM, TORCHTRT_C_QUANT_KERNELS=auto
away from a CPU with native steps), against torch's execution of the same quantized model
(tolerances of tests/models/test_quant.py). tests/device/op_cases_quant.py runs on the GPU too
(the op harness), exact on the accumulators."""
import pytest
import torch

import torchtrt_c
from models.model_check import segments
from models.test_quant import TOL, SmallCNN, _dynamic_int8, _kernels, _rel_err, quantize_pt2e


@pytest.fixture(autouse=True)
def own_choice(monkeypatch):
    monkeypatch.delenv("TORCHTRT_C_QUANT_KERNELS", raising=False)
    monkeypatch.delenv("TORCHTRT_C_KERNELS", raising=False)


def test_pt2e_cnn_takes_int8_kernels_on_a_gpu():
    torch.manual_seed(0)
    calib = [torch.randn(4, 3, 11, 13) for _ in range(4)]
    qm = quantize_pt2e(SmallCNN().eval(), calib[0], calib)
    x = torch.randn(3, 3, 11, 13)
    gm = torchtrt_c.compile(qm, inputs=[x], require_full_compilation=True)
    assert segments(gm) == (1, 0)
    kinds = [k.split()[1] for k in _kernels(gm)]
    assert kinds.count("qconv2d:") == 3 and kinds.count("qgemm:") == 2, kinds
    with torch.no_grad():
        assert _rel_err(gm(x), qm(x)) <= TOL["int8"]


def test_torchao_dynamic_int8_on_a_gpu():
    torch.manual_seed(1)
    model = _dynamic_int8(torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(),
                                              torch.nn.Linear(512, 64)).eval())
    x = torch.randn(16, 256)
    gm = torchtrt_c.compile(model, inputs=[x], require_full_compilation=True)
    assert segments(gm) == (1, 0)
    assert any(" qgemm:" in k for k in _kernels(gm))
    with torch.no_grad():
        assert _rel_err(gm(x), model(x)) <= 1e-5
