/*
 * Folds inference batch norm into the convolution before it:
 *   bn(conv(x, W, b)) = conv(x, W * s, (b - mean) * s + beta),  s = gamma / sqrt(var + eps)
 * per output channel. Applies to aten._native_batch_norm_legit_no_training (mean/invstd
 * outputs unused) and aten.batch_norm with training=false, when the convolution is not
 * transposed, feeds only the batch norm, and every parameter is a float32/float64
 * constant (gamma/beta/bias may be None). New weights are new tensor constants; the old
 * ones go with dce when nothing else uses them.
 */
#include "pass_manager.h"
#include "pass_util.h"

#include <math.h>
#include <stdlib.h>

static bool fdtype(ttc_dtype d) { return d == TTC_DTYPE_FLOAT32 || d == TTC_DTYPE_FLOAT64; }

static double at(const ttc_attr *a, ttc_dtype d, int64_t i) {
    return d == TTC_DTYPE_FLOAT32 ? ((const float *)a->tensor->data)[i] : ((const double *)a->tensor->data)[i];
}

static void put(void *p, ttc_dtype d, int64_t i, double v) {
    if (d == TTC_DTYPE_FLOAT32) ((float *)p)[i] = (float)v;
    else ((double *)p)[i] = v;
}

/* A per-channel parameter: a [C] float constant, or None (then dflt). */
static bool channel_param(const ttc_value *v, int64_t c, bool none_ok, const ttc_attr **out) {
    *out = NULL;
    if (ttc_value_is_none(v)) return none_ok;
    const ttc_attr *a = ttc_pass_tensor_const(v);
    if (!a || !fdtype(v->type.dtype) || v->type.rank != 1 || !ttc_type_is_static(&v->type) || v->type.dims[0].add != c)
        return false;
    *out = a;
    return true;
}

static ttc_status fold_one(ttc_graph *g, ttc_node *bn, ttc_node *conv, bool *done) {
    *done = false;
    int64_t transposed = 0;
    if (conv->op == TTC_OP_CONVOLUTION && (conv->n_inputs != 9 || !ttc_value_const_int(conv->inputs[6], &transposed) || transposed))
        return TTC_OK;
    if ((conv->op == TTC_OP_CONV2D || conv->op == TTC_OP_CONV1D) && conv->n_inputs != 7) return TTC_OK;
    ttc_value *wv = conv->inputs[1];
    const ttc_attr *w = ttc_pass_tensor_const(wv);
    const ttc_type *wt = &wv->type;
    if (!w || !fdtype(wt->dtype) || !ttc_type_is_static(wt) || wt->rank < 2) return TTC_OK;
    int64_t cout = wt->dims[0].add, per = ttc_type_numel_static(wt) / (cout ? cout : 1);
    const ttc_attr *bias, *gamma, *beta, *mean, *var;
    bool is_legit = bn->op == TTC_OP_BN_NO_TRAINING;
    int ie = is_legit ? 6 : 7;
    double eps;
    int64_t training = 0;
    if (!is_legit && (!ttc_value_const_int(bn->inputs[5], &training) || training)) return TTC_OK;
    if (!ttc_value_const_float(bn->inputs[ie], &eps)) return TTC_OK;
    if (!channel_param(conv->inputs[2], cout, true, &bias) || !channel_param(bn->inputs[1], cout, true, &gamma) ||
        !channel_param(bn->inputs[2], cout, true, &beta) || !channel_param(bn->inputs[3], cout, false, &mean) ||
        !channel_param(bn->inputs[4], cout, false, &var))
        return TTC_OK;
    ttc_dtype d = wt->dtype;
    size_t esz = ttc_dtype_size(d);
    ttc_tensor_data *nw = ttc_tensor_data_copy(NULL, (size_t)(cout * per) * esz);
    ttc_tensor_data *nb = ttc_tensor_data_copy(NULL, (size_t)cout * esz);
    if (!nw || !nb) { ttc_tensor_data_unref(nw); ttc_tensor_data_unref(nb); return TTC_ERR_NOMEM; }
    ttc_dtype bd = bias ? conv->inputs[2]->type.dtype : d;
    for (int64_t o = 0; o < cout; o++) {
        double gm = gamma ? at(gamma, bn->inputs[1]->type.dtype, o) : 1.0;
        double bt = beta ? at(beta, bn->inputs[2]->type.dtype, o) : 0.0;
        double mu = at(mean, bn->inputs[3]->type.dtype, o), vr = at(var, bn->inputs[4]->type.dtype, o);
        double sc = gm / sqrt(vr + eps);
        for (int64_t k = 0; k < per; k++) put(nw->data, d, o * per + k, at(w, d, o * per + k) * sc);
        double b0 = bias ? at(bias, bd, o) : 0.0;
        put(nb->data, d, o, (b0 - mu) * sc + bt);
    }
    ttc_type bt = ttc_type_tensor(d, 1, &cout);
    ttc_value *w2 = ttc_graph_const_tensor(g, conv, NULL, wt, nw);
    ttc_value *b2 = w2 ? ttc_graph_const_tensor(g, conv, NULL, &bt, nb) : NULL;
    ttc_tensor_data_unref(nw);
    ttc_tensor_data_unref(nb);
    if (!b2) return TTC_ERR_NOMEM;
    TTC_TRY(ttc_node_set_input(conv, 1, w2));
    TTC_TRY(ttc_node_set_input(conv, 2, b2));
    TTC_TRY(ttc_pass_replace_value(g, bn->outputs[0], conv->outputs[0]));
    *done = true;
    return TTC_OK;
}

ttc_status ttc_pass_fold_batch_norm(ttc_graph *g, void *ctx, bool *changed) {
    (void)ctx;
    *changed = false;
    int32_t n0 = g->n_nodes;
    ttc_node **todo = ttc_malloc(sizeof(ttc_node *) * (size_t)(n0 ? n0 : 1));
    if (!todo) return TTC_ERR_NOMEM;
    int32_t nt = 0;
    for (int32_t i = 0; i < n0; i++) {
        ttc_node *bn = g->nodes[i];
        bool legit = bn->op == TTC_OP_BN_NO_TRAINING && bn->n_inputs == 7 && bn->n_outputs == 3 &&
                     !bn->outputs[1]->n_users && !bn->outputs[2]->n_users &&
                     !ttc_value_is_graph_output(g, bn->outputs[1]) && !ttc_value_is_graph_output(g, bn->outputs[2]);
        bool plain = bn->op == TTC_OP_BATCH_NORM && bn->n_inputs == 9;
        if (!legit && !plain) continue;
        ttc_node *conv = bn->inputs[0]->producer;
        if (!conv || (conv->op != TTC_OP_CONVOLUTION && conv->op != TTC_OP_CONV2D && conv->op != TTC_OP_CONV1D) ||
            conv->outputs[0]->n_users != 1 || ttc_value_is_graph_output(g, conv->outputs[0]) ||
            !ttc_type_eq(&conv->outputs[0]->type, &bn->outputs[0]->type))
            continue;
        todo[nt++] = bn;
    }
    ttc_status s = TTC_OK;
    ttc_node **dead = ttc_malloc(sizeof(ttc_node *) * (size_t)(nt ? nt : 1));
    int32_t nd = 0;
    if (!dead) s = TTC_ERR_NOMEM;
    for (int32_t k = 0; k < nt && s == TTC_OK; k++) {
        bool done = false;
        s = fold_one(g, todo[k], todo[k]->inputs[0]->producer, &done);
        if (done) { dead[nd++] = todo[k]; *changed = true; }
    }
    if (s == TTC_OK) s = ttc_pass_erase_nodes(g, dead, nd);
    free(dead);
    free(todo);
    return s;
}
