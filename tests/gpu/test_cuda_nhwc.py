"""Channels-last tensors between cuDNN convolutions in the CUDA launch path (csrc/kir/nhwc.c,
csrc/backend/cuda/exec_cuda.c nhwc_run; TORCHTRT_C_CUDA_NHWC, on by default).

A tensor made by a dense convolution and read only by dense convolutions (and by their
epilogues as a residual) is kept NHWC: cuDNN runs those convolutions channels-last (OHWI
weights), their epilogues run as "<kernel>_eh" over the stored order, and the engine's
boundary stays NCHW (an NCHW input is changed into NHWC in the arena's scratch, a result for
an NCHW reader back, both by cudnnTransformTensor). The tests check:
- that it happened (the engines' counters: tensors kept NHWC, NHWC convolutions, calls);
- results against a float64 eager model (fp32 with TF32 off 2e-3 of max(|ref|, 1), fp16 3e-2),
  and against the same engine made with TORCHTRT_C_CUDA_NHWC=0;
- every call of one engine gives the same bits (the first, timed call; CUDA graph replays; a
  caller's torch.cuda.graph);
- torchvision ResNet-50 (bottlenecks, strided 1x1 shortcuts) and ResNet-18 at batch 8, and a
  block with channel counts no vector width divides (runs of one) and odd planes.

Needs a CUDA torch, libcuda, cuDNN and an NVIDIA OpenCL device; skipped elsewhere. The plan
itself and the "_eh" kernels are checked on any device by csrc/tests/test_cuda_nhwc.c.
"""
import pytest
import torch

import torchtrt_c
from cudalaunch import clear_knobs, close as _close, launch_call as _call
from cudalaunch import lib_stats as _stats, restore_tf32, torch_graph_replay, why_not_cudnn
from thirdparty import import_torchvision, randomize_constant_init

DEV = torch.device("cuda", 0)


pytestmark = pytest.mark.skipif(why_not_cudnn() is not None, reason=str(why_not_cudnn()))


@pytest.fixture(autouse=True)
def knobs(monkeypatch):
    old = clear_knobs(monkeypatch)
    monkeypatch.setenv("TORCHTRT_C_CONV_KSPLIT", "1")   # split-K convolutions never go to cuDNN
    yield
    restore_tf32(old)


class Block(torch.nn.Module):
    """stem (its output read by a max pool: NCHW), then conv-BN-ReLU chains with residuals and a
    strided shortcut (kept NHWC), and a head the global pool reads (NCHW again): five
    convolutions NHWC on both sides, two (a, d) changing a layout"""

    def __init__(self, c, c2):
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, c, 3, padding=1, bias=False), torch.nn.BatchNorm2d(c),
                                        torch.nn.ReLU())
        self.pool = torch.nn.MaxPool2d(2)
        self.a = torch.nn.Sequential(torch.nn.Conv2d(c, c, 3, padding=1, bias=False), torch.nn.BatchNorm2d(c))
        self.b = torch.nn.Conv2d(c, c, 3, padding=1)
        self.e = torch.nn.Conv2d(c, c, 3, padding=1)
        self.f = torch.nn.Conv2d(c, c, 3, padding=1)
        self.down = torch.nn.Conv2d(c, c2, 1, stride=2)
        self.c = torch.nn.Conv2d(c, c2, 3, stride=2, padding=1)
        self.d = torch.nn.Conv2d(c2, c2, 3, padding=1, bias=False)

    def forward(self, x):
        z1 = torch.relu(self.a(self.pool(self.stem(x))))
        z2 = torch.relu(self.b(z1) + z1)
        z4 = torch.relu(self.f(torch.relu(self.e(z2))) + z2)
        z5 = torch.relu(self.c(z4) + self.down(z4))
        return torch.nn.functional.adaptive_avg_pool2d(torch.relu(self.d(z5)), 1).flatten(1)


def _compile(m, x, prec):
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    dt = torch.float16 if prec == "fp16" else torch.float32
    m, x = m.eval().to(dt), x.to(dt)
    return m, x, torchtrt_c.compile(m, inputs=[x], min_block_size=1, enabled_precisions={dt}).to(DEV)


def _bn_stats(m):
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.running_mean.uniform_(-0.5, 0.5)
                mod.running_var.uniform_(0.5, 2.0)
    return m


@pytest.mark.parametrize("prec", ["fp32", "fp16"])
@pytest.mark.parametrize("c,c2,shape", [(16, 32, (8, 3, 32, 32)), (13, 19, (3, 3, 23, 17)), (8, 24, (2, 3, 14, 30))])
def test_block_matches_eager(prec, c, c2, shape, monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_CUDA_LIBS", "1")
    torch.manual_seed(c + c2)
    m, x, trt = _compile(_bn_stats(Block(c, c2)), torch.randn(*shape), prec)
    monkeypatch.setenv("TORCHTRT_C_CUDA_NHWC", "0")
    trt0 = torchtrt_c.compile(m, inputs=[x], min_block_size=1, enabled_precisions={x.dtype}).to(DEV)
    xd = x.to(DEV)
    outs = [_call(trt, xd) for _ in range(4)]   # plain (timed), plain (recorded), replays
    st = _stats(trt)
    # z1, z2, e's output, z4, the shortcut and z5 kept NHWC; a..d run NHWC (a's input changed
    # into NHWC, d's output back: the stem's goes to the max pool, d's to the global pool)
    assert st["nhwc_tensors"] == 6, st
    assert st["nhwc_calls"] == 4 and st["lib_nhwc"] == 4 * 7, st
    for i, o in enumerate(outs[1:], 1):
        assert torch.equal(o, outs[0]), f"call {i} differs from the first call"
    got0 = _call(trt0, xd)
    st0 = _stats(trt0)
    assert st0["nhwc_tensors"] == 0 and st0["lib_nhwc"] == 0, st0
    _close(outs[0], got0, 3e-2 if prec == "fp16" else 2e-3, f"block {prec} against NCHW")
    with torch.no_grad():
        ref = m.double().to(DEV)(xd.double())
    _close(outs[0], ref, 3e-2 if prec == "fp16" else 2e-3, f"block {prec} {c},{c2} {shape}")


def test_inside_a_torch_cuda_graph(monkeypatch):
    """A caller's torch.cuda.graph records the layout changes and NHWC calls with the kernels."""
    monkeypatch.setenv("TORCHTRT_C_CUDA_LIBS", "1")
    torch.manual_seed(5)
    m, x, trt = _compile(_bn_stats(Block(16, 32)), torch.randn(8, 3, 32, 32), "fp16")
    x = x.to(DEV)
    want = _call(trt, x)
    got, _graph = torch_graph_replay(trt, x)
    assert torch.equal(got, want), "the torch graph's replay differs from a plain call"
    assert _stats(trt)["lib_nhwc"] > 0


@pytest.mark.parametrize("prec", ["fp32", "fp16"])
@pytest.mark.parametrize("name", ["resnet50", "resnet18"])
def test_torchvision_batch8(name, prec, monkeypatch):
    tv = import_torchvision()
    torch.manual_seed(0)
    m = randomize_constant_init(tv.models.get_model(name, weights=None).eval())
    m, x, trt = _compile(m, torch.randn(8, 3, 64, 64, generator=torch.Generator().manual_seed(1)), prec)
    xd = x.to(DEV)
    got = _call(trt, xd)
    again = _call(trt, xd)
    st = _stats(trt)
    # fp16 makes most 1x1 convolutions GEMMs at this size: whether NHWC pays is the plan's call
    if prec == "fp32":
        assert st["nhwc_tensors"] > 0 and st["lib_nhwc"] > 0, st
    assert torch.equal(got, again)
    with torch.no_grad():
        ref = m.double().to(DEV)(xd.double())
    _close(got, ref, 3e-2 if prec == "fp16" else 2e-3, f"{name} b8 {prec}")


def test_dynamic_batch(monkeypatch):
    """A symbolic batch: the "_eh" kernels decompose the stored index with the call's batch, the
    scratch follows each call's shapes, graphs are kept per shape. (Symbolic planes through the
    max pool and the strided convolutions give floor-divided dims, which run in torch.)"""
    monkeypatch.setenv("TORCHTRT_C_CUDA_LIBS", "1")
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(3)
    m = _bn_stats(Block(16, 24)).eval()
    spec = torchtrt_c.Input(min_shape=(1, 3, 26, 22), opt_shape=(4, 3, 26, 22), max_shape=(8, 3, 26, 22),
                            dtype=torch.float32)
    trt = torchtrt_c.compile(m, inputs=[spec], min_block_size=1).to(DEV)
    md = m.to(DEV)
    xs = [torch.randn(b, 3, 26, 22, device=DEV) for b in (1, 8, 3, 5)]
    for rnd in range(3):
        for j, x in enumerate(xs):
            out = _call(trt, x)
            with torch.no_grad():
                _close(out, md(x), 2e-3, f"round {rnd}, input {j} {tuple(x.shape)}")
    st = _stats(trt)
    # every shape's first call launches plainly; later ones may replay a graph (not counted)
    assert st["nhwc_tensors"] == 6 and st["nhwc_calls"] >= 4 and st["lib_nhwc"] == 7 * st["nhwc_calls"], st
