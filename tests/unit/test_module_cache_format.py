"""The module cache's graph format (torchtrt_c/dynamo/_module_cache.py): FX graphs round-trip
through plain node lists, and a list naming anything but a torch op, getitem or the known
literal kinds is refused (loading an entry never runs code from the file)."""
import json
import math

import pytest
import torch
import torch.fx

from torchtrt_c.dynamo import _module_cache as mc


def _graph():
    g = torch.fx.Graph()
    x = g.placeholder("x")
    y = g.call_function(torch.ops.aten._to_copy.default, (x,), {"dtype": torch.float32})
    s = g.call_function(torch.ops.aten.split.Tensor, (y, 2, 1))
    a = g.call_function(__import__("operator").getitem, (s, 0))
    c = g.call_function(torch.ops.aten.clamp.default, (a, -math.inf, 0.5))
    m = g.call_module("seg", (c, [1, 2], (3, None)), {})
    k = g.get_attr("buf")
    z = g.call_function(torch.ops.aten.add.Tensor, (m, k), {"alpha": 2})
    e = g.call_function(torch.ops.aten.empty.memory_format, ([2],),
                        {"layout": torch.strided, "device": torch.device("cpu"),
                         "memory_format": torch.contiguous_format})
    g.output((z, e, None, "s"))
    return g


def test_graph_round_trips_through_json():
    g = _graph()
    nodes = json.loads(json.dumps(mc.encode_graph(g)))
    g2 = mc.decode_graph(nodes)
    assert [(n.op, n.name, n.target) for n in g.nodes] == [(n.op, n.name, n.target) for n in g2.nodes]
    assert [(n.args, n.kwargs) for n in g.nodes].__repr__() == [(n.args, n.kwargs) for n in g2.nodes].__repr__()
    clamp = [n for n in g2.nodes if n.target is torch.ops.aten.clamp.default][0]
    assert clamp.args[1] == -math.inf


def test_unknown_targets_are_refused():
    nodes = mc.encode_graph(_graph())
    bad = [list(n) for n in nodes]
    for n in bad:
        if n[2] == "op:aten.add.Tensor":
            n[2] = "builtins.eval"
    with pytest.raises(mc.RejectedEntry, match="not allowed"):
        mc.decode_graph(bad)
    bad = [list(n) for n in nodes]
    for n in bad:
        if n[2] == "op:aten.add.Tensor":
            n[2] = "op:aten.no_such_op.default"
    with pytest.raises(mc.RejectedEntry, match="unknown op"):
        mc.decode_graph(bad)
    bad = [list(n) for n in nodes]
    for n in bad:
        if n[2] == "op:aten._to_copy.default":
            n[4] = {"d": {"dtype": {"dtype": "Tensor"}}}   # torch.Tensor is no dtype
    with pytest.raises(mc.RejectedEntry, match="unknown dtype"):
        mc.decode_graph(bad)


def test_graphs_calling_python_functions_are_not_stored():
    g = torch.fx.Graph()
    x = g.placeholder("x")
    g.output(g.call_function(torch.sigmoid, (x,)))   # not an OpOverload
    with pytest.raises(mc.Unserializable):
        mc.encode_graph(g)
    g = torch.fx.Graph()
    x = g.placeholder("x")
    g.output(g.call_function(torch.ops.aten.mul.Tensor, (x, object())))
    with pytest.raises(mc.Unserializable):
        mc.encode_graph(g)


def test_weight_digest_sees_every_element_and_layout():
    a = torch.arange(1000, dtype=torch.float32).reshape(10, 100)
    b = a.clone()
    b[7, 93] += 1e-6 if b[7, 93] == 0 else b[7, 93] * 1e-6
    assert mc._content_digest(a) != mc._content_digest(b)
    assert mc._content_digest(a) != mc._content_digest(a.reshape(100, 10))
    assert mc._content_digest(a) != mc._content_digest(a.double())
    assert mc._content_digest(a.t()) == mc._content_digest(a.t().contiguous())
    # the identity used to reuse a digest changes with an in-place op
    k = mc._ident(a)
    a.add_(0)
    assert mc._ident(a) != k
