"""CUDA graphs in the CUDA launch path (csrc/backend/cuda/exec_cuda.c, TORCHTRT_C_CUDA_GRAPHS): the
second call with the same pointers and shapes records the engine's launches as a graph, later
ones replay it. Replays read the inputs as they are at replay time (values changed in place are
seen), keys that differ (other tensors, other shapes) are right too, the caller's stream orders
them, and a caller that records a torch.cuda graph around the module gets plain launches in
its graph. A replay runs the same PTX with the same arguments as the engine's plain launch:
the tests ask for the same bits between them (tolerance 0), 1e-5 of max(|ref|, 1) against an
engine built without graphs (its tuning may pick other kernels) and 2e-3 against eager fp32
(TF32 off).

Needs a CUDA torch, libcuda with the graph API and an NVIDIA OpenCL device; skipped elsewhere.
"""
import pytest
import torch

import torchtrt_c
from torchtrt_c import runtime
from torchtrt_c.runtime import _cuda_launch, _execute
from cudalaunch import why_not

DEV = torch.device("cuda", 0)


pytestmark = pytest.mark.skipif(why_not() is not None, reason=str(why_not()))


@pytest.fixture(autouse=True)
def exact_eager(monkeypatch):
    for v in ("TORCHTRT_C_CUDA_LAUNCH", "TORCHTRT_C_CUDA_GRAPHS"):
        monkeypatch.delenv(v, raising=False)
    # the engines' own kernels: the launch counts below compare two engines call for call, and
    # the first call that times a GEMM shape against cuBLAS launches more (test_cublas_gemm.py)
    monkeypatch.setenv("TORCHTRT_C_CUDA_LIBS", "0")
    old = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = old


class Net(torch.nn.Module):
    """A dozen kernels: convolutions, a residual, a pool and a linear."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.c2 = torch.nn.Conv2d(16, 16, 3, padding=1)
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x):
        y = torch.relu(self.c1(x))
        y = torch.relu(self.c2(y) + y)
        return self.fc(y.mean((2, 3)))


def _compile(m, x, monkeypatch, graphs=None, **kw):
    if graphs is not None:
        monkeypatch.setenv("TORCHTRT_C_CUDA_GRAPHS", graphs)   # read when the engine is made
    try:
        return torchtrt_c.compile(m, inputs=[x], min_block_size=1, **kw).to(DEV)
    finally:
        monkeypatch.delenv("TORCHTRT_C_CUDA_GRAPHS", raising=False)


def _stats(trt):
    (acc,) = [mod for n, mod in trt.named_children() if n.startswith("_run_on_acc_")]
    return _cuda_launch.stats(_execute._plan(acc.meta, acc.engine))


def _call(trt, x):
    with torch.inference_mode():
        out = trt(x)
    assert runtime.cuda_path()["path"] == "launch", runtime.cuda_path()
    return out


def _close(a, b, tol, what):
    err = (a.float() - b.float()).abs().max().item()
    scale = max(b.float().abs().max().item(), 1.0)
    assert err <= tol * scale, f"{what}: max abs difference {err:.3g} (scale {scale:.3g}, tol {tol})"


def test_replays_see_new_values_and_match_plain_launches(monkeypatch):
    torch.manual_seed(0)
    m = Net().eval()
    x = torch.randn(2, 3, 13, 11)
    trt = _compile(m, x, monkeypatch)
    plain = _compile(m, x, monkeypatch, graphs="0")
    md = m.to(DEV)
    xd = torch.zeros(2, 3, 13, 11, device=DEV)
    first = torch.randn(2, 3, 13, 11, device=DEV)
    xd.copy_(first)
    first_out = _call(trt, xd).clone()             # a plain launch: the key's first sight
    outs = []
    for i in range(12):
        xd.copy_(torch.randn(2, 3, 13, 11, device=DEV))    # same pointer, new values
        out = _call(trt, xd)
        ref = _call(plain, xd)
        with torch.no_grad():
            _close(out, md(xd), 2e-3, f"call {i} against eager")
        # two engines built apart may tune to other kernels: close, not the same bits
        _close(out, ref, 1e-5, f"call {i} against the engine without graphs")
        outs.append(out)
        if len(outs) > 1:
            outs.pop(0)    # keep one output alive: output pointers alternate, as in a loop
    st, sp = _stats(trt), _stats(plain)
    assert st["graph_slots"] > 0 and sp["graph_slots"] == 0, (st, sp)
    assert sp["graph_calls"] == 0 and sp["graphs_recorded"] == 0, sp
    assert st["graphs_recorded"] >= 1 and st["graph_calls"] >= 6, st
    assert st["graph_calls"] + st["graphs_recorded"] <= st["calls"], st
    # every call's kernels are counted, recorded or replayed (trt had one call more: first_out)
    assert st["launches"] * sp["calls"] == sp["launches"] * st["calls"], (st, sp)
    # the same engine, the same values: a replay gives the plain launch's bits
    xd.copy_(first)
    for _ in range(3):
        again = _call(trt, xd)
        assert torch.equal(again, first_out), "a replay differs from the plain launch of the same engine"
    assert _stats(trt)["graph_calls"] > st["graph_calls"], _stats(trt)


def test_other_tensors_and_shapes(monkeypatch):
    torch.manual_seed(1)
    m = Net().eval()
    spec = torchtrt_c.Input(min_shape=(1, 3, 8, 8), opt_shape=(2, 3, 12, 12), max_shape=(4, 3, 16, 16),
                            dtype=torch.float32)
    trt = torchtrt_c.compile(m, inputs=[spec], min_block_size=1).to(DEV)
    md = m.to(DEV)
    xs = [torch.randn(b, 3, h, w, device=DEV) for b, h, w in ((1, 8, 8), (4, 16, 16), (3, 9, 13), (2, 12, 12))]
    for rnd in range(4):
        for j, x in enumerate(xs):
            out = _call(trt, x)
            with torch.no_grad():
                _close(out, md(x), 2e-3, f"round {rnd}, input {j} {tuple(x.shape)}")
    st = _stats(trt)
    assert st["graph_calls"] >= 1, st


def test_side_stream_orders_replays(monkeypatch):
    torch.manual_seed(2)
    m = Net().eval()
    x = torch.randn(2, 3, 20, 20)
    trt = _compile(m, x, monkeypatch)
    md = m.to(DEV)
    xd = torch.zeros(2, 3, 20, 20, device=DEV)
    s = torch.cuda.Stream(DEV)
    with torch.cuda.stream(s):
        for _ in range(4):               # recorded and replayed on s
            keep = _call(trt, xd)
    s.synchronize()
    assert _stats(trt)["graph_calls"] >= 1, _stats(trt)
    new = torch.randn(2, 3, 20, 20, device=DEV)
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        torch.cuda._sleep(20_000_000)   # keeps s busy for milliseconds
        xd.copy_(new)
        out = _call(trt, xd)
        doubled = out * 2
    s.synchronize()
    with torch.no_grad():
        ref = md(new)
    _close(out, ref, 2e-3, "replay on a side stream after a slow producer")
    _close(doubled, ref * 2, 2e-3, "consumer on the side stream")
    del keep


def test_inside_a_torch_cuda_graph(monkeypatch):
    """torch.cuda.graph records the module's launches (plain ones: the stream is being recorded);
    replaying torch's graph recomputes from the static input."""
    torch.manual_seed(3)
    m = Net().eval()
    x = torch.randn(2, 3, 10, 10)
    trt = _compile(m, x, monkeypatch)
    md = m.to(DEV)
    static_x = torch.randn(2, 3, 10, 10, device=DEV)
    s = torch.cuda.Stream(DEV)
    s.wait_stream(torch.cuda.current_stream(DEV))
    with torch.cuda.stream(s):
        for _ in range(3):
            _call(trt, static_x)         # warm-up outside the recording, as torch asks
        # the key torch's recording will use (its pool hands out these blocks again, or not):
        # whether or not our graph for it exists, the recording must get plain launches
        for _ in range(3):
            _call(trt, static_x)
    torch.cuda.current_stream(DEV).wait_stream(s)
    before = _stats(trt)["graphs_recorded"]
    g = torch.cuda.CUDAGraph()
    # thread_local: in torch's default (global) mode any other thread's CUDA call that may not
    # run during a recording breaks it, and an OpenCL driver on CUDA (NVIDIA's) makes such calls
    # for whatever else the process builds or runs meanwhile
    with torch.inference_mode(), torch.cuda.graph(g, capture_error_mode="thread_local"):
        static_out = trt(static_x)
    assert _stats(trt)["graphs_recorded"] == before, "recorded a graph of our own inside torch's"
    for i in range(3):
        static_x.copy_(torch.randn(2, 3, 10, 10, device=DEV))
        g.replay()
        torch.cuda.synchronize()
        with torch.no_grad():
            _close(static_out, md(static_x), 2e-3, f"torch graph replay {i}")


def test_index_checking_engine_replays_and_still_reports(monkeypatch):
    """An embedding checks its indices: its graph records the error flag's reset with the
    kernels; a bad index in a tensor whose pointer and shape have a graph is still reported,
    and the next good call is right."""
    torch.manual_seed(4)

    class Emb(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.e = torch.nn.Embedding(10, 4)
            self.fc = torch.nn.Linear(4, 3)

        def forward(self, i):
            return self.fc(self.e(i) * 2)

    m = Emb().eval()
    i = torch.tensor([[1, 2, 9]])
    trt = _compile(m, i, monkeypatch)
    md = m.to(DEV)
    idx = i.to(DEV)
    for _ in range(4):
        out = _call(trt, idx)
        with torch.no_grad():
            _close(out, md(idx), 1e-5, "embedding")
    st = _stats(trt)
    if not st["flag_reads"]:
        pytest.skip("this engine checks no indices")
    assert st["graph_calls"] >= 1, st
    idx.copy_(torch.tensor([[1, 12, 3]], device=DEV))     # same pointer: the graph replays
    with pytest.raises(torchtrt_c.InputError, match="index out of range"):
        with torch.inference_mode():
            trt(idx)
    idx.copy_(torch.tensor([[4, 0, 7]], device=DEV))
    out = _call(trt, idx)
    with torch.no_grad():
        _close(out, md(idx), 1e-5, "embedding after an index error")
    assert _stats(trt)["graph_calls"] > st["graph_calls"], _stats(trt)
