"""A segment whose engine fails to build runs in torch on the inputs' CUDA device (issue 36,
item 3; the host-tensor variant is tests/device/test_fallback_device.py): compiled from a model
on the GPU with CUDA inputs and called with CUDA tensors (no .to() on the compiled module),
every torch segment's constants are on the GPU and the call matches eager. Before, the
Hugging Face T5 case failed with "Expected all tensors to be on the same device ... index is
on cpu". Tolerances: 1e-5 fp32 (torch segments; engines differ from eager by summation order,
1e-4 there), 2e-2 of max |eager| in fp16. Skipped without a CUDA torch."""
import pytest
import torch

from fallback import check_fallback, fail_builds, mlp_case, t5_case

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA torch and a CUDA device")

DEV = torch.device("cuda", 0)


@pytest.fixture(autouse=True)
def exact_eager():
    old = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = old


def test_t5_every_build_failing_runs_on_the_gpu(monkeypatch):
    failed = fail_builds(monkeypatch)
    m, kw = t5_case(DEV)
    check_fallback(m, kw, DEV)
    assert failed


def test_t5_fp16_every_build_failing_runs_on_the_gpu(monkeypatch):
    failed = fail_builds(monkeypatch)
    m, kw = t5_case(DEV, torch.float16)
    check_fallback(m, kw, DEV, tol=2e-2, enabled_precisions={torch.float16})
    assert failed


def test_one_failed_segment_between_engines_on_the_gpu(monkeypatch):
    failed = fail_builds(monkeypatch, {"_run_on_acc_2"})
    m, kw = mlp_case(DEV)
    check_fallback(m, kw, DEV, tol=1e-4, min_block_size=1, torch_executed_ops={"torch.ops.aten.gelu.default"})
    assert failed == ["_run_on_acc_2"]
