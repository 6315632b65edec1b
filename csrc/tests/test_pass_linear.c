/* fuse_linear, unpack_addmm, unpack_log_softmax, remove_flatten_linear. */
#include "tests/test_pass_util.h"

static void test_fuse_mm_add(void) {
    expect_pass(ttc_pass_fuse_linear,
                "graph(%x : Float(4, 3), %W : Float(5, 3), %b : Float(5)):\n"
                "  %one : int = prim.Constant[value=1]()\n"
                "  %wt : Float(3, 5) = aten.t.default(%W)\n"
                "  %mm : Float(4, 5) = aten.mm.default(%x, %wt)\n"
                "  %y : Float(4, 5) = aten.add.Tensor(%mm, %b, %one)\n"
                "  %z : Float(4, 5) = aten.addmm.default(%b, %x, %wt, %one, %one)\n"
                "  return (%y, %z)\n",
                "graph(%x : Float(4, 3), %W : Float(5, 3), %b : Float(5)):\n"
                "  %one : int = prim.Constant[value=1]()\n"
                "  %wt : Float(3, 5) = aten.t.default(%W)\n"
                "  %0 : Float(4, 5) = aten.linear.default(%x, %W, %b)\n"
                "  %1 : Float(4, 5) = aten.linear.default(%x, %W, %b)\n"
                "  return (%0, %1)\n",
                true);
    /* a constant weight is transposed at compile time; bias first; matmul over 3-D x */
    expect_pass(ttc_pass_fuse_linear,
                "graph(%x : Float(2, 4, 3), %b : Float(2)):\n"
                "  %one : int = prim.Constant[value=1]()\n"
                "  %w : Float(3, 2) = prim.Constant[value=tensor([1, 2, 3, 4, 5, 6])]()\n"
                "  %mm : Float(2, 4, 2) = aten.matmul.default(%x, %w)\n"
                "  %y : Float(2, 4, 2) = aten.add.Tensor(%b, %mm, %one)\n"
                "  return (%y)\n",
                "graph(%x : Float(2, 4, 3), %b : Float(2)):\n"
                "  %one : int = prim.Constant[value=1]()\n"
                "  %w : Float(3, 2) = prim.Constant[value=tensor([1, 2, 3, 4, 5, 6])]()\n"
                "  %0 : Float(2, 3) = prim.Constant[value=tensor([1, 3, 5, 2, 4, 6])]()\n"
                "  %1 : Float(2, 4, 2) = aten.linear.default(%x, %0, %b)\n"
                "  return (%1)\n",
                true);
    /* alpha != 1, a bias that is not 1-D, or an mm with two users: left alone */
    const char *keep = "graph(%x : Float(4, 3), %w : Float(3, 5), %b : Float(4, 5)):\n"
                       "  %one : int = prim.Constant[value=1]()\n"
                       "  %two : int = prim.Constant[value=2]()\n"
                       "  %mm : Float(4, 5) = aten.mm.default(%x, %w)\n"
                       "  %y : Float(4, 5) = aten.add.Tensor(%mm, %b, %one)\n"
                       "  return (%y)\n";
    expect_pass(ttc_pass_fuse_linear, keep, keep, false);
}

static void test_unpack(void) {
    expect_pass(ttc_pass_unpack_addmm,
                "graph(%b : Float(5), %x : Float(4, 3), %w : Float(3, 5)):\n"
                "  %one : int = prim.Constant[value=1]()\n"
                "  %two : float = prim.Constant[value=2.]()\n"
                "  %z : Float(4, 5) = aten.addmm.default(%b, %x, %w, %one, %two)\n"
                "  return (%z)\n",
                "graph(%b : Float(5), %x : Float(4, 3), %w : Float(3, 5)):\n"
                "  %one : int = prim.Constant[value=1]()\n"
                "  %two : float = prim.Constant[value=2.]()\n"
                "  %0 : Float(4, 5) = aten.mm.default(%x, %w)\n"
                "  %1 : float = prim.Constant[value=2.]()\n"
                "  %2 : Float(4, 5) = aten.mul.Scalar(%0, %1)\n"
                "  %3 : int = prim.Constant[value=1]()\n"
                "  %4 : Float(4, 5) = aten.add.Tensor(%2, %b, %3)\n"
                "  return (%4)\n",
                true);
    expect_pass(ttc_pass_unpack_log_softmax,
                "graph(%x : Float(4, 3)):\n"
                "  %d : int = prim.Constant[value=1]()\n"
                "  %f : bool = prim.Constant[value=false]()\n"
                "  %y : Float(4, 3) = aten._log_softmax.default(%x, %d, %f)\n"
                "  return (%y)\n",
                "graph(%x : Float(4, 3)):\n"
                "  %d : int = prim.Constant[value=1]()\n"
                "  %f : bool = prim.Constant[value=false]()\n"
                "  %0 : Float(4, 3) = aten._softmax.default(%x, %d, %f)\n"
                "  %1 : Float(4, 3) = aten.log.default(%0)\n"
                "  return (%1)\n",
                true);
}

static void test_flatten_linear(void) {
    expect_pass(ttc_pass_remove_flatten_linear,
                "graph(%x : Float(2, 3, 2, 2), %W : Float(5, 12), %b : Float(5)):\n"
                "  %s : int = prim.Constant[value=1]()\n"
                "  %e : int = prim.Constant[value=-1]()\n"
                "  %f : Float(2, 12) = aten.flatten.using_ints(%x, %s, %e)\n"
                "  %y : Float(2, 5) = aten.linear.default(%f, %W, %b)\n"
                "  return (%y)\n",
                "graph(%x : Float(2, 3, 2, 2), %W : Float(5, 12), %b : Float(5)):\n"
                "  %s : int = prim.Constant[value=1]()\n"
                "  %e : int = prim.Constant[value=-1]()\n"
                "  %y : Float(2, 5) = aten.linear.default[flatten_input=1](%x, %W, %b)\n"
                "  return (%y)\n",
                true);
    /* not the trailing dims: stays */
    const char *keep = "graph(%x : Float(2, 3, 4), %W : Float(5, 4), %b : Float(5)):\n"
                       "  %s : int = prim.Constant[value=0]()\n"
                       "  %e : int = prim.Constant[value=1]()\n"
                       "  %f : Float(6, 4) = aten.flatten.using_ints(%x, %s, %e)\n"
                       "  %y : Float(6, 5) = aten.linear.default(%f, %W, %b)\n"
                       "  return (%y)\n";
    expect_pass(ttc_pass_remove_flatten_linear, keep, keep, false);
}

TEST_MAIN(test_fuse_mm_add, test_unpack, test_flatten_linear)
