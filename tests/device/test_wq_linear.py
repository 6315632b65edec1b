"""Weight-only quantized linear (issue 35): torchtrt_c.wq_linear in engines against torch's own
implementation of the op (dequantize, then linear) on the same packed weights, on every path the
machine has: the native CPU step (backend/cpu/native_wq.c, the default on PoCL), the portable
OpenCL kernel (TORCHTRT_C_NATIVE=0) and the GPU family's decode GEMV (TORCHTRT_C_KERNELS=gpu),
each checked by its kernel description; the native step's GEMV loops (VNNI, AVX-512, AVX2,
generic) each forced by TORCHTRT_C_NATIVE_WQ_ISA (test_wq_linear_native_loops). The int8/int4
weights stay int8/uint8 constants in the engine (its blob is about a quarter / an eighth of the
float one).

Shapes: M 1, 3, 8 (decode), 17 and a [2, 5, K] input (GEMM rows); K not a multiple of 16 bytes
(scalar GEMV loop), groups of 8..K, odd N. Tolerances: fp32 atol 2e-4 * sqrt(K) relative to the
output scale (the sums run in another order than torch's); fp16 activations 2e-2 relative.
K not a multiple of the group size is refused by the validator (the node falls back to torch,
which computes the same) and by quantize='int4_weight_only' with a message naming the layer."""
import math
import re

import pytest
import torch

import torchtrt_c
import torchtrt_c._C as C
from torchtrt_c.dynamo._weight_only import dequantize, pack_int4, quantize_int4, quantize_int8

PATHS = {
    "native": {},
    "opencl": {"TORCHTRT_C_NATIVE": "0"},
    "gemv": {"TORCHTRT_C_KERNELS": "gpu"},
}


@pytest.fixture(autouse=True)
def plain_env(monkeypatch):
    for v in ("TORCHTRT_C_KERNELS", "TORCHTRT_C_NATIVE", "TORCHTRT_C_NATIVE_WQ_ISA", "TORCHTRT_C_WQ_SPLIT",
              "TORCHTRT_C_WQ_MMA", "TORCHTRT_C_NATIVE_WQ_GEMV_MAX_M"):
        monkeypatch.delenv(v, raising=False)


class WQ(torch.nn.Module):
    def __init__(self, q, s, z, group, bits, bias=None):
        super().__init__()
        self.register_buffer("q", q)
        self.register_buffer("s", s)
        self.register_buffer("z", z)
        self.group, self.bits = group, bits
        self.bias = None if bias is None else torch.nn.Parameter(bias)

    def forward(self, x):
        y = torch.ops.torchtrt_c.wq_linear(x, self.q, self.s, self.z, self.group, self.bits)
        return y + self.bias if self.bias is not None else torch.relu(y)


def random_weights(N, K, group, bits, zeros=True, seed=0):
    g = torch.Generator().manual_seed(seed)
    G = K // group
    s = torch.rand(N, G, generator=g) * 0.05 + 0.01
    if bits == 8:
        q = torch.randint(-128, 128, (N, K), generator=g, dtype=torch.int8)
        z = torch.randint(-4, 5, (N, G), generator=g).float() if zeros else None
    else:
        q = pack_int4(torch.randint(0, 16, (N, K), generator=g))
        z = torch.randint(0, 16, (N, G), generator=g).float() if zeros else None
    return q, s, z


def kernels_of(trt):
    eng = C.Engine.deserialize(bytes(trt._run_on_acc_0.engine.numpy()), cache_dir="")
    return eng.info()["kernels"]


def check_path(trt, path):
    ks = [k for k in kernels_of(trt) if " wq_linear:" in k]
    assert len(ks) == 1, kernels_of(trt)
    if path == "native" and C.native_cpu()["available"]:
        assert "(native)" in ks[0], ks
    if path != "native":
        assert "(native)" not in ks[0], ks


def close(y, ref, K, tol):
    scale = ref.abs().max().item() + 1e-6
    err = (y.float() - ref.float()).abs().max().item() / scale
    assert err <= tol, (err, tol)


CASES = [  # M (or shape), N, K, group, bits, zeros
    ((1, 64), 37, 64, 64, 8, False),         # per channel, decode
    ((3, 160), 48, 160, 32, 8, True),
    ((8, 40), 33, 40, 8, 8, True),           # K * 1 byte not a multiple of 16: scalar GEMV loop
    ((17, 256), 70, 256, 128, 8, False),     # GEMM rows
    ((1, 128), 40, 128, 32, 4, True),        # int4 decode
    ((5, 96), 31, 96, 32, 4, True),          # 48 bytes a row
    ((8, 72), 16, 72, 8, 4, True),           # groups smaller than a 32-weight chunk: scalar loop
    ((2, 5, 256), 64, 256, 64, 4, True),     # rank 3, GEMM rows
    ((12, 64), 24, 64, 16, 4, True),
    ((2, 2048), 21, 2048, 128, 8, True),     # GEMV: several 16-byte chunks a lane, rows not a multiple of 16
    ((9, 4096), 19, 4096, 128, 4, False),    # GEMV: two passes over x's rows (8 a pass)
]


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-N{c[1]}-K{c[2]}-g{c[3]}-b{c[4]}")
def test_wq_linear_fp32(case, path, monkeypatch):
    shape, N, K, group, bits, zeros = case
    for k, v in PATHS[path].items():
        monkeypatch.setenv(k, v)
    q, s, z = random_weights(N, K, group, bits, zeros)
    bias = torch.randn(N) if bits == 8 else None
    m = WQ(q, s, z, group, bits, bias).eval()
    x = torch.randn(*shape)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    check_path(trt, path)
    with torch.no_grad():
        ref = m(x)
        y = trt(x)
    close(y, ref, K, 2e-4 * math.sqrt(K) / 8)
    # the same op == linear on the dequantized weights (what the tests of the importers use)
    w = dequantize(q, s, z, group, bits)
    lin = torch.nn.functional.linear(x, w)
    close(lin + bias if bias is not None else torch.relu(lin), ref, K, 1e-5)


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("bits", [8, 4])
@pytest.mark.parametrize("M,N,K,group", [(3, 45, 128, 32), (9, 19, 1024, 128)])
def test_wq_linear_fp16(M, N, K, group, bits, path, monkeypatch):
    for k, v in PATHS[path].items():
        monkeypatch.setenv(k, v)
    q, s, z = random_weights(N, K, group, bits)
    m = WQ(q, s, z, group, bits).eval()
    x = torch.randn(M, K)
    trt = torchtrt_c.compile(m.half(), inputs=[x.half()], min_block_size=1, enabled_precisions={torch.float16})
    ks = [k for k in kernels_of(trt) if " wq_linear:" in k]
    assert len(ks) == 1 and "(native)" not in ks[0], kernels_of(trt)
    with torch.no_grad():
        ref = WQ(q, s, z, group, bits)(x.float())   # fp32 reference of the same weights
        y = trt(x.half())
    assert y.dtype == torch.float16
    close(y, ref, K, 2e-2)


def test_engine_keeps_packed_weights():
    """The engine's constants are the int8/int4 bytes (and their scales), not float weights.
    Constants, not the serialized blob: on a GPU the blob also carries the built program, and
    the quantized engine's GEMV (unrolled for 4 rows x 8 of x) is the bigger one (the H100 run of
    2026-12-07: blobs of 1.09 MB fp32, 0.80 MB int8)."""
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(512, 512, bias=False)).eval()
    x = torch.randn(2, 512)
    sizes = {}
    for qz in (None, "int8_weight_only", "int4_weight_only"):
        trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1, quantize=qz)
        eng = C.Engine.deserialize(bytes(trt._run_on_acc_0.engine.numpy()), cache_dir="")
        sizes[qz] = eng.info()["const_bytes"]
    w = 512 * 512
    assert sizes[None] >= 4 * w, sizes
    assert w <= sizes["int8_weight_only"] < 1.1 * w, sizes
    assert w / 2 <= sizes["int4_weight_only"] < 0.6 * w, sizes


def test_group_not_dividing_k_falls_back_and_is_refused():
    """K = 48 with groups of 32: the engine refuses the node (it runs in torch, same values), and
    quantize='int4_weight_only' with such a layer names it."""
    N, K = 8, 48
    q = pack_int4(torch.randint(0, 16, (N, K)))
    m = WQ(q, torch.rand(N, 1) * 0.1, None, 32, 4).eval()   # group 32 does not divide 48
    x = torch.randn(2, K)
    with pytest.raises(Exception):
        m(x)   # torch's op refuses it too (the reshape to groups)
    lin = torch.nn.Sequential(torch.nn.Linear(48, 8)).eval()
    with pytest.raises(ValueError, match=r"linear .* K = 48 .*quantize_group_size=32"):
        torchtrt_c.compile(lin, inputs=[x], min_block_size=1, quantize="int4_weight_only", quantize_group_size=32)
    # a group size larger than K is clipped to K
    trt = torchtrt_c.compile(lin, inputs=[x], min_block_size=1, quantize="int4_weight_only", quantize_group_size=64)
    q4, s4, z4 = quantize_int4(lin[0].weight, 48)
    ref = torch.nn.functional.linear(x, dequantize(q4, s4, z4, 48, 4), lin[0].bias)
    close(trt(x), ref, 48, 1e-4)


def test_quantize_setting_values():
    m = torch.nn.Sequential(torch.nn.Linear(16, 8)).eval()
    with pytest.raises(ValueError, match="int8_weight_only.*int4_weight_only"):
        torchtrt_c.compile(m, inputs=[torch.randn(1, 16)], quantize="int3")
    with pytest.raises(ValueError, match="quantize_group_size"):
        torchtrt_c.compile(m, inputs=[torch.randn(1, 16)], quantize="int4_weight_only", quantize_group_size=7)


@pytest.mark.parametrize("qz", ["int8_weight_only", "int4_weight_only"])
def test_quantize_setting_matches_dequantized_torch(qz):
    """quantize= on an MLP: one engine, wq_linear kernels only (no GEMM left), equal to torch on
    the dequantized weights; and within quantization error of the float model."""
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(128, 96), torch.nn.GELU(), torch.nn.Linear(96, 32)).eval()
    x = torch.randn(4, 128)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1, quantize=qz, quantize_group_size=32)
    ks = kernels_of(trt)
    assert sum(" wq_linear:" in k for k in ks) == 2 and not any(" gemm:" in k for k in ks), ks
    assert "_run_on_gpu" not in str(trt.graph)
    deq = []
    for lin in (m[0], m[2]):
        if qz == "int8_weight_only":
            qq, ss = quantize_int8(lin.weight)
            deq.append(dequantize(qq, ss, None, lin.in_features, 8))
        else:
            qq, ss, zz = quantize_int4(lin.weight, 32)
            deq.append(dequantize(qq, ss, zz, 32, 4))
    with torch.no_grad():
        h = torch.nn.functional.gelu(torch.nn.functional.linear(x, deq[0], m[0].bias))
        ref = torch.nn.functional.linear(h, deq[1], m[2].bias)
        y = trt(x)
        f = m(x)
    close(y, ref, 128, 1e-4)
    cos = torch.nn.functional.cosine_similarity(y.flatten(), f.flatten(), dim=0).item()
    assert cos > (0.999 if qz == "int8_weight_only" else 0.98), cos


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("bits", [8, 4])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_wq_linear_input_at_an_offset(dtype, bits, path, monkeypatch):
    """x starting one element into its storage: the GEMV form's vector loads of x need its
    offset aligned and take the element loop otherwise; same results."""
    for k, v in PATHS[path].items():
        monkeypatch.setenv(k, v)
    N, K, group = 23, 256, 64
    q, s, z = random_weights(N, K, group, bits)
    m = WQ(q, s, z, group, bits).eval()
    trt = torchtrt_c.compile(m.to(dtype), inputs=[torch.randn(2, K, dtype=dtype)], min_block_size=1,
                             enabled_precisions={dtype})
    base = torch.randn(2 * K + 1, dtype=dtype)
    x = base[1:].view(2, K)
    assert x.storage_offset() == 1
    with torch.no_grad():
        ref = WQ(q, s, z, group, bits)(x.float())
        y = trt(x)
    close(y, ref, K, 2e-2 if dtype == torch.float16 else 2e-4 * math.sqrt(K) / 8)


# ---- the native step's GEMV loops (backend/cpu/native_wq.h), each forced by TORCHTRT_C_NATIVE_WQ_ISA ----
ISAS = ("generic", "avx2", "avx512", "vnni")

WIDE = [  # N, K, group, bits: decode-shaped layers, odd N, K not a multiple of 16 / 32 bytes
    (67, 512, 32, 8),      # a chunk a group
    (45, 384, 128, 8),     # 4 chunks a group
    (33, 200, 200, 8),     # per channel, 200 bytes: the last chunk masked
    (29, 120, 40, 8),      # groups of 40 bytes: not whole int32 lanes, the VNNI loop hands over to AVX-512
    (67, 512, 32, 4),      # 16 bytes a group
    (21, 1376, 32, 4),     # the small Llama's down projection (43 groups)
    (45, 384, 128, 4),     # 64 bytes a group
    (19, 120, 8, 4),       # 4 bytes a group, 60 bytes a row
    (23, 100, 100, 4),     # per channel, 50 bytes
]


def _expected_isa(cap, K, group, bits):
    best = C.native_cpu()["wq_isa"]   # the knob unset (fixture): the CPU's best
    isa = ISAS[min(ISAS.index(cap), ISAS.index(best))]
    gb = group if bits == 8 else group // 2
    if isa == "vnni" and not (K == group or gb % 32 == 0 or gb in (2, 4, 8, 16)):
        isa = "avx512"
    return isa


def gemv_max_m(isa, N, K, bits):
    """The GEMV's row limit for the loop that runs (backend/cpu/native_wq.h's table, restated)."""
    if isa == "vnni":
        return 64 if bits == 8 or N * K >= 1 << 22 else 32
    if isa in ("avx512", "avx2"):
        return 32 if bits == 8 else 16 if isa == "avx512" else 12
    return 16


@pytest.mark.parametrize("M", [1, 2, 5, 8, 13, 20, 70])
@pytest.mark.parametrize("layer", WIDE, ids=lambda c: f"N{c[0]}-K{c[1]}-g{c[2]}-b{c[3]}")
def test_wq_linear_native_loops(layer, M, monkeypatch):
    """One engine a shape, run with each loop as the cap: every output within its bound of a
    float64 reference on the same dequantized weights, the loop that ran checked by its counter.
    Bounds: 1e-5 * sum_k (|q| + |z|) s |x| (q the stored integers: the loops take the zero
    point's term apart, z s sum x); the VNNI loop (x rounded to int16 per row) adds
    max|x| * sum_k |q s| / 65534. M 13: GEMV passes of 8 + 5 rows (the AVX2 loop's int4: blocks +
    sgemm); M 20: the VNNI loop's passes and the float loops' int8 ones, else dequantized blocks +
    sgemm (no GEMV); M 70: blocks + sgemm for every cap (gemv_max_m)."""
    if not C.native_cpu()["available"]:
        pytest.skip("no native CPU steps on this device")
    N, K, group, bits = layer
    q, s, z = random_weights(N, K, group, bits, zeros=(M + N) % 2 == 0, seed=M)
    m = WQ(q, s, z, group, bits, bias=torch.zeros(N)).eval()
    x = torch.randn(M, K, generator=torch.Generator().manual_seed(N))
    x[:, ::7] *= 4.0
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    check_path(trt, "native")
    w = dequantize(q, s, z, group, bits).double()
    ref = x.double() @ w.T
    qs = dequantize(q, s, None, group, bits).double().abs()   # |q| s
    zs = 0 if z is None else (z.abs() * s).repeat_interleave(group, dim=1).double()
    absp = x.double().abs() @ (qs + zs).T
    for cap in ISAS:
        monkeypatch.setenv("TORCHTRT_C_NATIVE_WQ_ISA", cap)
        want = _expected_isa(cap, K, group, bits)
        before = C.native_cpu()["wq_calls"]
        with torch.no_grad():
            y = trt(x).double()
        after = C.native_cpu()["wq_calls"]
        ran = {k: after[k] - before[k] for k in after}
        gemv = M <= gemv_max_m(want, N, K, bits)
        if gemv:
            assert ran[want] == 1 and sum(ran.values()) == 1, (cap, want, ran)
        else:
            assert sum(ran.values()) == 0, ran
        tol = 1e-5 * absp + 1e-12
        if want == "vnni" and gemv:
            tol = tol + x.double().abs().amax(1, keepdim=True) * qs.sum(1) / 65534 * 1.001
        err = (y - ref).abs()
        assert bool((err <= tol).all()), (cap, want, float((err - tol).max()), float(err.max()))


class ThreeWQ(torch.nn.Module):
    """q/k/v-like: three weight-only linears of one x (two int4 of one group size, one of another
    size that may not join) and one of another input."""

    def __init__(self, K, bits, group):
        super().__init__()
        self.parts = []
        for i, N in enumerate((48, 16, 16)):
            q, s, z = random_weights(N, K, group, bits, seed=10 + i)
            self.register_buffer(f"q{i}", q)
            self.register_buffer(f"s{i}", s)
            self.register_buffer(f"z{i}", z)
        q, s, z = random_weights(24, K, group // 2, bits, seed=20)
        self.register_buffer("q3", q)
        self.register_buffer("s3", s)
        self.register_buffer("z3", z)
        self.group, self.bits = group, bits

    def forward(self, x, y):
        op = torch.ops.torchtrt_c.wq_linear
        a = op(x, self.q0, self.s0, self.z0, self.group, self.bits)
        b = op(x, self.q1, self.s1, self.z1, self.group, self.bits)
        c = op(x, self.q2, self.s2, self.z2, self.group, self.bits)
        d = op(x, self.q3, self.s3, self.z3, self.group // 2, self.bits)   # another group size: alone
        e = op(y, self.q1, self.s1, self.z1, self.group, self.bits)        # another input: alone
        return torch.relu(a) + 1.0, b * c, d, e


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("bits", [8, 4])
def test_parallel_wq_linears_fuse(bits, path, monkeypatch):
    """FUSE_PARALLEL_LINEAR (compile_llm's step) joins wq_linears of one input, bits and group
    size into one over the concatenated packed weights, scales and zeros; the outputs are
    slices of it: within 1e-6 of the output's scale of each layer alone (the same sums), and
    close to torch's op as the layers alone are."""
    for k, v in PATHS[path].items():
        monkeypatch.setenv(k, v)
    K, group = 128, 32
    m = ThreeWQ(K, bits, group).eval()
    x, y = torch.randn(3, K), torch.randn(3, K)
    with torch.no_grad():
        ref = m(x, y)
    counts, outs = {}, {}
    for fuse in ("0", "1"):
        monkeypatch.setenv("TORCHTRT_C_FUSE_PARALLEL_LINEAR", fuse)
        trt = torchtrt_c.compile(m, inputs=[x, y], min_block_size=1)
        counts[fuse] = sum(" wq_linear:" in k for k in kernels_of(trt))
        with torch.no_grad():
            outs[fuse] = trt(x, y)
        for g, r in zip(outs[fuse], ref):
            close(g, r, K, 2e-4 * math.sqrt(K) / 8)
    assert counts == {"0": 5, "1": 3}, counts
    for f, u in zip(outs["1"], outs["0"]):
        close(f, u, K, 1e-6)


# ---- the GPU GEMV with a row's K split between a work-group's warps (TORCHTRT_C_WQ_SPLIT) ----
SPLIT = [  # shape of x, N, K, group, bits, zeros
    ((1, 2048), 37, 2048, 128, 8, True),    # 128 chunks a row: 1, 2 or 4 warps a row
    ((3, 4096), 21, 4096, 64, 4, False),    # int4, 64 chunks a row
    ((9, 1024), 45, 1024, 1024, 8, False),  # per channel, two passes over x's rows
    ((8, 1000), 19, 1000, 40, 8, True),     # 1000 bytes a row: the scalar loop, split by lanes
    ((2, 5, 512), 67, 512, 32, 4, True),    # rank 3, groups of one chunk
]


def _split_source(trt):
    eng = C.Engine.deserialize(bytes(trt._run_on_acc_0.engine.numpy()), cache_dir="")
    return eng.info()["source"]


@pytest.mark.parametrize("split", ["1", "2", "4", "auto"])
@pytest.mark.parametrize("case", SPLIT, ids=lambda c: f"{c[0]}-N{c[1]}-K{c[2]}-g{c[3]}-b{c[4]}")
def test_wq_gemv_split_k(case, split, monkeypatch):
    """Each split of a row's K between 1, 2 or 4 warps gives torch's result (fp32 tolerance as
    above); the kernel is the one asked for (its warps' K share ws = w % split), and the
    automatic choice splits a layer-sized row of 128 chunks 4 ways."""
    shape, N, K, group, bits, zeros = case
    monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")
    if split != "auto":
        monkeypatch.setenv("TORCHTRT_C_WQ_SPLIT", split)
    q, s, z = random_weights(N, K, group, bits, zeros, seed=3)
    m = WQ(q, s, z, group, bits).eval()
    x = torch.randn(*shape)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    check_path(trt, "gemv")
    src = _split_source(trt)
    want = {"1": "ws = w % 1;", "2": "ws = w % 2;", "4": "ws = w % 4;"}
    assert re.search(r"m0 = get_group_id\(0\) \* \d+;", src)   # x's row chunks first: a set of rows' groups side by side
    if split != "auto":
        assert want[split] in src
    elif K == 2048 and bits == 8:
        assert want["4"] in src
    with torch.no_grad():
        close(trt(x), m(x), K, 2e-4 * math.sqrt(K) / 8)


def test_wq_gemv_many_row_sets(monkeypatch):
    """More than 65535 sets of weight rows (262200 rows, 4 a set with TORCHTRT_C_WQ_SPLIT=4): the
    row sets take launch dimension 0 and x's row chunks dimension 1 (the other way round below
    that count); two chunks of x's rows. Same results as torch."""
    monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")
    monkeypatch.setenv("TORCHTRT_C_WQ_SPLIT", "4")
    N, K, group = 262200, 32, 32
    q, s, z = random_weights(N, K, group, 8, True, seed=5)
    m = WQ(q, s, z, group, 8).eval()
    x = torch.randn(9, K)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    check_path(trt, "gemv")
    src = _split_source(trt)
    assert "int c0 = (get_group_id(0) * 1 + w / 4) * 4, m0 = get_group_id(1) * 8;" in src
    with torch.no_grad():
        close(trt(x), m(x), K, 2e-4 * math.sqrt(K) / 8)


# ---- the tensor-core form (TORCHTRT_C_WQ_MMA=1; the PTX prelude's emulation off NVIDIA) ----
MMA = [  # M (rows of x), N, K, group, bits, zeros
    (1, 37, 64, 64, 8, True),       # one K block: three warps idle
    (3, 130, 192, 64, 4, True),     # 3 blocks, rows past N in the last set of 16
    (8, 64, 256, 128, 8, False),    # a full chunk of x's rows, 2 blocks a group
    (9, 45, 320, 320, 4, False),    # two chunks of x's rows, per channel, 5 blocks
    (70, 19, 128, 64, 8, True),     # prefill-like: 9 chunks of x's rows (8 in one work-group, 1 in the next)
    (197, 33, 128, 64, 4, True),    # 25 chunks: work-groups of 8, 8, 8 and 1, the last chunk partial
]


@pytest.mark.parametrize("mode", ["1", "auto"])
@pytest.mark.parametrize("offset", [0, 1])
@pytest.mark.parametrize("case", MMA, ids=lambda c: f"M{c[0]}-N{c[1]}-K{c[2]}-g{c[3]}-b{c[4]}")
def test_wq_mma_form(case, offset, mode, monkeypatch):
    """The tensor-core form against torch's op on the same packed weights (fp16 x: 2e-2 of the
    output's scale, as the fp16 GEMV above); offset 1 binds x one element into its storage (the
    element-wise load of x). The kernel is the mma one (its source feeds ttc_mma_f16 the weight
    halves). mode auto: one kernel, the GEMV for M <= 8 and the tensor cores above (M 9 and 70)."""
    M, N, K, group, bits, zeros = case
    monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")
    monkeypatch.setenv("TORCHTRT_C_WQ_MMA", mode)
    q, s, z = random_weights(N, K, group, bits, zeros, seed=7)
    m = WQ(q, s, z, group, bits).eval()
    trt = torchtrt_c.compile(m.half(), inputs=[torch.randn(M, K).half()], min_block_size=1,
                             enabled_precisions={torch.float16})
    src = _split_source(trt)
    assert "uint a[4] = {wa[2 * s], wb[2 * s]" in src
    assert ("if (M > 8) {" in src) == (mode == "auto")
    base = torch.randn(M * K + offset)
    x = base[offset:].view(M, K)
    with torch.no_grad():
        ref = WQ(q, s, z, group, bits)(x.float())
        y = trt(x.half())
    assert y.dtype == torch.float16
    close(y, ref, K, 2e-2)


def test_wq_mma_form_only_where_it_applies(monkeypatch):
    """fp32 x or groups of 32 keep the GEMV with TORCHTRT_C_WQ_MMA=1; the default has no mma."""
    monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")
    q, s, z = random_weights(40, 128, 32, 8, True)
    for env, dtype, want in (("1", torch.float32, False), ("1", torch.float16, False), ("0", torch.float16, False),
                             ("auto", torch.float16, False)):
        monkeypatch.setenv("TORCHTRT_C_WQ_MMA", env)
        m = WQ(q, s, z, 32, 8).eval().to(dtype)
        trt = torchtrt_c.compile(m, inputs=[torch.randn(3, 128, dtype=dtype)], min_block_size=1,
                                 enabled_precisions={dtype})
        assert ("uint a[4] = {wa[2 * s]" in _split_source(trt)) == want
    monkeypatch.delenv("TORCHTRT_C_WQ_MMA")
    q, s, z = random_weights(40, 128, 64, 8, True)
    trt = torchtrt_c.compile(WQ(q, s, z, 64, 8).eval().half(), inputs=[torch.randn(3, 128).half()], min_block_size=1,
                             enabled_precisions={torch.float16})
    assert "uint a[4] = {wa[2 * s]" not in _split_source(trt)
