"""bfloat16 engines on a GPU (issue 33): a Hugging Face Llama and torchvision's ResNet-18 (the
zoo's tiny ResNet-18 where torchvision is missing), cast to bfloat16, compiled with default
settings and called with CUDA tensors, must match eager bfloat16 on the same GPU
(convtest.assert_bf16_close: within 2^-5 of each output's magnitude, and no further from
float32 eager on the same bfloat16 weights than eager bfloat16 itself is, plus 2^-7). Engines
compute in float and store bfloat16 (converted by bit manipulation in the kernels, so the same
engine runs on any device: tests/device/test_bf16.py on PoCL).

Paths: the CUDA launch path (asserted to have run), the OpenCL path with CUDA tensors
(TORCHTRT_C_CUDA_LAUNCH=0) and CPU tensors on the GPU's OpenCL device.

    PYTHONPATH=$PWD python3 -m pytest tests/gpu/test_bf16_gpu.py -q
"""
import copy

import pytest
import torch

import torchtrt_c
from torchtrt_c import runtime
from convtest import assert_bf16_close
from cudalaunch import why_not

DEV = torch.device("cuda", 0)
PATHS = ["launch", "opencl-cuda-tensors", "cpu-tensors"]


@pytest.fixture(autouse=True)
def exact_eager(monkeypatch):
    """float32 eager (the reference of the bfloat16 weights' values) without TF32."""
    monkeypatch.delenv("TORCHTRT_C_CUDA_LAUNCH", raising=False)
    if not torch.cuda.is_available():
        yield
        return
    old = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = old


def _setup(path, monkeypatch):
    if path == "launch":
        w = why_not()
        if w is not None:
            pytest.skip(w)
    elif not torch.cuda.is_available() and path != "cpu-tensors":
        pytest.skip("needs a CUDA torch and a CUDA device")
    if path == "opencl-cuda-tensors":
        monkeypatch.setenv("TORCHTRT_C_CUDA_LAUNCH", "0")
    return torch.device("cpu") if path == "cpu-tensors" else DEV


def _run(gm, dev, path, *args, **kw):
    with torch.inference_mode():
        out = gm(*args, **kw)
    if path == "launch":
        assert runtime.cuda_path()["path"] == "launch", runtime.cuda_path()
    return out


def _to(x, dev):
    return {k: v.to(dev) for k, v in x.items()} if isinstance(x, dict) else x.to(dev)


@pytest.mark.parametrize("path", PATHS)
def test_llama_bf16_gpu(path, monkeypatch):
    pytest.importorskip("transformers")
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
    from hf_cases import CASES
    dev = _setup(path, monkeypatch)
    case = CASES["llama"]
    m = case.build().to(torch.bfloat16)
    up = copy.deepcopy(m).float().to(dev)
    gm = torchtrt_c.compile(m, kwarg_inputs=case.specs()).to(dev)
    m = m.to(dev)
    for b, s in case.runs:
        kw = _to(case.inputs(b, s), dev)
        got = _run(gm, dev, path, **kw)
        with torch.no_grad():
            assert_bf16_close(got, m(**kw), up(**kw), f"llama bf16 ({path}) at batch {b}, seq {s}")


def _cnn():
    try:
        from thirdparty import load_torchvision, randomize_constant_init
        tv = load_torchvision()
        torch.manual_seed(0)
        return randomize_constant_init(tv.models.resnet18(num_classes=10).eval()), 64
    except ImportError:
        import zoo
        return zoo.build("resnet18")[0], 32


@pytest.mark.parametrize("path", PATHS)
def test_cnn_bf16_gpu(path, monkeypatch):
    dev = _setup(path, monkeypatch)
    model, size = _cnn()
    m = model.to(torch.bfloat16)
    up = copy.deepcopy(m).float().to(dev)
    spec = torchtrt_c.Input(min_shape=(1, 3, size, size), opt_shape=(2, 3, size, size),
                            max_shape=(8, 3, size, size), dtype=torch.bfloat16)
    gm = torchtrt_c.compile(m, inputs=[spec]).to(dev)
    m = m.to(dev)
    for b in (2, 1, 7):
        x = torch.randn(b, 3, size, size).to(torch.bfloat16).to(dev)
        got = _run(gm, dev, path, x)
        with torch.no_grad():
            assert_bf16_close(got, m(x), up(x.float()), f"resnet18 bf16 ({path}) at batch {b}")
