"""Transposed convolution (aten.convolution with transposed=True; ConvTranspose1d/2d) against torch
eager on random inputs: stride, padding, output_padding, dilation, groups (depthwise included),
bias, odd sizes, dynamic batch, float32 and float16 engines, fused epilogues, and a small decoder
that compiles to one engine.

Tolerances: float32 engines 1e-4 (abs + rel; float accumulation in another order than torch's);
float16 engines 2e-2 abs + 2e-2 rel against the float32 reference (inputs, intermediates and
outputs are stored in half, accumulation is in float)."""
import pytest
import torch
import torch.nn as nn

import torchtrt_c
from convtest import Const, check_op, rand
from zoo import assert_tree_close, submodules


OP = "aten.convolution.default"

# (N, C, OC, H, W, kernel, stride, padding, output_padding, dilation, groups)
CASES_2D = [
    (2, 3, 5, 7, 9, (3, 3), (1, 1), (0, 0), (0, 0), (1, 1), 1),
    (1, 4, 6, 5, 6, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), 1),
    (2, 6, 4, 5, 7, (4, 3), (2, 3), (1, 0), (1, 2), (1, 1), 2),
    (1, 3, 7, 6, 5, (3, 2), (3, 2), (2, 1), (2, 0), (2, 3), 1),
    (3, 8, 8, 4, 5, (3, 3), (2, 1), (1, 1), (0, 0), (1, 2), 8),    # depthwise
    (1, 5, 3, 1, 1, (1, 1), (1, 1), (0, 0), (0, 0), (1, 1), 1),    # 1x1 on 1x1
    (2, 4, 9, 3, 3, (5, 5), (3, 3), (4, 4), (2, 1), (1, 1), 1),    # padding > kernel reach
    (1, 9, 6, 7, 3, (2, 4), (1, 2), (0, 3), (0, 1), (3, 1), 3),
]


def _ref(x, w, b, st, pd, op, dl, g):
    return torch.nn.functional.conv_transpose2d(x, w, b, st, pd, op, g, dl)


@pytest.mark.parametrize("case", CASES_2D, ids=[f"c{i}" for i in range(len(CASES_2D))])
@pytest.mark.parametrize("bias", [True, False])
def test_conv_transpose2d_fp32(case, bias):
    n, c, oc, h, w, k, st, pd, op, dl, g = case
    x = rand(n, c, h, w, seed=1)
    wt = rand(c, oc // g, *k, seed=2) * 0.5
    b = rand(wt.shape[1] * g, seed=3) if bias else None
    args = [x, Const(wt), Const(b) if bias else None, list(st), list(pd), list(dl), True, list(op), g]
    check_op(OP, args, tol=1e-4, ref=lambda x_, w_, b_, *_: _ref(x_, w_, b_, st, pd, op, dl, g))


@pytest.mark.parametrize("case", CASES_2D[:4], ids=[f"c{i}" for i in range(4)])
def test_conv_transpose2d_fp16(case):
    n, c, oc, h, w, k, st, pd, op, dl, g = case
    x = rand(n, c, h, w, seed=4)
    wt = rand(c, oc // g, *k, seed=5) * 0.3
    b = rand(wt.shape[1] * g, seed=6)
    args = [x, Const(wt), Const(b), list(st), list(pd), list(dl), True, list(op), g]
    check_op(OP, args, tol=2e-2, precision="fp16", ref=lambda x_, w_, b_, *_: _ref(x_, w_, b_, st, pd, op, dl, g))


@pytest.mark.parametrize("st,pd,op,dl,g", [(1, 0, 0, 1, 1), (2, 1, 1, 1, 1), (3, 2, 2, 2, 2), (2, 0, 1, 3, 4)])
def test_conv_transpose1d(st, pd, op, dl, g):
    x = rand(2, 4, 11, seed=7)
    wt = rand(4, 3, 3, seed=8)
    b = rand(wt.shape[1] * g, seed=9)
    ref = lambda x_, w_, b_, *_: torch.nn.functional.conv_transpose1d(x_, w_, b_, st, pd, op, g, dl)  # noqa: E731
    check_op(OP, [x, Const(wt), Const(b), [st], [pd], [dl], True, [op], g], tol=1e-4, ref=ref)


def test_conv_transpose2d_dynamic_batch():
    x = rand(3, 4, 5, 6, seed=10)
    wt = rand(4, 3, 3, 3, seed=11)
    b = rand(3, seed=12)
    ref = lambda x_, w_, b_, *_: _ref(x_, w_, b_, (2, 2), (1, 1), (1, 1), (1, 1), 1)  # noqa: E731
    check_op(OP, [x, Const(wt), Const(b), [2, 2], [1, 1], [1, 1], True, [1, 1], 1], tol=1e-4, ref=ref,
             dynamic=(1, 3, 8))


def test_bad_output_padding_is_a_clear_error():
    # torch requires output_padding < stride or dilation; the converter says which node
    x = rand(1, 2, 4, 4, seed=13)
    wt = rand(2, 2, 3, 3, seed=14)
    out = torch.empty(1, 2, 12, 12)
    from convtest import build
    with pytest.raises(Exception, match="output_padding"):
        build(OP, [x, Const(wt), None, [2, 2], [0, 0], [1, 1], True, [3, 3], 1], [out])


class Decoder(nn.Module):
    """A small image decoder: upsampling by transposed convolutions with BN, activations and a
    skip connection, ending in a sigmoid."""

    def __init__(self):
        super().__init__()
        self.up1 = nn.ConvTranspose2d(8, 6, 4, stride=2, padding=1)
        self.bn1 = nn.BatchNorm2d(6)
        self.up2 = nn.ConvTranspose2d(6, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.skip = nn.Upsample(scale_factor=2, mode="nearest")
        self.conv = nn.Conv2d(6, 6, 3, padding=1)
        self.up3 = nn.ConvTranspose2d(6, 3, 3, stride=1, padding=1, dilation=1, bias=False)
        self.line = nn.ConvTranspose1d(3, 2, 5, stride=3, padding=1, output_padding=2)

    def forward(self, z):
        y = torch.relu(self.bn1(self.up1(z)))
        y = torch.nn.functional.silu(self.up2(y)) + self.skip(y)
        y = torch.sigmoid(self.up3(torch.relu(self.conv(y))))
        return y, self.line(y.flatten(2)[:, :, :17])


def _decoder():
    torch.manual_seed(0)
    m = Decoder().eval()
    with torch.no_grad():
        m.bn1.running_mean.uniform_(-0.5, 0.5)
        m.bn1.running_var.uniform_(0.5, 1.5)
    return m


@pytest.mark.model
def test_decoder_is_one_engine_and_matches_eager():
    m = _decoder()
    z = torch.randn(2, 8, 5, 7)
    trt = torchtrt_c.compile(m, inputs=[z], require_full_compilation=True, min_block_size=1)
    assert submodules(trt, "_run_on_acc_") == ["_run_on_acc_0"], list(trt.named_children())
    assert submodules(trt, "_run_on_gpu_") == []
    with torch.no_grad():
        want = m(z)
    assert_tree_close(trt(z), want, atol=1e-4, rtol=1e-4)


@pytest.mark.model
def test_decoder_dynamic_batch_and_fp16():
    m = _decoder()
    z = torch.randn(3, 8, 5, 7)
    inp = torchtrt_c.Input(min_shape=(1, 8, 5, 7), opt_shape=(3, 8, 5, 7), max_shape=(6, 8, 5, 7))
    trt = torchtrt_c.compile(m, inputs=[inp], require_full_compilation=True, min_block_size=1)
    half = torchtrt_c.compile(m, inputs=[z], require_full_compilation=True, min_block_size=1,
                              enabled_precisions={torch.float16})
    for b in (1, 6):
        zb = torch.randn(b, 8, 5, 7)
        with torch.no_grad():
            want = m(zb)
        assert_tree_close(trt(zb), want, atol=1e-4, rtol=1e-4)
    with torch.no_grad():
        want = m(z)
    assert_tree_close(half(z), want, atol=2e-2, rtol=2e-2)


def test_epilogue_fuses_into_the_transposed_conv():
    # bias + relu + a residual add become the transposed convolution's epilogue: one kernel
    import numpy as np
    import torchtrt_c._C as C
    x, w, b = rand(2, 4, 5, 5, seed=15), rand(4, 3, 3, 3, seed=16) * 0.4, rand(3, seed=17)
    res = rand(2, 3, 9, 9, seed=18)
    g = C.Graph()
    xi = g.add_input("x", ("tensor", "float32", [2, 4, 5, 5]))
    ri = g.add_input("r", ("tensor", "float32", [2, 3, 9, 9]))
    wc = g.add_tensor_constant("w", "float32", [4, 3, 3, 3], w.numpy())
    bc = g.add_tensor_constant("b", "float32", [3], b.numpy())
    L = lambda v: g.add_constant(v)  # noqa: E731
    t = ("tensor", "float32", [2, 3, 9, 9])
    (c,) = g.add_node(OP, [xi, wc, bc, L([2, 2]), L([1, 1]), L([1, 1]), L(True), L([0, 0]), L(1)], [t])
    (r,) = g.add_node("aten.relu.default", [c], [t])
    (y,) = g.add_node("aten.add.Tensor", [r, ri, L(1)], [t])
    g.set_outputs([y])
    e = C.Engine.build(g, cache_dir="")
    info = e.info()
    assert info["n_kernels"] == 1 and "conv_transpose" in info["kernels"][0], info["kernels"]
    out = np.empty((2, 3, 9, 9), np.float32)
    e.execute([x.numpy(), res.numpy()], [out])
    ref = torch.relu(torch.nn.functional.conv_transpose2d(x, w, b, stride=2, padding=1)) + res
    np.testing.assert_allclose(out, ref.numpy(), rtol=1e-4, atol=1e-4)
