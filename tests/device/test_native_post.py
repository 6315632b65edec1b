"""Bias and activations as oneDNN post-ops of native convolutions (backend/cpu/native_post.c) against
torch eager. Each case is built with the post-ops (the default: kernel descriptions end in
"+post") and with TORCHTRT_C_NATIVE_POST=0 (bias + activation in C or an OpenCL kernel after
the call, read when the engine is built) and with TORCHTRT_C_NATIVE_POST_HSWISH=0 (hardswish in C
after the bias post-op), and run once more with TORCHTRT_C_NATIVE_CONV=blas at
execution (im2col + OpenBLAS, the post-ops applied in C: the path taken where oneDNN refuses a
shape). Cases: every activation the plan maps (relu, ReLU6/hardtanh, clamp, SiLU, sigmoid,
hardswish, hardsigmoid, tanh; GELU is decomposed before import), with and without bias, plain, depthwise and 1x1 on
a 1x1 image (squeeze-excite), a residual after the activation and before it (the rest of the
epilogue in C), odd sizes, batch > 1, and a shape oneDNN refuses (negative bottom padding).
Tolerance: fp32 atol = rtol = 1e-4 (operands scaled for O(1) outputs)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import torchtrt_c._C as C
from convtest import rand
from torchtrt_c import settings

ACTS = {
    "none": (None, lambda y: y),
    "relu": (("aten.relu.default", []), torch.relu),
    "relu6": (("aten.hardtanh.default", [0.0, 6.0]), lambda y: F.hardtanh(y, 0.0, 6.0)),
    "clamp": (("aten.clamp.default", [-0.5, 0.7]), lambda y: torch.clamp(y, -0.5, 0.7)),
    "silu": (("aten.silu.default", []), F.silu),
    "sigmoid": (("aten.sigmoid.default", []), torch.sigmoid),
    "hardswish": (("aten.hardswish.default", []), F.hardswish),
    "hardsigmoid": (("aten.hardsigmoid.default", []), F.hardsigmoid),
    "tanh": (("aten.tanh.default", []), torch.tanh),
}

# (x shape, out channels, kernel, stride, padding, groups)
SHAPES = {
    "3x3": ((1, 5, 9, 11), 7, 3, 1, 1, 1),
    "dw5s2": ((2, 12, 13, 9), 12, 5, 2, 2, 12),
    "se1x1": ((1, 10, 1, 1), 3, 1, 1, 0, 1),
    "refused": ((1, 4, 10, 10), 6, 3, 2, 0, 1),   # oneDNN: bottom padding -1 -> im2col + BLAS
}


@pytest.fixture(autouse=True)
def plain_env(monkeypatch):
    for v in ("TORCHTRT_C_KERNELS", "TORCHTRT_C_NATIVE", "TORCHTRT_C_NATIVE_CONV", "TORCHTRT_C_NATIVE_EPI",
              "TORCHTRT_C_NATIVE_POST", "TORCHTRT_C_NATIVE_POST_HSWISH"):
        monkeypatch.delenv(v, raising=False)


def T(shape):
    return ("tensor", "float32", list(shape))


def conv_graph(x, w, b, stride, pad, groups, ref_shape, act, residual=None, res_before_act=False):
    g = C.Graph()
    xi = g.add_input("x", T(x.shape))
    ri = g.add_input("r", T(residual.shape)) if residual is not None else None
    L = g.add_constant
    ot = T(ref_shape)
    wc = g.add_tensor_constant("w", "float32", list(w.shape), w.contiguous().numpy())
    bc = g.add_tensor_constant("b", "float32", list(b.shape), b.contiguous().numpy()) if b is not None else L(None)
    (y,) = g.add_node("aten.convolution.default", [xi, wc, bc, L([stride] * 2), L([pad] * 2), L([1, 1]), L(False),
                                                    L([0, 0]), L(groups)], [ot])
    if ri is not None and res_before_act:
        (y,) = g.add_node("aten.add.Tensor", [y, ri, L(1)], [ot])
    if ACTS[act][0]:
        op, extra = ACTS[act][0]
        (y,) = g.add_node(op, [y] + [L(v) for v in extra], [ot])
    if ri is not None and not res_before_act:
        (y,) = g.add_node("aten.add.Tensor", [y, ri, L(1)], [ot])
    g.set_outputs([y])
    return g


def check(shape, act, monkeypatch, bias=True, residual=False, res_before_act=False):
    xs, oc, k, s, p, gr = shape
    x = rand(*xs, seed=1)
    w = rand(oc, xs[1] // gr, k, k, seed=2) / (xs[1] // gr * k * k) ** 0.5
    b = rand(oc, seed=3) if bias else None
    with torch.no_grad():
        y = F.conv2d(x, w, b, s, p, 1, gr)
        r = rand(*y.shape, seed=4) if residual else None
        if r is not None and res_before_act:
            y = y + r
        y = ACTS[act][1](y)
        ref = y + r if r is not None and not res_before_act else y
    inputs = [x.numpy()] + ([r.contiguous().numpy()] if r is not None else [])
    native = C.native_cpu()
    dnnl = native["available"] and native.get("conv") == "onednn"
    for post, hswish in (("1", "1"), ("1", "0"), ("0", "1")):
        settings.set(NATIVE_POST=post)
        settings.set(NATIVE_POST_HSWISH=hswish)
        e = C.Engine.build(conv_graph(x, w, b, s, p, gr, ref.shape, act, r, res_before_act), name="post", cache_dir="")
        ks = e.info()["kernels"]
        conv = [kd for kd in ks if "conv2d" in kd]
        # ReLU/clamp/hardsigmoid stay in C (oneDNN turns NaN into the bound): only the bias is
        # a post-op then; hardswish is one unless NATIVE_POST_HSWISH=0
        fused = act in ("silu", "sigmoid", "tanh") or bias or (act == "hardswish" and hswish == "1")
        if dnnl and act != "none" or (dnnl and bias):
            assert len(conv) == 1 and ("+post" in conv[0]) == (post == "1" and fused), ks
            if post == "1":
                assert not any("+cl-epilogue" in kd for kd in ks), ks
        for conv_lib in ("dnnl", "blas"):
            settings.set(NATIVE_CONV=conv_lib)
            out = np.full(tuple(ref.shape), np.nan, np.float32)
            e.execute(inputs, [out])
            err = np.abs(out - ref.numpy())
            lim = 1e-4 + 1e-4 * np.abs(ref.numpy())
            assert (err <= lim).all(), (f"NATIVE_POST={post} HSWISH={hswish} NATIVE_CONV={conv_lib} {act}: max abs error "
                                        f"{err.max()} at {np.unravel_index(err.argmax(), err.shape)}")
        settings.set(NATIVE_CONV=None)


@pytest.mark.parametrize("act", list(ACTS))
@pytest.mark.parametrize("shape", ["3x3", "dw5s2"])
def test_conv_activation(shape, act, monkeypatch):
    check(SHAPES[shape], act, monkeypatch)


@pytest.mark.parametrize("act", ["silu", "sigmoid", "hardsigmoid", "relu"])
def test_squeeze_excite_1x1(act, monkeypatch):
    check(SHAPES["se1x1"], act, monkeypatch)


@pytest.mark.parametrize("act", ["none", "silu", "relu6", "hardswish"])
def test_no_bias(act, monkeypatch):
    check(SHAPES["3x3"], act, monkeypatch, bias=False)


@pytest.mark.parametrize("act", ["relu", "hardswish"])
@pytest.mark.parametrize("before", [False, True])
def test_residual(act, before, monkeypatch):
    """act then + residual (post-ops, the add in C), and + residual then act (bias only)."""
    check(SHAPES["dw5s2"], act, monkeypatch, residual=True, res_before_act=before)


@pytest.mark.parametrize("act", ["silu", "relu6"])
def test_refused_shape(act, monkeypatch):
    check(SHAPES["refused"], act, monkeypatch)


@pytest.mark.parametrize("act", ["relu", "relu6", "hardswish", "hardsigmoid", "silu", "sigmoid"])
def test_nan_pixel_kept(act, monkeypatch):
    """A NaN input pixel gives NaN wherever torch gives NaN, with post-ops on (through oneDNN
    where it is available, BLAS otherwise): oneDNN's ReLU/clip kernels would turn it into 0."""
    settings.set(NATIVE_POST="1")
    xs, oc, k, s, p, gr = SHAPES["3x3"]
    x = rand(*xs, seed=1)
    x[0, 0, 1, 2] = float("nan")
    w = rand(oc, xs[1] // gr, k, k, seed=2)
    b = rand(oc, seed=3)
    with torch.no_grad():
        ref = ACTS[act][1](F.conv2d(x, w, b, s, p, 1, gr))
    e = C.Engine.build(conv_graph(x, w, b, s, p, gr, ref.shape, act, None, False), name="nan", cache_dir="")
    out = np.zeros(tuple(ref.shape), np.float32)
    e.execute([x.numpy()], [out])
    want = np.isnan(ref.numpy())
    assert want.any()
    assert (np.isnan(out) == want).all(), f"{act}: NaN at {int(np.isnan(out).sum())} places, torch {int(want.sum())}"
    assert np.allclose(out[~want], ref.numpy()[~want], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("act", ["hardswish", "silu", "relu"])
def test_infinite_pixel(act, monkeypatch):
    """An infinite input pixel gives +-inf and NaN (inf - inf) in the convolution's output; the
    activation as a post-op keeps torch's NaN / +inf / -inf positions (hardswish(-inf) is NaN,
    hardswish(inf) inf) and its finite values."""
    settings.set(NATIVE_POST="1")
    xs, oc, k, s, p, gr = SHAPES["3x3"]
    x = rand(*xs, seed=5)
    x[0, 1, 2, 3] = float("inf")
    x[-1, 0, 4, 1] = -float("inf")
    w = rand(oc, xs[1] // gr, k, k, seed=6)
    b = rand(oc, seed=7)
    with torch.no_grad():
        ref = ACTS[act][1](F.conv2d(x, w, b, s, p, 1, gr)).numpy()
    e = C.Engine.build(conv_graph(x, w, b, s, p, gr, ref.shape, act, None, False), name="inf", cache_dir="")
    out = np.zeros(ref.shape, np.float32)
    e.execute([x.numpy()], [out])
    for what, f in (("NaN", np.isnan), ("+inf", np.isposinf), ("-inf", np.isneginf)):
        assert (f(out) == f(ref)).all(), f"{act}: {what} at {int(f(out).sum())} places, torch {int(f(ref).sum())}"
    fin = np.isfinite(ref)
    assert np.isnan(ref).any() and np.isinf(ref).any() or act == "relu"
    assert np.allclose(out[fin], ref[fin], rtol=1e-4, atol=1e-4)
