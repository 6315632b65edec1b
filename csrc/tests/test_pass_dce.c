/* dce: dead chains go, impure and opaque nodes and graph outputs stay. */
#include "tests/test_pass_util.h"

static void test_dce(void) {
    expect_pass(ttc_pass_dce,
                "graph(%x : Float(2)):\n"
                "  %a : Float(2) = aten.relu.default(%x)\n"
                "  %b : Float(2) = aten.exp.default(%a)\n"
                "  %m : str = prim.Constant[value=\"boom\"]()\n"
                "  %c : Float(2) = aten.neg.default(%x)\n"
                "  = aten._assert_async.msg(%c, %m)\n"
                "  %o : Float(2) = my.opaque.default(%x)\n"
                "  %u : int = prim.Constant[value=3]()\n"
                "  %y : Float(2) = aten.sigmoid.default(%x)\n"
                "  return (%y)\n",
                "graph(%x : Float(2)):\n"
                "  %m : str = prim.Constant[value=\"boom\"]()\n"
                "  %c : Float(2) = aten.neg.default(%x)\n"
                "  = aten._assert_async.msg(%c, %m)\n"
                "  %o : Float(2) = my.opaque.default(%x)\n"
                "  %y : Float(2) = aten.sigmoid.default(%x)\n"
                "  return (%y)\n",
                true);
    const char *clean = "graph(%x : Float(2)):\n  %y : Float(2) = aten.relu.default(%x)\n  return (%y, %x)\n";
    expect_pass(ttc_pass_dce, clean, clean, false);
}

/* A long dead chain: the bulk erase keeps it linear (and correct). */
static void test_dce_long_chain(void) {
    ttc_graph *g = ttc_graph_new();
    ttc_type t = ttc_type_tensor(TTC_DTYPE_FLOAT32, 1, (int64_t[]){2});
    ttc_value *x = ttc_graph_add_input(g, "x", &t), *cur = x;
    for (int i = 0; i < 20000; i++) cur = ttc_graph_append_node(g, "aten.relu.default", &cur, 1, &t, 1, NULL)->outputs[0];
    ttc_node *keep = ttc_graph_append_node(g, "aten.exp.default", &x, 1, &t, 1, "keep");
    ttc_graph_set_outputs(g, &keep->outputs[0], 1);
    bool changed;
    CHECK_OK(ttc_pass_dce(g, NULL, &changed));
    CHECK(changed && g->n_nodes == 1 && g->nodes[0] == keep && keep->order == 0 && x->n_users == 1);
    CHECK_OK(ttc_graph_verify(g));
    ttc_graph_free(g);
}

TEST_MAIN(test_dce, test_dce_long_chain)
