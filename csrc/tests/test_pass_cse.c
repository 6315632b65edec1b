/* cse: equal pure nodes and equal constants merge; impure ones and different args do not. */
#include "tests/test_pass_util.h"

static void test_cse(void) {
    expect_pass(ttc_pass_cse,
                "graph(%x : Float(2), %y : Float(2)):\n"
                "  %c1 : int = prim.Constant[value=1]()\n"
                "  %c1b : int = prim.Constant[value=1]()\n"
                "  %c2 : int = prim.Constant[value=2]()\n"
                "  %a : Float(2) = aten.add.Tensor(%x, %y, %c1)\n"
                "  %b : Float(2) = aten.add.Tensor(%x, %y, %c1b)\n"
                "  %c : Float(2) = aten.add.Tensor(%x, %y, %c2)\n"
                "  %d : Float(2) = aten.add.Tensor(%y, %x, %c1)\n"
                "  %r1 : Float(2) = aten.rand.default(%c1, %c1, %c1, %c1, %c1)\n"
                "  %r2 : Float(2) = aten.rand.default(%c1, %c1, %c1, %c1, %c1)\n"
                "  %e : Float(2) = aten.mul.Tensor(%a, %b)\n"
                "  return (%e, %c, %d, %b, %r1, %r2)\n",
                "graph(%x : Float(2), %y : Float(2)):\n"
                "  %c1 : int = prim.Constant[value=1]()\n"
                "  %c2 : int = prim.Constant[value=2]()\n"
                "  %a : Float(2) = aten.add.Tensor(%x, %y, %c1)\n"
                "  %c : Float(2) = aten.add.Tensor(%x, %y, %c2)\n"
                "  %d : Float(2) = aten.add.Tensor(%y, %x, %c1)\n"
                "  %r1 : Float(2) = aten.rand.default(%c1, %c1, %c1, %c1, %c1)\n"
                "  %r2 : Float(2) = aten.rand.default(%c1, %c1, %c1, %c1, %c1)\n"
                "  %e : Float(2) = aten.mul.Tensor(%a, %a)\n"
                "  return (%e, %c, %d, %a, %r1, %r2)\n",
                true);
    /* float literals differing in the last bit are different */
    const char *f = "graph(%x : Float(2)):\n"
                    "  %a : float = prim.Constant[value=0.1]()\n"
                    "  %b : float = prim.Constant[value=0.10000000000000002]()\n"
                    "  %y : Float(2) = aten.mul.Scalar(%x, %a)\n"
                    "  %z : Float(2) = aten.mul.Scalar(%x, %b)\n"
                    "  return (%y, %z)\n";
    expect_pass(ttc_pass_cse, f, f, false);
}

TEST_MAIN(test_cse)
