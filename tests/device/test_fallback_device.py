"""A segment whose engine fails to build runs in torch, and the call still gives eager's answer
(issue 36, item 3): every constant a torch segment reads (the host copies of the weights the
import keeps, the tensors the C graph made) is on the device of the module's inputs. Builds are
made to fail by the test (the engine factory raises BuildError for the segments it names), as
an NVIDIA driver did for Hugging Face T5 in fp16. Here the inputs are host tensors (PoCL);
tests/gpu/test_fallback_device_cuda.py runs the same models with CUDA tensors. Tolerance 1e-5
(fp32; the failed segments run in torch, the others are engines checked to 1e-4 elsewhere)."""
from fallback import check_fallback, fail_builds, mlp_case, t5_case


def test_t5_every_build_failing_runs_in_torch_and_matches_eager(monkeypatch):
    failed = fail_builds(monkeypatch)
    m, kw = t5_case("cpu")
    check_fallback(m, kw, "cpu")
    assert failed


def test_one_failed_segment_between_engines(monkeypatch):
    # GELU in torch splits the MLP: _run_on_acc_0, _run_on_gpu_1, _run_on_acc_2; the last
    # engine's build fails and runs in torch beside a working engine
    failed = fail_builds(monkeypatch, {"_run_on_acc_2"})
    m, kw = mlp_case("cpu")
    trt = check_fallback(m, kw, "cpu", min_block_size=1, torch_executed_ops={"torch.ops.aten.gelu.default"})
    assert failed == ["_run_on_acc_2"]
    assert [n for n, _ in trt.named_children() if n.startswith("_run_on_acc")] == ["_run_on_acc_0"]
