/*
 * Removes assert and guard nodes (aten._assert_async, aten._assert_scalar,
 * aten.sym_constrain_range_for_size, and other aten._assert_* overloads): the engine is
 * built for the shapes the guards describe, and at run time there is nothing to raise.
 * What only fed them becomes dead and goes with dce.
 */
#include "pass_manager.h"
#include "pass_util.h"

#include <stdlib.h>
#include <string.h>

static bool is_guard(const ttc_node *n) {
    if (n->op == TTC_OP_ASSERT || n->op == TTC_OP_ASSERT_SCALAR || n->op == TTC_OP_SYM_CONSTRAIN) return true;
    return n->op == TTC_OP_OPAQUE && (!strncmp(n->op_name, "aten._assert_", 13) ||
                                      !strncmp(n->op_name, "aten.sym_constrain_range", 24));
}

ttc_status ttc_pass_remove_asserts(ttc_graph *g, void *ctx, bool *changed) {
    (void)ctx;
    *changed = false;
    bool *kill = ttc_calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof(bool));
    if (!kill) return TTC_ERR_NOMEM;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const ttc_node *n = g->nodes[i];
        if (!is_guard(n)) continue;
        bool used = false;
        for (int o = 0; o < n->n_outputs; o++)
            used |= n->outputs[o]->n_users > 0 || ttc_value_is_graph_output(g, n->outputs[o]);
        if (used) continue; /* a guard whose result is consumed is not ours to drop */
        kill[i] = true;
        *changed = true;
    }
    ttc_status s = ttc_pass_erase_marked(g, kill);
    free(kill);
    return s;
}
