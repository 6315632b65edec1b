/* remove_noops and remove_asserts. */
#include "tests/test_pass_util.h"

static void test_noops(void) {
    expect_pass(ttc_pass_remove_noops,
                "graph(%x : Float(2, 3)):\n"
                "  %n : NoneType = prim.Constant()\n"
                "  %p : float = prim.Constant[value=0.5]()\n"
                "  %f : bool = prim.Constant[value=false]()\n"
                "  %s : int[] = prim.Constant[value=[2, 3]]()\n"
                "  %s2 : int[] = prim.Constant[value=[3, 2]]()\n"
                "  %a : Float(2, 3) = aten.clone.default(%x, %n)\n"
                "  %b : Float(2, 3) = aten.dropout.default(%a, %p, %f)\n"
                "  %c : Float(2, 3) = aten.expand.default(%b, %s, %f)\n"
                "  %d : Float(2, 3) = aten.view.default(%c, %s)\n"
                "  %e : Float(3, 2) = aten.t.default(%d)\n"
                "  %g : Float(2, 3) = aten.t.default(%e)\n"
                "  %h : Float(3, 2) = aten.view.default(%g, %s2)\n"
                "  %i : Float(3, 2) = aten.relu.default(%h)\n"
                "  %j : Float(3, 2) = aten.detach.default(%i)\n"
                "  return (%j, %e)\n",
                "graph(%x : Float(2, 3)):\n"
                "  %n : NoneType = prim.Constant()\n"
                "  %p : float = prim.Constant[value=0.5]()\n"
                "  %f : bool = prim.Constant[value=false]()\n"
                "  %s : int[] = prim.Constant[value=[2, 3]]()\n"
                "  %s2 : int[] = prim.Constant[value=[3, 2]]()\n"
                "  %e : Float(3, 2) = aten.t.default(%x)\n"
                "  %h : Float(3, 2) = aten.view.default(%x, %s2)\n"
                "  %i : Float(3, 2) = aten.relu.default(%h)\n"
                "  return (%i, %e)\n",
                true);
    /* casts: same dtype goes, another dtype stays; a graph output that is a no-op */
    expect_pass(ttc_pass_remove_noops,
                "graph(%x : Float(2)):\n"
                "  %n : NoneType = prim.Constant()\n"
                "  %f : bool = prim.Constant[value=false]()\n"
                "  %d6 : int = prim.Constant[value=6]()\n"
                "  %d5 : int = prim.Constant[value=5]()\n"
                "  %a : Float(2) = aten._to_copy.default(%x, %d6, %n, %n, %n, %f, %n)\n"
                "  %b : Half(2) = aten._to_copy.default(%a, %d5, %n, %n, %n, %f, %n)\n"
                "  %c : Half(2) = aten.contiguous.default(%b, %n)\n"
                "  return (%c)\n",
                "graph(%x : Float(2)):\n"
                "  %n : NoneType = prim.Constant()\n"
                "  %f : bool = prim.Constant[value=false]()\n"
                "  %d6 : int = prim.Constant[value=6]()\n"
                "  %d5 : int = prim.Constant[value=5]()\n"
                "  %b : Half(2) = aten._to_copy.default(%x, %d5, %n, %n, %n, %f, %n)\n"
                "  return (%b)\n",
                true);
}

static void test_asserts(void) {
    expect_pass(ttc_pass_remove_asserts,
                "graph(%x : Float(s0, 2), %k : int) where s0 in [1, 4, 8]:\n"
                "  %m : str = prim.Constant[value=\"shape\"]()\n"
                "  %n : NoneType = prim.Constant()\n"
                "  %ok : Bool(s0, 2) = aten.gt.Scalar(%x, %k)\n"
                "  = aten._assert_async.msg(%ok, %m)\n"
                "  = aten._assert_scalar.default(%k, %m)\n"
                "  = aten.sym_constrain_range_for_size.default(%k, %n, %n)\n"
                "  %y : Float(s0, 2) = aten.relu.default(%x)\n"
                "  return (%y)\n",
                "graph(%x : Float(s0, 2), %k : int) where s0 in [1, 4, 8]:\n"
                "  %m : str = prim.Constant[value=\"shape\"]()\n"
                "  %n : NoneType = prim.Constant()\n"
                "  %ok : Bool(s0, 2) = aten.gt.Scalar(%x, %k)\n"
                "  %y : Float(s0, 2) = aten.relu.default(%x)\n"
                "  return (%y)\n",
                true);
}

TEST_MAIN(test_noops, test_asserts)
