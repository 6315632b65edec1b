/* constant_fold: scalars, int lists, sym_size, elementwise and view ops on constants. */
#include "tests/test_pass_util.h"

static void test_scalars(void) {
    expect_pass(ttc_pass_constant_fold,
                "graph(%x : Float(4, s0)) where s0 in [1, 2, 8]:\n"
                "  %d0 : int = prim.Constant[value=0]()\n"
                "  %d1 : int = prim.Constant[value=1]()\n"
                "  %m3 : int = prim.Constant[value=-7]()\n"
                "  %two : int = prim.Constant[value=2]()\n"
                "  %a : int = aten.sym_size.int(%x, %d0)\n"
                "  %b : int = aten.sym_size.int(%x, %d1)\n"
                "  %c : int = _operator.mul(%a, %two)\n"
                "  %e : int = _operator.floordiv(%m3, %two)\n"
                "  %l : int[] = prim.ListConstruct(%c, %e)\n"
                "  %l2 : int[] = prim.ListConstruct(%c, %b)\n"
                "  %g : int = prim.getitem(%l, %d1)\n"
                "  return (%l, %l2, %g)\n",
                "graph(%x : Float(4, s0)) where s0 in [1, 2, 8]:\n"
                "  %d0 : int = prim.Constant[value=0]()\n"
                "  %d1 : int = prim.Constant[value=1]()\n"
                "  %m3 : int = prim.Constant[value=-7]()\n"
                "  %two : int = prim.Constant[value=2]()\n"
                "  %a : int = prim.Constant[value=4]()\n"
                "  %b : int = aten.sym_size.int(%x, %d1)\n"
                "  %c : int = prim.Constant[value=8]()\n"
                "  %e : int = prim.Constant[value=-4]()\n"
                "  %l : int[] = prim.Constant[value=[8, -4]]()\n"
                "  %l2 : int[] = prim.ListConstruct(%c, %b)\n"
                "  %g : int = prim.Constant[value=-4]()\n"
                "  return (%l, %l2, %g)\n",
                true);
}

static void test_tensors(void) {
    expect_pass(ttc_pass_constant_fold,
                "graph(%x : Float(3, 2)):\n"
                "  %w : Float(2, 3) = prim.Constant[value=tensor([1, 2, 3, 4, 5, 6])]()\n"
                "  %b : Float(3) = prim.Constant[value=tensor([10, 20, 30])]()\n"
                "  %one : int = prim.Constant[value=1]()\n"
                "  %half : float = prim.Constant[value=0.5]()\n"
                "  %p : int[] = prim.Constant[value=[1, 0]]()\n"
                "  %s : int[] = prim.Constant[value=[6]]()\n"
                "  %a : Float(2, 3) = aten.add.Tensor(%w, %b, %one)\n"
                "  %m : Float(2, 3) = aten.mul.Scalar(%a, %half)\n"
                "  %t : Float(3, 2) = aten.permute.default(%m, %p)\n"
                "  %v : Float(6) = aten.view.default(%t, %s)\n"
                "  %y : Float(3, 2) = aten.add.Tensor(%x, %t, %one)\n"
                "  return (%y, %v)\n",
                "graph(%x : Float(3, 2)):\n"
                "  %w : Float(2, 3) = prim.Constant[value=tensor([1, 2, 3, 4, 5, 6])]()\n"
                "  %b : Float(3) = prim.Constant[value=tensor([10, 20, 30])]()\n"
                "  %one : int = prim.Constant[value=1]()\n"
                "  %half : float = prim.Constant[value=0.5]()\n"
                "  %p : int[] = prim.Constant[value=[1, 0]]()\n"
                "  %s : int[] = prim.Constant[value=[6]]()\n"
                "  %a : Float(2, 3) = prim.Constant[value=tensor([11, 22, 33, 14, 25, 36])]()\n"
                "  %m : Float(2, 3) = prim.Constant[value=tensor([5.5, 11, 16.5, 7, 12.5, 18])]()\n"
                "  %t : Float(3, 2) = prim.Constant[value=tensor([5.5, 7, 11, 12.5, 16.5, 18])]()\n"
                "  %v : Float(6) = prim.Constant[value=tensor([5.5, 7, 11, 12.5, 16.5, 18])]()\n"
                "  %y : Float(3, 2) = aten.add.Tensor(%x, %t, %one)\n"
                "  return (%y, %v)\n",
                true);
}

static void test_view_shares_data(void) {
    bool ch;
    ttc_graph *g = run_pass_on(ttc_pass_constant_fold,
                               "graph():\n"
                               "  %w : Float(2, 2) = prim.Constant[value=tensor([1, 2, 3, 4])]()\n"
                               "  %s : int[] = prim.Constant[value=[4]]()\n"
                               "  %v : Float(4) = aten.reshape.default(%w, %s)\n"
                               "  return (%v)\n",
                               &ch);
    if (!g) return;
    const ttc_attr *a = ttc_value_const(ttc_graph_find_value(g, "w")), *b = ttc_value_const(ttc_graph_find_value(g, "v"));
    CHECK(ch && a && b && a->tensor == b->tensor && a->tensor->refcount == 2);
    ttc_graph_free(g);
}

TEST_MAIN(test_scalars, test_tensors, test_view_shares_data)
