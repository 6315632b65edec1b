/*
 * Unpacks log_softmax into softmax + log (same dim, same dtype argument), for converter
 * sets that have softmax and log but no log_softmax. Off by default.
 */
#include "pass_manager.h"
#include "pass_util.h"

#include <stdlib.h>

ttc_status ttc_pass_unpack_log_softmax(ttc_graph *g, void *ctx, bool *changed) {
    (void)ctx;
    *changed = false;
    int32_t n0 = g->n_nodes;
    ttc_node **todo = ttc_malloc(sizeof(ttc_node *) * (size_t)(n0 ? n0 : 1));
    if (!todo) return TTC_ERR_NOMEM;
    int32_t nt = 0;
    for (int32_t i = 0; i < n0; i++) {
        ttc_node *n = g->nodes[i];
        if ((n->op == TTC_OP_LOG_SOFTMAX || n->op == TTC_OP_LOG_SOFTMAX_INT) && n->n_inputs == 3) todo[nt++] = n;
    }
    ttc_status s = TTC_OK;
    for (int32_t k = 0; k < nt && s == TTC_OK; k++) {
        ttc_node *n = todo[k];
        const char *sm = n->op == TTC_OP_LOG_SOFTMAX ? "aten._softmax.default" : "aten.softmax.int";
        ttc_node *soft = ttc_graph_insert_node_before(g, n, sm, n->inputs, 3, &n->outputs[0]->type, 1, NULL);
        ttc_node *lg = soft ? ttc_graph_insert_node_before(g, n, "aten.log.default", soft->outputs, 1,
                                                           &n->outputs[0]->type, 1, NULL)
                            : NULL;
        if (!lg) { s = TTC_ERR_NOMEM; break; }
        s = ttc_pass_replace_value(g, n->outputs[0], lg->outputs[0]);
        *changed = true;
    }
    if (s == TTC_OK) s = ttc_pass_erase_nodes(g, todo, nt);
    free(todo);
    return s;
}
