"""torchtrt_c._C.Graph: builder, inspection, text round trip, zero-copy weights, errors."""
import gc

import numpy as np
import pytest

from torchtrt_c import _C


def small_graph():
    g = _C.Graph()
    g.add_symbol("s0", 1, 8, 32)
    x = g.add_input("x", ("tensor", "float32", ["s0", 3]))
    one = g.add_constant(1, name="one")
    (y,) = g.add_node("aten.relu.default", [x], [("tensor", "float32", ["s0", 3])], name="relu",
                      module_stack="layer1.0")
    (z,) = g.add_node("aten.add.Tensor", [y, x, one], [("tensor", "float32", ["s0", 3])], name="add",
                      output_names=["z"])
    g.set_outputs([z, y])
    return g


def test_builder_and_inspection():
    g = small_graph()
    g.verify()
    assert g.inputs == ["x"]
    assert g.outputs[0] == "z"
    assert g.symbols == [("s0", 1, 8, 32)]
    nodes = g.nodes()
    assert [n["op"] for n in nodes] == ["prim.Constant", "aten.relu.default", "aten.add.Tensor"]
    relu = nodes[1]
    assert relu["name"] == "relu" and relu["inputs"] == ["x"] and relu["module_stack"] == "layer1.0"
    assert relu["target"] == -1 and relu["segment"] == -1 and relu["reason"] is None
    v = g.value("z")
    assert v["kind"] == "tensor" and v["dtype"] == "float32" and v["shape"] == ["s0", 3]
    assert v["producer"] == "add" and v["const"] is None
    assert g.value("one")["const"] == 1 and g.value("one")["is_const"]


def test_constants_of_every_kind():
    g = _C.Graph()
    vals = [None, True, False, 7, -2**63, 0.25, "tanh", [1, 2, 3], [0.5, 1], [True, False], []]
    names = [g.add_constant(v) for v in vals]
    assert len(set(names)) == len(names)
    got = [g.value(n)["const"] for n in names]
    assert got == [None, True, False, 7, -2**63, 0.25, "tanh", [1, 2, 3], [0.5, 1.0], [True, False], []]
    assert g.value(names[8])["elem"] == "float" and g.value(names[9])["elem"] == "bool"
    g.set_outputs(names)
    g.verify()
    h = _C.Graph.parse(str(g))
    assert str(h) == str(g)
    assert [h.value(n)["const"] for n in names] == got


def test_symbolic_dims_and_types():
    g = _C.Graph()
    g.add_symbol("b", 1, 4, 16)
    x = g.add_input("x", ("tensor", "float16", ["b", "3*b+1", "2*b-1", 5]))
    n = g.add_input("n", "int")
    lst = g.add_input("lst", ("list", "tensor"))
    g.set_outputs([x, n, lst])
    assert g.value(x)["shape"] == ["b", "3*b+1", "2*b-1", 5]
    assert g.value(n)["kind"] == "int"
    assert g.value(lst)["kind"] == "list" and g.value(lst)["elem"] == "tensor"
    text = str(g)
    assert "Half(b, 3*b+1, 2*b-1, 5)" in text and "where b in [1, 4, 16]" in text
    assert str(_C.Graph.parse(text)) == text


def test_str_parse_round_trip():
    g = small_graph()
    text = str(g)
    h = _C.Graph.parse(text)
    assert str(h) == text
    h.verify()
    assert h.nodes()[1]["module_stack"] == "layer1.0"


def test_tensor_constant_is_not_copied():
    g = _C.Graph()
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    w = g.add_tensor_constant("conv.weight", "float32", [2, 3], a)
    assert w == "conv.weight"
    g.set_outputs([w])
    dtype, shape, data = g.tensor_constant(w)
    assert dtype == "float32" and shape == (2, 3)
    assert np.frombuffer(data, dtype=np.float32).tolist() == [0, 1, 2, 3, 4, 5]
    a[0, 0] = 42.0  # the graph sees the caller's memory
    _, _, data = g.tensor_constant(w)
    assert np.frombuffer(data, dtype=np.float32)[0] == 42.0
    # the buffer stays alive after the caller drops its reference; a clone shares it
    c = g.clone()
    del a
    gc.collect()
    assert np.frombuffer(c.tensor_constant(w)[2], dtype=np.float32)[0] == 42.0
    del g
    gc.collect()
    assert np.frombuffer(c.tensor_constant(w)[2], dtype=np.float32)[0] == 42.0


def test_buffer_is_released_with_the_graph():
    buf = bytearray(16)
    g = _C.Graph()
    g.add_tensor_constant("w", "float32", [4], buf)
    with pytest.raises(BufferError):
        buf.append(1)  # held by the graph: an exported buffer cannot be resized
    c = g.clone()
    del g
    gc.collect()
    with pytest.raises(BufferError):
        buf.append(1)  # the clone still holds it
    del c
    gc.collect()
    buf.append(1)  # released with the last graph


def test_large_tensors_parse_by_name():
    g = _C.Graph()
    a = np.arange(200, dtype=np.float32)
    w = g.add_tensor_constant("big", "float32", [200], a)
    g.set_outputs([w])
    text = str(g)
    assert 'tensor(name="big")' in text
    with pytest.raises(_C.ParseError, match="big"):
        _C.Graph.parse(text)
    with pytest.raises(_C.ParseError, match="big"):
        _C.Graph.parse(text, tensors={"other": a})
    with pytest.raises(_C.ParseError, match="bytes"):
        _C.Graph.parse(text, tensors={"big": a[:10]})
    h = _C.Graph.parse(text, tensors={"big": a})
    assert h.tensor_constant("big")[2] == a.tobytes()
    a[3] = -1.0
    assert np.frombuffer(h.tensor_constant("big")[2], dtype=np.float32)[3] == -1.0


def test_extract():
    g = small_graph()
    sub, ins, outs = g.extract(["add"])
    assert ins == [g.nodes()[1]["outputs"][0], "x"]
    assert outs == ["z"]
    sub.verify()
    # the constant used by add is copied in, not made an input
    assert "one" not in ins and any(n["op"] == "prim.Constant" for n in sub.nodes())
    sub2, ins2, outs2 = g.extract(["relu"])
    assert ins2 == ["x"] and outs2 == [g.outputs[1]]
    with pytest.raises(ValueError, match="nope"):
        g.extract(["nope"])


def test_errors_name_what_was_wrong():
    g = _C.Graph()
    x = g.add_input("x", ("tensor", "float32", [2]))
    with pytest.raises(ValueError, match="already used"):
        g.add_input("x", ("tensor", "float32", [2]))
    with pytest.raises(ValueError, match="unknown dtype"):
        g.add_input("y", ("tensor", "float33", [2]))
    with pytest.raises(ValueError, match="unknown symbol 's1'"):
        g.add_input("y", ("tensor", "float32", ["s1"]))
    with pytest.raises(ValueError, match="bad dim"):
        g.add_input("y", ("tensor", "float32", ["3*"]))
    with pytest.raises(ValueError, match="negative"):
        g.add_input("y", ("tensor", "float32", [-1]))
    with pytest.raises(ValueError, match="rank"):
        g.add_input("y", ("tensor", "float32", [1] * 9))
    with pytest.raises(ValueError, match="unknown type"):
        g.add_input("y", "double")
    with pytest.raises(TypeError):
        g.add_input("y", 3)
    with pytest.raises(ValueError, match="unknown value %q"):
        g.add_node("aten.relu.default", ["q"], [("tensor", "float32", [2])])
    # another arity is not an error: the node is opaque (tests/unit/test_op_table.py)
    g.add_node("aten.relu.default", [x, x], [("tensor", "float32", [2])], name="relu2")
    with pytest.raises(ValueError, match="output_names"):
        g.add_node("aten.relu.default", [x], [("tensor", "float32", [2])], output_names=["a", "b"])
    with pytest.raises(TypeError):
        g.add_node("aten.relu.default", "x", [("tensor", "float32", [2])])
    g.add_node("aten.relu.default", [x], [("tensor", "float32", [2])], name="r")
    with pytest.raises(ValueError, match="node name r"):
        g.add_node("aten.relu.default", [x], [("tensor", "float32", [2])], name="r")
    with pytest.raises(TypeError, match="unsupported value"):
        g.add_constant({"a": 1})
    with pytest.raises(TypeError, match="mixes"):
        g.add_constant([True, 1])
    with pytest.raises(OverflowError):
        g.add_constant(2**70)
    with pytest.raises(ValueError, match="bytes"):
        g.add_tensor_constant("w", "float32", [3], np.zeros(2, dtype=np.float32))
    with pytest.raises(TypeError, match="buffer"):
        g.add_tensor_constant("w", "float32", [3], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="static"):
        g.add_symbol("s", 1, 2, 3)
        g.add_tensor_constant("w", "float32", ["s"], b"")
    with pytest.raises(ValueError, match="identifier"):
        g.add_symbol("3x", 1, 2, 3)
    with pytest.raises(ValueError, match="min"):
        g.add_symbol("t", 5, 2, 3)
    with pytest.raises(ValueError, match="unknown value %zz"):
        g.set_outputs(["zz"])
    with pytest.raises(ValueError, match="unknown value"):
        g.value("zz")
    with pytest.raises(ValueError, match="not a tensor constant"):
        g.tensor_constant("x")
    with pytest.raises(TypeError):
        _C.Graph(1)


def test_parse_and_verify_errors():
    with pytest.raises(_C.ParseError, match=r"line 2, column 37: use of undefined value %q"):
        _C.Graph.parse("graph(%x : Float(2)):\n  %y : Float(2) = aten.relu.default(%q)\n  return (%y)\n")
    with pytest.raises(_C.ParseError, match="NUL"):
        _C.Graph.parse("graph():\0\n  return ()\n")
    assert issubclass(_C.ParseError, _C.Error)
    # a known op with another arity is opaque (it falls back), not an error
    g = _C.Graph.parse("graph(%x : Float(2)):\n  %y : Float(2) = aten.relu.default(%x, %x)\n  return (%y)\n")
    g.verify()
    assert list(g.coverage({})["reasons"].values()) == ["aten.relu.default: the schema has 2 inputs, the table knows 1"]


def test_generated_names_never_collide():
    g = _C.Graph()
    x = g.add_input("x", ("tensor", "float32", [2]))
    # take the names the generator would hand out next
    taken = [g.add_constant(i, name=str(i)) for i in range(4)]
    outs = [g.add_node("aten.relu.default", [x], [("tensor", "float32", [2])])[0] for _ in range(6)]
    assert len(set(outs + taken + [x])) == len(outs) + len(taken) + 1
    g.set_outputs(outs)
    g.verify()


def test_large_graph_is_fast():
    import time
    g = _C.Graph()
    v = g.add_input("x", ("tensor", "float32", [4]))
    t = time.monotonic()
    for i in range(20000):
        (v,) = g.add_node("aten.relu.default", [v], [("tensor", "float32", [4])], name=f"n{i}")
    g.set_outputs([v])
    sub, ins, outs = g.extract([f"n{i}" for i in range(100, 10000)])
    g.verify()
    assert len(sub.nodes()) == 9900 and len(ins) == 1 and len(outs) == 1
    assert time.monotonic() - t < 10, "building/extracting must stay roughly linear"
