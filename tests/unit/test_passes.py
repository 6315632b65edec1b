"""Lowering passes through the binding: every pass leaves a valid graph that computes the
same results. Graphs are IR text; a small interpreter runs them through torch.ops.aten
before and after the pass, on random inputs."""
import random

import pytest
import torch

from torchtrt_c import _C

_DTYPES = {0: torch.uint8, 1: torch.int8, 2: torch.int16, 3: torch.int32, 4: torch.int64, 5: torch.float16,
           6: torch.float32, 7: torch.float64, 11: torch.bool, 15: torch.bfloat16}


def _constant(g, name):
    v = g.value(name)
    if v["kind"] == "tensor":
        dtype, shape, data = g.tensor_constant(name)
        t = torch.frombuffer(bytearray(data), dtype=getattr(torch, dtype)) if data else torch.empty(0)
        return t.reshape(shape).clone()
    return v["const"]


def _call(op_name, args):
    ns, name, overload = op_name.split(".")
    op = getattr(getattr(getattr(torch.ops, ns), name), overload)
    pos, kw = [], {}
    for a, v in zip(op._schema.arguments, args):
        if isinstance(v, int) and "ScalarType" in str(a.type):
            v = _DTYPES[v]
        if a.kwarg_only:
            kw[a.name] = v
        else:
            pos.append(v)
    return op(*pos, **kw)


def interpret(g, inputs):
    """Runs graph g on inputs (a list of tensors) through torch; returns its outputs."""
    env = dict(zip(g.inputs, inputs))
    for n in g.nodes():
        op, outs = n["op"], n["outputs"]
        if op == "prim.Constant":
            env[outs[0]] = _constant(g, outs[0])
            continue
        args = [env[i] for i in n["inputs"]]
        if op in ("prim.ListConstruct", "prim.TupleConstruct"):
            res = [list(args)]
        elif op == "prim.getitem":
            res = [args[0][args[1]]]
        else:
            r = _call(op, args)
            res = list(r) if isinstance(r, (tuple, list)) and len(outs) != 1 else [r]
        for o, v in zip(outs, res):
            env[o] = v
    return [env[o] for o in g.outputs]


def random_inputs(g, seed=0):
    gen = torch.Generator().manual_seed(seed)
    out = []
    for name in g.inputs:
        v = g.value(name)
        out.append(torch.randn(v["shape"], generator=gen, dtype=getattr(torch, v["dtype"])))
    return out


def run_one_pass(text, name):
    """Parses text, checks the graph, runs pass `name` alone; returns (before, after)."""
    before = _C.Graph.parse(text)
    before.verify()
    after = before.clone()
    others = [p for p in _C.pass_names() if p != name]
    report = after.lower(disabled=others, enabled=[name], debug=True)
    assert [r[0] for r in report] == [name]
    after.verify()
    return before, after, report[0][2]


def check_same_results(before, after, seeds=(0, 1, 2)):
    for s in seeds:
        xs = random_inputs(before, s)
        want, got = interpret(before, xs), interpret(after, xs)
        assert len(want) == len(got)
        for w, o in zip(want, got):
            assert w.shape == o.shape, (w.shape, o.shape)
            torch.testing.assert_close(o, w, rtol=1e-5, atol=1e-5)


def ops(g):
    return [n["op"] for n in g.nodes() if n["op"] != "prim.Constant"]


def floats(vals):
    return ", ".join(repr(float(v)) for v in vals)


def test_pass_names_and_defaults():
    names = _C.pass_names()
    assert names[0] == "remove_asserts" and names[-1] == "dce"
    d = _C.pass_defaults()
    assert set(d) == set(names) and d["unpack_addmm"] is False and d["cse"] is True


def test_remove_asserts():
    text = """graph(%x : Float(2, 3)):
  %n : NoneType = prim.Constant()
  %lo : float = prim.Constant[value=-1e9]()
  %m : str = prim.Constant[value="too small"]()
  %s : Float() = aten.sum.default(%x, %n)
  %ok : Bool() = aten.ge.Scalar(%s, %lo)
  = aten._assert_async.msg(%ok, %m)
  %y : Float(2, 3) = aten.relu.default(%x)
  return (%y)
"""
    before, after, changed = run_one_pass(text, "remove_asserts")
    assert changed and "aten._assert_async.msg" not in ops(after)
    check_same_results(before, after)


def test_remove_noops():
    text = """graph(%x : Float(2, 3)):
  %n : NoneType = prim.Constant()
  %p : float = prim.Constant[value=0.5]()
  %f : bool = prim.Constant[value=false]()
  %d6 : int = prim.Constant[value=6]()
  %s : int[] = prim.Constant[value=[2, 3]]()
  %a : Float(2, 3) = aten.clone.default(%x, %n)
  %b : Float(2, 3) = aten.dropout.default(%a, %p, %f)
  %c : Float(2, 3) = aten.detach.default(%b)
  %d : Float(2, 3) = aten._to_copy.default(%c, %d6, %n, %n, %n, %f, %n)
  %e : Float(2, 3) = aten.expand.default(%d, %s, %f)
  %v : Float(2, 3) = aten.view.default(%e, %s)
  %t1 : Float(3, 2) = aten.t.default(%v)
  %t2 : Float(2, 3) = aten.t.default(%t1)
  %y : Float(2, 3) = aten.sigmoid.default(%t2)
  return (%y)
"""
    before, after, changed = run_one_pass(text, "remove_noops")
    assert changed and ops(after).count("aten.sigmoid.default") == 1
    assert not {"aten.clone.default", "aten.dropout.default", "aten.detach.default", "aten._to_copy.default",
                "aten.expand.default", "aten.view.default"} & set(ops(after))
    check_same_results(before, after)


def test_constant_fold():
    r = random.Random(0)
    w, b = [r.uniform(-1, 1) for _ in range(6)], [r.uniform(-1, 1) for _ in range(3)]
    text = f"""graph(%x : Float(3, 2)):
  %w : Float(2, 3) = prim.Constant[value=tensor([{floats(w)}])]()
  %b : Float(3) = prim.Constant[value=tensor([{floats(b)}])]()
  %one : int = prim.Constant[value=1]()
  %half : float = prim.Constant[value=0.5]()
  %p : int[] = prim.Constant[value=[1, 0]]()
  %a : Float(2, 3) = aten.add.Tensor(%w, %b, %one)
  %m : Float(2, 3) = aten.mul.Scalar(%a, %half)
  %e : Float(2, 3) = aten.exp.default(%m)
  %t : Float(3, 2) = aten.permute.default(%e, %p)
  %y : Float(3, 2) = aten.mul.Tensor(%x, %t)
  return (%y)
"""
    before, after, changed = run_one_pass(text, "constant_fold")
    assert changed and ops(after) == ["aten.mul.Tensor"]
    check_same_results(before, after)


def test_fuse_linear():
    text = """graph(%x : Float(4, 3), %W : Float(5, 3), %b : Float(5), %x3 : Float(2, 4, 3)):
  %one : int = prim.Constant[value=1]()
  %wt : Float(3, 5) = aten.t.default(%W)
  %mm : Float(4, 5) = aten.mm.default(%x, %wt)
  %y : Float(4, 5) = aten.add.Tensor(%mm, %b, %one)
  %z : Float(4, 5) = aten.addmm.default(%b, %x, %wt, %one, %one)
  %mm3 : Float(2, 4, 5) = aten.matmul.default(%x3, %wt)
  %y3 : Float(2, 4, 5) = aten.add.Tensor(%b, %mm3, %one)
  return (%y, %z, %y3)
"""
    before, after, changed = run_one_pass(text, "fuse_linear")
    assert changed and ops(after).count("aten.linear.default") == 3
    assert "aten.mm.default" not in ops(after) and "aten.addmm.default" not in ops(after)
    check_same_results(before, after)


@pytest.mark.parametrize("ir_dtype,dtype", [("Float", torch.float32), ("Half", torch.float16),
                                             ("Double", torch.float64)])
@pytest.mark.parametrize("k,n", [(45, 70), (32, 64), (3, 97)])
def test_fuse_linear_transposes_constant_weights_exactly(ir_dtype, dtype, k, n):
    """A constant [k, n] weight becomes its [n, k] transpose, element for element (tiled
    copies per element size; odd sizes cross the tiles' edges)."""
    w = torch.arange(k * n, dtype=torch.float64).reshape(k, n).to(dtype)
    text = f"""graph(%x : {ir_dtype}(4, {k}), %b : {ir_dtype}({n})):
  %one : int = prim.Constant[value=1]()
  %w : {ir_dtype}({k}, {n}) = prim.Constant[value=tensor([{floats(w.flatten().tolist())}])]()
  %z : {ir_dtype}(4, {n}) = aten.addmm.default(%b, %x, %w, %one, %one)
  return (%z)
"""
    _, after, changed = run_one_pass(text, "fuse_linear")
    assert changed and ops(after) == ["aten.linear.default"]
    lin = [nd for nd in after.nodes() if nd["op"] == "aten.linear.default"][0]
    wt = _constant(after, lin["inputs"][1])
    assert wt.dtype == dtype and tuple(wt.shape) == (n, k), (wt.dtype, wt.shape)
    bad = (wt != w.t()).nonzero()
    assert bad.numel() == 0, f"{bad.shape[0]} elements differ, first at {bad[0].tolist()}"


def test_unpack_addmm_and_log_softmax():
    text = """graph(%b : Float(5), %x : Float(4, 3), %w : Float(3, 5)):
  %beta : float = prim.Constant[value=0.5]()
  %alpha : float = prim.Constant[value=2.]()
  %d : int = prim.Constant[value=1]()
  %f : bool = prim.Constant[value=false]()
  %z : Float(4, 5) = aten.addmm.default(%b, %x, %w, %beta, %alpha)
  %y : Float(4, 5) = aten._log_softmax.default(%z, %d, %f)
  return (%y)
"""
    before, after, changed = run_one_pass(text, "unpack_addmm")
    assert changed and "aten.addmm.default" not in ops(after) and "aten.mm.default" in ops(after)
    check_same_results(before, after)
    before, after, changed = run_one_pass(text, "unpack_log_softmax")
    assert changed and ops(after)[-2:] == ["aten._softmax.default", "aten.log.default"]
    check_same_results(before, after)


def test_fold_batch_norm():
    r = random.Random(1)
    rnd = lambda n: floats(r.uniform(-1, 1) for _ in range(n))  # noqa: E731
    var = floats(r.uniform(0.1, 2) for _ in range(4))
    text = f"""graph(%x : Float(2, 3, 5, 5)):
  %w : Float(4, 3, 3, 3) = prim.Constant[value=tensor([{rnd(108)}])]()
  %cb : Float(4) = prim.Constant[value=tensor([{rnd(4)}])]()
  %s : int[] = prim.Constant[value=[1, 1]]()
  %p : int[] = prim.Constant[value=[1, 1]]()
  %op : int[] = prim.Constant[value=[0, 0]]()
  %f : bool = prim.Constant[value=false]()
  %g : int = prim.Constant[value=1]()
  %gamma : Float(4) = prim.Constant[value=tensor([{rnd(4)}])]()
  %beta : Float(4) = prim.Constant[value=tensor([{rnd(4)}])]()
  %mean : Float(4) = prim.Constant[value=tensor([{rnd(4)}])]()
  %var : Float(4) = prim.Constant[value=tensor([{var}])]()
  %mom : float = prim.Constant[value=0.1]()
  %eps : float = prim.Constant[value=1e-5]()
  %c : Float(2, 4, 5, 5) = aten.convolution.default(%x, %w, %cb, %s, %p, %s, %f, %op, %g)
  %y : Float(2, 4, 5, 5), %sm : Float(0), %sv : Float(0) = aten._native_batch_norm_legit_no_training.default(%c, %gamma, %beta, %mean, %var, %mom, %eps)
  %r : Float(2, 4, 5, 5) = aten.relu.default(%y)
  return (%r)
"""
    before, after, changed = run_one_pass(text, "fold_batch_norm")
    assert changed and ops(after) == ["aten.convolution.default", "aten.relu.default"]
    check_same_results(before, after)


def test_cse_and_dce():
    text = """graph(%x : Float(2, 3), %y : Float(2, 3)):
  %c1 : int = prim.Constant[value=1]()
  %c1b : int = prim.Constant[value=1]()
  %a : Float(2, 3) = aten.add.Tensor(%x, %y, %c1)
  %b : Float(2, 3) = aten.add.Tensor(%x, %y, %c1b)
  %dead : Float(2, 3) = aten.exp.default(%a)
  %e : Float(2, 3) = aten.mul.Tensor(%a, %b)
  return (%e)
"""
    before, after, changed = run_one_pass(text, "cse")
    assert changed and ops(after).count("aten.add.Tensor") == 1
    check_same_results(before, after)
    before, after, changed = run_one_pass(text, "dce")
    assert changed and "aten.exp.default" not in ops(after)
    check_same_results(before, after)


def test_full_pipeline_and_dump(capsys):
    text = """graph(%x : Float(4, 3), %W : Float(5, 3), %b : Float(5)):
  %one : int = prim.Constant[value=1]()
  %n : NoneType = prim.Constant()
  %c : Float(4, 3) = aten.clone.default(%x, %n)
  %wt : Float(3, 5) = aten.t.default(%W)
  %mm : Float(4, 5) = aten.mm.default(%c, %wt)
  %y : Float(4, 5) = aten.add.Tensor(%mm, %b, %one)
  %z : Float(4, 5) = aten.relu.default(%y)
  %z2 : Float(4, 5) = aten.relu.default(%y)
  %o : Float(4, 5) = aten.add.Tensor(%z, %z2, %one)
  return (%o)
"""
    before = _C.Graph.parse(text)
    after = before.clone()
    dumps = []
    report = after.lower(debug=True, dump_after="fuse_linear", dump=lambda p, t: dumps.append((p, t)))
    assert [r[0] for r in report] == [p for p, on in _C.pass_defaults().items() if on]
    assert all(r[1] >= 0 for r in report)
    assert dumps and dumps[0][0] == "fuse_linear" and "aten.linear.default" in dumps[0][1]
    assert ops(after) == ["aten.linear.default", "aten.relu.default", "aten.add.Tensor"]
    check_same_results(before, after)
    # without a dump callable the text goes to sys.stderr
    before.clone().lower(dump_after="cse")
    assert "== graph after cse" in capsys.readouterr().err


def test_python_pass_and_errors():
    g = _C.Graph.parse("graph(%x : Float(2)):\n  %y : Float(2) = aten.relu.default(%x)\n  return (%y)\n")
    seen = []
    report = g.lower(passes=[("mine", lambda gr: seen.append(gr) or False, "cse")])
    assert seen == [g] and "mine" in [r[0] for r in report]
    with pytest.raises(ValueError, match="unknown pass 'nope'"):
        g.lower(disabled=["nope"])
    with pytest.raises(ZeroDivisionError):
        g.lower(passes=[("boom", lambda gr: 1 / 0, None)])
    with pytest.raises(TypeError):
        g.lower(dump=3)
    with pytest.raises(TypeError):
        _C.lower("not a graph")


_RMS = """graph(%x : Float(3, 5, 7), %w : Float(7)):
  %two : float = prim.Constant[value=2.]()
  %dims : int[] = prim.Constant[value=[-1]]()
  %t : bool = prim.Constant[value=true]()
  %none : NoneType = prim.Constant()
  %eps : float = prim.Constant[value=1e-06]()
  %one : int = prim.Constant[value=1]()
  %p : Float(3, 5, 7) = {square}
  %m : Float(3, 5, 1) = aten.mean.dim(%p, %dims, %t, %none)
  %a : Float(3, 5, 1) = aten.add.Tensor(%m, %eps, %one)
  %r : Float(3, 5, 1) = aten.rsqrt.default(%a)
  %y : Float(3, 5, 7) = aten.mul.Tensor({xr})
  %z : Float(3, 5, 7) = aten.mul.Tensor({wy})
  return ({out})
"""


@pytest.mark.parametrize("square,xr,wy", [
    ("aten.pow.Tensor_Scalar(%x, %two)", "%x, %r", "%w, %y"),   # transformers' LlamaRMSNorm
    ("aten.mul.Tensor(%x, %x)", "%r, %x", "%y, %w"),
])
def test_fuse_rms_norm(square, xr, wy):
    text = _RMS.format(square=square, xr=xr, wy=wy, out="%z")
    before, after, changed = run_one_pass(text, "fuse_rms_norm")
    assert changed and [o for o in ops(after) if o != "prim.ListConstruct"] == ["aten.rms_norm.default"], ops(after)
    check_same_results(before, after)


def test_fuse_rms_norm_without_weight_and_not_when_shared():
    # the weight's mul is not a weight (a full tensor): the norm without weight, the mul stays
    text = _RMS.format(square="aten.pow.Tensor_Scalar(%x, %two)", xr="%x, %r", wy="%y, %x", out="%z")
    before, after, changed = run_one_pass(text, "fuse_rms_norm")
    assert changed and ops(after) == ["aten.rms_norm.default", "aten.mul.Tensor"], ops(after)
    check_same_results(before, after)
    # the mean square is an output too: nothing fused
    text = _RMS.format(square="aten.pow.Tensor_Scalar(%x, %two)", xr="%x, %r", wy="%w, %y", out="%z, %m")
    before, after, changed = run_one_pass(text, "fuse_rms_norm")
    assert not changed and "aten.rms_norm.default" not in ops(after)
    # a mean over another dim is no RMS norm
    text = _RMS.format(square="aten.pow.Tensor_Scalar(%x, %two)", xr="%x, %r", wy="%w, %y", out="%z")
    text = text.replace("value=[-1]", "value=[1]").replace("%m : Float(3, 5, 1)", "%m : Float(3, 1, 7)")
    text = text.replace("%a : Float(3, 5, 1)", "%a : Float(3, 1, 7)").replace("%r : Float(3, 5, 1)", "%r : Float(3, 1, 7)")
    before, after, changed = run_one_pass(text, "fuse_rms_norm")
    assert not changed


_GELU = """graph(%x : Float(3, 5, 7)):
  %three : float = prim.Constant[value=3.]()
  %c : float = prim.Constant[value={c}]()
  %k : float = prim.Constant[value=0.7978845608028654]()
  %one : float = prim.Constant[value=1.]()
  %half : float = prim.Constant[value=0.5]()
  %alpha : int = prim.Constant[value=1]()
{cube}
  %m1 : Float(3, 5, 7) = aten.mul.Tensor(%p, %c)
  %a1 : Float(3, 5, 7) = aten.add.Tensor(%x, %m1, %alpha)
  %m2 : Float(3, 5, 7) = aten.mul.Tensor({km})
  %t : Float(3, 5, 7) = aten.tanh.default(%m2)
  %a2 : Float(3, 5, 7) = aten.add.Tensor(%t, %one, %alpha)
{tail}
  return ({out})
"""
_CUBE_POW = "  %p : Float(3, 5, 7) = aten.pow.Tensor_Scalar(%x, %three)"
_CUBE_MUL = "  %sq : Float(3, 5, 7) = aten.mul.Tensor(%x, %x)\n  %p : Float(3, 5, 7) = aten.mul.Tensor(%sq, %x)"
_HALF_FIRST = "  %h : Float(3, 5, 7) = aten.mul.Tensor(%x, %half)\n  %y : Float(3, 5, 7) = aten.mul.Tensor(%h, %a2)"
_HALF_LAST = "  %h : Float(3, 5, 7) = aten.mul.Tensor(%x, %a2)\n  %y : Float(3, 5, 7) = aten.mul.Tensor(%h, %half)"


@pytest.mark.parametrize("cube,km,tail", [
    (_CUBE_POW, "%a1, %k", _HALF_FIRST),    # GPT-2's NewGELUActivation as traced
    (_CUBE_MUL, "%k, %a1", _HALF_LAST),
])
def test_fuse_gelu_tanh(cube, km, tail):
    text = _GELU.format(c="0.044715", cube=cube, km=km, tail=tail, out="%y")
    before, after, changed = run_one_pass(text, "fuse_gelu_tanh")
    assert changed and ops(after) == ["aten.gelu.default"], ops(after)
    check_same_results(before, after)


def test_fuse_gelu_tanh_not_when_shared_or_other_constants():
    # tanh's value is an output too: nothing fused
    text = _GELU.format(c="0.044715", cube=_CUBE_POW, km="%a1, %k", tail=_HALF_FIRST, out="%y, %t")
    before, after, changed = run_one_pass(text, "fuse_gelu_tanh")
    assert not changed and "aten.gelu.default" not in ops(after)
    # another cubic coefficient is another function
    text = _GELU.format(c="0.05", cube=_CUBE_POW, km="%a1, %k", tail=_HALF_FIRST, out="%y")
    before, after, changed = run_one_pass(text, "fuse_gelu_tanh")
    assert not changed
