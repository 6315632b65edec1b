/* Graph construction basics: build, users, replace, erase. */
#include "ir/ir.h"
#include "tests/ctest.h"

static void test_build_and_erase(void) {
    ttc_graph *g = ttc_graph_new();
    ttc_type t = ttc_type_tensor(TTC_DTYPE_FLOAT32, 2, (int64_t[]){2, 3});
    ttc_value *x = ttc_graph_add_input(g, "x", &t);
    ttc_node *r = ttc_graph_append_node(g, "aten.relu.default", &x, 1, &t, 1, "relu");
    CHECK(r && r->op == TTC_OP_RELU, "relu known to the op table");
    ttc_node *o = ttc_graph_append_node(g, "aten.lgamma.default", &r->outputs[0], 1, &t, 1, "lg");
    CHECK(o && o->op == TTC_OP_LGAMMA);
    ttc_node *u = ttc_graph_append_node(g, "aten.foo.default", &x, 1, &t, 1, "foo");
    CHECK(u && u->op == TTC_OP_OPAQUE && !strcmp(u->op_name, "aten.foo.default"));
    CHECK(x->n_users == 2, "x has %d users", x->n_users);
    CHECK_OK(ttc_graph_set_outputs(g, &o->outputs[0], 1));
    CHECK(ttc_graph_erase_node(g, r) != TTC_OK, "relu still used");
    ttc_value_replace_all_uses(r->outputs[0], x);
    CHECK(x->n_users == 3 && r->outputs[0]->n_users == 0);
    CHECK_OK(ttc_graph_erase_node(g, r));
    CHECK(g->n_nodes == 2 && g->nodes[0] == o && o->order == 0);
    CHECK(ttc_graph_erase_node(g, o) != TTC_OK, "graph output cannot be erased");
    ttc_graph_free(g);
}

static void test_constants(void) {
    ttc_graph *g = ttc_graph_new();
    int64_t v[3] = {1, 2, 3};
    ttc_value *c = ttc_graph_const_ints(g, NULL, v, 3);
    int64_t *got; int32_t n;
    CHECK(ttc_value_const_ints(c, &got, &n) && n == 3 && got[2] == 3);
    free(got);
    float w[6] = {1, 2, 3, 4, 5, 6};
    ttc_type t = ttc_type_tensor(TTC_DTYPE_FLOAT32, 2, (int64_t[]){2, 3});
    ttc_tensor_data *d = ttc_tensor_data_copy(w, sizeof w);
    ttc_value *tc = ttc_graph_const_tensor(g, NULL, "w", &t, d);
    ttc_tensor_data_unref(d);
    CHECK(tc && ttc_value_const(tc)->tensor->refcount == 1);
    ttc_type bad = ttc_type_tensor(TTC_DTYPE_FLOAT32, 2, (int64_t[]){2, 4});
    d = ttc_tensor_data_copy(w, sizeof w);
    CHECK(ttc_graph_const_tensor(g, NULL, "w2", &bad, d) == NULL, "size mismatch rejected");
    ttc_tensor_data_unref(d);
    ttc_graph_free(g);
}

TEST_MAIN(test_build_and_erase, test_constants)
