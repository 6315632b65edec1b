"""Quantized models (issue 35) against torch's own execution of the same quantized model:

- PT2E static int8 (torchao's prepare_pt2e / convert_pt2e with the X86InductorQuantizer, the
  quantizer torch 2.13's torchao has; torch.ao.quantization.quantize_pt2e is gone from torch):
  Q/DQ around convolutions and linears, calibrated; one engine, no torch segment, within 1e-5
  of the largest output magnitude, in both forms the engine takes: int8 kernels (integer
  accumulation, the requantisation scale folded; TORCHTRT_C_QUANT_KERNELS=int8) and Q/DQ as
  elementwise float math around float layers (=dequant); tolerances at TOL;
- torchao's dynamic int8 activations x int8 weights (Int8DynamicActivationInt8WeightConfig):
  per-row scales chosen at run time, aten._int_mm accumulating in int32 (exact: op cases in
  tests/device/op_cases_quant.py); one engine, int8 weights kept int8, within 1e-5;
- PT2E dynamic quantization (a dynamic X86InductorQuantizer, or XNNPACKQuantizer symmetric per
  channel): choose_qparams.tensor picks each activation's scale / zero point at run time and
  quantize/dequantize_per_tensor.tensor use them; all of it runs in the engine (float32 aten ops,
  torchtrt_c/dynamo/_quant.py lower_dynamic_qparams), its integers torch's to the bit; MLP, a
  linear on [2, 7, K], a tiny BERT: one engine, within DYN_TOL;
- accuracy with meaning: a small CNN trained here on scikit-learn's bundled load_digits
  images (8x8, 10 classes; 75/25 split, fixed seed), fp32 vs PT2E int8 top-1 on the held-out
  split, both through our engines. The int8 engine predicts torch's int8 class on >= 99.5%
  of the images and loses at most 2 points of accuracy against the fp32 engine.

torchao and scikit-learn are optional (run.sh installs them): the tests skip without them."""
from __future__ import annotations

import time
import warnings

import pytest
import torch

import torchtrt_c
from models.model_check import segments


def _pt2e(quantizer="x86", dynamic=False):
    """(prepare_pt2e, convert_pt2e, quantizer): "x86": X86InductorQuantizer's default config
    (dynamic: its is_dynamic one); "xnnpack": XNNPACKQuantizer, symmetric, per-channel weights."""
    pytest.importorskip("torchao")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
        if quantizer == "x86":
            from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (
                X86InductorQuantizer, get_default_x86_inductor_quantization_config)
            q = X86InductorQuantizer()
            q.set_global(get_default_x86_inductor_quantization_config(is_dynamic=dynamic))
        else:
            from torchao.testing.pt2e._xnnpack_quantizer import (XNNPACKQuantizer,
                                                                  get_symmetric_quantization_config)
            q = XNNPACKQuantizer()
            q.set_global(get_symmetric_quantization_config(is_per_channel=True, is_dynamic=dynamic))
    return prepare_pt2e, convert_pt2e, q


def quantize_pt2e(model, example, calibration):
    """model's PT2E int8 form: exported with a dynamic batch, calibrated on `calibration`."""
    prepare_pt2e, convert_pt2e, quantizer = _pt2e()
    dyn = ({0: torch.export.Dim("batch", max=4096)},)
    gm = torch.export.export(model.eval(), (example,), dynamic_shapes=dyn).module()
    prepared = prepare_pt2e(gm, quantizer)
    with torch.no_grad():
        for x in calibration:
            prepared(x)
    return convert_pt2e(prepared)


def _kernels(gm):
    """The kernel descriptions of a compiled module's engines ("k1 qconv2d: ...")."""
    from torchtrt_c import _C
    out = []
    for name, mod in gm.named_children():
        if name.startswith("_run_on_acc_"):
            e = _C.Engine.deserialize(bytes(mod.engine.numpy()), cache_dir="")
            out += e.info()["kernels"]
    return out


# "int8": PT2E's layers fold into int8 kernels (TORCHTRT_C_QUANT_KERNELS=int8; the default
# everywhere oneDNN's int8 convolution loads or there are no native steps; on a CPU, oneDNN int8
# native steps: csrc/backend/cpu/native_qconv.c); "dequant": Q/DQ stay elementwise float math
# around float layers (the default on a CPU with native steps but no oneDNN)
MODES = ["int8", "dequant"]
# Against torch's execution of the quantized model, relative to the largest output: dequant
# computes torch's own Q/DQ arithmetic, only float summation orders differ (1e-5). int8 kernels
# accumulate exactly (tests/device/op_cases_quant.py: tol 0 on the accumulator) but fold the
# requantisation scale x_scale * w_scale[c] into one float, which rounds apart from torch's
# two dequantizations by an ulp; where a later quantize_per_tensor sits on a rounding tie that
# moves one value by one quantization step (2.5e-4 of the logits seen on the digits CNN): 1e-3.
TOL = {"dequant": 1e-5, "int8": 1e-3}


def _rel_err(got, want):
    return float((got - want).abs().max() / want.abs().max())


class SmallCNN(torch.nn.Module):
    """Convolutions (one strided, one grouped), ReLU, a pool and two linears: the layers the
    X86 quantizer puts Q/DQ around."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 12, 3, padding=1)
        self.c2 = torch.nn.Conv2d(12, 20, 3, stride=2, padding=1, groups=2)
        self.c3 = torch.nn.Conv2d(20, 24, 1)
        self.fc1 = torch.nn.Linear(24 * 3 * 3, 33)
        self.fc2 = torch.nn.Linear(33, 7)

    def forward(self, x):
        x = torch.relu(self.c1(x))
        x = torch.relu(self.c2(x))
        x = torch.nn.functional.adaptive_avg_pool2d(self.c3(x), 3)
        return self.fc2(torch.relu(self.fc1(x.flatten(1))))


@pytest.mark.parametrize("mode", MODES)
def test_pt2e_static_int8_cnn_is_one_engine_and_matches_torch(mode, monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_QUANT_KERNELS", mode)
    torch.manual_seed(0)
    model = SmallCNN().eval()
    calib = [torch.randn(4, 3, 11, 13) for _ in range(4)]
    qm = quantize_pt2e(model, calib[0], calib)
    ops = {str(n.target) for n in qm.graph.nodes if n.op == "call_function"}
    assert "quantized_decomposed.quantize_per_tensor.default" in ops, ops  # the flow left Q/DQ
    x = torch.randn(3, 3, 11, 13)
    gm = torchtrt_c.compile(qm, inputs=[x], require_full_compilation=True)
    assert segments(gm) == (1, 0)
    kinds = [k.split()[1] for k in _kernels(gm)]
    if mode == "int8":   # every convolution and linear an integer kernel, int8 weights
        assert kinds.count("qconv2d:") == 3 and kinds.count("qgemm:") == 2, kinds
    else:
        assert "qconv2d:" not in kinds and "qgemm:" not in kinds, kinds
        if torchtrt_c._C.native_cpu()["available"]:
            # quantize -> dequantize fuse into the convolutions' native epilogues (rint and
            # the 8-bit casts in C, csrc/backend/cpu/native_epi.c), not OpenCL kernels after them
            convs = [k for k in _kernels(gm) if " conv2d:" in k]
            assert any("quantize_per_tensor" in k for k in convs), convs
            assert all("(native)" in k and "cl-epilogue" not in k for k in convs), convs
    with torch.no_grad():
        want, got = qm(x), gm(x)
    assert _rel_err(got, want) <= TOL[mode]


def _dynamic_int8(model):
    pytest.importorskip("torchao")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torchao.quantization import Int8DynamicActivationInt8WeightConfig, quantize_
        quantize_(model, Int8DynamicActivationInt8WeightConfig())
    return model


@pytest.mark.parametrize("shape", [(5, 48), (2, 7, 48)], ids=["2d", "3d"])
def test_torchao_dynamic_int8_linears_are_one_engine_and_match_torch(shape):
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(48, 80), torch.nn.GELU(), torch.nn.Linear(80, 19)).eval()
    model = _dynamic_int8(model)
    x = torch.randn(*shape)
    gm = torchtrt_c.compile(model, inputs=[x], require_full_compilation=True)
    assert segments(gm) == (1, 0)
    with torch.no_grad():
        want, got = model(x), gm(x)
    assert _rel_err(got, want) <= 1e-5
    x2 = torch.randn(*shape) * 3   # other activations: other per-row scales, chosen in the engine
    with torch.no_grad():
        assert _rel_err(gm(x2), model(x2)) <= 1e-5


class DigitsCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(1, 8, 3, padding=1)
        self.c2 = torch.nn.Conv2d(8, 16, 3, padding=1)
        self.fc = torch.nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = torch.relu(self.c1(x))
        x = torch.nn.functional.max_pool2d(torch.relu(self.c2(x)), 2)
        return self.fc(x.flatten(1))


def digits_split():
    """load_digits as [N, 1, 8, 8] floats in [0, 1], split 75/25 with a fixed seed."""
    datasets = pytest.importorskip("sklearn.datasets")
    d = datasets.load_digits()
    x = torch.tensor(d.images, dtype=torch.float32).unsqueeze(1) / 16.0
    y = torch.tensor(d.target)
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
    n = int(0.75 * len(x))
    return x[perm[:n]], y[perm[:n]], x[perm[n:]], y[perm[n:]]


def train_digits_cnn(xtr, ytr, epochs=6):
    torch.manual_seed(0)
    model = DigitsCNN()
    opt = torch.optim.Adam(model.parameters(), 1e-2)
    g = torch.Generator().manual_seed(1)
    for _ in range(epochs):
        perm = torch.randperm(len(xtr), generator=g)
        for i in range(0, len(xtr), 128):
            idx = perm[i:i + 128]
            loss = torch.nn.functional.cross_entropy(model(xtr[idx]), ytr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return model.eval()


def _top1(logits, y):
    return float((logits.argmax(1) == y).float().mean())


@pytest.mark.parametrize("mode", MODES)
def test_digits_int8_accuracy_through_engines(mode, monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_QUANT_KERNELS", mode)
    xtr, ytr, xte, yte = digits_split()
    _pt2e()
    t0 = time.perf_counter()
    model = train_digits_cnn(xtr, ytr)
    train_s = time.perf_counter() - t0
    qm = quantize_pt2e(model, xtr[:32], [xtr[i:i + 128] for i in range(0, len(xtr), 128)])
    fp32 = torchtrt_c.compile(model, inputs=[xte], require_full_compilation=True)
    int8 = torchtrt_c.compile(qm, inputs=[xte], require_full_compilation=True)
    assert segments(int8) == (1, 0)
    with torch.no_grad():
        out_fp32, out_int8, out_torch_int8 = fp32(xte), int8(xte), qm(xte)
    acc_fp32, acc_int8 = _top1(out_fp32, yte), _top1(out_int8, yte)
    print(f"\ndigits [{mode}] ({len(xtr)} train / {len(xte)} held out, trained in {train_s:.1f} s): top-1 fp32 engine "
          f"{acc_fp32:.4f}, int8 engine {acc_int8:.4f}, int8 torch {_top1(out_torch_int8, yte):.4f}")
    assert acc_fp32 >= 0.9, f"the CNN did not train: {acc_fp32:.3f}"
    agree = float((out_int8.argmax(1) == out_torch_int8.argmax(1)).float().mean())
    assert agree >= 0.995, f"int8 engine and torch's int8 model agree on {agree:.4f} of the images"
    assert _rel_err(out_int8, out_torch_int8) <= TOL[mode]
    assert acc_int8 >= acc_fp32 - 0.02, f"int8 accuracy {acc_int8:.4f} vs fp32 {acc_fp32:.4f}"


def _qd(name, overload="tensor"):
    import torch.ao.quantization.fx._decomposed  # noqa: F401  (registers quantized_decomposed)
    return getattr(getattr(torch.ops.quantized_decomposed, name), overload)


class DynQDQ(torch.nn.Module):
    """choose_qparams(_symmetric).tensor -> quantize -> dequantize_per_tensor.tensor, as
    convert_pt2e leaves a dynamically quantized activation; returns the integers and their
    dequantized values (scale_out: the scale as well, which keeps the op in torch)."""

    def __init__(self, symmetric, dtype, scale_out=False):
        super().__init__()
        self.choose = _qd("choose_qparams_symmetric" if symmetric else "choose_qparams")
        self.dtype, self.scale_out = dtype, scale_out
        self.lo, self.hi = (0, 255) if dtype == torch.uint8 else (-128, 127)

    def forward(self, x):
        s, zp = self.choose(x, self.lo, self.hi, torch.finfo(torch.float32).eps, self.dtype)
        q = _qd("quantize_per_tensor")(x, s, zp, self.lo, self.hi, self.dtype)
        dq = _qd("dequantize_per_tensor")(q, s, zp, self.lo, self.hi, self.dtype)
        return (q, dq, s) if self.scale_out else (q, dq)


def _dyn_inputs(shape, gen):
    n = 1
    for d in shape:
        n *= d
    ties = torch.randint(-200, 311, (n,), generator=gen)
    ties[0], ties[-1] = -200, 310   # min -6.25, max 9.6875: affine scale 1/16, every odd j a tie
    return {
        "randn": torch.randn(shape, generator=gen) * 3,
        "positive": torch.rand(shape, generator=gen) + 0.5,   # min widened to 0: zero point qmin
        "ties": (ties.to(torch.float32) / 32).reshape(shape),
        "tiny": torch.randn(shape, generator=gen) * 1e-6,      # the scale clamped to eps
        "zeros": torch.zeros(shape),
    }


@pytest.mark.parametrize("symmetric", [False, True], ids=["affine", "symmetric"])
@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8], ids=["u8", "s8"])
@pytest.mark.parametrize("shape", [(5, 64), (2, 7, 33), (1, 1), (3, 1, 17)], ids=str)
def test_pt2e_dynamic_qdq_is_torchs_to_the_bit(symmetric, dtype, shape):
    """The run-time scale / zero point and the Q/DQ on them, in the engine, equal torch's: the
    same float32 operations (torch only widens the float32 scale to float64 afterwards), exact
    rounding ties (round half to even) and the eps clamp included. Tolerance 0."""
    m = DynQDQ(symmetric, dtype).eval()
    gen = torch.Generator().manual_seed(7)
    cases = _dyn_inputs(shape, gen)
    gm = torchtrt_c.compile(m, inputs=[cases["randn"]], require_full_compilation=True)
    assert segments(gm) == (1, 0)
    for name, x in cases.items():
        (q, dq), (wq, wdq) = gm(x), m(x)
        assert q.dtype == dtype and torch.equal(q, wq), (name, int((q != wq).sum()))
        assert torch.equal(dq, wdq), name


def test_pt2e_dynamic_qparams_read_elsewhere_stay_in_torch():
    """A run-time scale the graph reads otherwise (here: an output, float64) is not rewritten:
    choose_qparams runs in torch, the result stays torch's."""
    m = DynQDQ(False, torch.uint8, scale_out=True).eval()
    x = torch.randn(4, 9)
    gm = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    assert segments(gm)[1] >= 1
    for a, b in zip(gm(x), m(x)):
        assert a.dtype == b.dtype and torch.equal(a, b)


def _pt2e_dynamic(model, args, quantizer, dynamic_shapes=None, kwargs=None):
    """model quantized with PT2E and a dynamic quantizer (_pt2e's), exported at args / kwargs
    (also bench/quant_dynamic.py's)."""
    prepare_pt2e, convert_pt2e, q = _pt2e(quantizer, dynamic=True)
    kwargs = kwargs or {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gm = torch.export.export(model.eval(), args, kwargs, dynamic_shapes=dynamic_shapes).module()
        prepared = prepare_pt2e(gm, q)
        with torch.no_grad():
            prepared(*args, **kwargs)
        qm = convert_pt2e(prepared)
    ops = [str(n.target) for n in qm.graph.nodes if n.op == "call_function"]
    assert "quantized_decomposed.choose_qparams.tensor" in ops, sorted(set(ops))   # the flow was dynamic
    return qm


# Engine vs torch on the same PT2E-dynamic model. Q/DQ are torch's to the bit given the same
# float input (test_pt2e_dynamic_qdq_is_torchs_to_the_bit), but the float layers between them
# sum in another order: an ulp at a later choose_qparams' input can move its min/max (so its
# scale) by an ulp, or put a value on the other side of a rounding tie; either moves that int8
# value by one quantization step, and the outputs after it by that step times its weights
# (1.7e-4 of 3.5 seen on the tiny BERT, against 5e-3 of quantization error vs fp32). Bounds:
# at most DYN_TOL of the largest output anywhere, and at most DYN_OFF of the outputs further
# than 1e-5 of it from torch's (float summation order alone).
DYN_TOL, DYN_OFF = 1e-3, 0.02


def _check_dynamic(gm, qm, args):
    with torch.no_grad():
        got, want = gm(*args), qm(*args)
    got, want = (torch.cat([t.flatten() for t in v]) if isinstance(v, (tuple, list)) else v.flatten()
                 for v in (got, want))
    scale = float(want.abs().max())
    err = (got - want).abs()
    off = float((err > 1e-5 * scale).float().mean())
    print(f" max {float(err.max()) / scale:.2e} of the largest output, {off:.4f} of the outputs off by > 1e-5")
    assert float(err.max()) <= DYN_TOL * scale and off <= DYN_OFF


@pytest.mark.parametrize("quantizer", ["x86", "xnnpack"])
@pytest.mark.parametrize("shape", [(5, 64), (1, 64), (13, 64), (2, 7, 64), (2, 7, 37)], ids=str)
def test_pt2e_dynamic_linears_are_one_engine_and_match_torch(quantizer, shape):
    torch.manual_seed(3)
    k = shape[-1]
    if len(shape) == 2:
        model = torch.nn.Sequential(torch.nn.Linear(k, 48), torch.nn.ReLU(), torch.nn.Linear(48, 10))
    else:   # one linear on a 3-d input
        model = torch.nn.Sequential(torch.nn.Linear(k, 19))
    x = torch.randn(*shape)
    qm = _pt2e_dynamic(model, (x,), quantizer)
    gm = torchtrt_c.compile(qm, inputs=[x], require_full_compilation=True)
    assert segments(gm) == (1, 0)
    _check_dynamic(gm, qm, (x,))
    _check_dynamic(gm, qm, (torch.randn(*shape) * 5 + 1,))   # other run-time scales and zero points


class _Bert(torch.nn.Module):
    def __init__(self):
        super().__init__()
        from transformers import BertConfig, BertModel
        cfg = BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
                         vocab_size=500, max_position_embeddings=64)
        self.bert = BertModel(cfg)

    def forward(self, ids, mask=None):
        o = self.bert(input_ids=ids, attention_mask=mask)
        return o.last_hidden_state, o.pooler_output   # the pooler used, else the X86 quantizer trips on it


@pytest.mark.parametrize("quantizer", ["x86", "xnnpack"])
@pytest.mark.parametrize("bs", [(2, 13), (1, 7), (3, 29)], ids=str)
def test_pt2e_dynamic_tiny_bert_is_one_engine_and_matches_torch(quantizer, bs):
    pytest.importorskip("transformers")
    torch.manual_seed(0)
    model = _Bert().eval()
    g = torch.Generator().manual_seed(bs[1])
    ids, mask = torch.randint(3, 500, bs, generator=g), torch.ones(bs, dtype=torch.long)
    if bs[0] > 1:
        mask[-1, -(bs[1] // 3):] = 0   # a padded row
    # XNNPACK's prepare_pt2e breaks BERT's attention-mask path in torch itself (an aten.index
    # of float indices when the prepared model runs): no mask there
    args = (ids, mask) if quantizer == "x86" else (ids,)
    qm = _pt2e_dynamic(model, args, quantizer)
    gm = torchtrt_c.compile(qm, inputs=list(args), require_full_compilation=True)
    assert segments(gm) == (1, 0)
    _check_dynamic(gm, qm, args)
    _check_dynamic(gm, qm, (torch.randint(3, 500, bs, generator=g),) + args[1:])


def test_pt2e_dynamic_mlp_dynamic_batch():
    """Exported with a dynamic batch, compiled for a range: the run-time qparams over a
    symbolic number of rows, checked at batch sizes across it."""
    torch.manual_seed(4)
    model = torch.nn.Sequential(torch.nn.Linear(40, 24), torch.nn.ReLU(), torch.nn.Linear(24, 7))
    x = torch.randn(5, 40)
    qm = _pt2e_dynamic(model, (x,), "x86", dynamic_shapes=({0: torch.export.Dim("batch", max=4096)},))
    spec = torchtrt_c.Input(min_shape=(1, 40), opt_shape=(5, 40), max_shape=(32, 40))
    gm = torchtrt_c.compile(qm, inputs=[spec], require_full_compilation=True)
    assert segments(gm) == (1, 0)
    for b in (1, 5, 17, 32):
        _check_dynamic(gm, qm, (torch.randn(b, 40) * 2,))


def _pt2e_static(model, args, quantizer, dynamic_shapes=None, calib=()):
    """model quantized with PT2E and a static quantizer (_pt2e's), calibrated on args and calib."""
    prepare_pt2e, convert_pt2e, q = _pt2e(quantizer)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gm = torch.export.export(model.eval(), args, dynamic_shapes=dynamic_shapes).module()
        prepared = prepare_pt2e(gm, q)
        with torch.no_grad():
            for a in (args,) + tuple(calib):
                prepared(*a)
        return convert_pt2e(prepared)


@pytest.mark.parametrize("quantizer", ["x86", "xnnpack"])
@pytest.mark.parametrize("shape", [(2, 7, 37), (3, 2, 5, 37), (1, 1, 37)], ids=str)
def test_pt2e_static_linears_over_rows_of_more_dims(quantizer, shape, monkeypatch):
    """A static int8 linear over [.., K] rows (a transformer's [B, S, K]) folds into the int8
    layer as over [M, K] (a view of the rows, the result viewed back): one engine, int8 layers
    only, exported and compiled with a dynamic first dim and checked across it."""
    monkeypatch.setenv("TORCHTRT_C_QUANT_KERNELS", "int8")
    torch.manual_seed(5)
    model = torch.nn.Sequential(torch.nn.Linear(37, 29), torch.nn.ReLU(), torch.nn.Linear(29, 11))
    x = torch.randn(2, *shape[1:])   # (an example batch of 1 would specialise the dynamic dim)
    dyn = ({0: torch.export.Dim("batch", max=64)},)
    qm = _pt2e_static(model, (x,), quantizer, dyn, calib=[(torch.randn(4, *shape[1:]),)])
    spec = torchtrt_c.Input(min_shape=(1,) + shape[1:], opt_shape=shape, max_shape=(9,) + shape[1:])
    gm = torchtrt_c.compile(qm, inputs=[spec], require_full_compilation=True)
    assert segments(gm) == (1, 0)
    ks = _kernels(gm)
    assert sum(" qgemm:" in k for k in ks) == 2 and not any(" gemm:" in k for k in ks), ks
    for b in (shape[0], 1, 9):
        xb = torch.randn(b, *shape[1:])
        with torch.no_grad():
            got, want = gm(xb), qm(xb)
        assert got.shape == want.shape
        assert _rel_err(got, want) <= TOL["int8"], _rel_err(got, want)


def test_pt2e_static_tiny_bert_linears_int8(monkeypatch):
    """transformers' BertModel (tiny config) under XNNPACK's static quantizer: every linear of
    its [B, S, H] rows (q, k, v, output, FFN up and down: 6 a layer) an int8 layer of the one
    engine; the hidden states within the int8 tolerance of torch's execution of the model."""
    pytest.importorskip("transformers")
    monkeypatch.setenv("TORCHTRT_C_QUANT_KERNELS", "int8")
    torch.manual_seed(0)
    model = _Bert().eval()
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, 500, (2, 13), generator=g)
    qm = _pt2e_static(model, (ids,), "xnnpack", calib=[(torch.randint(3, 500, (2, 13), generator=g),)])
    gm = torchtrt_c.compile(qm, inputs=[ids], require_full_compilation=True)
    assert segments(gm) == (1, 0)
    ks = _kernels(gm)
    assert sum(" qgemm:" in k for k in ks) >= 12 and not any(" gemm:" in k for k in ks), ks
    for x in (ids, torch.randint(3, 500, (2, 13), generator=g)):
        with torch.no_grad():
            (h, p), (wh, wp) = gm(x), qm(x)
        err = max(_rel_err(h, wh), _rel_err(p, wp))
        print(f" max {err:.2e} of the largest output")
        assert err <= TOL["int8"], err
