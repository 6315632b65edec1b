/*
 * Removes ops that are identities at inference: the ops.def TTC_OPF_NOOP_INFER set
 * (dropout, clone, contiguous, detach, alias, lift_fresh_copy; native_dropout when its
 * mask is unused; dropouts only with p = 0 or train = false), a cast to the dtype the tensor already has, an expand/view/reshape to
 * the shape it already has, and t(t(x)). Each is replaced by its input.
 * Kept: a clone/contiguous of a strided view (a permute, expand, inner slice) that is a graph
 * output: eager returns a contiguous copy there, which is the work an engine does.
 */
#include "pass_manager.h"
#include "pass_util.h"

#include <stdlib.h>

/* The value n forwards unchanged, or NULL when n is not a no-op. */
static ttc_value *identity_of(const ttc_graph *g, const ttc_node *n) {
    const ttc_op_info *info = ttc_op_info_get(n->op);
    if (!info || n->n_inputs < 1 || n->n_outputs < 1) return NULL;
    ttc_value *x = n->inputs[0];
    const ttc_value *y = n->outputs[0];
    bool same = ttc_type_eq(&x->type, &y->type);
    if (info->flags & TTC_OPF_NOOP_INFER) {
        if (n->op == TTC_OP_NATIVE_DROPOUT && n->n_outputs > 1 && n->outputs[1]->n_users) return NULL;
        if ((n->op == TTC_OP_DROPOUT || n->op == TTC_OP_NATIVE_DROPOUT) && !ttc_dropout_is_identity(n)) return NULL;
        if ((n->op == TTC_OP_CLONE || n->op == TTC_OP_CONTIGUOUS) && ttc_value_is_graph_output(g, y) &&
            ttc_value_is_strided_view(x))
            return NULL;
        return same ? x : NULL;
    }
    switch (n->op) {
    case TTC_OP_TO_COPY:
    case TTC_OP_TO_DTYPE:
    case TTC_OP_EXPAND:
    case TTC_OP_VIEW:
    case TTC_OP_RESHAPE:
    case TTC_OP_UNSAFE_VIEW:
        /* rank -1 (unknown) types compare equal without proving anything */
        return same && x->type.kind == TTC_TYPE_TENSOR && x->type.rank >= 0 ? x : NULL;
    case TTC_OP_T:
        if (x->producer && x->producer->op == TTC_OP_T && ttc_type_eq(&x->producer->inputs[0]->type, &y->type))
            return x->producer->inputs[0];
        return NULL;
    default:
        return NULL;
    }
}

ttc_status ttc_pass_remove_noops(ttc_graph *g, void *ctx, bool *changed) {
    (void)ctx;
    *changed = false;
    bool *kill = ttc_calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof(bool));
    if (!kill) return TTC_ERR_NOMEM;
    ttc_status s = TTC_OK;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        ttc_node *n = g->nodes[i];
        ttc_value *src = identity_of(g, n);
        if (!src) continue;
        if ((s = ttc_pass_replace_value(g, n->outputs[0], src))) break;
        /* t(t(x)): the inner t may still have other users; dce takes it otherwise */
        bool dead = true;
        for (int o = 0; o < n->n_outputs; o++) dead &= n->outputs[o]->n_users == 0 && !ttc_value_is_graph_output(g, n->outputs[o]);
        kill[i] = dead;
        *changed = true;
    }
    if (s == TTC_OK) s = ttc_pass_erase_marked(g, kill);
    free(kill);
    return s;
}
