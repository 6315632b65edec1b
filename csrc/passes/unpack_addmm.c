/*
 * Unpacks addmm(bias, a, b, beta, alpha) into mm(a, b) and add(bias, mm) (with mul.Scalar
 * for beta/alpha other than 1), for converter sets that have mm and add but no addmm.
 * Off by default: our converter set fuses it into linear instead.
 */
#include "pass_manager.h"
#include "pass_util.h"

#include <stdlib.h>

static ttc_value *scaled(ttc_graph *g, ttc_node *before, ttc_value *v, double k) {
    if (k == 1) return v;
    ttc_value *c = ttc_graph_const_float(g, before, k);
    if (!c) return NULL;
    ttc_value *in[2] = {v, c};
    ttc_node *m = ttc_graph_insert_node_before(g, before, "aten.mul.Scalar", in, 2, &v->type, 1, NULL);
    return m ? m->outputs[0] : NULL;
}

ttc_status ttc_pass_unpack_addmm(ttc_graph *g, void *ctx, bool *changed) {
    (void)ctx;
    *changed = false;
    int32_t n0 = g->n_nodes;
    ttc_node **todo = ttc_malloc(sizeof(ttc_node *) * (size_t)(n0 ? n0 : 1));
    if (!todo) return TTC_ERR_NOMEM;
    int32_t nt = 0;
    for (int32_t i = 0; i < n0; i++) {
        ttc_node *n = g->nodes[i];
        double beta, alpha;
        if (n->op != TTC_OP_ADDMM || n->n_inputs != 5 || !ttc_pass_float_arg(n->inputs[3], 1, &beta) ||
            !ttc_pass_float_arg(n->inputs[4], 1, &alpha))
            continue;
        todo[nt++] = n;
    }
    ttc_status s = TTC_OK;
    for (int32_t k = 0; k < nt && s == TTC_OK; k++) {
        ttc_node *n = todo[k];
        double beta, alpha;
        ttc_pass_float_arg(n->inputs[3], 1, &beta);
        ttc_pass_float_arg(n->inputs[4], 1, &alpha);
        ttc_value *ab[2] = {n->inputs[1], n->inputs[2]};
        ttc_node *mm = ttc_graph_insert_node_before(g, n, "aten.mm.default", ab, 2, &n->outputs[0]->type, 1, NULL);
        ttc_value *m = mm ? scaled(g, n, mm->outputs[0], alpha) : NULL;
        ttc_value *bias = m ? scaled(g, n, n->inputs[0], beta) : NULL;
        ttc_value *one = bias ? ttc_graph_const_int(g, n, 1) : NULL;
        if (!one) { s = TTC_ERR_NOMEM; break; }
        ttc_value *in[3] = {m, bias, one};
        ttc_node *add = ttc_graph_insert_node_before(g, n, "aten.add.Tensor", in, 3, &n->outputs[0]->type, 1, NULL);
        if (!add) { s = TTC_ERR_NOMEM; break; }
        add->module_stack = ttc_strdup(n->module_stack);
        s = ttc_pass_replace_value(g, n->outputs[0], add->outputs[0]);
        *changed = true;
    }
    if (s == TTC_OK) s = ttc_pass_erase_nodes(g, todo, nt);
    free(todo);
    return s;
}
