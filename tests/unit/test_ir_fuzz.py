"""Mutated IR texts fed to Graph.parse: only ParseError/VerifyError, never a crash or hang.

Deterministic (fixed seed): byte flips, truncations, token duplications/deletions of real
graphs. Whatever parses must print and parse back to the same text.
"""
import random
import time

import pytest

from torchtrt_c import _C

SEEDS = [
    """graph(%x : Float(s0, 3, 8, 8), %w : Float(4, 3, 3, 3)) where s0 in [1, 2, 4]:
  %b : NoneType = prim.Constant()
  %st : int[] = prim.Constant[value=[1, 1]]()
  %f : bool = prim.Constant[value=false]()
  %op : int[] = prim.Constant[value=[0, 0]]()
  %g : int = prim.Constant[value=1]()
  %c : Float(s0, 4, 8, 8) = aten.convolution.default(%x, %w, %b, %st, %st, %st, %f, %op, %g)  # name=conv module=features.0
  %r : Float(s0, 4, 8, 8) = aten.relu.default(%c)
  %m1 : int = prim.Constant[value=-1]()
  %fl : Float(s0, 256) = aten.flatten.using_ints(%r, %g, %m1)
  %t : Float(2, 2) = prim.Constant[value=tensor([1., 2.5, -3e-07, 4.])]()
  %s : str = prim.Constant[value="tanh"]()
  %lst : Tensor[] = prim.ListConstruct(%fl, %fl)
  %a : Float(s0), %i : Long(s0) = aten.max.dim(%fl, %g, %f)
  %z : Float(s0, 256) = aten.lgamma.default(%fl)
  return (%z, %a)
""",
    """graph(%x : Half(b, 16), %"odd name" : int) where b in [1, 8, 64]:
  %e : float[] = prim.Constant[value=float[]]()
  %h : Half(3) = prim.Constant[value=tensor([1., 0.1, 65504.], name="hh")]()
  %y : Half(b, 16) = aten.gelu.default(%x, %"odd name")  # name="gelu 1" target=0 segment=1 reason="no converter"
  %u : Half(*) = "my::op"["k"=2, v=None](%y)
  = aten._assert_async.msg(%y, %"odd name")
  return (%y, %u)
""",
]

TOKENS = ["%", "(", ")", ",", ":", "=", "[", "]", '"', "*", "+", "-", "#", "\n", "0", "9", "s0", "Float(",
          "tensor(", "\\x", "\\", "inf", "nan", "99999999999999999999", "name=", "\x00"[:0], "\xff", "é"]


def mutate(rng, text):
    b = bytearray(text.encode())
    for _ in range(rng.randint(1, 4)):
        if not b:
            break
        at = rng.randrange(len(b))
        kind = rng.randrange(5)
        if kind == 0:
            b[at] = rng.randrange(1, 256)
        elif kind == 1:
            del b[at:]
        elif kind == 2:
            n = rng.randint(1, 16)
            b[at:at] = b[at:at + n]
        elif kind == 3:
            del b[at:at + rng.randint(1, 8)]
        else:
            b[at:at] = rng.choice(TOKENS).encode()
    return b.decode("utf-8", errors="replace")


def test_fuzz_parse_never_crashes():
    rng = random.Random(1234)
    start = time.monotonic()
    outcomes = {"ok": 0, "parse": 0, "verify": 0}
    for i in range(3000):
        text = mutate(rng, SEEDS[i % len(SEEDS)])
        try:
            g = _C.Graph.parse(text)
        except _C.ParseError as e:
            assert "line " in str(e) and "column " in str(e), str(e)
            outcomes["parse"] += 1
            continue
        try:
            g.verify()
            outcomes["ok"] += 1
        except _C.VerifyError:
            outcomes["verify"] += 1
        printed = str(g)
        assert str(_C.Graph.parse(printed)) == printed
        g.clone()
        assert time.monotonic() - start < 60, "fuzzing is far too slow: a hang?"
    # the mutations must exercise both the error paths and the success path
    assert outcomes["parse"] > 100 and outcomes["ok"] > 50, outcomes


@pytest.mark.parametrize("text", ["", "graph", "graph(", "graph():", "graph():\n return (", "graph(%" * 5000,
                                  "graph(%x : Float(" + "1, " * 100 + "1)):\n  return (%x)\n",
                                  "graph():\n  %a : int[] = prim.Constant[value=[" + "1, " * 100000 + "1]]()\n  return (%a)\n"])
def test_pathological_inputs(text):
    try:
        g = _C.Graph.parse(text)
    except _C.ParseError:
        return
    g.verify()
