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


def _pt2e(model, calib):
    pytest.importorskip("torchao")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
        from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (
            X86InductorQuantizer, get_default_x86_inductor_quantization_config)
    q = X86InductorQuantizer()
    q.set_global(get_default_x86_inductor_quantization_config())
    dyn = ({0: torch.export.Dim("batch", max=64)},)
    gm = torch.export.export(model.eval(), (calib[0],), dynamic_shapes=dyn).module()
    p = prepare_pt2e(gm, q)
    with torch.no_grad():
        for x in calib:
            p(x)
    return convert_pt2e(p)


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


def test_pt2e_int8_linears_match_torch():
    torch.manual_seed(1)
    qm = _pt2e(MLP(), [torch.randn(5, 37) for _ in range(3)])
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
