"""torch.jit.trace over a compiled module records the engine op (torchtrt_c::execute_engine),
not the direct call's torch.empty outputs: the traced module gives eager's answers on new inputs,
also after torch.jit.save / torch.jit.load. (Before: the direct path ran under the tracer and the
trace kept only the outputs' allocation: garbage on the next call.)"""
import io

import torch

import torchtrt_c


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(9, 7), torch.nn.ReLU(), torch.nn.Linear(7, 5)).eval()


def test_traced_compiled_module_runs_the_engine(tmp_path):
    m = _model()
    x = torch.randn(3, 9)
    c = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    c(x)  # the fast paths are taken before tracing
    t = torch.jit.trace(c, x)
    assert "torchtrt_c::execute_engine" in str(t.inlined_graph)
    for _ in range(3):
        y = torch.randn(3, 9)
        err = (t(y) - m(y)).abs().max().item()
        assert err < 1e-5, err
    buf = io.BytesIO()
    torch.jit.save(t, buf)
    buf.seek(0)
    t2 = torch.jit.load(buf)
    y = torch.randn(3, 9)
    assert (t2(y) - m(y)).abs().max().item() < 1e-5


def test_traced_engine_module_alone():
    m = _model()
    x = torch.randn(4, 9)
    c = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    eng = next(mod for name, mod in c.named_children() if name.startswith("_run_on_acc"))
    t = torch.jit.trace(eng, (x,))
    y = torch.randn(4, 9)
    out = t(y)
    out = out[0] if isinstance(out, (tuple, list)) else out
    assert (out - m(y)).abs().max().item() < 1e-5
