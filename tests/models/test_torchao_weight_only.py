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

    class Logits(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, ids):
            return self.m(input_ids=ids, use_cache=False).logits

    w = Logits(model).eval()
    trt = torchtrt_c.compile(w, inputs=[ids], min_block_size=1)
    ks = kernels_of(trt)
    assert sum(" wq_linear:" in k for k in ks) == 2 * 7 + 1, ks
    assert "_run_on_gpu" not in str(trt.graph)
    with torch.no_grad():
        close(trt(ids), w(ids), 1e-4)
