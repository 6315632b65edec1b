/* Graph utilities: topological order (stable, cycle detection), extraction with constants
 * copied in, clone, and equality that notices every kind of difference. */
#include "ir/ir.h"
#include "tests/ctest.h"

static const char *diamond =
    "graph(%x : Float(2, 3), %y : Float(2, 3)):\n"
    "  %one : int = prim.Constant[value=1]()\n"
    "  %w : Float(2, 3) = prim.Constant[value=tensor([1., 2., 3., 4., 5., 6.], name=\"w\")]()\n"
    "  %a : Float(2, 3) = aten.relu.default(%x)  # name=a\n"
    "  %b : Float(2, 3) = aten.add.Tensor(%a, %w, %one)  # name=b\n"
    "  %c : Float(2, 3) = aten.neg.default(%a)  # name=c\n"
    "  %d : Float(2, 3) = aten.mul.Tensor(%b, %c)  # name=d\n"
    "  %e : Float(2, 3) = aten.add.Tensor(%d, %y, %one)  # name=e\n"
    "  return (%e, %c)\n";

static ttc_graph *parse(const char *src) {
    ttc_graph *g = NULL;
    CHECK_OK(ttc_graph_parse(src, &g));
    return g;
}

static void test_topo_order_stable_and_reorders(void) {
    ttc_graph *g = parse(diamond);
    if (!g) return;
    ttc_node **order = NULL;
    CHECK_OK(ttc_graph_topo_order(g, &order));
    for (int i = 0; order && i < g->n_nodes; i++) CHECK(order[i] == g->nodes[i], "already ordered: position %d moved", i);
    free(order);
    /* move e to the front and d before b: toposort must restore a valid order */
    ttc_node *e = ttc_graph_find_node(g, "e"), *d = ttc_graph_find_node(g, "d");
    int n = g->n_nodes;
    ttc_node *perm[16];
    perm[0] = e;
    perm[1] = d;
    int k = 2;
    for (int i = 0; i < n; i++)
        if (g->nodes[i] != e && g->nodes[i] != d) perm[k++] = g->nodes[i];
    for (int i = 0; i < n; i++) { g->nodes[i] = perm[i]; perm[i]->order = i; }
    CHECK(ttc_graph_verify(g) == TTC_ERR_VERIFY);
    CHECK_OK(ttc_graph_toposort(g));
    CHECK_OK(ttc_graph_verify(g));
    CHECK(g->nodes[n - 1] == e && g->nodes[n - 2] == d, "d and e go last");
    ttc_graph_free(g);
}

static void test_extract(void) {
    ttc_graph *g = parse(diamond);
    if (!g) return;
    ttc_node *set[2] = {ttc_graph_find_node(g, "d"), ttc_graph_find_node(g, "b")}; /* any order */
    ttc_graph *sub = NULL;
    ttc_value **in_map = NULL, **out_map = NULL;
    int32_t ni = 0, no = 0;
    CHECK_OK(ttc_graph_extract(g, set, 2, &sub, &in_map, &ni, &out_map, &no));
    if (!sub) { ttc_graph_free(g); return; }
    CHECK_OK(ttc_graph_verify(sub));
    /* inputs: a (used by b) and c (used by d); constants one and w are copied in */
    CHECK(ni == 2 && in_map[0] == ttc_graph_find_value(g, "a") && in_map[1] == ttc_graph_find_value(g, "c"),
          "ni=%d", ni);
    CHECK(sub->n_inputs == 2 && !strcmp(sub->inputs[0]->name, "a") && !strcmp(sub->inputs[1]->name, "c"));
    const ttc_attr *w = ttc_value_const(ttc_graph_find_value(sub, "w"));
    CHECK(w && w->kind == TTC_ATTR_TENSOR && w->tensor->refcount == 2, "weights shared, not copied");
    /* output: d (used by e outside the set); b is used only inside */
    CHECK(no == 1 && out_map[0] == ttc_graph_find_value(g, "d"), "no=%d", no);
    CHECK(sub->n_outputs == 1 && !strcmp(sub->outputs[0]->name, "d"));
    CHECK(ttc_graph_find_node(sub, "b") && ttc_graph_find_node(sub, "d") && sub->n_nodes == 4);
    free(in_map);
    free(out_map);
    ttc_graph_free(sub);
    /* a node whose output is a graph output exports it */
    ttc_node *c = ttc_graph_find_node(g, "c");
    CHECK_OK(ttc_graph_extract(g, &c, 1, &sub, NULL, NULL, NULL, NULL));
    CHECK(sub && sub->n_outputs == 1 && !strcmp(sub->outputs[0]->name, "c"));
    ttc_graph_free(sub);
    /* erased nodes cannot be extracted */
    ttc_node *dead = ttc_graph_append_node(g, "aten.abs.default", &g->inputs[0], 1, &g->inputs[0]->type, 1, "dead");
    CHECK_OK(ttc_graph_erase_node(g, dead));
    CHECK(ttc_graph_extract(g, &dead, 1, &sub, NULL, NULL, NULL, NULL) == TTC_ERR_INVALID_ARG && !sub);
    ttc_graph_free(g);
}

/* A list of constants (aten.index's [None, idx buffer]) is a constant too: it travels into the
 * extracted graph with its elements instead of becoming an input (a list has no binding). */
static void test_extract_copies_lists_of_constants(void) {
    ttc_graph *g = parse("graph(%x : Float(4, 3)):\n"
                         "  %zero : int = prim.Constant[value=0]()\n"
                         "  %w : Float(2, 3) = prim.Constant[value=tensor([1., 2., 3., 4., 5., 6.], name=\"w\")]()\n"
                         "  %l : Tensor[] = prim.ListConstruct(%w, %w)\n"
                         "  %c : Float(4, 3) = aten.cat.default(%l, %zero)  # name=c\n"
                         "  %one : int = prim.Constant[value=1]()\n"
                         "  %y : Float(4, 3) = aten.add.Tensor(%c, %x, %one)  # name=y\n"
                         "  return (%y)\n");
    if (!g) return;
    ttc_node *set[2] = {ttc_graph_find_node(g, "c"), ttc_graph_find_node(g, "y")};
    ttc_graph *sub = NULL;
    ttc_value **in_map = NULL;
    int32_t ni = -1;
    CHECK_OK(ttc_graph_extract(g, set, 2, &sub, &in_map, &ni, NULL, NULL));
    if (sub) {
        CHECK_OK(ttc_graph_verify(sub));
        CHECK(ni == 1 && in_map[0] == g->inputs[0] && sub->n_inputs == 1, "only %%x is an input (ni=%d)", ni);
        const ttc_value *l = ttc_graph_find_value(sub, "l");
        CHECK(l && l->producer && l->producer->op == TTC_OP_LIST_CONSTRUCT && l->producer->n_inputs == 2,
              "the list is built inside");
        CHECK(sub->n_nodes == 6, "zero, w, l, c, one, y: %d nodes", sub->n_nodes);
    }
    free(in_map);
    ttc_graph_free(sub);
    ttc_graph_free(g);
}

static void test_clone_and_equal(void) {
    ttc_graph *g = parse(diamond);
    if (!g) return;
    ttc_graph *c = NULL;
    CHECK_OK(ttc_graph_clone(g, &c));
    CHECK(c && ttc_graph_equal(g, c) && ttc_graph_equal(c, g));
    CHECK_OK(ttc_graph_verify(c));
    /* every kind of difference is noticed */
    ttc_value *cw = ttc_graph_find_value(c, "w");
    const ttc_attr *wa = ttc_value_const(cw);
    ttc_tensor_data *fresh = ttc_tensor_data_copy(wa->tensor->data, wa->tensor->nbytes);
    ((float *)fresh->data)[5] = 7.0f;
    ttc_attr na;
    CHECK_OK(ttc_attr_copy(&na, wa));
    ttc_tensor_data_unref(na.tensor);
    na.tensor = fresh;
    CHECK_OK(ttc_node_set_attr(cw->producer, &na));
    ttc_attr_clear(&na);
    CHECK(!ttc_graph_equal(g, c), "tensor bytes differ");
    ttc_graph_free(c);

    CHECK_OK(ttc_graph_clone(g, &c));
    ttc_node *a = ttc_graph_find_node(c, "a");
    free(a->name);
    a->name = ttc_strdup("a2");
    CHECK(!ttc_graph_equal(g, c), "node names differ");
    ttc_graph_free(c);

    CHECK_OK(ttc_graph_clone(g, &c));
    ttc_graph_find_value(c, "e")->type.dims[0] = ttc_dim_const(3);
    CHECK(!ttc_graph_equal(g, c), "types differ");
    ttc_graph_free(c);

    CHECK_OK(ttc_graph_clone(g, &c));
    ttc_node *e = ttc_graph_find_node(c, "e");
    CHECK_OK(ttc_node_set_input(e, 1, c->inputs[0]));
    CHECK(!ttc_graph_equal(g, c), "inputs differ");
    ttc_graph_free(c);

    CHECK_OK(ttc_graph_clone(g, &c));
    ttc_value *one = ttc_graph_find_value(c, "one");
    ttc_attr two = {.name = "value", .kind = TTC_ATTR_INT, .i = 2};
    CHECK_OK(ttc_node_set_attr(one->producer, &two));
    CHECK(!ttc_graph_equal(g, c), "attrs differ");
    ttc_graph_free(c);

    CHECK_OK(ttc_graph_clone(g, &c));
    CHECK(ttc_graph_add_symbol(c, "s0", 1, 2, 3) == 0);
    CHECK(!ttc_graph_equal(g, c), "symbols differ");
    ttc_graph_free(c);
    ttc_graph_free(g);
}

TEST_MAIN(test_topo_order_stable_and_reorders, test_extract, test_extract_copies_lists_of_constants,
          test_clone_and_equal)
