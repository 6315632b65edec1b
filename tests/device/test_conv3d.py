"""3-D convolution and transposed convolution (issue 33): torchtrt_c.compile runs them as 2-D
ones of the core (torchtrt_c/dynamo/lowering/_decompositions_conv3d.py), so each must compile to
one engine with no torch segment and match eager on every execution path of this device: its
own kernels with native steps (oneDNN convolution on PoCL), im2col + OpenBLAS
(TORCHTRT_C_NATIVE_CONV=blas), OpenCL kernels only (TORCHTRT_C_NATIVE=0) and the GPU kernel
families forced (TORCHTRT_C_KERNELS=gpu); in float32 and float16 (a .half() model, and a
float32 model in an fp16 engine). Odd sizes, groups, stride, padding, dilation, bias or none,
output_padding, unbatched inputs, a dynamic batch.

Tolerances: float32 against float32 eager, atol = rtol = 1e-4 (the 2-D convolutions sum the
same products in another order). float16 against float32 eager on the same (half) weights and
inputs, within 1e-2 of the output's largest magnitude: the engine rounds each output (and, in
fp16 engines, intermediates) to half, 2^-11 relative, over sums of up to 200 products.
"""
import copy

import pytest
import torch
import torch.nn as nn

import torchtrt_c

PATHS = {
    "default": {},
    "blas": {"TORCHTRT_C_NATIVE_CONV": "blas"},
    "opencl": {"TORCHTRT_C_NATIVE": "0"},
    "gpu-kernels": {"TORCHTRT_C_KERNELS": "gpu"},
}
KNOBS = ("TORCHTRT_C_NATIVE", "TORCHTRT_C_NATIVE_CONV", "TORCHTRT_C_KERNELS")


def _set_path(path, monkeypatch):
    for k in KNOBS:
        monkeypatch.delenv(k, raising=False)
    for k, v in PATHS[path].items():
        monkeypatch.setenv(k, v)


class Stack(nn.Module):
    """Two 3-D convolutions with a 2-D one in the same graph (it must stay whole)."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv3d(3, 6, (3, 3, 3), stride=(2, 1, 1), padding=1)
        self.b = nn.Conv3d(6, 4, (3, 1, 1), padding=(1, 0, 0), groups=2)
        self.c = nn.Conv2d(4, 5, 3, padding=1)

    def forward(self, x):
        y = self.b(torch.relu(self.a(x)))
        n, c, d, h, w = y.shape
        z = self.c(y.transpose(1, 2).reshape(n * d, c, h, w))
        return y, z


def _conv_bn_relu():
    """R3D's block: convolution, batch norm (random statistics), ReLU; twice, with and without
    a convolution bias (the batch norms fold into the 3-D convolutions before they become 2-D)."""
    m = nn.Sequential(nn.Conv3d(3, 6, 3, padding=1, bias=False), nn.BatchNorm3d(6), nn.ReLU(),
                      nn.Conv3d(6, 4, (3, 1, 1), stride=(2, 1, 1), padding=(1, 0, 0)), nn.BatchNorm3d(4))
    for bn in (m[1], m[4]):
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
        bn.weight.data.uniform_(0.5, 1.5)
        bn.bias.data.uniform_(-1, 1)
    return m


# id -> (module factory, input shape)
CASES = {
    "k3-s212-p120-d211": (lambda: nn.Conv3d(3, 5, 3, stride=(2, 1, 2), padding=(1, 2, 0), dilation=(2, 1, 1)),
                          (2, 3, 7, 9, 6)),
    "groups2-k312": (lambda: nn.Conv3d(4, 6, (3, 1, 2), groups=2, padding=1), (1, 4, 5, 7, 5)),
    "depthwise-k133-nobias": (lambda: nn.Conv3d(6, 6, (1, 3, 3), padding=(0, 1, 1), groups=6, bias=False),
                              (2, 6, 3, 7, 5)),
    "k311-temporal": (lambda: nn.Conv3d(5, 7, (3, 1, 1), stride=(2, 1, 1), padding=(1, 0, 0)), (1, 5, 9, 4, 3)),
    "stem-k377-s122": (lambda: nn.Conv3d(3, 8, (3, 7, 7), stride=(1, 2, 2), padding=(1, 3, 3), bias=False),
                       (1, 3, 5, 13, 11)),
    "t-k3-s2-p1-op1": (lambda: nn.ConvTranspose3d(3, 4, 3, stride=2, padding=1, output_padding=1), (1, 3, 3, 5, 4)),
    "t-groups2-s312-d211": (lambda: nn.ConvTranspose3d(4, 6, (2, 3, 3), stride=(3, 1, 2), padding=(1, 0, 1),
                                                       dilation=(2, 1, 1), groups=2), (2, 4, 4, 5, 3)),
    "t-k133-nobias": (lambda: nn.ConvTranspose3d(5, 3, (1, 3, 3), stride=(1, 2, 2), bias=False), (1, 5, 3, 4, 5)),
    "t-k4-s3-op2": (lambda: nn.ConvTranspose3d(2, 3, (4, 2, 3), stride=(3, 2, 1), padding=(2, 0, 1),
                                               output_padding=(2, 1, 0)), (1, 2, 3, 3, 4)),
    "stack-with-2d": (Stack, (2, 3, 5, 6, 7)),
    "conv-bn-relu": (_conv_bn_relu, (2, 3, 5, 7, 6)),
}


def _make(case, seed=0):
    torch.manual_seed(seed)
    factory, shape = CASES[case]
    m = factory().eval()
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(seed + 1))
    return m, x


def _leaves(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _one_engine(trt):
    names = [n for n, _ in trt.named_children()]
    eng = [n for n in names if n.startswith("_run_on_acc_")]
    tor = [n for n in names if n.startswith("_run_on_gpu_")]
    assert len(eng) == 1 and not tor, f"engines {eng}, torch segments {tor}"


def _close(got, want, atol, rtol, what):
    assert got.shape == want.shape and got.dtype == want.dtype, \
        f"{what}: {got.shape}/{got.dtype} vs {want.shape}/{want.dtype}"
    err = (got.float() - want.float()).abs()
    bound = atol + rtol * want.float().abs()
    assert bool((err <= bound).all()), f"{what}: max abs error {float(err.max()):.3g}"


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("case", list(CASES))
def test_conv3d_fp32(case, path, monkeypatch):
    _set_path(path, monkeypatch)
    m, x = _make(case)
    with torch.no_grad():
        want = _leaves(m(x))
    trt = torchtrt_c.compile(m, arg_inputs=[x], min_block_size=1)
    _one_engine(trt)
    with torch.no_grad():
        got = _leaves(trt(x))
    for i, (a, b) in enumerate(zip(got, want)):
        _close(a, b, 1e-4, 1e-4, f"{case} on {path}, output {i}")


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("engine", ["half-model", "fp16-engine"])
@pytest.mark.parametrize("case", ["k3-s212-p120-d211", "groups2-k312", "t-k3-s2-p1-op1", "t-groups2-s312-d211",
                                  "stack-with-2d", "conv-bn-relu"])
def test_conv3d_fp16(case, engine, path, monkeypatch):
    _set_path(path, monkeypatch)
    m, x = _make(case)
    if engine == "half-model":
        m, x = m.half(), x.half()
        settings = {}
    else:
        # the reference on the values an fp16 engine sees: weights and input rounded to half
        x = x.half().float()
        for p in m.parameters():
            p.data = p.data.half().float()
        settings = {"enabled_precisions": {torch.float16}}
    ref_m = copy.deepcopy(m).float()
    with torch.no_grad():
        want = _leaves(ref_m(x.float()))
    trt = torchtrt_c.compile(m, arg_inputs=[x], min_block_size=1, **settings)
    _one_engine(trt)
    with torch.no_grad():
        got = _leaves(trt(x))
    for i, (a, b) in enumerate(zip(got, want)):
        assert a.dtype == x.dtype, f"output {i} is {a.dtype}, the input {x.dtype}"
        scale = float(b.abs().max())
        _close(a.float(), b, 1e-2 * scale, 0.0, f"{case} {engine} on {path}, output {i}")


@pytest.mark.parametrize("case", ["k3-s212-p120-d211", "t-k3-s2-p1-op1"])
def test_conv3d_unbatched(case):
    m, x = _make(case)
    x = x[0]
    with torch.no_grad():
        want = m(x)
    trt = torchtrt_c.compile(m, arg_inputs=[x], min_block_size=1)
    _one_engine(trt)
    with torch.no_grad():
        _close(trt(x), want, 1e-4, 1e-4, f"{case} unbatched")


@pytest.mark.parametrize("case", ["k3-s212-p120-d211", "t-groups2-s312-d211"])
def test_conv3d_dynamic_batch(case):
    m, x = _make(case)
    rest = tuple(x.shape[1:])
    spec = torchtrt_c.Input(min_shape=(1, *rest), opt_shape=(2, *rest), max_shape=(4, *rest))
    trt = torchtrt_c.compile(m, inputs=[spec], min_block_size=1)
    _one_engine(trt)
    for b in (3, 1, 4):
        xb = torch.randn(b, *rest, generator=torch.Generator().manual_seed(b))
        with torch.no_grad():
            _close(trt(xb), m(xb), 1e-4, 1e-4, f"{case} at batch {b}")


def test_dry_run_counts_3d_convolution_as_engine_work():
    """The dry run decomposes as the compile does: a 3-D CNN is all engine, and says so."""
    m, x = _make("stack-with-2d")
    rep = torchtrt_c.compile(m, arg_inputs=[x], min_block_size=1, dryrun=True).dryrun_report
    assert not rep.unsupported, rep.unsupported
    assert rep.coverage == 1.0


def test_kept_in_torch_says_why():
    """A 3-D convolution the user keeps in torch (torch_executed_ops) is not decomposed, and the
    dry run names the op with that reason."""
    m, x = _make("k3-s212-p120-d211")
    rep = torchtrt_c.compile(m, arg_inputs=[x], min_block_size=1, dryrun=True,
                             torch_executed_ops={"torch.ops.aten.convolution.default"}).dryrun_report
    reasons = rep.unsupported.get("aten.convolution.default")
    assert reasons is not None, rep.unsupported
    assert any("torch_executed_ops" in r for r in reasons[1]), reasons


def test_without_the_decomposition_the_core_says_why(monkeypatch):
    """With the decomposition disabled (torch_disabled_decompositions keeps the op whole), the
    3-D convolution reaches the core, which refuses it naming the limit and the way round it."""
    from torchtrt_c.dynamo.lowering import torch_disabled_decompositions
    monkeypatch.setattr("torchtrt_c.dynamo.lowering._decompositions.torch_disabled_decompositions",
                        torch_disabled_decompositions | {torch.ops.aten.convolution.default})
    monkeypatch.setattr("torchtrt_c.dynamo.lowering.torch_disabled_decompositions",
                        torch_disabled_decompositions | {torch.ops.aten.convolution.default})
    for case, what in (("k3-s212-p120-d211", "convolution"), ("t-k3-s2-p1-op1", "transposed convolution")):
        m, x = _make(case)
        rep = torchtrt_c.compile(m, arg_inputs=[x], min_block_size=1, dryrun=True).dryrun_report
        reasons = rep.unsupported.get("aten.convolution.default")
        assert reasons is not None, rep.unsupported
        assert any(f"only 1-D and 2-D {what} in the core" in r and "decomposes 3-D ones" in r
                   for r in reasons[1]), reasons


def test_decomposed_in_place_with_weights_folded():
    """The decomposition runs node by node (no whole-program re-trace: the 2-D convolution it
    leaves whole does not send the program to torch's re-trace), and every convolution's
    weight is a constant of the program, not a reshape the core would fold into an unnamed
    constant (which the engine cache key hashed as printed text: r3d_18's compile with the
    engine cache took 268 s instead of 14 s)."""
    from torchtrt_c.dynamo._capture import capture, decompose
    from torchtrt_c.dynamo.lowering import get_decompositions
    from torchtrt_c.dynamo.lowering._local_decomp import decompose_locally
    conv = torch.ops.aten.convolution.default
    m, x = _make("stack-with-2d")
    ep = capture(m, (x,), {})
    ep = decompose(ep)
    assert decompose_locally(ep, get_decompositions(decompose={conv})) is not None
    ep = decompose(ep, decompose={conv})
    convs = [n for n in ep.graph.nodes if n.op == "call_function" and n.target is conv]
    assert len(convs) == 3 and all(len(n.meta["val"].shape) == 4 for n in convs)
    assert all(n.args[1].op == "placeholder" for n in convs), [n.args[1].format_node() for n in convs]


def test_batch_norm_folds_into_3d_convolution():
    """No batch norm is left after the 3-D convolutions' decomposition of R3D's block: each
    folded into its convolution's (constant) weight and bias."""
    from torchtrt_c.dynamo._capture import capture, decompose
    conv = torch.ops.aten.convolution.default
    m, x = _make("conv-bn-relu")
    ep = decompose(decompose(capture(m, (x,), {})), decompose={conv})
    ops = {str(n.target) for n in ep.graph.nodes if n.op == "call_function"}
    assert not any("batch_norm" in o for o in ops), ops
    convs = [n for n in ep.graph.nodes if n.op == "call_function" and n.target is conv]
    assert len(convs) == 2 and all(n.args[1].op == "placeholder" and n.args[2].op == "placeholder" for n in convs)
