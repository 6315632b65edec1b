"""cuDNN convolutions in the CUDA launch path (csrc/backend/cuda/exec_cuda.c library steps,
csrc/backend/cuda/exec_cuda_lib.c, csrc/backend/cuda/cudnn.c; TORCHTRT_C_CUDA_LIBS).

A convolution kernel may run as cuDNN's convolution written into its output (NCHW, the
engine's layout; OIHW weights made at CUDA-engine creation in the input's dtype), then the
kernel's epilogue alone ("<kernel>_e": bias, folded BN, activation, residual) in place. The
tests force it (=1), let the engine time each shape (auto) and turn it off (=0), and check:
- that cuDNN really ran (the engine's counters) and that shapes are timed once;
- every call of one engine gives the same bits (first timed call, CUDA graph replays);
- results against a float64 eager model: 2e-3 of max(|ref|, 1) in fp32 with TF32 off, 2e-2
  with TF32 on and in fp16 (other summation orders; the epilogue reads the convolution
  rounded to the output's dtype);
- torchvision ResNet-18, MobileNetV2 and ConvNeXt-T's first two stages at batch 8 in fp32
  (TF32 off and on) and fp16, the same tolerances (fp16: 3e-2, through a whole model).

Needs a CUDA torch, libcuda, cuDNN (torch's) and an NVIDIA OpenCL device; skipped elsewhere.
"""
import pytest
import torch

import torchtrt_c
from cudalaunch import ConvNet as Net, clear_knobs, close as _close, launch_call as _call
from cudalaunch import lib_stats as _stats, restore_tf32, torch_graph_replay, why_not_cudnn
from thirdparty import import_torchvision, randomize_constant_init

DEV = torch.device("cuda", 0)


pytestmark = pytest.mark.skipif(why_not_cudnn() is not None, reason=str(why_not_cudnn()))


@pytest.fixture(autouse=True)
def knobs(monkeypatch):
    old = clear_knobs(monkeypatch)
    yield
    restore_tf32(old)


MODES = [("fp32", False), ("fp32", True), ("fp16", False)]


def _compile(m, x, prec, tf32):
    torch.backends.cudnn.allow_tf32 = tf32   # the engines follow torch's switch
    torch.backends.cuda.matmul.allow_tf32 = tf32
    dt = torch.float16 if prec == "fp16" else torch.float32
    m, x = m.eval().to(dt), x.to(dt)
    return m, x, torchtrt_c.compile(m, inputs=[x], min_block_size=1, enabled_precisions={dt}).to(DEV)


@pytest.mark.parametrize("libs", ["1", "auto"])
@pytest.mark.parametrize("prec,tf32", MODES)
@pytest.mark.parametrize("shape", [(8, 3, 33, 29), (3, 3, 16, 16)])
def test_net_matches_eager(libs, prec, tf32, shape, monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_CUDA_LIBS", libs)
    torch.manual_seed(sum(shape))
    m = Net(16)
    with torch.no_grad():
        m.a[1].running_mean.uniform_(-0.5, 0.5)
        m.a[1].running_var.uniform_(0.5, 2.0)
    m, x, trt = _compile(m, torch.randn(*shape), prec, tf32)
    xd = x.to(DEV)
    outs = [_call(trt, xd) for _ in range(4)]   # plain (timed), plain (recorded), replays
    st = _stats(trt)
    assert st["lib_kernels"] >= 4, st
    if libs == "1":
        assert st["lib_calls"] >= 4 * 4, st
        assert st["lib_timed"] == 0, st
    else:
        assert 1 <= st["lib_timed"] <= st["lib_kernels"], st
        again = _stats(trt)["lib_timed"]
        _call(trt, xd)
        assert _stats(trt)["lib_timed"] == again, "a shape was timed twice"
    for i, o in enumerate(outs[1:], 1):
        assert torch.equal(o, outs[0]), f"call {i} differs from the first call"
    with torch.no_grad():
        ref = m.double().to(DEV)(xd.double())
    _close(outs[0], ref, 2e-2 if (tf32 or prec == "fp16") else 2e-3, f"{libs} {prec} tf32={tf32} {shape}")


def test_off_means_no_cudnn(monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_CUDA_LIBS", "0")
    m, x, trt = _compile(Net(8), torch.randn(2, 3, 20, 20), "fp32", False)
    out = _call(trt, x.to(DEV))
    st = _stats(trt)
    assert st["lib_kernels"] == 0 and st["lib_calls"] == 0, st
    with torch.no_grad():
        _close(out.cpu(), m.double()(x.double()), 2e-3, "off")


def test_inside_a_torch_cuda_graph(monkeypatch):
    """A caller's torch.cuda.graph records the cuDNN calls with the kernels."""
    monkeypatch.setenv("TORCHTRT_C_CUDA_LIBS", "1")
    torch.manual_seed(5)
    m, x, trt = _compile(Net(16), torch.randn(8, 3, 32, 32), "fp16", False)
    x = x.to(DEV)
    want = _call(trt, x)
    got, _graph = torch_graph_replay(trt, x)
    assert torch.equal(got, want), "the torch graph's replay differs from a plain call"


def _vision(name):
    tv = import_torchvision()
    torch.manual_seed(0)
    if name == "convnext_tiny_s2":   # stem, stage 1, downsampling, stage 2
        return torch.nn.Sequential(*list(tv.models.convnext_tiny(weights=None).features)[:4])
    return tv.models.get_model(name, weights=None)


@pytest.mark.parametrize("prec,tf32", MODES)
@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "convnext_tiny_s2"])
def test_torchvision_batch8(name, prec, tf32, monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_CUDA_LIBS", "1")
    m = randomize_constant_init(_vision(name).eval())
    m, x, trt = _compile(m, torch.randn(8, 3, 64, 64, generator=torch.Generator().manual_seed(1)), prec, tf32)
    xd = x.to(DEV)
    got = _call(trt, xd)
    assert _stats(trt)["lib_calls"] > 0, _stats(trt)
    with torch.no_grad():
        ref = m.double().to(DEV)(xd.double())
    _close(got, ref, 3e-2 if prec == "fp16" else 2e-2 if tf32 else 2e-3, f"{name} b8 {prec} tf32={tf32}")
