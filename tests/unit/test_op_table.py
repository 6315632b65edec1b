"""The op table as Python sees it (_C.ops()), and import that never fails on arity: a known
op name with another arity (a newer torch schema) imports as opaque and falls back with
the reason. No OpenCL device needed (coverage runs validators only)."""
import re
from pathlib import Path

import pytest
import torch

from torchtrt_c import _C

SDPA = "aten.scaled_dot_product_attention.default"


def test_ops_lists_the_table():
    ops = _C.ops()
    names = [o["name"] for o in ops]
    assert len(names) == len(set(names)), "duplicate names"
    by = {o["name"]: o for o in ops}
    assert by[SDPA]["n_inputs"] == len(torch.ops.aten.scaled_dot_product_attention.default._schema.arguments)
    relu = by["aten.relu.default"]
    assert relu["flags"] == ("elementwise",) and relu["converter"] and relu["shape_rule"] and relu["n_inputs"] == 1
    assert "view" in by["aten.view.default"]["flags"] and "reduction" in by["aten.sum.dim_IntList"]["flags"]
    assert "impure" in by["aten.rand.default"]["flags"] and not by["aten.rand.default"]["converter"]
    assert by["aten.cat.default"]["validator"] and not by["prim.Constant"]["validator"]
    assert by["prim.Constant"]["evaluator"] and by["py.mul"]["evaluator"] and by["py.mul"]["kind"] == "py"
    assert not by["aten.arange.default"]["shape_rule"]       # shape.c has none
    assert not by["aten.lgamma.default"]["converter"] and by["aten.lgamma.default"]["shape_rule"]
    for o in ops:
        assert set(o) == {"name", "kind", "id", "n_inputs", "n_outputs", "flags", "converter", "validator",
                          "evaluator", "dynamic", "shape_rule", "never_converted"}, o
        assert o["never_converted"] is None or not o["converter"], o


OPS_DEF = Path(__file__).resolve().parents[2] / "csrc" / "ir" / "ops.def"
# TTC_OP(ID, "name", n_inputs, n_outputs, flags, shape, converter): a row may span lines
_ROW = re.compile(r'^TTC_OP\(\s*(\w+),\s*"([^"]+)",\s*(-?\d+),\s*(-?\d+),\s*([\w| ]+?),\s*(\w+),\s*'
                  r'(CONV|CONV_STATIC|EVAL|EVAL_ANY|NONE|NEVER)\b(?:\(\s*(\w+)?(?:,\s*(\w+))?)?', re.M)


def _rows():
    if not OPS_DEF.exists():
        pytest.skip("no source tree (csrc/ir/ops.def) next to the tests")
    return [m.groups() for m in _ROW.finditer(OPS_DEF.read_text())]


def test_table_is_consistent():
    """What one op's entry says hangs together, whatever ops are added."""
    ops = _C.ops()
    table = [o for o in ops if o["kind"] != "py"]
    assert [o["id"] for o in table] == list(range(len(table))), "ids are not the row order"
    for o in ops:
        what = o["name"]
        if not o["converter"]:
            assert not (o["validator"] or o["evaluator"] or o["dynamic"]), f"{what}: validator/flags without converter"
        if o["never_converted"] is not None:
            assert not o["converter"] and o["never_converted"].strip(), what
        if "impure" in o["flags"]:
            assert not o["converter"], f"{what}: impure ops stay with torch"
        assert ("prim" in o["flags"]) == (o["kind"] == "prim"), what
        if o["evaluator"]:   # a static value, no kernel: prims, sizes, size arithmetic
            assert o["kind"] in ("prim", "py") or ".sym_" in what, f"{what}: evaluator of a tensor op"


def test_every_table_fact_comes_from_its_row():
    """ops.def is the one source: each row's columns are exactly what _C.ops() reports for the
    op (names, arity, converter, validator, evaluator, shape rule, never-converted reason), so
    no other list in the core decides them. An op with a converter and no shape rule says so
    in its row (`none`), next to its converter."""
    rows = _rows()
    table = [o for o in _C.ops() if o["kind"] != "py"]
    assert len(rows) == len(table), f"{len(rows)} rows in ops.def, {len(table)} ops in the table"
    bad = []
    for (oid, name, n_in, n_out, flags, shape, conv, a1, a2), o in zip(rows, table):
        want = {"name": name, "n_inputs": int(n_in), "n_outputs": int(n_out), "shape_rule": shape != "none",
                "converter": conv in ("CONV", "CONV_STATIC", "EVAL", "EVAL_ANY"),
                "validator": conv in ("CONV", "CONV_STATIC", "EVAL"), "evaluator": conv in ("EVAL", "EVAL_ANY"),
                "dynamic": conv in ("CONV", "EVAL", "EVAL_ANY")}
        got = {k: o[k] for k in want}
        if got != want:
            bad.append((oid, {k: (want[k], got[k]) for k in want if want[k] != got[k]}))
        if (conv == "NEVER") != (o["never_converted"] is not None):
            bad.append((oid, "never_converted", conv, o["never_converted"]))
    assert not bad, f"(row, {{column: (ops.def, _C.ops())}}): {bad}"
    names = [r[1] for r in rows]
    assert len(names) == len(set(names)), "an op name in two rows"


def test_table_arity_matches_this_torch():
    """Every aten op of the table has the arity of this torch's schema (else it would import
    as opaque and silently fall back)."""
    bad = []
    for o in _C.ops():
        if o["kind"] != "aten" or o["n_inputs"] < 0:
            continue
        _, name, overload = o["name"].split(".")
        op = getattr(getattr(torch.ops.aten, name, None), overload, None)
        if op is not None and len(op._schema.arguments) != o["n_inputs"]:
            bad.append((o["name"], o["n_inputs"], len(op._schema.arguments)))
    assert not bad, f"(op, table arity, schema arity): {bad}"


def test_native_ops_derive_from_the_table():
    from torchtrt_c.dynamo.lowering._decompositions import (DECOMPOSED_ANYWAY, IMPORTER_OPS, NATIVE_OPS,
                                                           native_ops)
    conv = {o["name"] for o in _C.ops() if o["converter"] and o["kind"] == "aten"}
    assert {str(o) for o in NATIVE_OPS} == (conv - DECOMPOSED_ANYWAY) | IMPORTER_OPS
    assert NATIVE_OPS == native_ops()
    assert DECOMPOSED_ANYWAY <= conv, "an exception that is not a converter any more"
    # each exception is a converter torch's default table rewrites (else it needs no exception)
    table = {str(o) for o in torch.export.default_decompositions()}
    assert DECOMPOSED_ANYWAY <= table, DECOMPOSED_ANYWAY - table


def _graph_with(op, n_extra=0):
    g = _C.Graph()
    x = g.add_input("x", ("tensor", "float32", [2, 3]))
    ins = [x] + [g.add_constant(1.0) for _ in range(n_extra)]
    out = g.add_node(op, ins, [("tensor", "float32", [2, 3])], name="n")
    g.set_outputs(out)
    return g


def test_add_node_with_another_arity_is_opaque():
    g = _graph_with("aten.relu.default", n_extra=1)      # relu with a second input
    g.verify()
    assert g.coverage({})["reasons"] == {"n": "aten.relu.default: the schema has 2 inputs, the table knows 1"}
    assert "aten.relu.default(%x, " in str(g)
    g2 = _C.Graph.parse(str(g))                          # prints and parses back as the same opaque node
    assert g2.coverage({})["reasons"] == {"n": "aten.relu.default: the schema has 2 inputs, the table knows 1"}
    assert _graph_with("aten.relu.default").coverage({})["reasons"] == {}


def test_importer_with_a_grown_schema(monkeypatch):
    """An op whose schema grew an argument in a newer torch (simulated: the importer flattens
    one more input) imports, and the node falls back with the reason."""
    from torchtrt_c.dynamo import _importer

    class M(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x) + 1

    ep = torch.export.export(M(), (torch.randn(2, 3),))
    flatten = _importer._Importer._flatten_schema

    def grown(self, node):
        flat = flatten(self, node)
        return flat + [self._const(True)] if node.target is torch.ops.aten.relu.default else flat
    monkeypatch.setattr(_importer._Importer, "_flatten_schema", grown)
    from torchtrt_c._input import Input
    imp = _importer.import_program(ep, [Input(shape=(2, 3))], {})
    reasons = imp.graph.coverage({})["reasons"]
    assert list(reasons.values()) == ["aten.relu.default: the schema has 2 inputs, the table knows 1"], reasons


def _sdpa_graph(dropout=0.0, causal=False, mask=False, gqa=False, n_inputs=8, hk=2, head_dim=8):
    g = _C.Graph()
    q = g.add_input("q", ("tensor", "float32", [1, 4, 5, head_dim]))
    k = g.add_input("k", ("tensor", "float32", [1, hk, 5, head_dim]))
    m = g.add_input("m", ("tensor", "bool", [1, 1, 5, 5])) if mask else g.add_constant(None)
    args = [q, k, k, m, g.add_constant(dropout), g.add_constant(causal), g.add_constant(None), g.add_constant(gqa)]
    out = g.add_node(SDPA, args[:n_inputs], [("tensor", "float32", [1, 4, 5, head_dim])], name="a")
    g.set_outputs(out)
    return g.coverage({})["reasons"].get("a")


def test_sdpa_validator_reasons():
    assert _sdpa_graph(gqa=True) is None
    assert _sdpa_graph(gqa=True, hk=1) is None
    assert _sdpa_graph(hk=4) is None
    assert "dropout_p" in _sdpa_graph(dropout=0.1, hk=4)
    assert "is_causal" in _sdpa_graph(causal=True, mask=True, hk=4)
    assert "broadcast" in _sdpa_graph(hk=2)                    # 4 vs 2 heads without enable_gqa
    assert "divide" in _sdpa_graph(gqa=True, hk=3)
    assert "head dim" in _sdpa_graph(head_dim=300, hk=4)
    # torch < 2.5's 7-argument schema: opaque, with the reason
    assert _sdpa_graph(n_inputs=7, hk=4) == f"{SDPA}: the schema has 7 inputs, the table knows 8"


def test_dropout_in_training_mode_is_not_an_identity():
    g = _C.Graph()
    x = g.add_input("x", ("tensor", "float32", [2, 3]))
    outs = []
    for i, (p, train) in enumerate([(0.5, False), (0.0, True), (0.5, True)]):
        outs += g.add_node("aten.dropout.default", [x, g.add_constant(p), g.add_constant(train)],
                           [("tensor", "float32", [2, 3])], name=f"d{i}")
    g.set_outputs(outs)
    reasons = g.coverage({})["reasons"]
    assert list(reasons) == ["d2"] and "training" in reasons["d2"], reasons
    g.lower()
    assert str(g).count("aten.dropout.default") == 1, str(g)
