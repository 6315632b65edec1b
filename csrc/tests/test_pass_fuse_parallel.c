/* fuse_parallel_linear: linears of one input with constant weights -> one linear over the
 * concatenated weights + slices (off unless TORCHTRT_C_FUSE_PARALLEL_LINEAR is on). */
#include "tests/test_pass_util.h"

#include "passes/pass_manager.h"
#include "passes/pass_util.h"
#include <stdlib.h>
#include <string.h>

static const char *qkv =
    "graph(%x : Float(2, 3), %y : Float(2, 3)):\n"
    "  %wq : Float(2, 3) = prim.Constant[value=tensor([1, 2, 3, 4, 5, 6])]()\n"
    "  %wk : Float(1, 3) = prim.Constant[value=tensor([7, 8, 9])]()\n"
    "  %wv : Float(3, 3) = prim.Constant[value=tensor([10, 11, 12, 13, 14, 15, 16, 17, 18])]()\n"
    "  %w4 : Float(1, 2) = prim.Constant[value=tensor([1, 2])]()\n"
    "  %none : NoneType = prim.Constant()\n"
    "  %q : Float(2, 2) = aten.linear.default(%x, %wq, %none)\n"
    "  %o : Float(2, 2) = aten.linear.default(%y, %wq, %none)\n"
    "  %k : Float(2, 1) = aten.linear.default(%x, %wk, %none)\n"
    "  %v : Float(2, 3) = aten.linear.default(%x, %wv, %none)\n"
    "  return (%q, %k, %v, %o)\n";

static int count(const ttc_graph *g, ttc_op_id op) {
    int n = 0;
    for (int32_t i = 0; i < g->n_nodes; i++) n += g->nodes[i]->op == op;
    return n;
}

static void test_off_by_default(void) {
    /* off in the default pipeline: the binding turns it on with its setting (py_passes.c) */
    ttc_pass_manager *pm = ttc_pass_manager_new();
    CHECK(pm != NULL, "no pass manager");
    if (!pm) return;
    bool found = false;
    for (int32_t i = 0; i < ttc_pass_manager_count(pm); i++)
        if (!strcmp(ttc_pass_manager_name(pm, i), "fuse_parallel_linear")) {
            found = true;
            CHECK(!ttc_pass_manager_is_enabled(pm, i), "on by default");
        }
    CHECK(found, "not in the pipeline");
    ttc_pass_manager_free(pm);
}

static void test_fuses_qkv(void) {
    bool changed = false;
    ttc_graph *g = run_pass_on(ttc_pass_fuse_parallel_linear, qkv, &changed);
    CHECK(changed, "not changed");
    if (!g) return;
    /* q, k, v -> one linear; o reads %y: its own */
    CHECK(count(g, TTC_OP_LINEAR) == 2, "%d linears", count(g, TTC_OP_LINEAR));
    CHECK(count(g, TTC_OP_SLICE) == 3, "%d slices", count(g, TTC_OP_SLICE));
    ttc_node *fused = NULL;
    for (int32_t i = 0; i < g->n_nodes; i++)
        if (g->nodes[i]->op == TTC_OP_LINEAR && g->nodes[i]->outputs[0]->type.dims[1].add == 6) fused = g->nodes[i];
    CHECK(fused != NULL, "no linear of 6 outputs");
    if (fused) {
        const ttc_attr *w = ttc_pass_tensor_const(fused->inputs[1]);
        CHECK(w && fused->inputs[1]->type.dims[0].add == 6 && fused->inputs[1]->type.dims[1].add == 3, "weight");
        for (int i = 0; w && i < 18; i++)
            CHECK(((const float *)w->tensor->data)[i] == (float)(i + 1), "weight[%d] = %g", i,
                  ((const float *)w->tensor->data)[i]);
        CHECK(ttc_value_is_none(fused->inputs[2]), "a bias appeared");
    }
    /* the slices of the fused output: [0, 2), [2, 3), [3, 6) along dim 1 */
    int64_t want[3][2] = {{0, 2}, {2, 3}, {3, 6}};
    int s = 0;
    for (int32_t i = 0; i < g->n_nodes && s < 3; i++) {
        ttc_node *n = g->nodes[i];
        if (n->op != TTC_OP_SLICE) continue;
        int64_t d, lo, hi, st;
        CHECK(n->inputs[0] == (fused ? fused->outputs[0] : NULL), "slice %d of another value", s);
        CHECK(ttc_value_const_int(n->inputs[1], &d) && d == 1, "slice %d dim", s);
        CHECK(ttc_value_const_int(n->inputs[2], &lo) && lo == want[s][0], "slice %d start", s);
        CHECK(ttc_value_const_int(n->inputs[3], &hi) && hi == want[s][1], "slice %d end", s);
        CHECK(ttc_value_const_int(n->inputs[4], &st) && st == 1, "slice %d step", s);
        s++;
    }
    CHECK(s == 3, "%d slices checked", s);
    ttc_graph_free(g);
}

static void test_left_alone(void) {
    /* a weight that is an input, biases on one only, or another K: no group */
    const char *keep =
        "graph(%x : Float(2, 3), %w : Float(2, 3)):\n"
        "  %wk : Float(1, 3) = prim.Constant[value=tensor([7, 8, 9])]()\n"
        "  %b : Float(1) = prim.Constant[value=tensor([1])]()\n"
        "  %none : NoneType = prim.Constant()\n"
        "  %q : Float(2, 2) = aten.linear.default(%x, %w, %none)\n"
        "  %k : Float(2, 1) = aten.linear.default(%x, %wk, %none)\n"
        "  %v : Float(2, 1) = aten.linear.default(%x, %wk, %b)\n"
        "  return (%q, %k, %v)\n";
    bool changed = true;
    ttc_graph *g = run_pass_on(ttc_pass_fuse_parallel_linear, keep, &changed);
    CHECK(!changed, "changed");
    CHECK(g && count(g, TTC_OP_LINEAR) == 3, "linears");
    ttc_graph_free(g);
}

TEST_MAIN(test_off_by_default, test_fuses_qkv, test_left_alone)
