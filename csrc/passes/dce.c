/*
 * Dead code elimination: a node stays when it is impure (side effects: asserts, prints,
 * in-place copies, random ops, and opaque ops, whose effects we cannot know) or when one
 * of its outputs is a graph output or used by a node that stays. One reverse scan (users
 * come after producers) and one bulk erase: linear.
 */
#include "pass_manager.h"
#include "pass_util.h"

#include <stdlib.h>

static bool keeps(const ttc_node *n) {
    const ttc_op_info *info = ttc_op_info_get(n->op);
    return !info || (info->flags & TTC_OPF_IMPURE);
}

ttc_status ttc_pass_dce(ttc_graph *g, void *ctx, bool *changed) {
    (void)ctx;
    *changed = false;
    bool *kill = ttc_calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof(bool));
    bool *isout = ttc_calloc((size_t)(g->n_all_values ? g->n_all_values : 1), sizeof(bool));
    if (!kill || !isout) { free(kill); free(isout); return TTC_ERR_NOMEM; }
    for (int32_t i = 0; i < g->n_outputs; i++) isout[g->outputs[i]->id] = true;
    for (int32_t i = g->n_nodes - 1; i >= 0; i--) {
        const ttc_node *n = g->nodes[i];
        bool live = keeps(n);
        for (int o = 0; o < n->n_outputs && !live; o++) {
            const ttc_value *v = n->outputs[o];
            live = isout[v->id];
            for (int u = 0; u < v->n_users && !live; u++) live = !kill[v->users[u]->order];
        }
        kill[i] = !live;
        *changed |= !live;
    }
    ttc_status s = ttc_pass_erase_marked(g, kill);
    free(kill);
    free(isout);
    return s;
}
