/*
 * Removes a flatten of the trailing dims that feeds a linear, for converters whose linear
 * flattens its input itself (as TensorRT's fully connected layer does). The linear keeps
 * its 2-D output type and gets an int attribute `flatten_input` = start_dim, so its
 * meaning stays explicit: linear(flatten(x, start_dim, -1), W, b). Off by default.
 */
#include "pass_manager.h"
#include "pass_util.h"

#include <stdlib.h>

ttc_status ttc_pass_remove_flatten_linear(ttc_graph *g, void *ctx, bool *changed) {
    (void)ctx;
    *changed = false;
    bool *kill = ttc_calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof(bool));
    if (!kill) return TTC_ERR_NOMEM;
    ttc_status s = TTC_OK;
    for (int32_t i = 0; i < g->n_nodes && s == TTC_OK; i++) {
        ttc_node *lin = g->nodes[i];
        if (lin->op != TTC_OP_LINEAR || lin->n_inputs < 1 || ttc_node_attr(lin, "flatten_input")) continue;
        ttc_node *fl = lin->inputs[0]->producer;
        if (!fl || fl->op != TTC_OP_FLATTEN || fl->n_inputs != 3 || fl->outputs[0]->n_users != 1 ||
            ttc_value_is_graph_output(g, fl->outputs[0]))
            continue;
        const ttc_type *xt = &fl->inputs[0]->type;
        int64_t start, end;
        if (xt->kind != TTC_TYPE_TENSOR || xt->rank < 1 || !ttc_value_const_int(fl->inputs[1], &start) ||
            !ttc_value_const_int(fl->inputs[2], &end) || !ttc_pass_norm_dim(start, xt->rank, &start) ||
            !ttc_pass_norm_dim(end, xt->rank, &end) || end != xt->rank - 1 || start == end)
            continue;
        ttc_attr a = {.name = "flatten_input", .kind = TTC_ATTR_INT, .i = start};
        if ((s = ttc_node_set_attr(lin, &a)) || (s = ttc_node_set_input(lin, 0, fl->inputs[0]))) break;
        kill[fl->order] = true;
        *changed = true;
    }
    if (s == TTC_OK) s = ttc_pass_erase_marked(g, kill);
    free(kill);
    return s;
}
