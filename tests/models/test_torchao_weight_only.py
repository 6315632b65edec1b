"""torchao's weight-only quantization (issue 35) compiled by torchtrt_c: the quantized linears
run in the engine as torchtrt_c.wq_linear on the int8/int4 weights (no torch segment, no GEMM on
dequantized float weights), against torch's own execution of the same quantized model.

Configurations: Int8WeightOnlyConfig (per channel), IntxWeightOnlyConfig with int4 groups and
int8 per channel (torchao's CPU int4 weight-only: its Int4WeightOnlyConfig needs CUDA kernels,
the mslk package, and is tried where it runs). Models: an MLP with 3-D inputs, and an HF Llama
(tiny config, random weights) whose every linear layer torchao quantized.
Tolerance: max |engine - torch| <= 1e-4 of the output's scale in fp32 (the same dequantized
values, summed in another order); fp16 activations 2e-2."""
import pytest
import torch

import torchtrt_c
import torchtrt_c._C as C
from zoo import Logits, record_compiles

ao = pytest.importorskip("torchao", reason="torchao is not installed (run.sh install_model_libs)")
from torchao.quantization import quantize_  # noqa: E402


def configs():
    from torchao.quantization import Int8WeightOnlyConfig, IntxWeightOnlyConfig
    from torchao.quantization.granularity import PerAxis, PerGroup
    return {
        "int8_weight_only": lambda: Int8WeightOnlyConfig(),
        "intx_int4_g32": lambda: IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(32)),
        "intx_int8_channel": lambda: IntxWeightOnlyConfig(weight_dtype=torch.int8, granularity=PerAxis(0)),
    }


def kernels_of(trt):
    out = []
    for name, mod in trt.named_children():
        if name.startswith("_run_on_acc"):
            eng = C.Engine.deserialize(bytes(mod.engine.numpy()), cache_dir="")
            out += eng.info()["kernels"]
    return out


def close(y, ref, tol):
    scale = ref.abs().max().item() + 1e-6
    err = (y.float() - ref.float()).abs().max().item() / scale
    assert err <= tol, (err, tol)


def mlp(dtype=torch.float32):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(256, 96), torch.nn.ReLU(), torch.nn.Linear(96, 64, bias=False),
                               torch.nn.SiLU(), torch.nn.Linear(64, 24)).eval().to(dtype)


@pytest.mark.parametrize("cfg", ["int8_weight_only", "intx_int4_g32", "intx_int8_channel"])
def test_mlp(cfg):
    m = mlp()
    quantize_(m, configs()[cfg]())
    x = torch.randn(3, 7, 256)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    ks = kernels_of(trt)
    assert sum(" wq_linear:" in k for k in ks) == 3 and not any(" gemm:" in k for k in ks), ks
    assert "_run_on_gpu" not in str(trt.graph)
    with torch.no_grad():
        close(trt(x), m(x), 1e-4)


def test_mlp_fp16_activations():
    m = mlp(torch.float16)
    quantize_(m, configs()["intx_int4_g32"]())
    x = torch.randn(5, 256, dtype=torch.float16)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1, enabled_precisions={torch.float16})
    assert sum(" wq_linear:" in k for k in kernels_of(trt)) == 3
    with torch.no_grad():
        y = trt(x)
        assert y.dtype == torch.float16
        close(y, m(x), 2e-2)


def test_int4_weight_only_config_where_it_runs():
    from torchao.quantization import Int4WeightOnlyConfig
    m = mlp()
    try:
        quantize_(m, Int4WeightOnlyConfig(group_size=32))
        m(torch.randn(2, 256))
    except (ImportError, NotImplementedError, AssertionError, RuntimeError) as e:
        pytest.skip(f"torchao's Int4WeightOnlyConfig does not run here: {type(e).__name__}: {e}")
    x = torch.randn(2, 256)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    with torch.no_grad():
        close(trt(x), m(x), 1e-3)


@pytest.mark.parametrize("cfg", ["int8_weight_only", "intx_int4_g32"])
def test_hf_llama(cfg):
    """Every linear of a tiny Llama quantized by torchao: one engine, 7 wq_linear kernels a layer
    (q, k, v, o, gate, up, down) and the LM head, logits as torch's."""
    transformers = pytest.importorskip("transformers")
    cfgm = transformers.LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfgm).eval()
    quantize_(model, configs()[cfg]())
    ids = torch.randint(0, 256, (1, 12))

    w = Logits(model).eval()
    trt = torchtrt_c.compile(w, inputs=[ids], min_block_size=1)
    ks = kernels_of(trt)
    assert sum(" wq_linear:" in k for k in ks) == 2 * 7 + 1, ks
    assert "_run_on_gpu" not in str(trt.graph)
    with torch.no_grad():
        close(trt(ids), w(ids), 1e-4)


def more_configs():
    """torchao's other integer configurations that run on the CPU: weight-only int2/int3/int5 and
    asymmetric int4 (IntxWeightOnlyConfig), and int8 dynamic activations with int4/int8 weights
    (Int8DynamicActivationIntxWeightConfig: torch.export leaves the activation's
    choose_qparams/quantize/dequantize in the graph, the weight as a dequantize_affine)."""
    from torchao.quantization import Int8DynamicActivationIntxWeightConfig, IntxWeightOnlyConfig, MappingType
    from torchao.quantization.granularity import PerAxis, PerGroup
    return {
        "intx_int2_g32": lambda: IntxWeightOnlyConfig(weight_dtype=torch.int2, granularity=PerGroup(32)),
        "intx_int3_g32": lambda: IntxWeightOnlyConfig(weight_dtype=torch.int3, granularity=PerGroup(32)),
        "intx_int5_channel": lambda: IntxWeightOnlyConfig(weight_dtype=torch.int5, granularity=PerAxis(0)),
        "intx_int4_g32_asym": lambda: IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(32),
                                                           mapping_type=MappingType.ASYMMETRIC),
        "dyn8_int4_g32": lambda: Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int4,
                                                                       weight_granularity=PerGroup(32)),
        "dyn8_int8_channel": lambda: Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int8,
                                                                           weight_granularity=PerAxis(0)),
    }


@pytest.mark.parametrize("shape", [(3, 7, 256), (5, 256)])
@pytest.mark.parametrize("cfg", sorted(more_configs()))
def test_more_integer_configs(cfg, shape):
    """One quantized linear (97 outputs, bias): a wq_linear kernel, no float GEMM, no torch
    segment. Tolerance: the CPU's VNNI loop takes x as int16 steps of max|x| / 32767 a row, so an
    output may move by max|x| / 65534 * sum_k |W[n, k]| (W dequantized) beyond float rounding
    (1e-5 of the output's scale); the other loops and the GPU kernels stay within the latter."""
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(256, 97)).eval()
    quantize_(m, more_configs()[cfg]())
    x = torch.randn(*shape)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    ks = kernels_of(trt)
    assert sum(" wq_linear:" in k for k in ks) == 1 and not any(" gemm:" in k for k in ks), ks
    assert "_run_on_gpu" not in str(trt.graph)
    with torch.no_grad():
        y, ref = trt(x), m(x)
        w = m[0].weight.dequantize().float()
    xmax = x.abs().amax(dim=-1, keepdim=True) * 1.05   # (a dequantized activation's steps: <= 5%)
    bound = xmax / 65534 * w.abs().sum(dim=1) + 1e-5 * ref.abs().max()
    assert bool(((y - ref).abs() <= bound).all()), ((y - ref).abs() / bound).max().item()


def _float8_weight_only(m):
    from torchao.quantization import Float8WeightOnlyConfig
    try:
        quantize_(m, Float8WeightOnlyConfig())
    except (ImportError, NotImplementedError, AssertionError, RuntimeError) as e:
        pytest.skip(f"torchao's Float8WeightOnlyConfig does not run here: {type(e).__name__}: {e}")
    return m


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.float16, 2e-3), (torch.bfloat16, 1.6e-2)])
def test_float8_weight_only(dtype, tol):
    """Float8WeightOnlyConfig (float8_e4m3fn weights, a scale a row): the weights' dequantization
    (float8 -> float times the scale, all on constants) folds at compile time into a float weight,
    so the layers run as the engine's float GEMMs; no torch segment. Tolerance: fp32 the same
    values summed in another order; fp16/bf16 a few roundings of the output dtype."""
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(256, 97), torch.nn.GELU(), torch.nn.Linear(97, 33)).eval().to(dtype)
    _float8_weight_only(m)
    for shape in [(5, 256), (2, 3, 256)]:
        x = torch.randn(*shape, dtype=dtype)
        trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1, enabled_precisions={dtype})
        assert "_run_on_gpu" not in str(trt.graph)
        with torch.no_grad():
            y = trt(x)
            assert y.dtype == dtype
            close(y, m(x), tol)


def test_float8_weight_only_llama_torch_compile(monkeypatch):
    """A tiny HF Llama under Float8WeightOnlyConfig through torch.compile(backend="torchtrt_c"),
    called with input_ids= as users call it: one engine, no torch segment, logits as torch's
    (fp32, 1e-5)."""
    transformers = pytest.importorskip("transformers")
    calls = record_compiles(monkeypatch)
    cfgm = transformers.LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    torch.manual_seed(0)
    model = _float8_weight_only(transformers.LlamaForCausalLM(cfgm).eval())
    ids = torch.randint(0, 256, (1, 12))
    torch._dynamo.reset()
    tc = torch.compile(model, backend="torchtrt_c")
    with torch.no_grad():
        close(tc(input_ids=ids).logits, model(input_ids=ids).logits, 1e-5)
    assert len(calls) == 1, calls
    assert [n for n, _ in calls[0][2].named_children()] == ["_run_on_acc_0"]
