/*
 * Fuses the RMS norm that models write out by hand (transformers' LlamaRMSNorm, Mistral's,
 * Qwen's) into one aten.rms_norm:
 *   w * (x * rsqrt(mean(x^2, [-1], keepdim) + eps))
 * with x^2 as pow(x, 2) or x * x, either operand order of each mul, and w (1-D, the last
 * dim's size) optional. As five or six elementwise and reduce ops the norm was an OpenCL
 * reduce between native GEMMs on the CPU (two hand-overs per norm); as one op it is one
 * native call there and one norm kernel elsewhere. Every intermediate must have no other
 * use; all float32 (remove_noops has dropped the float32 -> float32 casts of the model's
 * `.to(torch.float32)`; half models keep their casts and stay unfused).
 */
#include "pass_manager.h"
#include "pass_util.h"

#include <stdlib.h>

/* The other operand of a binary mul node n (inputs a, b) when one operand is `one`. */
static ttc_value *other_of(const ttc_node *n, const ttc_value *one) {
    if (n->inputs[0] == one) return n->inputs[1];
    if (n->inputs[1] == one) return n->inputs[0];
    return NULL;
}

/* x when sq is x^2 (pow(x, 2) or mul(x, x)), else NULL. */
static ttc_value *squared(const ttc_graph *g, const ttc_value *sq) {
    ttc_node *p = ttc_pass_single_use_producer(g, sq, TTC_OP_POW_TS);
    double e;
    if (p && p->n_inputs == 2 && ttc_value_const_float(p->inputs[1], &e) && e == 2.0) return p->inputs[0];
    p = ttc_pass_single_use_producer(g, sq, TTC_OP_MUL_TENSOR);
    if (p && p->n_inputs == 2 && p->inputs[0] == p->inputs[1]) return p->inputs[0];
    return NULL;
}

/* Matches r = rsqrt(mean(x^2, [-1], keepdim=True) + eps) for the x of mul node m (an operand
 * of m); fills the chain's nodes (pow/mul, mean, add, rsqrt) and eps. */
static ttc_value *rms_chain(const ttc_graph *g, const ttc_node *m, ttc_node **chain, double *eps) {
    for (int side = 0; side < 2; side++) {
        ttc_value *r = m->inputs[side], *x = m->inputs[1 - side];
        ttc_node *rs = ttc_pass_single_use_producer(g, r, TTC_OP_RSQRT);
        ttc_node *ad = rs ? ttc_pass_single_use_producer(g, rs->inputs[0], TTC_OP_ADD_TENSOR) : NULL;
        double alpha;
        if (!ad || ad->n_inputs != 3 || !ttc_pass_float_arg(ad->inputs[2], 1, &alpha) || alpha != 1.0) continue;
        int mi = ad->inputs[0]->producer && ad->inputs[0]->producer->op == TTC_OP_MEAN_DIM ? 0 : 1;
        ttc_node *mn = ttc_pass_single_use_producer(g, ad->inputs[mi], TTC_OP_MEAN_DIM);
        if (!mn || mn->n_inputs != 4 || !ttc_value_const_float(ad->inputs[1 - mi], eps) || !(*eps >= 0.0)) continue;
        int64_t *dims = NULL, keep;
        int32_t nd = 0;
        int32_t R = x->type.rank;
        bool last = ttc_value_const_ints(mn->inputs[1], &dims, &nd) && nd == 1 && (dims[0] == -1 || dims[0] == R - 1);
        free(dims);
        if (!last || !ttc_pass_int_arg(mn->inputs[2], 0, &keep) || !keep || !ttc_value_is_none(mn->inputs[3]))
            continue;
        if (squared(g, mn->inputs[0]) != x || R < 1) continue;
        chain[0] = mn->inputs[0]->producer;
        chain[1] = mn;
        chain[2] = ad;
        chain[3] = rs;
        return x;
    }
    return NULL;
}

ttc_status ttc_pass_fuse_rms_norm(ttc_graph *g, void *ctx, bool *changed) {
    (void)ctx;
    *changed = false;
    int32_t n0 = g->n_nodes;
    ttc_node **todo = ttc_malloc(sizeof(ttc_node *) * (size_t)(n0 ? n0 : 1));
    ttc_node **dead = ttc_malloc(sizeof(ttc_node *) * (size_t)(n0 + 6));   /* each match: 5 or 6 nodes */
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
        if (m->dead || m->op != TTC_OP_MUL_TENSOR || m->n_inputs != 2 || !ttc_pass_is_f32(m->outputs[0])) continue;
        ttc_node *chain[4];
        double eps;
        ttc_value *x = rms_chain(g, m, chain, &eps);
        if (!x || !ttc_pass_is_f32(x) || !ttc_type_eq(&x->type, &m->outputs[0]->type)) continue;
        bool taken = false;
        for (int32_t j = 0; j < nd; j++) taken = taken || dead[j] == m;
        if (taken) continue;
        /* the scale: w * (x * r) with w 1-D over the last dim, when that is the only use */
        ttc_node *last = m, *wm = NULL;
        ttc_value *w = NULL, *y = m->outputs[0];
        if (y->n_users == 1 && !ttc_pass_is_output(g, y) && y->users[0]->op == TTC_OP_MUL_TENSOR && y->users[0]->n_inputs == 2) {
            wm = y->users[0];
            ttc_value *c = other_of(wm, y);
            const ttc_type *t = c ? &c->type : NULL;
            if (c && c != y && ttc_pass_is_f32(c) && t->rank == 1 && ttc_dim_eq(t->dims[0], x->type.dims[x->type.rank - 1]) &&
                ttc_type_eq(&wm->outputs[0]->type, &y->type)) {
                w = c;
                last = wm;
            }
        }
        /* normalized_shape: the last dim's size (static; a symbolic width stays unfused) */
        const ttc_dim *d = &x->type.dims[x->type.rank - 1];
        if (d->sym >= 0) continue;
        int64_t width = d->add;
        ttc_value *shape = ttc_graph_const_ints(g, last, &width, 1);
        ttc_value *wv = w ? w : ttc_graph_const_none(g, last);
        ttc_value *ev = ttc_graph_const_float(g, last, eps);
        if (!shape || !wv || !ev) { s = TTC_ERR_NOMEM; break; }
        ttc_value *in[4] = {x, shape, wv, ev};
        ttc_node *rn = ttc_graph_insert_node_before(g, last, "aten.rms_norm.default", in, 4, &last->outputs[0]->type,
                                                    1, last->name);
        if (!rn) { s = TTC_ERR_NOMEM; break; }
        if (last->module_stack) rn->module_stack = ttc_strdup(last->module_stack);
        s = ttc_pass_replace_value(g, last->outputs[0], rn->outputs[0]);
        if (s != TTC_OK) break;
        if (last != m) dead[nd++] = last;
        dead[nd++] = m;
        for (int i = 3; i >= 0; i--) dead[nd++] = chain[i];
        *changed = true;
    }
    if (s == TTC_OK) s = ttc_pass_erase_nodes(g, dead, nd);
    free(todo);
    free(dead);
    return s;
}
