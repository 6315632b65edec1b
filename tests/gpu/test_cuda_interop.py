"""CUDA tensors in and out on memory shared between CUDA and OpenCL (runtime/_cuda_interop.py).

Needs a CUDA torch and an OpenCL device that imports CUDA memory (NVIDIA's OpenCL); skipped
with the reason elsewhere. Every test checks that the shared path really ran
(runtime.cuda_path()) and compares with the host path (TORCHTRT_C_CUDA_INTEROP off) and eager.
Tolerance: fp32 atol = rtol = 1e-4 against the host path (same kernels: exact in practice),
2e-3 against eager (different kernels and summation orders).
"""
import pytest
import torch

import torchtrt_c
from torchtrt_c import runtime
from torchtrt_c.runtime import _cuda_interop, _execute

import zoo

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA torch and a CUDA device")

DEV = torch.device("cuda", 0)


@pytest.fixture(autouse=True)
def opencl_paths(monkeypatch):
    # these tests are about the OpenCL paths: engines made here keep off the CUDA launch
    # path (tests/gpu/test_cuda_launch.py), which would otherwise run first
    monkeypatch.setenv("TORCHTRT_C_CUDA_LAUNCH", "0")


@pytest.fixture(autouse=True)
def exact_eager():
    # eager's reference without TF32 (cuDNN uses it for fp32 convolutions by default)
    old = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = old


def _compile(m, x, **kw):
    kw.setdefault("min_block_size", 1)
    trt = torchtrt_c.compile(m, inputs=[x] if not isinstance(x, list) else x, **kw)
    return trt.to(DEV)


def _first(o):
    return o[0] if isinstance(o, (tuple, list)) else o


def _shared_call(trt, *xs):
    with torch.inference_mode():
        out = _first(trt(*xs))
    st = runtime.cuda_path()
    if st["path"] != "shared":
        pytest.skip(f"shared CUDA/OpenCL memory unavailable: {st['reason']}")
    return out


def _host_call(trt, *xs, monkeypatch):
    monkeypatch.setattr(_cuda_interop, "ENABLED", False)
    try:
        with torch.inference_mode():
            out = _first(trt(*xs))
        assert runtime.cuda_path()["path"] == "host"
        return out
    finally:
        monkeypatch.setattr(_cuda_interop, "ENABLED", True)


def _close(a, b, tol, what):
    assert a.device == b.device and a.shape == b.shape and a.dtype == b.dtype, what
    err = (a.float() - b.float()).abs().max().item()
    scale = max(b.float().abs().max().item(), 1.0)
    assert err <= tol * scale, f"{what}: max abs difference {err:.3g} (scale {scale:.3g}, tol {tol})"


@pytest.mark.parametrize("name", ["resnet18", "vit_block"])
def test_outputs_match_host_path_and_eager(name, monkeypatch):
    if name == "vit_block":
        m, x = zoo.ViTBlock(32, 2, 64).eval(), torch.randn(2, 16, 32)
    else:
        m, make = zoo.build(name)
        x = make(2)
    trt = _compile(m, x)
    xd = x.to(DEV)
    out = _shared_call(trt, xd)
    assert out.is_cuda
    host = _host_call(trt, xd, monkeypatch=monkeypatch)
    with torch.no_grad():
        ref = _first(m.to(DEV)(xd))
    _close(out, host, 1e-4, f"{name}: shared vs host path")
    _close(out, ref, 2e-3, f"{name}: shared vs eager")


def test_dynamic_shapes_resize_buffers():
    m = torch.nn.Sequential(torch.nn.Linear(24, 40), torch.nn.GELU(), torch.nn.Linear(40, 8)).eval()
    spec = torchtrt_c.Input(min_shape=(1, 24), opt_shape=(4, 24), max_shape=(64, 24), dtype=torch.float32)
    trt = torchtrt_c.compile(m, inputs=[spec], min_block_size=1).to(DEV)
    md = m.to(DEV)
    before = runtime.shared_stats()
    for b in (1, 64, 3, 17, 64, 2):
        x = torch.randn(b, 24, device=DEV)
        out = _shared_call(trt, x)
        with torch.no_grad():
            _close(out, md(x), 2e-3, f"batch {b}")
    grown = runtime.shared_stats()
    # one buffer per binding plus a flag; growing replaced buffers instead of adding more
    assert grown["live"] - before["live"] <= 3, (before, grown)


def test_two_engines_in_a_row():
    class Two(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(16, 32)
            self.b = torch.nn.Linear(32, 8)

        def forward(self, x):
            return self.b(torch.sigmoid(self.a(x)))

    m = Two().eval()
    x = torch.randn(5, 16)
    trt = _compile(m, x, torch_executed_ops={"torch.ops.aten.sigmoid.default"})
    n_eng = sum(1 for n, _ in trt.named_children() if n.startswith("_run_on_acc_"))
    assert n_eng == 2, [n for n, _ in trt.named_children()]
    xd = x.to(DEV)
    out = _shared_call(trt, xd)
    with torch.no_grad():
        _close(out, m.to(DEV)(xd), 2e-3, "two engines")


def test_noncontiguous_and_cpu_inputs_mixed():
    class Add(torch.nn.Module):
        def forward(self, x, y):
            return torch.relu(x * 2 + y)

    x, y = torch.randn(6, 10), torch.randn(6, 10)
    trt = _compile(Add().eval(), [x, y])
    (acc,) = [mod for n, mod in trt.named_children() if n.startswith("_run_on_acc_")]
    xt = torch.randn(10, 6, device=DEV).t()  # non-contiguous CUDA
    assert not xt.is_contiguous()
    yc = torch.randn(6, 10)                   # CPU
    outs = _execute.run_engine([xt, yc], acc.engine, acc.meta)
    assert runtime.cuda_path()["path"] == "shared", runtime.cuda_path()
    _close(outs[0], torch.relu(xt * 2 + yc.to(DEV)), 1e-5, "mixed inputs")


def test_stream_other_than_default():
    m, make = zoo.build("resnet18")
    x = make(2)
    trt = _compile(m, x)
    md = m.to(DEV)
    s = torch.cuda.Stream(DEV)
    with torch.cuda.stream(s):
        xd = torch.randn(2, 3, 32, 32, device=DEV) * 3 + 1  # made on s, consumed on s
        out = _shared_call(trt, xd)
        with torch.no_grad():
            ref = _first(md(xd))
        err = (out - ref).abs().max()
    s.synchronize()
    assert err.item() <= 2e-3 * max(ref.abs().max().item(), 1.0), f"on a side stream: max abs difference {err.item():.3g}"
    # and back on the default stream, with the same engine and buffers
    out2 = _shared_call(trt, xd)
    with torch.no_grad():
        _close(out2, _first(md(xd)), 2e-3, "default stream after a side stream")


def test_repeated_calls_no_stale_data():
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(8, 4, 1)).eval()
    x = torch.randn(2, 3, 20, 20)
    trt = _compile(m, x)
    md = m.to(DEV)
    outs = []
    xs = [torch.randn(2, 3, 20, 20, device=DEV) for _ in range(4)]
    for xd in xs:
        outs.append(_shared_call(trt, xd))
    torch.cuda.current_stream().synchronize()
    with torch.no_grad():
        refs = [md(xd) for xd in xs]
    for i in range(4):
        _close(outs[i], refs[i], 2e-3, f"call {i}")  # earlier outputs are not overwritten by later calls
    assert (outs[0] - outs[1]).abs().max().item() > 1e-3, "second call returned the first call's outputs"


def test_no_shared_buffer_leak_over_100_calls():
    m = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU()).eval()
    x = torch.randn(4, 32)
    trt = _compile(m, x)
    xd = x.to(DEV)
    _shared_call(trt, xd)
    before = runtime.shared_stats()
    torch.cuda.synchronize()
    mem0 = torch.cuda.memory_allocated(DEV)
    for _ in range(100):
        out = _shared_call(trt, xd)
    del out
    torch.cuda.synchronize()
    after = runtime.shared_stats()
    assert after["live"] == before["live"] and after["allocated"] == before["allocated"], (before, after)
    assert torch.cuda.memory_allocated(DEV) <= mem0 + 4096, (mem0, torch.cuda.memory_allocated(DEV))
