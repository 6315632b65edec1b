"""Issue 11 (converters A) checks beyond the op harness (test_op_harness.py runs the cases of
op_cases_elementwise.py and op_cases_decomp.py): the stated reason of ops that stay with
torch, creation ops and masks over a dynamic dim, and sym_numel."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

import op_cases_elementwise as cases_mod  # noqa: E402


def _partition_reasons(fn, *inputs):
    import torchtrt_c

    class M(torch.nn.Module):
        def forward(self, *a):
            return fn(*a)

    trt = torchtrt_c.compile(M().eval(), arg_inputs=list(inputs), min_block_size=1)
    with torch.no_grad():
        got, ref = trt(*inputs), fn(*inputs)
    return trt, got, ref


def test_nonzero_reason_in_report(capsys):
    """nonzero stays with torch; the dry-run report names it with the reason (resize_ is
    functionalised away by export: tests/unit/test_fallback_reasons.py checks it on the IR)."""
    import torchtrt_c

    class M(torch.nn.Module):
        def forward(self, x):
            return torch.nonzero(x * 2.0 > 0.5)

    torchtrt_c.compile(M().eval(), arg_inputs=[torch.rand(3, 5)], min_block_size=1, dryrun=True)
    out = capsys.readouterr().out
    op = "aten.nonzero.default"
    line = [ln for ln in out.splitlines() if op in ln and "x1:" in ln]
    assert line, f"{op} not in the dry-run report:\n{out}"
    assert cases_mod.FALLBACKS[op] in line[0], f"reason missing for {op}: {line[0]}"


def test_nonzero_runs_through_torch():
    """The compiled module still computes nonzero (in a torch segment) and matches eager."""
    x = torch.rand(4, 7)
    trt, got, ref = _partition_reasons(lambda t: torch.nonzero(t * 2.0 > 0.7), x)
    assert any(n.startswith("_run_on_gpu_") for n, _ in trt.named_children())
    assert torch.equal(got, ref)


def test_dynamic_creation_and_masks():
    """arange / full / zeros / ones with sizes from a dynamic dim, a causal mask built from
    aranges, and cumsum along the dynamic dim: one engine, equal to eager at every length."""
    import torchtrt_c

    class M(torch.nn.Module):
        def forward(self, x):
            b, s = x.shape
            pos = torch.arange(s)
            causal = torch.arange(s)[:, None] >= torch.arange(s)[None, :]
            mask = torch.where(causal, 0.0, float("-inf")) + torch.zeros(s, s)
            full = torch.full((b, s), 0.5)
            ids = torch.ones(b, s, dtype=torch.long).cumsum(-1) - 1
            odd = torch.arange(1, 2 * s + 1, 2)
            return x + pos * full, mask, ids, odd

    m = M().eval()
    trt = torchtrt_c.compile(m, arg_inputs=[torchtrt_c.Input(min_shape=(2, 2), opt_shape=(2, 7), max_shape=(2, 16))],
                             min_block_size=1)
    kids = [n for n, _ in trt.named_children()]
    assert not [k for k in kids if k.startswith("_run_on_gpu_")], kids
    for s in (2, 7, 11, 16):
        x = torch.rand(2, s)
        with torch.no_grad():
            got, ref = trt(x), m(x)
        for i, (a, r) in enumerate(zip(got, ref)):
            assert a.dtype == r.dtype and a.shape == r.shape, (s, i, a.dtype, r.dtype, a.shape, r.shape)
            assert torch.equal(a, r) if not a.is_floating_point() else torch.allclose(a, r, atol=1e-6), (s, i)


def test_sym_numel_feeds_a_view():
    """aten.sym_numel of a static tensor evaluates to its element count at build time."""
    import numpy as np
    from torchtrt_c import _C

    g = _C.Graph.parse("""graph(%x : Float(3, 5)):
  %n : int = aten.sym_numel.default(%x)
  %l : int[] = prim.ListConstruct(%n)
  %v : Float(15) = aten.view.default(%x, %l)
  %y : Float(15) = aten.mul.Tensor(%v, %v)
  return (%y)
""")
    assert g.partition({"min_block_size": 1})["nodes"]["n"]["target"] == "opencl"
    e = _C.Engine.build(g, name="sym_numel", precision="fp32", cache_dir="")
    x = torch.rand(3, 5)
    out = np.empty((15,), dtype=np.float32)
    e.execute([x.numpy()], [out])
    assert torch.allclose(torch.from_numpy(out), (x * x).reshape(-1), atol=1e-6)
