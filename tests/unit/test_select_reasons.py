"""Issue 11 converters B: the validators of sort/topk and the scatter family say why they
refuse (rows too long for the rank kernel, dynamic rows, index tensors split by a None,
masks), and accept the supported forms; shape rules give topk its k."""
from torchtrt_c import _C

GRAPH = """graph(%x : Float(3, 5000), %y : Float(3, 7), %j : Long(2), %m : Bool(3)):
  %d : int = prim.Constant[value=-1]()
  %f : bool = prim.Constant[value=false]()
  %t : bool = prim.Constant[value=true]()
  %k : int = prim.Constant[value=2]()
  %n : NoneType = prim.Constant()
  %long_v : Float(3, 5000), %long_i : Long(3, 5000) = aten.sort.default(%x, %d, %f)
  %ok_v : Float(3, 7), %ok_i : Long(3, 7) = aten.sort.default(%y, %d, %t)
  %top_v : Float(3, 2), %top_i : Long(3, 2) = aten.topk.default(%y, %k, %d, %t, %t)
  %split : Tensor[] = prim.ListConstruct(%j, %n, %j)
  %split_put : Float(3, 7) = aten.index_put.default(%y, %split, %y, %f)
  %lead : Tensor[] = prim.ListConstruct(%n, %j)
  %lead_put : Float(3, 7) = aten.index_put.default(%y, %lead, %y, %t)
  %mask : Tensor[] = prim.ListConstruct(%m)
  %mask_put : Float(3, 7) = aten.index_put.default(%y, %mask, %y, %f)
  return (%long_v, %long_i, %ok_v, %ok_i, %top_v, %top_i, %split_put, %lead_put, %mask_put)
"""


def test_reasons():
    g = _C.Graph.parse(GRAPH)
    reasons = _C.coverage(g, {"min_block_size": 1})["reasons"]
    assert "at most 4096" in reasons["long_v"], reasons
    assert "separated by a None" in reasons["split_put"], reasons
    assert "masks stay in torch" in reasons["mask_put"], reasons
    for ok in ("ok_v", "top_v", "lead_put"):
        assert ok not in reasons, (ok, reasons)


def test_dynamic_row():
    g = _C.Graph()
    g.add_symbol("s0", 1, 8, 32)
    x = g.add_input("x", ("tensor", "float32", [3, "s0"]))
    v, i = g.add_node("aten.sort.default", [x, g.add_constant(1), g.add_constant(False)],
                      [("tensor", "float32", [3, "s0"]), ("tensor", "int64", [3, "s0"])], name="srt")
    w, j = g.add_node("aten.sort.default", [x, g.add_constant(0), g.add_constant(False)],
                      [("tensor", "float32", [3, "s0"]), ("tensor", "int64", [3, "s0"])], name="srt0")
    g.set_outputs([v, i, w, j])
    reasons = _C.coverage(g, {"min_block_size": 1})["reasons"]
    assert "dynamic" in reasons["srt"], reasons
    assert "srt0" not in reasons, reasons
