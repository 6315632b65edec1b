/* Helpers shared by the lowering passes (see pass_util.h). */
#include "pass_util.h"

#include <stdlib.h>
#include <string.h>

ttc_status ttc_pass_replace_value(ttc_graph *g, ttc_value *old, ttc_value *repl) {
    if (old == repl) return TTC_OK;
    int32_t before = old->n_users;
    ttc_value_replace_all_uses(old, repl);
    if (old->n_users) return TTC_FAIL(TTC_ERR_NOMEM, "replacing %%%s: %d of %d uses left", old->name, old->n_users, before);
    for (int32_t i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] == old) g->outputs[i] = repl;
    return TTC_OK;
}

ttc_status ttc_pass_erase_nodes(ttc_graph *g, ttc_node *const *nodes, int32_t n) {
    if (n <= 0) return TTC_OK;
    bool *kill = ttc_calloc((size_t)g->n_nodes, sizeof(bool));
    if (!kill) return TTC_ERR_NOMEM;
    for (int32_t k = 0; k < n; k++) kill[nodes[k]->order] = true;
    ttc_status s = ttc_pass_erase_marked(g, kill);
    free(kill);
    return s;
}

ttc_status ttc_pass_erase_marked(ttc_graph *g, const bool *kill) {
    bool any = false;
    for (int32_t i = 0; i < g->n_nodes; i++) any |= kill[i];
    if (!any) return TTC_OK;
    for (int32_t i = 0; i < g->n_outputs; i++) {
        const ttc_node *p = g->outputs[i]->producer;
        if (p && !p->dead && kill[p->order])
            return TTC_FAIL(TTC_ERR_INTERNAL, "erase: %%%s is a graph output", g->outputs[i]->name);
    }
    for (int32_t i = 0; i < g->n_nodes; i++) {
        if (!kill[i]) continue;
        const ttc_node *n = g->nodes[i];
        for (int o = 0; o < n->n_outputs; o++)
            for (int u = 0; u < n->outputs[o]->n_users; u++)
                if (!kill[n->outputs[o]->users[u]->order])
                    return TTC_FAIL(TTC_ERR_INTERNAL, "erase: %%%s still used by a live %s", n->outputs[o]->name,
                                    n->outputs[o]->users[u]->op_name);
    }
    /* Drop killed users from every value a killed node reads: one filter per value. */
    for (int32_t i = 0; i < g->n_nodes; i++) {
        if (!kill[i]) continue;
        ttc_node *n = g->nodes[i];
        for (int j = 0; j < n->n_inputs; j++) {
            ttc_value *v = n->inputs[j];
            int32_t k = 0;
            for (int32_t u = 0; u < v->n_users; u++) {
                ttc_node *us = v->users[u];
                if (!kill[us->order]) v->users[k++] = us;
            }
            v->n_users = k;
        }
    }
    int32_t k = 0;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        ttc_node *n = g->nodes[i];
        if (kill[i]) {
            n->dead = true;
            n->order = -1;
            for (int o = 0; o < n->n_outputs; o++) n->outputs[o]->n_users = 0;
            continue;
        }
        n->order = k;
        g->nodes[k++] = n;
    }
    g->n_nodes = k;
    return TTC_OK;
}

ttc_status ttc_pass_make_constant(ttc_node *n, const ttc_attr *value) {
    if (n->n_outputs != 1) return TTC_FAIL(TTC_ERR_INTERNAL, "make_constant: %s has %d outputs", n->op_name, n->n_outputs);
    ttc_attr a;
    TTC_TRY(ttc_attr_copy(&a, value));
    free(a.name);
    a.name = ttc_strdup("value");
    char *op = ttc_strdup("prim.Constant");
    if (!a.name || !op) { ttc_attr_clear(&a); free(op); return TTC_ERR_NOMEM; }
    for (int j = 0; j < n->n_inputs; j++) {
        ttc_value *v = n->inputs[j];
        for (int32_t u = 0; u < v->n_users; u++)
            if (v->users[u] == n) {
                memmove(&v->users[u], &v->users[u + 1], sizeof(ttc_node *) * (size_t)(v->n_users - u - 1));
                v->n_users--;
                break;
            }
    }
    n->n_inputs = 0;
    for (int i = 0; i < n->n_attrs; i++) ttc_attr_clear(&n->attrs[i]);
    if (!n->n_attrs) {
        ttc_attr *na = realloc(n->attrs, sizeof(ttc_attr));
        if (!na) { ttc_attr_clear(&a); free(op); return ttc_fail(TTC_ERR_NOMEM, "make_constant: out of memory"); }
        n->attrs = na;
    }
    n->attrs[0] = a;
    n->n_attrs = 1;
    free(n->op_name);
    n->op_name = op;
    n->op = TTC_OP_CONSTANT;
    return TTC_OK;
}

const ttc_attr *ttc_pass_tensor_const(const ttc_value *v) {
    const ttc_attr *a = ttc_value_const(v);
    return a && a->kind == TTC_ATTR_TENSOR && a->tensor && v->type.kind == TTC_TYPE_TENSOR ? a : NULL;
}

bool ttc_pass_int_arg(const ttc_value *v, int64_t dflt, int64_t *out) {
    if (ttc_value_is_none(v)) { *out = dflt; return true; }
    return ttc_value_const_int(v, out);
}

bool ttc_pass_float_arg(const ttc_value *v, double dflt, double *out) {
    if (ttc_value_is_none(v)) { *out = dflt; return true; }
    return ttc_value_const_float(v, out);
}

bool ttc_pass_norm_dim(int64_t d, int32_t rank, int64_t *out) {
    if (d < 0) d += rank;
    if (d < 0 || d >= (rank ? rank : 1)) return false;
    *out = d;
    return true;
}

bool ttc_pass_is_output(const ttc_graph *g, const ttc_value *v) {
    for (int32_t i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] == v) return true;
    return false;
}

ttc_node *ttc_pass_single_use_producer(const ttc_graph *g, const ttc_value *v, ttc_op_id op) {
    ttc_node *p = v ? v->producer : NULL;
    if (!p || p->dead || p->n_outputs != 1 || v->n_users != 1 || ttc_pass_is_output(g, v)) return NULL;
    return op == TTC_OP_COUNT || p->op == op ? p : NULL;
}

bool ttc_pass_is_f32(const ttc_value *v) {
    return v->type.kind == TTC_TYPE_TENSOR && v->type.dtype == TTC_DTYPE_FLOAT32;
}
