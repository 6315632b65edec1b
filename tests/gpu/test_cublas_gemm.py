"""cuBLAS GEMMs in the CUDA launch path (csrc/backend/cuda/exec_cuda.c lib steps,
csrc/backend/cuda/exec_cuda_lib.c, csrc/backend/cuda/cublas.c; TORCHTRT_C_CUDA_LIBS).

A GEMM kernel may run as cuBLAS's product written into its output, then the kernel's epilogue
alone ("<kernel>_e") in place. The tests force it (=1), let the engine time each shape (auto)
and turn it off (=0), and check, on random inputs of odd sizes:
- that cuBLAS really ran (the engine's counters) and how often shapes were timed (once each);
- every call of one engine gives the same bits (the first, timed call included; CUDA graph
  replays of cuBLAS calls included);
- results against eager: 2e-3 of max(|ref|, 1) in fp32 with TF32 off (both sides cuBLAS or
  kernels in true fp32), 2e-2 with TF32 on and in fp16 (other summation orders and roundings;
  the epilogue reads the product rounded to the output's dtype).
A real third-party model (Hugging Face BERT, small config, random weights), called with
input_ids= and attention_mask= (one row padded), runs with cuBLAS at batch 8 against eager too.

Needs a CUDA torch, libcuda, libcublas (torch's) and an NVIDIA OpenCL device; skipped elsewhere.
"""
import pytest
import torch

import torchtrt_c
from cudalaunch import clear_knobs, close as _close, launch_call as _call, lib_stats as _stats
from cudalaunch import restore_tf32, torch_graph_replay, why_not

DEV = torch.device("cuda", 0)

pytestmark = pytest.mark.skipif(why_not() is not None, reason=str(why_not()))


@pytest.fixture(autouse=True)
def knobs(monkeypatch):
    old = clear_knobs(monkeypatch)
    yield
    restore_tf32(old)


class Block(torch.nn.Module):
    """Linear + bias + GELU, linear + bias + residual, a batched product of two activations
    (one transposed) and a plain linear without bias: GEMMs with and without epilogues."""

    def __init__(self, d, h):
        super().__init__()
        self.up = torch.nn.Linear(d, h)
        self.down = torch.nn.Linear(h, d)
        self.head = torch.nn.Linear(d, 29, bias=False)

    def forward(self, x):
        y = self.down(torch.nn.functional.gelu(self.up(x))) + x
        a = torch.matmul(y, y.transpose(-1, -2)) * 0.125
        return self.head(torch.matmul(a.softmax(-1), y)), a


CASES = [  # (batch, tokens, width, precision, tf32)
    (3, 37, 48, "fp32", False),
    (8, 129, 96, "fp32", True),
    (2, 65, 64, "fp16", False),
    (8, 128, 256, "fp16", False),
]


@pytest.mark.parametrize("libs", ["1", "auto"])
@pytest.mark.parametrize("b,t,d,prec,tf32", CASES)
def test_block_matches_eager(libs, b, t, d, prec, tf32, monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_CUDA_LIBS", libs)
    torch.backends.cuda.matmul.allow_tf32 = tf32   # the engines follow torch's switch
    torch.manual_seed(b * t + d)
    dt = torch.float16 if prec == "fp16" else torch.float32
    m = Block(d, 2 * d + 3).eval().to(dt)
    x = torch.randn(b, t, d).to(dt)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1, enabled_precisions={dt}).to(DEV)
    xd = x.to(DEV)
    outs = [_call(trt, xd) for _ in range(4)]   # plain, plain (recorded), replays
    st = _stats(trt)
    assert st["lib_kernels"] >= 4, st
    if libs == "1":
        assert st["lib_calls"] >= 4 * 4, st
        assert st["lib_timed"] == 0, st
    else:
        assert 1 <= st["lib_timed"] <= st["lib_kernels"], st
        again = _stats(trt)
        _call(trt, xd)
        assert _stats(trt)["lib_timed"] == again["lib_timed"], "a shape was timed twice"
    for i, o in enumerate(outs[1:], 1):
        for u, v in zip(o, outs[0]):
            assert torch.equal(u, v), f"call {i} differs from the first call"
    with torch.no_grad():
        ref = m.double().to(DEV)(xd.double())
    tol = 2e-2 if (tf32 or dt == torch.float16) else 2e-3
    for u, v, nm in zip(outs[0], ref, ("out", "scores")):
        _close(u, v, tol, f"{nm} ({libs}, {prec}, tf32={tf32}, {b}x{t}x{d})")


def test_off_means_no_cublas(monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_CUDA_LIBS", "0")
    m = Block(32, 67).eval()
    x = torch.randn(4, 33, 32)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1).to(DEV)
    out = _call(trt, x.to(DEV))
    st = _stats(trt)
    assert st["lib_kernels"] == 0 and st["lib_calls"] == 0, st
    with torch.no_grad():
        ref = m.double()(x.double())
    _close(out[0].cpu(), ref[0], 2e-3, "out")


def test_inside_a_torch_cuda_graph(monkeypatch):
    """A caller's torch.cuda.graph records the cuBLAS calls with the kernels (no timing there)."""
    monkeypatch.setenv("TORCHTRT_C_CUDA_LIBS", "auto")
    torch.manual_seed(3)
    m = Block(64, 131).eval().half()
    x = torch.randn(8, 64, 64).half().to(DEV)
    trt = torchtrt_c.compile(m, inputs=[x.cpu()], min_block_size=1, enabled_precisions={torch.float16}).to(DEV)
    want = _call(trt, x)
    got, _graph = torch_graph_replay(trt, x)
    for u, v in zip(got, want):
        assert torch.equal(u, v), "the torch graph's replay differs from a plain call"


@pytest.mark.parametrize("prec", ["fp32", "fp16"])
def test_hf_bert_batch8(prec, monkeypatch):
    transformers = pytest.importorskip("transformers")
    monkeypatch.setenv("TORCHTRT_C_CUDA_LIBS", "1")
    torch.backends.cuda.matmul.allow_tf32 = False
    cfg = transformers.BertConfig(vocab_size=512, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=384, max_position_embeddings=128)
    torch.manual_seed(0)
    m = transformers.BertModel(cfg).eval()
    dt = torch.float16 if prec == "fp16" else torch.float32
    m = m.to(dt)
    ids = torch.randint(0, 512, (8, 77))
    am = torch.ones(8, 77, dtype=torch.long)
    am[3, 50:] = 0                                  # a padded row, as a tokenizer's batch has
    trt = torchtrt_c.compile(m, kwarg_inputs=dict(input_ids=ids, attention_mask=am), enabled_precisions={dt}).to(DEV)
    kw = dict(input_ids=ids.to(DEV), attention_mask=am.to(DEV))
    got = _call(trt, **kw)
    got = got.last_hidden_state if hasattr(got, "last_hidden_state") else got[0]
    assert _stats(trt)["lib_calls"] > 0, _stats(trt)
    with torch.no_grad():
        ref = m.to(DEV)(**kw).last_hidden_state
    _close(got, ref, 2e-2 if dt == torch.float16 else 2e-3, f"BERT b8 {prec}")
