"""Known ops that always stay with torch (issue 11) carry a stated reason in the partition
result: nonzero (data-dependent output shape) and resize_ (in-place, so impure: the
partitioner says so before the registry is asked)."""
from torchtrt_c import _C

GRAPH = """graph(%x : Float(3, 5)):
  %h : float = prim.Constant[value=0.5]()
  %gt : Bool(3, 5) = aten.gt.Scalar(%x, %h)
  %nz : Long(7, 2) = aten.nonzero.default(%gt)
  %s : int[] = prim.Constant[value=[15]]()
  %n : NoneType = prim.Constant()
  %r : Float(15) = aten.resize_.default(%x, %s, %n)
  return (%nz, %r)
"""


def test_nonzero_and_resize_reasons():
    r = _C.Graph.parse(GRAPH).partition({"min_block_size": 1})
    nz, rs = r["nodes"]["nz"], r["nodes"]["r"]
    assert nz["target"] == "torch" and "data-dependent output shape" in nz["reason"], nz
    assert rs["target"] == "torch" and "in-place" in rs["reason"], rs
    assert r["nodes"]["gt"]["target"] == "opencl"
