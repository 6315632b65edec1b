"""PT2E static int8 layers as oneDNN int8 native steps on the CPU (issue 35;
csrc/backend/cpu/native_qconv.c) against torch's own execution of the same converted model.

Each model goes through torchao's prepare_pt2e / convert_pt2e with the X86InductorQuantizer and
compiles to one engine whose convolutions and linears are int8 kernels: on a CPU whose oneDNN
loads, native steps ("(native)" in the kernel descriptions), activations u8 between quantized
layers (a convolution's output stored 8-bit, "+nhwc-out"), the residual add, ReLU and the
quantize inside the step. Tolerance: the engine computes torch's Q/DQ arithmetic, but the
convolution's float sum (torch: conv of dequantized floats; here: int32 sum times
x_scale * w_scale[c]) rounds apart by an ulp, so a value within an ulp of a rounding tie of a
quantize moves by one quantization step. Outputs that are dequantized 8-bit values (a max
pool's) are compared elementwise within one step of their scale; float outputs of a last layer
within 1e-3 of the largest output (one step of the layer before it, spread by one layer).
Off a CPU with oneDNN the same models run the portable int8 kernels (the checks on "(native)"
then skip) and must match as well."""
from __future__ import annotations

import warnings

import pytest
import torch

import torchtrt_c
from torchtrt_c import settings
from engine_kernels import kernels as _kernels


def _quantizer(kind):
    """x86: the X86InductorQuantizer (u8 activations); x86_qat: its QAT form; xnnpack_channel /
    xnnpack_tensor: the XNNPACK quantizer (s8 activations, symmetric weights per channel / per
    tensor; it keeps a hardtanh (ReLU6) between two quantizes of one scale)."""
    pytest.importorskip("torchao")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (
            X86InductorQuantizer, get_default_x86_inductor_quantization_config)
        from torchao.testing.pt2e._xnnpack_quantizer import XNNPACKQuantizer, get_symmetric_quantization_config
    if kind.startswith("x86"):
        q = X86InductorQuantizer()
        q.set_global(get_default_x86_inductor_quantization_config(is_qat=kind == "x86_qat"))
    else:
        q = XNNPACKQuantizer()
        q.set_global(get_symmetric_quantization_config(is_per_channel=kind == "xnnpack_channel"))
    return q


def _pt2e(model, calib, kind="x86"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torchao.quantization.pt2e import move_exported_model_to_eval
        from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e, prepare_qat_pt2e
    q = _quantizer(kind)
    qat = kind == "x86_qat"
    dyn = ({0: torch.export.Dim("batch", max=64)},)
    gm = torch.export.export(model.train() if qat else model.eval(), (calib[0],), dynamic_shapes=dyn).module()
    p = (prepare_qat_pt2e if qat else prepare_pt2e)(gm, q)
    with torch.no_grad():
        for x in calib:
            p(x)
    qm = convert_pt2e(p)
    if qat:
        move_exported_model_to_eval(qm)
    return qm


def _native_int8():
    nat = torchtrt_c._C.native_cpu()
    return nat.get("available", False) and nat.get("int8") == "onednn"


def _out_scale(qm):
    """The scale of the dequantize_per_tensor giving the model's output, else None."""
    out = [n for n in qm.graph.nodes if n.op == "output"][0].args[0]
    out = out[0] if isinstance(out, (tuple, list)) else out
    if getattr(out, "target", None) is torch.ops.quantized_decomposed.dequantize_per_tensor.default:
        return float(out.args[1])
    return None


def _compile_check(qm, x, want_native):
    with settings.override(QUANT_KERNELS="int8"):
        gm = torchtrt_c.compile(qm, inputs=[x], require_full_compilation=True)
    ks = _kernels(gm)
    layers = [k for k in ks if " qconv2d:" in k or " qgemm:" in k]
    assert len(layers) == want_native, ks
    if _native_int8():
        assert all("(native)" in k for k in layers), ks
    with torch.no_grad():
        want, got = qm(x), gm(x)
    step = _out_scale(qm)
    if step is not None:   # 8-bit values dequantized: within one quantization step each
        err = float((got - want).abs().max())
        assert err <= step * (1 + 1e-5), f"max |engine - torch| {err} > one step {step}"
        # and nearly all exact
        assert float(((got - want).abs() > step / 2).float().mean()) <= 0.01
    else:
        rel = float((got - want).abs().max() / want.abs().max())
        assert rel <= 1e-3, rel
    return gm, ks


class Block(torch.nn.Module):
    """conv [+ x] [relu], then a max pool (its output is dequantized u8: compared step-wise) or a
    1x1 convolution (float output)."""

    def __init__(self, cin, cout, k, stride, pad, dil, groups, relu, res, tail):
        super().__init__()
        self.c = torch.nn.Conv2d(cin, cout, k, stride, pad, dil, groups)
        self.c2 = torch.nn.Conv2d(cout, 6, 1) if tail == "conv" else None
        self.relu, self.res, self.tail = relu, res, tail

    def forward(self, x):
        y = self.c(x)
        if self.res:
            y = y + x
        if self.relu:
            y = torch.relu(y)
        if self.tail == "pool":
            return torch.nn.functional.max_pool2d(y, 2)
        return self.c2(y)


# cin, cout, k, stride, pad, dil, groups, H, W, relu, residual, tail
SHAPES = [
    (3, 16, 3, 1, 1, 1, 1, 11, 13, True, False, "conv"),     # a stem-like layer, odd sizes
    (8, 8, 3, 1, 1, 1, 1, 9, 9, True, True, "conv"),         # residual add + ReLU
    (16, 16, 1, 1, 0, 1, 1, 7, 5, False, True, "pool"),      # residual without ReLU, then a pool
    (12, 20, 3, 2, 1, 1, 2, 13, 11, True, False, "pool"),    # strided, grouped
    (24, 24, 3, 1, 1, 1, 24, 10, 9, True, False, "conv"),    # depthwise
    (5, 7, 3, 1, 2, 2, 1, 9, 12, True, False, "conv"),       # dilation, padding 2, odd channels
    (6, 10, 5, 3, 0, 1, 1, 17, 14, False, False, "conv"),    # 5x5 stride 3, no padding
]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "c%d-%d_k%d_s%d_p%d_d%d_g%d_%dx%d%s%s_%s" % (
    s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], "_relu" if s[9] else "", "_res" if s[10] else "", s[11]))
def test_pt2e_int8_conv_shapes_match_torch(shape):
    cin, cout, k, st, pad, dil, g, h, w, relu, res, tail = shape
    torch.manual_seed(0)
    m = Block(cin, cout, k, st, pad, dil, g, relu, res, tail)
    calib = [torch.randn(2, cin, h, w) for _ in range(3)]
    qm = _pt2e(m, calib)
    _compile_check(qm, torch.randn(3, cin, h, w), 2 if tail == "conv" else 1)


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(37, 29)
        self.b = torch.nn.Linear(29, 11)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


@pytest.mark.parametrize("kind", ["x86", "xnnpack_channel", "xnnpack_tensor"])
def test_pt2e_int8_linears_match_torch(kind):
    torch.manual_seed(1)
    qm = _pt2e(MLP(), [torch.randn(5, 37) for _ in range(3)], kind)
    _compile_check(qm, torch.randn(7, 37), 2)


def test_int8_activations_stay_8_bit_between_layers():
    """conv -> relu -> conv -> relu -> conv: the first two write u8 (their quantize inside the
    step), no separate quantize/dequantize kernel between them."""
    if not _native_int8():
        pytest.skip("oneDNN int8 convolutions do not load here")
    torch.manual_seed(2)
    m = torch.nn.Sequential(torch.nn.Conv2d(4, 16, 3, padding=1), torch.nn.ReLU(),
                            torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(16, 8, 1))
    qm = _pt2e(m, [torch.randn(2, 4, 12, 12) for _ in range(3)])
    before = torchtrt_c._C.native_cpu()["int8_onednn_calls"]
    gm, ks = _compile_check(qm, torch.randn(2, 4, 12, 12), 3)
    assert torchtrt_c._C.native_cpu()["int8_onednn_calls"] > before
    layers = [k for k in ks if " qconv2d:" in k]
    assert all("quantize_per_tensor" in k for k in layers[:2]), layers
    assert [k for k in ks if " elementwise:" in k] == [ks[0]], ks   # only the input's quantize
    assert "+nhwc-out" in layers[0] and "+nhwc-in" in layers[1], layers


def test_native_off_runs_the_portable_kernels():
    torch.manual_seed(3)
    m = Block(8, 8, 3, 1, 1, 1, 1, True, True, "conv")
    qm = _pt2e(m, [torch.randn(2, 8, 9, 9) for _ in range(3)])
    x = torch.randn(2, 8, 9, 9)
    with settings.override(QUANT_KERNELS="int8", NATIVE_QCONV=False):
        gm = torchtrt_c.compile(qm, inputs=[x], require_full_compilation=True, cache_built_engines=False,
                                reuse_cached_engines=False)
        with torch.no_grad():
            assert float((gm(x) - qm(x)).abs().max() / qm(x).abs().max()) <= 1e-3


def test_torchvision_resnet18_int8_one_engine():
    """torchvision's ResNet-18 (64x64 images) quantized as bench/quant_static.py does: every
    convolution and the classifier an int8 kernel of one engine, no torch segment."""
    from thirdparty import import_torchvision
    tv = import_torchvision()
    from torch.fx.experimental.optimization import fuse
    torch.manual_seed(0)
    model = fuse(tv.models.resnet18(weights=None).eval())
    for n in list(model.graph.nodes):   # one nn.ReLU called twice per block: torch.relu each
        if n.op == "call_module" and isinstance(model.get_submodule(n.target), torch.nn.ReLU):
            with model.graph.inserting_before(n):
                r = model.graph.call_function(torch.relu, n.args)
            n.replace_all_uses_with(r)
            model.graph.erase_node(n)
    model.recompile()
    qm = _pt2e(model, [torch.randn(2, 3, 64, 64) for _ in range(2)])
    x = torch.randn(2, 3, 64, 64)
    with settings.override(QUANT_KERNELS="auto"):
        gm = torchtrt_c.compile(qm, inputs=[x], require_full_compilation=True)
    ks = _kernels(gm)
    assert sum(" qconv2d:" in k for k in ks) == 20 and sum(" qgemm:" in k for k in ks) == 1, ks
    if _native_int8():
        assert all("(native)" in k for k in ks if " qconv2d:" in k or " qgemm:" in k), ks
    with torch.no_grad():
        want, got = qm(x), gm(x)
    assert float((got - want).abs().max() / want.abs().max()) <= 1e-2
    assert bool((got.argmax(1) == want.argmax(1)).all())


class Stem(torch.nn.Module):
    """ResNet's stem: conv -> ReLU -> max pool -> conv. PT2E quantizes after the pool; the
    quantize moves before it (exact: quantize is monotone), so the first convolution writes u8
    and the pool runs on u8 (dynamo/_quant.py, a native 8-bit max pool on the CPU)."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 7, 2, 3)
        self.c2 = torch.nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x):
        return self.c2(torch.nn.functional.max_pool2d(torch.relu(self.c1(x)), 3, 2, 1))


@pytest.mark.parametrize("hw", [(32, 32), (27, 23)])
def test_stem_pools_8_bit_values(hw):
    torch.manual_seed(4)
    qm = _pt2e(Stem(), [torch.randn(2, 3, *hw) for _ in range(3)])
    gm, ks = _compile_check(qm, torch.randn(3, 3, *hw), 2)
    pools = [k for k in ks if " pool:" in k]
    assert len(pools) == 1 and "quantize_per_tensor" in [k for k in ks if " qconv2d:" in k][0], ks
    if _native_int8():
        assert "(native)" in pools[0] and "+nhwc-in" in pools[0], ks
    with settings.override(QUANT_KERNELS="int8", NATIVE_QCONV=False, NATIVE_POOL=False):
        x = torch.randn(2, 3, *hw)
        portable = torchtrt_c.compile(qm, inputs=[x], cache_built_engines=False, reuse_cached_engines=False)
        with torch.no_grad():
            assert float((portable(x) - qm(x)).abs().max() / qm(x).abs().max()) <= 1e-3


class Relu6Block(torch.nn.Module):
    """conv [+ batch norm] + ReLU6 (hardtanh(0, 6)), then a max pool: PT2E leaves the hardtanh
    between the convolution's quantize and one of its own, two clips in the native step's
    post-ops (oneDNN 2.6 ran a second eltwise clip with the first one's bounds: the ReLU6 was
    lost, errors of the size of the outputs)."""

    def __init__(self, cin, cout, groups, bn):
        super().__init__()
        self.c = torch.nn.Conv2d(cin, cout, 3, 1, 1, groups=groups)
        self.bn = torch.nn.BatchNorm2d(cout) if bn else torch.nn.Identity()

    def forward(self, x):
        return torch.nn.functional.max_pool2d(torch.nn.functional.relu6(self.bn(self.c(x))), 2)


@pytest.mark.parametrize("kind", ["xnnpack_channel", "xnnpack_tensor", "x86", "x86_qat"])
@pytest.mark.parametrize("shape", [(8, 16, 1, False, 15, 13), (16, 16, 16, True, 9, 11)],
                         ids=["conv", "depthwise_bn"])
def test_pt2e_relu6_between_quantizes(kind, shape):
    cin, cout, g, bn, h, w = shape
    torch.manual_seed(0)
    m = Relu6Block(cin, cout, g, bn)
    if bn:   # running statistics other than 0 / 1, so the folded batch norm changes the layer
        with torch.no_grad():
            m.bn.running_mean.uniform_(-0.5, 0.5)
            m.bn.running_var.uniform_(0.5, 1.5)
            m.bn.weight.uniform_(0.5, 1.5)
    # inputs scaled so that a part of the outputs lies above 6 and a part below 0
    calib = [8 * torch.randn(2, cin, h, w) for _ in range(3)]
    qm = _pt2e(m, calib, kind)
    x = 8 * torch.randn(3, cin, h, w)
    with torch.no_grad():
        want = qm(x)
    assert float((want == 0).float().mean()) > 0.05   # the ReLU6's lower clip matters
    _compile_check(qm, x, 1)


@pytest.mark.parametrize("name,kind", [("mobilenet_v2", "xnnpack_channel"), ("mobilenet_v2", "xnnpack_tensor"),
                                       ("mobilenet_v2", "x86_qat"), ("squeezenet1_1", "x86"), ("googlenet", "x86")])
def test_torchvision_int8(name, kind):
    """torchvision models, random weights and batch-norm statistics, quantized by PT2E: one
    engine, its convolutions int8 steps, the logits within 2e-2 of torch's largest one.
    MobileNetV2: ReLU6 after every expansion and depthwise convolution, residual adds without
    ReLU (as the module docstring says, a value on a rounding tie moves by one step: with
    XNNPACK's s8 activations 1-6 of some 6000 values a layer do, and the 10 small logits after
    the average pool and the classifier move by 1.3e-2 of their largest; without the clip fix
    0.48). SqueezeNet's Fire modules and GoogLeNet's inception blocks: a torch.cat whose quantize
    is the concatenation kernel's epilogue, read by the next int8 layers (the kernel truncated
    its float values to the stored uint8 before quantizing: 0.93 / 0.11 off; now 0 / 7e-4)."""
    from thirdparty import import_torchvision, randomize_constant_init
    tv = import_torchvision()
    torch.manual_seed(0)
    kw = {"aux_logits": False, "init_weights": True} if name == "googlenet" else {}
    m = randomize_constant_init(getattr(tv.models, name)(num_classes=10, **kw))
    calib = [torch.randn(2, 3, 64, 64) for _ in range(2)]
    qm = _pt2e(m, calib, kind)
    x = torch.randn(1, 3, 64, 64)
    with settings.override(QUANT_KERNELS="int8"):
        gm = torchtrt_c.compile(qm, inputs=[x], require_full_compilation=True)
    ks = _kernels(gm)
    layers = [k for k in ks if " qconv2d:" in k or " qgemm:" in k]
    assert len(layers) >= 20, ks
    if _native_int8():
        assert all("(native)" in k for k in layers), ks
    with torch.no_grad():
        want, got = qm(x), gm(x)
    assert float(want.abs().max()) > 0
    rel = float((got - want).abs().max() / want.abs().max())
    assert rel <= 2e-2, rel
