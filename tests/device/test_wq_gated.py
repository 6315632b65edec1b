"""A gated MLP's act(gate) * up folded into the weight-only quantized gate/up GEMV (issue 35;
kir/fuse.c fuse_gated_wq, codegen/codegen_wq.c p.wq.glu): with the GPU kernel families
(TORCHTRT_C_KERNELS=gpu, run by PoCL here) and the parallel linears joined
(TORCHTRT_C_FUSE_PARALLEL_LINEAR=1, as compile_llm's step has it), down(act(gate(x)) * up(x))
is two kernels, the joined GEMV writing act(gate) * up itself; no elementwise kernel is left.

Differential against torch on the dequantized weights (quantize=) or on the torchao-quantized
model itself: odd sizes (K 96, I 200; K 40, whose rows take the GEMV's scalar loop), M 1, 3, 8, 13
and a [2, 3, K] input, SiLU / GELU / GELU-tanh, the gate as the first or the second half, the
K splits 1, 2, 4 (TORCHTRT_C_WQ_SPLIT) and the tensor-core form (TORCHTRT_C_WQ_MMA=1, fp16).
Tolerances: float32 1e-4 of the output's scale (as test_wq_linear's quantize= test; the fused
kernel computes the activation on the float sums where the unfused one rounds nothing either),
float16 2e-2 (test_wq_linear's fp16 tolerance). Where the pattern does not hold exactly (the
product read elsewhere too, an add instead of the product, the portable kernels) nothing is
fused and the results are the same; TORCHTRT_C_WQ_GLU=0 turns the fusion off (A/B runs)."""
import pytest
import torch

import torchtrt_c
import torchtrt_c._C as C
from torchtrt_c.dynamo._weight_only import dequantize, quantize_int4, quantize_int8

from engine_kernels import kernels  # noqa: E402

F = torch.nn.functional
ACTS = {"silu": F.silu, "gelu": F.gelu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh")}


@pytest.fixture(autouse=True)
def gpu_env(monkeypatch):
    for v in ("TORCHTRT_C_NATIVE", "TORCHTRT_C_WQ_SPLIT", "TORCHTRT_C_WQ_MMA", "TORCHTRT_C_WQ_GLU"):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")
    monkeypatch.setenv("TORCHTRT_C_FUSE_PARALLEL_LINEAR", "1")


class GatedMLP(torch.nn.Module):
    def __init__(self, K, I, act="silu", up_first=False, extra=None, norm=False):
        super().__init__()
        self.norm = None
        if norm:   # an RMS norm before (a decoder layer's post-attention norm: rms_into_wq too)
            self.norm = torch.nn.RMSNorm(K, eps=1e-5)
            with torch.no_grad():
                self.norm.weight.copy_(torch.rand(K, generator=torch.Generator().manual_seed(9)) + 0.5)
        self.gate = torch.nn.Linear(K, I, bias=False)
        self.up = torch.nn.Linear(K, I, bias=False)
        self.down = torch.nn.Linear(I, K, bias=False)
        self.act, self.up_first, self.extra = act, up_first, extra

    def forward(self, x):
        if self.norm is not None:
            x = self.norm(x)
        if self.up_first:   # the up projection first: the gate is the second half of the joined one
            u = self.up(x)
            g = self.gate(x)
        else:
            g = self.gate(x)
            u = self.up(x)
        if self.extra == "add":   # not a product: stays an elementwise kernel
            return self.down(ACTS[self.act](g) + u)
        h = self.down(ACTS[self.act](g) * u)
        return (h, g) if self.extra == "gate_out" else h   # the gate read elsewhere too


def source(trt):
    return "".join(C.Engine.deserialize(bytes(mod.engine.numpy()), cache_dir="").info()["source"]
                   for name, mod in trt.named_children() if name.startswith("_run_on_acc"))


def dequantized(lin, qz, group):
    w = lin.weight.detach().float()
    if qz == "int8_weight_only":
        q, s = quantize_int8(w)
        return dequantize(q, s, None, w.shape[1], 8)
    q, s, z = quantize_int4(w, group)
    return dequantize(q, s, z, group, 4)


def reference(m, x, qz, group):
    g, u, d = (dequantized(lin, qz, group) for lin in (m.gate, m.up, m.down))
    xf = x.float()
    if m.norm is not None:
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + m.norm.eps) * m.norm.weight.float()
    h = ACTS[m.act](F.linear(xf, g))
    h = h + F.linear(xf, u) if m.extra == "add" else h * F.linear(xf, u)
    y = F.linear(h, d)
    return (y, F.linear(xf, g)) if m.extra == "gate_out" else y


def close(y, ref, tol):
    scale = ref.abs().max().item() + 1e-6
    err = (y.float() - ref.float()).abs().max().item() / scale
    assert err <= tol, (err, tol)


def fused(ks):
    """whether the gated product runs inside a wq_linear kernel, no elementwise kernel left"""
    return (any(" wq_linear:" in k and "mul" in k for k in ks) and not any(" elementwise:" in k for k in ks)
            and sum(" wq_linear:" in k for k in ks) == 2)


def compile_mlp(m, x, qz, group, dtype=torch.float32):
    return torchtrt_c.compile(m.to(dtype), inputs=[x.to(dtype)], min_block_size=1, quantize=qz,
                              quantize_group_size=group, enabled_precisions={dtype})


@pytest.mark.parametrize("qz", ["int8_weight_only", "int4_weight_only"])
@pytest.mark.parametrize("M", [1, 3, 8, 13, (2, 3)])
@pytest.mark.parametrize("act,up_first", [("silu", False), ("gelu", True), ("gelu_tanh", False)])
def test_gated_mlp_quantize(qz, M, act, up_first, monkeypatch):
    """quantize= on a gated MLP (K 96, I 200): one gate/up GEMV writing act(gate) * up, then down;
    equal to torch on the dequantized weights within 1e-4 of the output's scale, and within 1e-6
    to the unfused engine (TORCHTRT_C_WQ_GLU=0: the same sums, stored between the kernels)."""
    torch.manual_seed(1)
    K, I, group = 96, 200, 8
    m = GatedMLP(K, I, act, up_first).eval()
    x = torch.randn(*(M if isinstance(M, tuple) else (M,)), K)
    trt = compile_mlp(m, x, qz, group)
    ks = kernels(trt)
    assert fused(ks), ks
    monkeypatch.setenv("TORCHTRT_C_WQ_GLU", "0")
    unfused = compile_mlp(m, x, qz, group)
    assert not fused(kernels(unfused)), kernels(unfused)
    with torch.no_grad():
        y = trt(x)
        close(y, reference(m, x, qz, group), 1e-4)
        close(y, unfused(x), 1e-6)


@pytest.mark.parametrize("split", ["1", "2", "4"])
@pytest.mark.parametrize("qz,K", [("int8_weight_only", 40), ("int8_weight_only", 512), ("int4_weight_only", 512)])
def test_gated_mlp_split_k(qz, K, split, monkeypatch):
    """Each split of a row's K between 1, 2 or 4 warps (4, 8 or 16 rows a work-group, half of them
    gate rows), on the 16-byte loads (K 512) and the scalar loop (K 40: 40 bytes a row); M 3 and 9
    (two chunks of x's rows)."""
    monkeypatch.setenv("TORCHTRT_C_WQ_SPLIT", split)
    torch.manual_seed(2)
    I, group = 200, 8
    m = GatedMLP(K, I).eval()
    for M in (3, 9):
        x = torch.randn(M, K)
        trt = compile_mlp(m, x, qz, group)
        assert fused(kernels(trt)), kernels(trt)
        assert f"ws = w % {split};" in source(trt)
        with torch.no_grad():
            close(trt(x), reference(m, x, qz, group), 1e-4)


@pytest.mark.parametrize("qz", ["int8_weight_only", "int4_weight_only"])
@pytest.mark.parametrize("M", [1, 3, 13])
def test_gated_mlp_fp16(qz, M):
    """fp16 activations (the GEMV's vector loads of x): 2e-2 of the output's scale."""
    torch.manual_seed(3)
    K, I, group = 96, 200, 8
    m = GatedMLP(K, I, "silu").eval().half()   # quantized from the half weights, as compile does
    x = torch.randn(M, K)
    ref = reference(m, x, qz, group)
    trt = compile_mlp(m, x, qz, group, torch.float16)
    assert fused(kernels(trt)), kernels(trt)
    with torch.no_grad():
        y = trt(x.half())
    assert y.dtype == torch.float16
    close(y, ref, 2e-2)


@pytest.mark.parametrize("qz", ["int8_weight_only", "int4_weight_only"])
@pytest.mark.parametrize("M,act,mode", [(1, "silu", "1"), (3, "gelu_tanh", "1"), (9, "silu", "1"),
                                        (3, "silu", "auto"), (13, "gelu_tanh", "auto"), (70, "silu", "auto")])
def test_gated_mlp_mma_form(qz, M, act, mode, monkeypatch):
    """The tensor-core form (TORCHTRT_C_WQ_MMA=1, fp16, K and groups multiples of 64; the PTX
    prelude's emulation here): its rows g are gate columns, rows g + 8 the same up columns;
    =auto: the gated GEMV's kernel with the tensor-core branch for more than 8 rows of x (M 13,
    70; M 3 the GEMV branch). I 200 for int8 (the last group of 8 columns partly past I), 192 for
    int4. 2e-2 of the output's scale."""
    monkeypatch.setenv("TORCHTRT_C_WQ_MMA", mode)
    torch.manual_seed(4)
    K, group = 128, 64
    I = 200 if qz == "int8_weight_only" else 192   # int4: down's K (I) in groups of 64
    m = GatedMLP(K, I, act).eval().half()
    x = torch.randn(M, K)
    ref = reference(m, x, qz, group)
    trt = compile_mlp(m, x, qz, group, torch.float16)
    assert fused(kernels(trt)), kernels(trt)
    src = source(trt)
    assert f"bool va = c0 + g < {I}, vb = va" in src
    assert ("if (WQ_OK(c0)) {" in src) == (mode == "auto")
    with torch.no_grad():
        close(trt(x.half()), ref, 2e-2)


@pytest.mark.parametrize("qz", ["int8_weight_only", "int4_weight_only"])
@pytest.mark.parametrize("K,M,split,mma", [(96, 1, None, None), (96, 13, "2", None), (40, 3, None, None),
                                           (512, 8, "4", None), (128, 3, None, "1"), (128, 13, None, "auto")])
def test_gated_mlp_rms_norm(qz, K, M, split, mma, monkeypatch):
    """An RMS norm before the gated MLP: the gate/up GEMV takes the norm too (rms_into_wq) and
    scales gate and up by the row's rsqrt(mean + eps) before the activation: no norm kernel,
    no elementwise one. GEMV (splits, the scalar loop at K 40) and the tensor-core form (fp16,
    =1 and =auto's branch); fp32 1e-4, fp16 2e-2 of the output's scale against torch."""
    if split:
        monkeypatch.setenv("TORCHTRT_C_WQ_SPLIT", split)
    if mma:
        monkeypatch.setenv("TORCHTRT_C_WQ_MMA", mma)
    torch.manual_seed(7)
    I, group = (200, 8) if not mma else (200 if qz == "int8_weight_only" else 192, 64)
    dtype = torch.float16 if mma else torch.float32
    m = GatedMLP(K, I, norm=True).eval().to(dtype)
    x = torch.randn(M, K)
    ref = reference(m, x, qz, group)
    trt = compile_mlp(m, x, qz, group, dtype)
    ks = kernels(trt)
    assert fused(ks) and not any(" norm:" in k for k in ks), ks
    if mma:
        assert f"bool va = c0 + g < {I}, vb = va" in source(trt)
    with torch.no_grad():
        close(trt(x.to(dtype)), ref, 2e-2 if mma else 1e-4)


@pytest.mark.parametrize("case", ["gate_out", "add", "portable", "off"])
def test_gated_pattern_not_matched(case, monkeypatch, ocl_device):
    """No fusion where the pattern does not hold: the gate also an output of the graph (the
    joined result read by another kernel), act(gate) + up, the portable kernels
    (TORCHTRT_C_KERNELS unset, TORCHTRT_C_NATIVE=0: no GEMV; a GPU device always takes the GPU
    families); nor with TORCHTRT_C_WQ_GLU=0. The results are torch's."""
    if case == "portable" and ocl_device["type"] == "gpu":
        pytest.skip("a GPU device takes the GPU kernel families whatever TORCHTRT_C_KERNELS says")
    if case == "portable":
        monkeypatch.delenv("TORCHTRT_C_KERNELS")
        monkeypatch.setenv("TORCHTRT_C_NATIVE", "0")
    if case == "off":
        monkeypatch.setenv("TORCHTRT_C_WQ_GLU", "0")
    torch.manual_seed(5)
    K, I, group, qz = 96, 200, 8, "int8_weight_only"
    m = GatedMLP(K, I, extra=case if case in ("gate_out", "add") else None).eval()
    x = torch.randn(3, K)
    trt = compile_mlp(m, x, qz, group)
    ks = kernels(trt)
    assert not fused(ks) and any(" elementwise:" in k for k in ks), ks
    with torch.no_grad():
        y, ref = trt(x), reference(m, x, qz, group)
    for a, b in zip(y if isinstance(y, tuple) else [y], ref if isinstance(ref, tuple) else [ref]):
        close(a, b, 1e-4)


@pytest.mark.parametrize("cfg", ["int8", "intx_int4"])
@pytest.mark.parametrize("M", [1, 8, 13])
def test_gated_mlp_torchao(cfg, M):
    """A torchao-quantized gated MLP (Int8WeightOnlyConfig; IntxWeightOnlyConfig int4, groups of
    8): fused, and equal to torchao's own forward on the same model within 1e-4 of the scale."""
    pytest.importorskip("torchao")
    from torchao.quantization import Int8WeightOnlyConfig, IntxWeightOnlyConfig, quantize_
    from torchao.quantization.granularity import PerGroup
    torch.manual_seed(6)
    m = GatedMLP(96, 200).eval()
    quantize_(m, Int8WeightOnlyConfig() if cfg == "int8" else
              IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(8)))
    x = torch.randn(M, 96)
    with torch.no_grad():
        ref = m(x)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    assert fused(kernels(trt)), kernels(trt)
    with torch.no_grad():
        close(trt(x), ref, 1e-4)
