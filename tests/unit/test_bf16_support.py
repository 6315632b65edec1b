"""bfloat16 graphs are supported (issue 33): engines take bfloat16 inputs, weights and outputs and
compute them in float (tests/device/test_bf16.py runs them). Here, without a device: the
partitioner puts every op of a bfloat16 graph on OpenCL (it refused each with "dtype bfloat16
(not supported on OpenCL)" before), float64 still falls back with its reason, and the dry run of
a bfloat16 module reports one engine."""
import torch
import torch.nn as nn

import torchtrt_c
from torchtrt_c import _C

def _lit(n, seed):
    g = torch.Generator().manual_seed(seed)
    return "tensor([" + ", ".join(f"{v:.3f}" for v in torch.randn(n, generator=g).tolist()) + "])"


GRAPH = """graph(%x : BFloat16(2, 4, 5, 5), %t : BFloat16(3, 6)):
  %w : BFloat16(6, 4, 3, 3) = prim.Constant[value=W]()
  %b : BFloat16(6) = prim.Constant[value=tensor([0.5, -1., 2., 0.25, 1., 3.])]()
  %n : NoneType = prim.Constant()
  %s1 : int[] = prim.Constant[value=[1, 1]]()
  %p : int[] = prim.Constant[value=[1, 1]]()
  %z : int[] = prim.Constant[value=[0, 0]]()
  %f : bool = prim.Constant[value=0]()
  %g : int = prim.Constant[value=1]()
  %c : BFloat16(2, 6, 5, 5) = aten.convolution.default(%x, %w, %b, %s1, %p, %s1, %f, %z, %g)
  %r : BFloat16(2, 6, 5, 5) = aten.relu.default(%c)
  %d : int[] = prim.Constant[value=[2, 3]]()
  %k : bool = prim.Constant[value=0]()
  %m : BFloat16(2, 6) = aten.mean.dim(%r, %d, %k, %n)
  %lw : BFloat16(6, 6) = prim.Constant[value=LW]()
  %l : BFloat16(2, 6) = aten.linear.default(%m, %lw, %n)
  %one : int = prim.Constant[value=-1]()
  %sm : BFloat16(2, 6) = aten._softmax.default(%l, %one, %f)
  %ft : Float(2, 6) = aten._to_copy.default(%sm, %n, %n, %n, %n, %f, %n)
  %tt : BFloat16(3, 6) = aten.tanh.default(%t)
  return (%ft, %tt)
""".replace("LW", _lit(36, 1)).replace("W", _lit(216, 0))


def test_bf16_graph_is_all_opencl():
    r = _C.Graph.parse(GRAPH).partition({"min_block_size": 1})
    bad = {k: v.get("reason") for k, v in r["nodes"].items() if v["target"] == "torch"}
    assert r["nodes"]["c"]["target"] == "opencl" and r["nodes"]["tt"]["target"] == "opencl"
    assert not bad, f"nodes left to torch: {bad}"


def test_float64_still_falls_back_with_its_reason():
    g = GRAPH.replace("%t : BFloat16(3, 6)", "%t : Double(3, 6)").replace("%tt : BFloat16(3, 6)", "%tt : Double(3, 6)")
    r = _C.Graph.parse(g).partition({"min_block_size": 1})
    tt = r["nodes"]["tt"]
    assert tt["target"] == "torch" and "float64" in tt["reason"], tt
    assert r["nodes"]["c"]["target"] == "opencl"


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x))).mean((2, 3))
        return torch.nn.functional.layer_norm(self.fc(y), (5,))


def test_bf16_dry_run_one_engine():
    m = Small().eval().to(torch.bfloat16)
    x = torch.randn(2, 3, 9, 9).to(torch.bfloat16)
    rep = torchtrt_c.compile(m, inputs=[x], min_block_size=1, dryrun=True).dryrun_report
    text = str(rep)
    assert "engines: 1, torch segments: 0" in text and "100.0% coverage" in text, text
