/* merge_split_views: reshape(merge) -> permute -> reshape(split back) becomes a split reshape and a
 * permute; chains it must leave alone stay as they are. Values are checked end to end against
 * torch in tests/device/test_view_split.py; here the graph's form. */
#include "tests/test_pass_util.h"

#include <string.h>

/* multi-head attention's q: [L, B, E] -> view(L, B*H, D) -> transpose(0, 1) -> view(B, H, L, D) */
static const char *mha =
    "graph(%q : Float(7, 2, 12)):\n"
    "  %s1 : int[] = prim.Constant[value=[7, 6, 4]]()\n"
    "  %s2 : int[] = prim.Constant[value=[2, 3, 7, 4]]()\n"
    "  %z : int = prim.Constant[value=0]()\n"
    "  %o : int = prim.Constant[value=1]()\n"
    "  %a : Float(7, 6, 4) = aten.view.default(%q, %s1)\n"
    "  %b : Float(6, 7, 4) = aten.transpose.int(%a, %z, %o)\n"
    "  %c : Float(2, 3, 7, 4) = aten.view.default(%b, %s2)\n"
    "  %r : Float(2, 3, 7, 4) = aten.relu.default(%c)\n"
    "  return (%r)\n";

static void test_rewrites_head_split(void) {
    bool changed = false;
    ttc_graph *g = run_pass_on(ttc_pass_merge_split_views, mha, &changed);
    CHECK(changed, "the chain was not rewritten");
    char *txt = ttc_graph_print(g);
    CHECK(txt && !strstr(txt, "aten.transpose.int") && strstr(txt, "aten.permute.default"), "%s", txt ? txt : "");
    /* the split view: [7, 2, 3, 4] (L, B, H, D), permuted (1, 2, 0, 3) */
    CHECK(txt && strstr(txt, "[7, 2, 3, 4]") && strstr(txt, "[1, 2, 0, 3]"), "%s", txt ? txt : "");
    CHECK(txt && strstr(txt, "Float(2, 3, 7, 4) = aten.permute.default"), "%s", txt ? txt : "");
    free(txt);
    ttc_graph_free(g);
}

static void test_symbolic_atom_is_minus_one(void) {
    static const char *dyn =
        "graph(%q : Float(7, s0, 12)) where s0 in [1, 2, 8]:\n"
        "  %s1 : int[] = prim.Constant[value=[7, -1, 4]]()\n"
        "  %s2 : int[] = prim.Constant[value=[-1, 3, 7, 4]]()\n"
        "  %z : int = prim.Constant[value=0]()\n"
        "  %o : int = prim.Constant[value=1]()\n"
        "  %a : Float(7, 3*s0, 4) = aten.view.default(%q, %s1)\n"
        "  %b : Float(3*s0, 7, 4) = aten.transpose.int(%a, %z, %o)\n"
        "  %c : Float(s0, 3, 7, 4) = aten.view.default(%b, %s2)\n"
        "  return (%c)\n";
    bool changed = false;
    ttc_graph *g = run_pass_on(ttc_pass_merge_split_views, dyn, &changed);
    char *txt = g ? ttc_graph_print(g) : NULL;
    CHECK(changed && txt && strstr(txt, "[7, -1, 3, 4]") && strstr(txt, "Float(s0, 3, 7, 4) = aten.permute.default"),
          "%s", txt ? txt : "");
    free(txt);
    ttc_graph_free(g);
}

static void test_leaves_other_chains(void) {
    /* the last reshape re-splits elsewhere (6 * 7 as 2, 21): no atoms match, nothing changes */
    static const char *other =
        "graph(%q : Float(7, 2, 12)):\n"
        "  %s1 : int[] = prim.Constant[value=[7, 6, 4]]()\n"
        "  %s2 : int[] = prim.Constant[value=[2, 21, 4]]()\n"
        "  %z : int = prim.Constant[value=0]()\n"
        "  %o : int = prim.Constant[value=1]()\n"
        "  %a : Float(7, 6, 4) = aten.view.default(%q, %s1)\n"
        "  %b : Float(6, 7, 4) = aten.transpose.int(%a, %z, %o)\n"
        "  %c : Float(2, 21, 4) = aten.view.default(%b, %s2)\n"
        "  return (%c)\n";
    expect_pass(ttc_pass_merge_split_views, other, other, false);
    /* the first reshape only splits: the converter takes it as a view already */
    static const char *split =
        "graph(%q : Float(7, 24)):\n"
        "  %s1 : int[] = prim.Constant[value=[7, 6, 4]]()\n"
        "  %s2 : int[] = prim.Constant[value=[6, 7, 4]]()\n"
        "  %z : int = prim.Constant[value=0]()\n"
        "  %o : int = prim.Constant[value=1]()\n"
        "  %a : Float(7, 6, 4) = aten.view.default(%q, %s1)\n"
        "  %b : Float(6, 7, 4) = aten.transpose.int(%a, %z, %o)\n"
        "  %c : Float(6, 7, 4) = aten.view.default(%b, %s2)\n"
        "  return (%c)\n";
    expect_pass(ttc_pass_merge_split_views, split, split, false);
    /* an intermediate with a second use stays */
    static const char *used =
        "graph(%q : Float(7, 2, 12)):\n"
        "  %s1 : int[] = prim.Constant[value=[7, 6, 4]]()\n"
        "  %s2 : int[] = prim.Constant[value=[2, 3, 7, 4]]()\n"
        "  %z : int = prim.Constant[value=0]()\n"
        "  %o : int = prim.Constant[value=1]()\n"
        "  %a : Float(7, 6, 4) = aten.view.default(%q, %s1)\n"
        "  %b : Float(6, 7, 4) = aten.transpose.int(%a, %z, %o)\n"
        "  %c : Float(2, 3, 7, 4) = aten.view.default(%b, %s2)\n"
        "  return (%c, %a)\n";
    expect_pass(ttc_pass_merge_split_views, used, used, false);
}

TEST_MAIN(test_rewrites_head_split, test_symbolic_atom_is_minus_one, test_leaves_other_chains)
