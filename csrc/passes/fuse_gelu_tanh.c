/*
 * Fuses the tanh GELU that models write out by hand (GPT-2's NewGELUActivation, "gelu_new"):
 *   0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
 * into one aten.gelu(x, approximate="tanh"). As eight elementwise ops it was eight steps of the
 * epilogue of the GEMM before it, on every element of the MLP's widest tensor (GPT-2 b8:
 * 1024 x 3072 per layer); as one op it is one vectorised GELU step. Accepted forms: x^3 as
 * pow(x, 3) or x * x * x, either operand order of each mul and add, the 0.5 taken first
 * (0.5 * x) or last ((x * (1 + t)) * 0.5); constants within 1e-6 relative of the exact ones.
 * Every intermediate must have no other use; all float32.
 */
#include "pass_manager.h"
#include "pass_util.h"

#include <math.h>
#include <stdlib.h>

static bool near(double a, double want) { return fabs(a - want) <= 1e-6 * fabs(want); }

/* A binary node n = op(t, c) or op(c, t) with c a literal near `want`: t, else NULL. An add
 * must have alpha 1 (and the literal the scalar). */
static ttc_value *with_literal(const ttc_node *n, double want) {
    if (!n || n->n_inputs < 2) return NULL;
    if (n->op == TTC_OP_ADD_TENSOR) {
        double alpha = 1.0;
        if (n->n_inputs > 2 && (!ttc_pass_float_arg(n->inputs[2], 1, &alpha) || alpha != 1.0)) return NULL;
    }
    for (int side = 0; side < 2; side++) {
        double c;
        if (ttc_value_const_float(n->inputs[1 - side], &c) && near(c, want) && n->inputs[side]->type.kind == TTC_TYPE_TENSOR)
            return n->inputs[side];
    }
    return NULL;
}

/* x when c is x^3 (pow(x, 3), x * x * x in either grouping), its nodes appended to chain. */
static ttc_value *cubed(const ttc_graph *g, const ttc_value *c, ttc_node **chain, int32_t *nc) {
    ttc_node *p = ttc_pass_single_use_producer(g, c, TTC_OP_POW_TS);
    double e;
    if (p && p->n_inputs == 2 && ttc_value_const_float(p->inputs[1], &e) && e == 3.0) {
        chain[(*nc)++] = p;
        return p->inputs[0];
    }
    p = ttc_pass_single_use_producer(g, c, TTC_OP_MUL_TENSOR);
    if (!p || p->n_inputs != 2) return NULL;
    for (int side = 0; side < 2; side++) {
        ttc_value *x = p->inputs[side];
        ttc_node *sq = ttc_pass_single_use_producer(g, p->inputs[1 - side], TTC_OP_MUL_TENSOR);
        if (sq && sq->n_inputs == 2 && sq->inputs[0] == x && sq->inputs[1] == x) {
            chain[(*nc)++] = p;
            chain[(*nc)++] = sq;
            return x;
        }
    }
    return NULL;
}

/* x when s = 1 + tanh(k * (x + 0.044715 * x^3)), its nodes appended to chain. */
static ttc_value *tanh_part(const ttc_graph *g, const ttc_value *s, ttc_node **chain, int32_t *nc) {
    ttc_node *a1 = ttc_pass_single_use_producer(g, s, TTC_OP_ADD_TENSOR);
    ttc_node *th = ttc_pass_single_use_producer(g, with_literal(a1, 1.0), TTC_OP_TANH);
    ttc_node *mk = th ? ttc_pass_single_use_producer(g, th->inputs[0], TTC_OP_MUL_TENSOR) : NULL;
    ttc_node *ad = ttc_pass_single_use_producer(g, with_literal(mk, 0.79788456080286535588), TTC_OP_ADD_TENSOR);
    if (!ad || ad->n_inputs < 2) return NULL;
    double alpha = 1.0;
    if (ad->n_inputs > 2 && (!ttc_pass_float_arg(ad->inputs[2], 1, &alpha) || alpha != 1.0)) return NULL;
    int32_t at = *nc;
    chain[(*nc)++] = a1;
    chain[(*nc)++] = th;
    chain[(*nc)++] = mk;
    chain[(*nc)++] = ad;
    for (int side = 0; side < 2; side++) {
        ttc_value *x = ad->inputs[side];
        ttc_node *m3 = ttc_pass_single_use_producer(g, ad->inputs[1 - side], TTC_OP_MUL_TENSOR);
        int32_t keep = *nc;
        if (!m3) continue;
        chain[(*nc)++] = m3;
        if (cubed(g, with_literal(m3, 0.044715), chain, nc) == x) return x;
        *nc = keep;
    }
    *nc = at;
    return NULL;
}

/* Matches the GELU ending at mul node m: x, with the other nodes in chain. */
static ttc_value *gelu_chain(const ttc_graph *g, const ttc_node *m, ttc_node **chain, int32_t *nc) {
    if (m->n_inputs != 2) return NULL;
    /* (0.5 * x) * s, either order */
    for (int side = 0; side < 2; side++) {
        ttc_node *h = ttc_pass_single_use_producer(g, m->inputs[side], TTC_OP_MUL_TENSOR);
        ttc_value *x = with_literal(h, 0.5);
        *nc = 0;
        if (!x) continue;
        chain[(*nc)++] = h;
        if (tanh_part(g, m->inputs[1 - side], chain, nc) == x) return x;
    }
    /* (x * s) * 0.5 */
    ttc_node *xs = ttc_pass_single_use_producer(g, with_literal(m, 0.5), TTC_OP_MUL_TENSOR);
    if (!xs || xs->n_inputs != 2) return NULL;
    for (int side = 0; side < 2; side++) {
        *nc = 0;
        chain[(*nc)++] = xs;
        if (tanh_part(g, xs->inputs[1 - side], chain, nc) == xs->inputs[side]) return xs->inputs[side];
    }
    return NULL;
}

ttc_status ttc_pass_fuse_gelu_tanh(ttc_graph *g, void *ctx, bool *changed) {
    (void)ctx;
    *changed = false;
    int32_t n0 = g->n_nodes;
    enum { CHAIN = 10 };   /* nodes besides the last: at most 8 (x * x * x) */
    ttc_node **todo = ttc_malloc(sizeof(ttc_node *) * (size_t)(n0 ? n0 : 1));
    ttc_node **dead = ttc_malloc(sizeof(ttc_node *) * (size_t)(n0 + CHAIN + 1));
    if (!todo || !dead) {
        free(todo);
        free(dead);
        return TTC_ERR_NOMEM;
    }
    int32_t nt = 0, nd = 0;
    for (int32_t i = 0; i < n0; i++) todo[nt++] = g->nodes[i];
    ttc_status s = TTC_OK;
    for (int32_t k = 0; k < nt && s == TTC_OK; k++) {
        ttc_node *m = todo[k];
        if (m->dead || m->op != TTC_OP_MUL_TENSOR || !ttc_pass_is_f32(m->outputs[0])) continue;
        ttc_node *chain[CHAIN];
        int32_t nc = 0;
        ttc_value *x = gelu_chain(g, m, chain, &nc);
        if (!x || !ttc_pass_is_f32(x) || !ttc_type_eq(&x->type, &m->outputs[0]->type)) continue;
        bool taken = false;
        for (int32_t j = 0; j < nd && !taken; j++)
            for (int32_t c = 0; c < nc; c++) taken = taken || dead[j] == chain[c] || dead[j] == m;
        if (taken) continue;
        ttc_value *mode = ttc_graph_const_str(g, m, "tanh");
        if (!mode) { s = TTC_ERR_NOMEM; break; }
        ttc_value *in[2] = {x, mode};
        ttc_node *gn = ttc_graph_insert_node_before(g, m, "aten.gelu.default", in, 2, &m->outputs[0]->type, 1, m->name);
        if (!gn) { s = TTC_ERR_NOMEM; break; }
        if (m->module_stack) gn->module_stack = ttc_strdup(m->module_stack);
        s = ttc_pass_replace_value(g, m->outputs[0], gn->outputs[0]);
        if (s != TTC_OK) break;
        /* users before producers */
        dead[nd++] = m;
        for (int32_t c = 0; c < nc; c++) dead[nd++] = chain[c];
        *changed = true;
    }
    if (s == TTC_OK) s = ttc_pass_erase_nodes(g, dead, nd);
    free(todo);
    free(dead);
    return s;
}
