"""RMS norm (x * rsqrt(mean(x^2, -1) + eps) * w, as Llama writes it) against torch eager: the
lowering pass fuse_rms_norm makes it one aten.rms_norm, converted to a norm op that runs as a
native call (backend/cpu/native_norm.c) where the device runs native kernels, else as the OpenCL
norm kernel (TORCHTRT_C_NATIVE_NORM=0 and, for rank 4, TORCHTRT_C_NATIVE_EW=0; TORCHTRT_C_KERNELS=gpu: the work-group and warp
kernels). Odd widths 1/7/769, ranks 2-4, several eps, with and without weight; the HF
LlamaRMSNorm module through torchtrt_c.compile. Tolerance: fp32 rtol 1e-5 (atol 1e-6)."""
import copy

import numpy as np
import pytest
import torch

import torchtrt_c
import torchtrt_c._C as C
from convtest import rand

RTOL, ATOL = 1e-5, 1e-6


@pytest.fixture(autouse=True)
def plain_env(monkeypatch):
    for v in ("TORCHTRT_C_KERNELS", "TORCHTRT_C_NATIVE", "TORCHTRT_C_NATIVE_NORM", "TORCHTRT_C_NATIVE_EW",
              "TORCHTRT_C_STEP_THREADS"):
        monkeypatch.delenv(v, raising=False)


def T(shape):
    return ("tensor", "float32", list(shape))


def check(out, ref, what):
    ref = ref.numpy()
    err = np.abs(out - ref)
    lim = ATOL + RTOL * np.abs(ref)
    assert (err <= lim).all(), (f"{what}: max abs error {err.max():.3g} (rel {(err / (np.abs(ref) + 1e-30)).max():.3g})"
                                f" at {np.unravel_index((err - lim).argmax(), err.shape)}")


def build_graph(shape, eps, weight, square="pow"):
    """The decomposed RMS norm as transformers' LlamaRMSNorm exports it."""
    g = C.Graph()
    x = g.add_input("x", T(shape))
    L = g.add_constant
    if square == "pow":
        (p,) = g.add_node("aten.pow.Tensor_Scalar", [x, L(2)], [T(shape)])
    else:
        (p,) = g.add_node("aten.mul.Tensor", [x, x], [T(shape)])
    red = tuple(shape[:-1]) + (1,)
    (m,) = g.add_node("aten.mean.dim", [p, L([-1]), L(True), L(None)], [T(red)])
    (a,) = g.add_node("aten.add.Tensor", [m, L(eps), L(1)], [T(red)])
    (r,) = g.add_node("aten.rsqrt.default", [a], [T(red)])
    (y,) = g.add_node("aten.mul.Tensor", [x, r], [T(shape)])
    if weight is not None:
        w = g.add_tensor_constant("w", "float32", list(weight.shape), weight.contiguous().numpy())
        (y,) = g.add_node("aten.mul.Tensor", [w, y], [T(shape)])
    g.set_outputs([y])
    return g


def ref_rms(x, eps, w):
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return y if w is None else w * y


def run_graph(g, x):
    g.lower()
    assert "aten.rms_norm.default" in [n["op"] for n in g.nodes()]
    e = C.Engine.build(g, name="rms", cache_dir="")
    ks = e.info()["kernels"]
    out = np.full(tuple(x.shape), np.nan, np.float32)
    e.execute([x.contiguous().numpy()], [out])
    return out, ks


MODES = {"native": {}, "opencl": {"TORCHTRT_C_NATIVE_NORM": "0", "TORCHTRT_C_NATIVE_EW": "0"}, "gpu-kernels": {"TORCHTRT_C_KERNELS": "gpu"}}


@pytest.mark.parametrize("shape,eps", [((5, 1), 1e-6), ((3, 7), 1e-5), ((2, 3, 769), 1e-6), ((2, 2, 3, 7), 0.1),
                                       ((4, 769), 0.0)])
@pytest.mark.parametrize("mode", list(MODES))
def test_rms_norm_formula(shape, eps, mode, monkeypatch):
    for k, v in MODES[mode].items():
        monkeypatch.setenv(k, v)
    x = rand(*shape, seed=len(shape)) * 3.0 + 0.5
    w = rand(shape[-1], seed=7)
    for weight in (w, None):
        out, ks = run_graph(build_graph(shape, eps, weight, "pow" if weight is not None else "mul"), x)
        norms = [k for k in ks if " norm:" in k]
        assert len(norms) == 1 and len(ks) == 1, ks
        native = C.native_cpu()["available"] and mode == "native"
        assert ("(native)" in norms[0]) == native, (mode, ks)
        check(out, ref_rms(x, eps, weight), f"{mode} {shape} eps={eps} weight={weight is not None}")


def test_rms_norm_large_values():
    """Rows far from 0 and wide in range: the mean square in float keeps 1e-5."""
    x = rand(6, 769, seed=3) * 1e3 + 2e3
    out, _ = run_graph(build_graph((6, 769), 1e-6, None), x)
    check(out, ref_rms(x, 1e-6, None), "large values")


@pytest.mark.parametrize("shape", [(2, 9, 7), (1, 5, 769)])
def test_hf_llama_rms_norm(shape, monkeypatch):
    T_ = pytest.importorskip("transformers.models.llama.modeling_llama")
    torch.manual_seed(0)
    m = T_.LlamaRMSNorm(shape[-1], eps=1e-6).eval()
    with torch.no_grad():
        m.weight.copy_(torch.rand(shape[-1]) + 0.5)
    x = rand(*shape, seed=11) * 2.0
    with torch.inference_mode():
        ref = m(x)
        trt = torchtrt_c.compile(copy.deepcopy(m), inputs=[x], min_block_size=1)
        out = trt(x)
    ems = [mm for mm in trt.modules() if hasattr(mm, "engine_meta")]
    assert len(ems) == 1
    ks = C.Engine.deserialize(bytes(ems[0].engine.numpy()), cache_dir="").info()["kernels"]
    assert len(ks) == 1 and " norm:" in ks[0], ks
    if C.native_cpu()["available"]:
        assert "(native)" in ks[0], ks
    check(out.numpy(), ref, f"LlamaRMSNorm {shape}")
