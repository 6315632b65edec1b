"""CUDA tensors through the CUDA driver: the engines' PTX launched on torch's stream
(runtime/_cuda_launch.py, csrc/backend/cuda/exec_cuda.c).

Needs a CUDA torch, libcuda and an NVIDIA OpenCL device that is that GPU; skipped with the
reason elsewhere (tests/device/test_cuda_launch_unavailable.py covers the refusal). Every test
checks that the launch path really ran (runtime.cuda_path()). Tolerances, relative to
max(|reference|, 1): against the same engine on OpenCL 1e-5 (the same PTX); against eager 2e-3
for fp32 (other kernels, other summation orders; TF32 off in eager), 2e-2 for fp16.
"""
import pytest
import torch

import torchtrt_c
from torchtrt_c import runtime
from torchtrt_c.runtime import _cuda_launch, _execute

import zoo
from cudalaunch import why_not

DEV = torch.device("cuda", 0)


pytestmark = pytest.mark.skipif(why_not() is not None, reason=str(why_not()))


@pytest.fixture(autouse=True)
def exact_eager(monkeypatch):
    monkeypatch.delenv("TORCHTRT_C_CUDA_LAUNCH", raising=False)
    old = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = old


def _compile(m, xs, fp16=False, **kw):
    kw.setdefault("min_block_size", 1)
    if fp16:
        kw["enabled_precisions"] = {torch.float16}
    return torchtrt_c.compile(m, inputs=xs, **kw).to(DEV)


def _first(o):
    return o[0] if isinstance(o, (tuple, list)) else o


def _accs(trt):
    return [mod for n, mod in trt.named_children() if n.startswith("_run_on_acc_")]


def _launch_call(trt, *xs):
    with torch.inference_mode():
        out = _first(trt(*xs))
    st = runtime.cuda_path()
    assert st["path"] == "launch", f"the CUDA launch path did not run: {st}"
    return out


def _close(a, b, tol, what):
    assert a.device == b.device and a.shape == b.shape and a.dtype == b.dtype, (what, a.shape, b.shape, a.dtype, b.dtype)
    err = (a.float() - b.float()).abs().max().item() if a.numel() else 0.0
    scale = max(b.float().abs().max().item(), 1.0) if b.numel() else 1.0
    assert err <= tol * scale, f"{what}: max abs difference {err:.3g} (scale {scale:.3g}, tol {tol})"


@pytest.mark.parametrize("name,fp16", [("resnet18", False), ("resnet18", True), ("mobilenet_v2", False),
                                       ("bert_base", False), ("bert_base", True), ("gpt2", True),
                                       ("vit_b16", True)])
def test_models_match_eager(name, fp16):
    m, make = zoo.build(name)
    dt = torch.float16 if fp16 else torch.float32
    x = make(2)
    if x.is_floating_point():
        x = x.to(dt)
    m = m.to(dt)
    trt = _compile(m, [x], fp16=fp16)
    xd = x.to(DEV)
    out = _launch_call(trt, xd)
    assert out.is_cuda
    with torch.no_grad():
        ref = _first(m.to(DEV)(xd))
    _close(out, ref, 2e-2 if fp16 else 2e-3, f"{name} {'fp16' if fp16 else 'fp32'} vs eager")
    # every engine of the module went through the CUDA driver
    for acc in _accs(trt):
        p = _execute._plan(acc.meta, acc.engine)
        assert p.cuda_launch, p.cuda_launch_reason
        assert _cuda_launch.stats(p)["calls"] >= 1


def test_same_answer_as_opencl():
    """The same engine on CUDA tensors (CUDA driver) and on CPU tensors (OpenCL, host path)."""
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
                            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(16, 10),
                            torch.nn.Softmax(-1)).eval()
    x = torch.randn(3, 3, 19, 21)
    trt = _compile(m, [x])
    (acc,) = _accs(trt)
    got = _execute.run_engine([x.to(DEV)], acc.engine, acc.meta)
    assert runtime.cuda_path()["path"] == "launch", runtime.cuda_path()
    want = _execute.run_engine([x], acc.engine, acc.meta)
    for g, w in zip(got, want):
        _close(g.cpu(), w, 1e-5, "CUDA launch vs OpenCL")


class _Odd(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 5, 3, stride=2, padding=1)
        self.dw = torch.nn.Conv2d(5, 5, 5, padding=2, groups=5)
        self.lin = torch.nn.Linear(5 * 9 * 12, 37)
        self.ln = torch.nn.LayerNorm(37)

    def forward(self, x):
        y = torch.relu(self.dw(torch.relu(self.conv(x))))
        z = self.ln(self.lin(y.flatten(1)))
        return torch.softmax(z, -1) + z.sum(-1, keepdim=True)


@pytest.mark.parametrize("fp16", [False, True])
def test_odd_shapes(fp16):
    dt = torch.float16 if fp16 else torch.float32
    m = _Odd().eval().to(dt)
    x = torch.randn(7, 3, 17, 23, dtype=dt)
    trt = _compile(m, [x], fp16=fp16)
    xd = x.to(DEV)
    out = _launch_call(trt, xd)
    with torch.no_grad():
        _close(out, m.to(DEV)(xd), 2e-2 if fp16 else 2e-3, "odd shapes")


def test_big_reduction_rows():
    """Work-group kernels (static __local arrays, barriers) with rows longer than a group."""
    class M(torch.nn.Module):
        def forward(self, x):
            return torch.softmax(x, -1), torch.nn.functional.layer_norm(x, (x.shape[-1],)), x.sum(-1)

    x = torch.randn(33, 4099)
    trt = _compile(M(), [x])
    xd = x.to(DEV)
    with torch.inference_mode():
        outs = trt(xd)
    assert runtime.cuda_path()["path"] == "launch", runtime.cuda_path()
    for o, r, nm in zip(outs, M()(xd), ("softmax", "layer_norm", "sum")):
        _close(o, r, 2e-3, nm)


def test_dynamic_shapes():
    m = torch.nn.Sequential(torch.nn.Linear(24, 40), torch.nn.GELU(), torch.nn.Linear(40, 8)).eval()
    spec = torchtrt_c.Input(min_shape=(1, 24), opt_shape=(4, 24), max_shape=(64, 24), dtype=torch.float32)
    trt = torchtrt_c.compile(m, inputs=[spec], min_block_size=1).to(DEV)
    md = m.to(DEV)
    for b in (1, 64, 3, 17, 64, 2):
        x = torch.randn(b, 24, device=DEV)
        out = _launch_call(trt, x)
        with torch.no_grad():
            _close(out, md(x), 2e-3, f"batch {b}")


def test_knob_keeps_the_opencl_path(monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_CUDA_LAUNCH", "0")  # read when the engine is made
    m = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU()).eval()
    x = torch.randn(4, 16)
    trt = _compile(m, [x])
    xd = x.to(DEV)
    with torch.inference_mode():
        out = _first(trt(xd))
    st = runtime.cuda_path()
    assert st["path"] in ("shared", "host") and "TORCHTRT_C_CUDA_LAUNCH=0" in st["reason"], st
    with torch.no_grad():
        _close(out, m.to(DEV)(xd), 2e-3, "knob off")


def test_side_stream_is_used_and_ordered():
    """The engine runs on the caller's current stream: a slow producer on a side stream is
    waited for, with no synchronisation by the runtime (it would not see the new input if it
    launched on another stream)."""
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(8, 4, 1)).eval()
    x = torch.randn(2, 3, 20, 20)
    trt = _compile(m, [x])
    md = m.to(DEV)
    xd = torch.zeros(2, 3, 20, 20, device=DEV)
    _launch_call(trt, xd)  # load the module first
    torch.cuda.synchronize()
    s = torch.cuda.Stream(DEV)
    new = torch.randn(2, 3, 20, 20, device=DEV)
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        torch.cuda._sleep(20_000_000)  # keeps s busy for milliseconds
        xd.copy_(new)
        out = _launch_call(trt, xd)
        doubled = out * 2                # consumed on s as well
    s.synchronize()
    with torch.no_grad():
        ref = md(new)
    _close(out, ref, 2e-3, "engine on a side stream after a slow producer")
    _close(doubled, ref * 2, 2e-3, "consumer on the side stream")
    # the default stream again, same engine
    out2 = _launch_call(trt, new)
    _close(out2, ref, 2e-3, "default stream after a side stream")


def test_repeated_calls_keep_outputs_and_memory():
    m = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 32)).eval()
    x = torch.randn(4, 32)
    trt = _compile(m, [x])
    md = m.to(DEV)
    xs = [torch.randn(4, 32, device=DEV) for _ in range(4)]
    outs = [_launch_call(trt, xd) for xd in xs]
    with torch.no_grad():
        for i, xd in enumerate(xs):
            _close(outs[i], md(xd), 2e-3, f"call {i}")
    del outs
    (acc,) = _accs(trt)
    p = _execute._plan(acc.meta, acc.engine)
    st0 = _cuda_launch.stats(p)
    assert st0["const_bytes"] >= (32 * 64 + 64 + 64 * 32 + 32) * 4, st0  # weights uploaded, once
    torch.cuda.synchronize()
    mem0 = torch.cuda.memory_allocated(DEV)
    for _ in range(100):
        out = _launch_call(trt, xs[0])
    del out
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated(DEV) <= mem0 + 4096, (mem0, torch.cuda.memory_allocated(DEV))
    st1 = _cuda_launch.stats(p)
    assert st1["calls"] == st0["calls"] + 100 and st1["const_bytes"] == st0["const_bytes"], (st0, st1)
    assert st1["launches"] > st0["launches"] and st1["flag_reads"] == st0["flag_reads"] == 0, (st0, st1)


def test_noncontiguous_unaligned_and_cpu_inputs():
    class Add(torch.nn.Module):
        def forward(self, x, y):
            return torch.relu(x * 2 + y)

    x, y = torch.randn(6, 10), torch.randn(6, 10)
    trt = _compile(Add().eval(), [x, y])
    (acc,) = _accs(trt)
    xt = torch.randn(10, 6, device=DEV).t()            # non-contiguous CUDA
    yc = torch.randn(6, 10)                             # CPU
    outs = _execute.run_engine([xt, yc], acc.engine, acc.meta)
    assert runtime.cuda_path()["path"] == "launch", runtime.cuda_path()
    _close(outs[0], torch.relu(xt * 2 + yc.to(DEV)), 1e-5, "mixed inputs")
    big = torch.randn(61, device=DEV)
    xu = big[1:].view(6, 10)                            # 4 bytes past an allocation
    assert xu.data_ptr() % 16
    outs = _execute.run_engine([xu, yc.to(DEV)], acc.engine, acc.meta)
    _close(outs[0], torch.relu(xu * 2 + yc.to(DEV)), 1e-5, "unaligned input")


def test_index_error_is_reported():
    class Emb(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.e = torch.nn.Embedding(10, 4)

        def forward(self, i):
            return self.e(i) * 2

    m = Emb().eval()
    i = torch.tensor([[1, 2, 9]])
    trt = _compile(m, [i])
    out = _launch_call(trt, i.to(DEV))
    with torch.no_grad():
        _close(out, m.to(DEV)(i.to(DEV)), 1e-6, "embedding")
    (acc,) = _accs(trt)
    p = _execute._plan(acc.meta, acc.engine)
    if not _cuda_launch.stats(p)["flag_reads"]:
        pytest.skip("this engine checks no indices")
    with pytest.raises(torchtrt_c.InputError, match="index out of range"):
        with torch.inference_mode():
            trt(torch.tensor([[1, 12, 3]], device=DEV))
    out = _launch_call(trt, i.to(DEV))  # the context is fine afterwards
    with torch.no_grad():
        _close(out, m.to(DEV)(i.to(DEV)), 1e-6, "embedding after an index error")
