"""The integer convolution on int8 tensor cores (codegen_qgemm.c gen_qconv2d_mma: an implicit
GEMM on mma.sync m16n8k32 s8, rows N*OH*OW pixels, columns OC, K the taps; chosen on NVIDIA
sm_80+ like the integer GEMM's). TORCHTRT_C_QGEMM_MMA=1 takes it on any device, elsewhere than
NVIDIA through the PTX prelude's emulation, so that on PoCL the gathers, the zero-point handling
(uint8 activations flipped to int8, zp * sum(w) taken off, padding taps read as the zero point)
and the partial tiles are differentially tested.

Exact checks: PT2E's layer op torchtrt_c.qconv2d with unit scales and no bias gives the int32
sum of (x - zp) * w itself as float; the reference is torch's conv2d in float64 of the same
integers (exact), converted to float32 as the engine converts its int32 sum. With real scales
and a bias, and for a whole PT2E-quantized CNN (X86InductorQuantizer: uint8 activations with
zero points, requantization between layers), the tensor-core engine is bit-identical to the
portable kernel's (TORCHTRT_C_QGEMM_MMA=0), and the CNN within test_quant.py's 1e-3 of torch."""
from __future__ import annotations

import re
import warnings

import pytest
import torch

import torchtrt_c
import torchtrt_c._C as C
from torchtrt_c import settings
from torchtrt_c.dynamo import _quant  # noqa: F401  (registers torch.ops.torchtrt_c.qconv2d)


@pytest.fixture(autouse=True)
def _gpu_kernels(monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")
    monkeypatch.setenv("TORCHTRT_C_NATIVE", "0")   # the OpenCL kernels on CPU devices too
    monkeypatch.setenv("TORCHTRT_C_QUANT_KERNELS", "int8")


def _q(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    lo, hi = (-128, 128) if dtype == torch.int8 else (0, 256)
    return torch.randint(lo, hi, shape, generator=g).to(dtype)


class QConv(torch.nn.Module):
    def __init__(self, w, zp, stride, pad, dil, x_scale=1.0, scales=None, bias=None):
        super().__init__()
        self.register_buffer("w", w)
        self.register_buffer("ws", torch.ones(w.shape[0]) if scales is None else scales)
        self.register_buffer("b", bias)
        self.zp, self.xs, self.args = zp, x_scale, (list(stride), list(pad), list(dil))

    def forward(self, x):
        return torch.ops.torchtrt_c.qconv2d(x, self.xs, self.zp, self.w, self.ws, self.b, *self.args, 1)


def _engines(gm):
    return [C.Engine.deserialize(bytes(mod.engine.numpy()), cache_dir="").info()
            for name, mod in gm.named_children() if name.startswith("_run_on_acc_")]


def _qconv_kernels(gm):
    """(kernel descriptions of the qconv2d kernels, how many of them are the tensor-core form)"""
    descs, mma = [], 0
    for info in _engines(gm):
        for d in info["kernels"]:
            if " qconv2d:" in d:
                descs.append(d)
                name = d.split()[0]
                body = re.search(r"void %s\((.*?)\n}\n" % re.escape(name), info["source"], re.S)
                assert body, (name, d)
                mma += "ttc_mma_s8(" in body.group(1)
    return descs, mma


def _run(m, x, mma, more=(), spec=None):
    """m compiled with the tensor-core form forced on or off: its outputs for x and `more`, and
    _qconv_kernels (engines are built lazily: all inside the setting's context)"""
    with settings.override(QGEMM_MMA="1" if mma else "0"), torch.no_grad():
        gm = torchtrt_c.compile(m, inputs=[spec or x], min_block_size=1, require_full_compilation=True)
        ys = [gm(v) for v in (x,) + tuple(more)]
        return ys, _qconv_kernels(gm)


# N, C, H, W, OC, (KH, KW), stride, pad, dil, activation dtype, zero point
SHAPES = [
    (3, 3, 23, 21, 10, (7, 7), (2, 2), (3, 3), (1, 1), torch.uint8, 0),        # the stem: K = 147
    (3, 3, 17, 16, 64, (7, 7), (2, 2), (3, 3), (1, 1), torch.uint8, 119),
    (2, 16, 9, 11, 33, (3, 3), (1, 1), (1, 1), (1, 1), torch.uint8, 119),      # 16-channel chunks: K = 144
    (3, 32, 8, 7, 70, (1, 1), (2, 2), (0, 0), (1, 1), torch.int8, -5),         # 1x1 stride 2, vector weights
    (1, 20, 12, 12, 24, (3, 3), (2, 2), (1, 1), (1, 1), torch.int8, 0),        # K = 180
    (2, 5, 10, 9, 7, (3, 3), (1, 1), (2, 2), (2, 2), torch.uint8, 128),        # dilation; zp 128: no correction
    (3, 64, 6, 5, 130, (3, 3), (1, 1), (1, 1), (1, 1), torch.uint8, 77),       # 2 x 3 tiles, partial
    (2, 48, 11, 8, 40, (3, 1), (2, 1), (1, 0), (1, 1), torch.uint8, 255),
    (1, 8, 5, 6, 9, (2, 3), (1, 2), (0, 1), (1, 1), torch.int8, 127),
]


def _ids(s):
    n, c, h, w, oc, kk, st, pd, dl, dt, zp = s
    return f"{n}x{c}x{h}x{w}-oc{oc}-k{kk[0]}{kk[1]}s{st[0]}{st[1]}p{pd[0]}{pd[1]}d{dl[0]}-{str(dt)[6:]}-zp{zp}"


@pytest.mark.parametrize("shape", SHAPES, ids=[_ids(s) for s in SHAPES])
def test_qconv_on_tensor_cores_is_exact(shape):
    n, c, h, wd, oc, kk, st, pd, dl, dt, zp = shape
    x = _q((n, c, h, wd), dt, seed=1)
    w = _q((oc, c) + kk, torch.int8, seed=2)
    m = QConv(w, zp, st, pd, dl).eval()
    ref = torch.nn.functional.conv2d(x.double() - zp, w.double(), None, st, pd, dl)
    assert ref.abs().max().item() < 2 ** 31
    (y,), (descs, mma) = _run(m, x, mma=True)
    assert len(descs) == 1 and mma == 1, descs
    assert torch.equal(y, ref.float())
    (yp,), (_, mma) = _run(m, x, mma=False)
    assert mma == 0
    assert torch.equal(yp, y)


def test_qconv_extremes():
    """every product at its largest: (0 - 255) * -128 over K = 64 * 9 (2^24 and past it in the
    sum: exactly as int32, then one float32 rounding as torch's conversion), padding taps at the
    zero point"""
    x = torch.zeros(2, 64, 6, 7, dtype=torch.uint8)
    x[1] = 255
    w = torch.full((12, 64, 3, 3), -128, dtype=torch.int8)
    w[1::2] = 127
    m = QConv(w, 255, (1, 1), (1, 1), (1, 1)).eval()
    ref = torch.nn.functional.conv2d(x.double() - 255, w.double(), None, 1, 1, 1)
    assert ref.abs().max().item() > 2 ** 24
    (y,), (_, mma) = _run(m, x, mma=True)
    assert mma == 1
    assert torch.equal(y, ref.float())


@pytest.mark.parametrize("dt,zp", [(torch.uint8, 3), (torch.int8, -20)])
def test_qconv_scaled_bias_is_the_portable_kernels_bitwise(dt, zp):
    """a requantization epilogue (x_scale * w_scale[c], bias) reads the same int32 sums: the
    same floats bit for bit as the portable kernel, within 1e-5 of torch's dequantized conv"""
    g = torch.Generator().manual_seed(7)
    x = _q((3, 24, 13, 11), dt, seed=3)
    w = _q((37, 24, 3, 3), torch.int8, seed=4)
    m = QConv(w, zp, (2, 2), (1, 1), (1, 1), x_scale=0.0227, scales=torch.rand(37, generator=g) * 0.02 + 0.001,
              bias=torch.randn(37, generator=g)).eval()
    ((y,), (_, mma)), ((yp,), (_, mma_p)) = _run(m, x, mma=True), _run(m, x, mma=False)
    assert mma == 1 and mma_p == 0
    with torch.no_grad():
        want = m(x)
    assert torch.equal(y, yp)
    torch.testing.assert_close(y, want, rtol=1e-5, atol=1e-5 * want.abs().max().item())


def test_grouped_qconv_stays_portable():
    x = _q((2, 8, 7, 7), torch.uint8, seed=5)
    w = _q((8, 4, 3, 3), torch.int8, seed=6)

    class G(QConv):
        def forward(self, x):
            return torch.ops.torchtrt_c.qconv2d(x, 1.0, 5, self.w, self.ws, None, [1, 1], [1, 1], [1, 1], 2)

    m = G(w, 5, (1, 1), (1, 1), (1, 1)).eval()
    (y,), (descs, mma) = _run(m, x, mma=True)
    assert len(descs) == 1 and mma == 0
    with torch.no_grad():
        assert torch.equal(y, m(x))


@pytest.mark.parametrize("setting", ["0", None])
def test_default_follows_the_device_and_off_means_off(setting, monkeypatch):
    """unset: chosen on NVIDIA sm_80+ only (read from the device), =0: never"""
    if setting is None:
        monkeypatch.delenv("TORCHTRT_C_QGEMM_MMA", raising=False)
    else:
        monkeypatch.setenv("TORCHTRT_C_QGEMM_MMA", setting)
    x = _q((2, 16, 6, 6), torch.uint8, seed=8)
    m = QConv(_q((8, 16, 3, 3), torch.int8, seed=9), 100, (1, 1), (1, 1), (1, 1)).eval()
    gm = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    with torch.no_grad():
        assert torch.equal(gm(x), torch.nn.functional.conv2d(x.double() - 100, m.w.double(), None, 1, 1).float())
    src = "".join(i["source"] for i in _engines(gm))
    nvidia_engine = "#define TTC_PTX 1" in src
    sm80 = torch.cuda.is_available() and torch.cuda.get_device_capability() >= (8, 0)
    assert _qconv_kernels(gm)[1] == int(setting is None and nvidia_engine and sm80)


class Block(torch.nn.Module):
    """a ResNet stem and a basic block (7x7/2 pad 3, max pool, 3x3 pairs with a residual, a 1x1/2
    downsample), a pool and a linear"""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 16, 7, stride=2, padding=3)
        self.a = torch.nn.Conv2d(16, 16, 3, padding=1)
        self.b = torch.nn.Conv2d(16, 16, 3, padding=1)
        self.down = torch.nn.Conv2d(16, 32, 1, stride=2)
        self.c = torch.nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.fc = torch.nn.Linear(32, 10)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.stem(x)), 3, 2, 1)
        x = torch.relu(x + self.b(torch.relu(self.a(x))))
        x = torch.relu(self.down(x) + self.c(x))
        return self.fc(torch.nn.functional.adaptive_avg_pool2d(x, 1).flatten(1))


def test_pt2e_cnn_on_tensor_cores_is_the_portable_engine_bitwise():
    pytest.importorskip("torchao")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
        from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (
            X86InductorQuantizer, get_default_x86_inductor_quantization_config)
    q = X86InductorQuantizer()
    q.set_global(get_default_x86_inductor_quantization_config())
    torch.manual_seed(0)
    calib = [torch.randn(4, 3, 29, 27) for _ in range(3)]
    dyn = ({0: torch.export.Dim("batch", max=64)},)
    gm = torch.export.export(Block().eval(), (calib[0],), dynamic_shapes=dyn).module()
    p = prepare_pt2e(gm, q)
    with torch.no_grad():
        for x in calib:
            p(x)
    qm = convert_pt2e(p)
    x = torch.randn(3, 3, 29, 27)
    more = (x[:1].contiguous(),)   # the batch is dynamic: another count of pixel rows
    spec = torchtrt_c.Input(min_shape=(1, 3, 29, 27), opt_shape=(3, 3, 29, 27), max_shape=(8, 3, 29, 27))
    ys, (descs, mma) = _run(qm, x, mma=True, more=more, spec=spec)
    assert len(descs) == 5 and mma == 5, descs
    yps, (_, mma) = _run(qm, x, mma=False, more=more, spec=spec)
    assert mma == 0
    for xb, y, yp in zip((x,) + more, ys, yps):
        with torch.no_grad():
            want = qm(xb)
        assert torch.equal(y, yp), xb.shape
        assert float((y - want).abs().max() / want.abs().max()) <= 1e-3, xb.shape
