"""GEMM kernels' "<name>_w" variant on the GPU (csrc/backend/cuda/exec_cuda.c, wide_choice): on an
NVIDIA device of compute capability 9.0 with the CUDA libraries off every half x @ W^T GEMM whose
K is a multiple of 8 also carries the product on tile 62 (tensor copies + warpgroup MMA), which
the CUDA launch path times against the kernel per shape. TORCHTRT_C_GEMM_WIDE=1 emits it beside
the libraries too (timed against both), =always also takes it wherever it can run, =0 never
emits it. Checked on random inputs of odd sizes: that it really ran (the engine's
counters), that a shape is timed once, and results against float64 / eager (fp16: 2e-2 of
max(|ref|, 1)). A real third-party model (Hugging Face BERT, small config, random weights) runs
with it at batch 8 too. tests/device/test_gemm_wide.py checks its text and arguments on any
device."""
import pytest
import torch
import torchtrt_c
from torchtrt_c import _C

from cudalaunch import clear_knobs, close as _close, launch_call as _call, restore_tf32, why_not

DEV = torch.device("cuda", 0)
pytestmark = pytest.mark.skipif(why_not() is not None or torch.cuda.get_device_capability(0) != (9, 0),
                                reason=str(why_not() or "needs compute capability 9.0"))


@pytest.fixture(autouse=True)
def knobs(monkeypatch):
    old = clear_knobs(monkeypatch)
    yield
    restore_tf32(old)


def _wide_stats(trt):
    from cudalaunch import accs
    from torchtrt_c.runtime import _cuda_launch, _execute
    st = [_cuda_launch.stats(_execute._plan(a.meta, a.engine)) for a in accs(trt)]
    return {k: sum(s[k] for s in st) for k in ("wide_kernels", "wide_calls", "wide_timed", "lib_calls", "calls")}


class Mlp(torch.nn.Module):
    def __init__(self, d, h, o):
        super().__init__()
        self.up, self.down, self.head = torch.nn.Linear(d, h), torch.nn.Linear(h, d), torch.nn.Linear(d, o, bias=False)

    def forward(self, x):
        y = self.down(torch.relu(self.up(x))) + x
        return self.head(y)


@pytest.mark.parametrize("wide", ["always", "auto"])
@pytest.mark.parametrize("shape", [(3, 37, 64, 200, 29), (1, 1, 128, 64, 16), (2, 301, 256, 520, 136)])
def test_mlp(monkeypatch, wide, shape):
    """Linear + bias + ReLU, linear + bias + residual, a linear without bias; the libraries off,
    so that the choice is the kernel's or its "_w"'s."""
    b, t, d, h, o = shape
    monkeypatch.setenv("TORCHTRT_C_GEMM_WIDE", wide)
    monkeypatch.setenv("TORCHTRT_C_CUDA_LIBS", "0")
    torch.manual_seed(sum(shape))
    m = Mlp(d, h, o).half().eval()
    x = torch.randn(b, t, d).half()
    trt = torchtrt_c.compile(m, inputs=[x], enabled_precisions={torch.float16}).to(DEV)
    xd = x.to(DEV)
    got = _call(trt, xd)
    st = _wide_stats(trt)
    assert st["wide_kernels"] == 3, st
    if wide == "always":
        assert st["wide_calls"] >= 3 and st["wide_timed"] == 0, st
    else:
        assert st["wide_timed"] == 3, st          # each shape once
    again = _call(trt, xd)
    assert _wide_stats(trt)["wide_timed"] == st["wide_timed"]
    assert torch.equal(got, again), "a second call differs"
    with torch.no_grad():
        ref = m.double().to(DEV)(xd.double())
    _close(got.double(), ref, 2e-2, f"mlp {shape} wide={wide}")


def test_off_and_odd_k(monkeypatch):
    """=0 emits no "_w"; nor does a K that is not a multiple of 8; nor auto beside the libraries."""
    monkeypatch.setenv("TORCHTRT_C_GEMM_WIDE", "0")
    monkeypatch.setenv("TORCHTRT_C_CUDA_LIBS", "0")
    m = Mlp(64, 200, 29).half().eval()
    x = torch.randn(2, 37, 64).half()
    trt = torchtrt_c.compile(m, inputs=[x], enabled_precisions={torch.float16}).to(DEV)
    _call(trt, x.to(DEV))
    assert _wide_stats(trt)["wide_kernels"] == 0
    monkeypatch.delenv("TORCHTRT_C_GEMM_WIDE")
    m = torch.nn.Linear(203, 70).half().eval()
    x = torch.randn(5, 203).half()
    trt = torchtrt_c.compile(m, inputs=[x], enabled_precisions={torch.float16}).to(DEV)
    got = _call(trt, x.to(DEV))
    assert _wide_stats(trt)["wide_kernels"] == 0
    _close(got.double(), m.double().to(DEV)(x.to(DEV).double()), 2e-2, "linear K = 203")
    monkeypatch.delenv("TORCHTRT_C_CUDA_LIBS")
    m = torch.nn.Linear(208, 70).half().eval()
    x = torch.randn(5, 208).half()
    trt = torchtrt_c.compile(m, inputs=[x], enabled_precisions={torch.float16}).to(DEV)
    _call(trt, x.to(DEV))
    assert _wide_stats(trt)["wide_kernels"] == 0


def test_hf_bert_batch8(monkeypatch):
    """A real model: HF BERT (small config) with input_ids= and attention_mask=, the default
    libraries on, "_w" emitted beside them (timed against the kernel and cuBLAS), then taken
    wherever it can run."""
    transformers = pytest.importorskip("transformers")
    cfg = transformers.BertConfig(vocab_size=512, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=384, max_position_embeddings=128)
    torch.manual_seed(0)
    m = transformers.BertModel(cfg).eval().half()
    ids = torch.randint(0, 512, (8, 77))
    am = torch.ones(8, 77, dtype=torch.long)
    am[3, 50:] = 0
    kw = dict(input_ids=ids.to(DEV), attention_mask=am.to(DEV))
    with torch.no_grad():
        ref = m.to(DEV)(**kw).last_hidden_state
    for wide in ("1", "always"):
        monkeypatch.setenv("TORCHTRT_C_GEMM_WIDE", wide)
        trt = torchtrt_c.compile(m.cpu(), kwarg_inputs=dict(input_ids=ids, attention_mask=am),
                                 enabled_precisions={torch.float16}).to(DEV)
        got = _call(trt, **kw)
        got = got.last_hidden_state if hasattr(got, "last_hidden_state") else got[0]
        st = _wide_stats(trt)
        assert st["wide_kernels"] > 0, st
        if wide == "always":
            assert st["wide_calls"] > 0, st
        _close(got, ref, 2e-2, f"BERT b8 fp16 wide={wide}")
