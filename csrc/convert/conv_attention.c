/* scaled_dot_product_attention as one fused ATTENTION kernel: per query row, the scores
 * against every key, an online softmax and the weighted sum of the values, without the
 * [L, S] score matrix in memory. Masks: bool (true = attend) or float (added to the
 * scores), broadcast to [..., L, S]; is_causal masks keys after the query (top-left
 * aligned, as torch). The head dims must be static (they size private arrays). */
#include "converters_data.h"

#include <math.h>

static const char *nname(const ttc_node *n) { return n->name ? n->name : n->op_name; }

#define TTC_ATTN_MAX_HEAD_DIM 256

static bool fail(char **why_not, const char *msg) {
    if (why_not) *why_not = ttc_strdup(msg);
    return false;
}

bool ttc_validate_sdpa(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    if (n->n_inputs < 3) return fail(why_not, "query, key and value are needed");
    if (!ttc_data_output_ok(n, 0, why_not)) return false;
    const ttc_type *q = &n->inputs[0]->type, *k = &n->inputs[1]->type, *v = &n->inputs[2]->type;
    const ttc_type *ts[3] = {q, k, v};
    for (int32_t i = 0; i < 3; i++) {
        if (!ttc_data_type_ok(ts[i], "query/key/value", why_not)) return false;
        if (ts[i]->dtype != TTC_DTYPE_FLOAT32 && ts[i]->dtype != TTC_DTYPE_FLOAT16) return fail(why_not, "query/key/value are not floating");
    }
    int32_t R = q->rank;
    if (R < 2 || k->rank != R || v->rank != R) return fail(why_not, "query, key and value need one rank >= 2");
    for (int32_t d = 0; d < R - 2; d++)
        if (!ttc_dim_eq(q->dims[d], k->dims[d]) || !ttc_dim_eq(q->dims[d], v->dims[d]))
            return fail(why_not, "batch/head dims of query, key and value differ (broadcast or GQA)");
    if (!ttc_dim_eq(k->dims[R - 2], v->dims[R - 2])) return fail(why_not, "key and value lengths differ");
    ttc_dim e = q->dims[R - 1], ev = v->dims[R - 1];
    if (e.sym >= 0 || ev.sym >= 0 || !ttc_dim_eq(e, k->dims[R - 1])) return fail(why_not, "head dims are symbolic or differ");
    if (e.add < 1 || ev.add < 1 || e.add > TTC_ATTN_MAX_HEAD_DIM || ev.add > TTC_ATTN_MAX_HEAD_DIM)
        return fail(why_not, "head dim outside [1, 256]");
    bool has_mask = n->n_inputs > 3 && !ttc_value_is_none(n->inputs[3]);
    if (has_mask) {
        const ttc_type *m = &n->inputs[3]->type;
        if (!ttc_data_type_ok(m, "the mask", why_not)) return false;
        if (m->dtype != TTC_DTYPE_BOOL && m->dtype != TTC_DTYPE_FLOAT32 && m->dtype != TTC_DTYPE_FLOAT16)
            return fail(why_not, "the mask is neither bool nor floating");
        if (m->rank > R) return fail(why_not, "the mask has a higher rank than the query");
    }
    double dp = 0;
    if (n->n_inputs > 4 && (!ttc_value_const_float(n->inputs[4], &dp) || dp != 0))
        return fail(why_not, "dropout_p is not a constant 0");
    int64_t causal = 0;
    if (n->n_inputs > 5 && !ttc_value_const_int(n->inputs[5], &causal)) return fail(why_not, "is_causal is not a constant");
    if (causal && has_mask) return fail(why_not, "both a mask and is_causal");
    double sc;
    if (n->n_inputs > 6 && !ttc_value_is_none(n->inputs[6]) && !ttc_value_const_float(n->inputs[6], &sc))
        return fail(why_not, "scale is not a constant");
    int64_t gqa = 0;
    if (n->n_inputs > 7 && ttc_value_const_int(n->inputs[7], &gqa) && gqa) return fail(why_not, "enable_gqa");
    return true;
}

/* scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, scale[, enable_gqa]) */
ttc_status ttc_convert_sdpa(ttc_conv_ctx *cx, const ttc_node *n) {
    int32_t q, k, v, m = -1;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &q));
    TTC_TRY(ttc_cx_tensor(cx, n, 1, &k));
    TTC_TRY(ttc_cx_tensor(cx, n, 2, &v));
    if (n->n_inputs > 3 && !ttc_cx_is_none(cx, n, 3)) TTC_TRY(ttc_cx_tensor(cx, n, 3, &m));
    bool causal = false;
    if (n->n_inputs > 5) TTC_TRY(ttc_cx_bool(cx, n, 5, &causal));
    const ttc_et *qt = &cx->k->ts[q], *vt = &cx->k->ts[v];
    int32_t R = qt->rank;
    if (R < 2 || qt->dims[R - 1].sym >= 0 || vt->dims[R - 1].sym >= 0)
        return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: symbolic head dims", nname(n));
    int64_t E = qt->dims[R - 1].add, EV = vt->dims[R - 1].add;
    double scale = 1.0 / sqrt((double)E);
    if (n->n_inputs > 6 && !ttc_cx_is_none(cx, n, 6)) TTC_TRY(ttc_cx_float(cx, n, 6, &scale));
    const ttc_type *ot = &n->outputs[0]->type;
    int32_t oi = ttc_kir_op(cx->k, TTC_KOP_ATTENTION, ttc_cx_float_dtype(cx, ot->dtype), ot->rank, ot->dims,
                            n->outputs[0]->name);
    if (oi < 0) return ttc_fail_context(TTC_ERR_NOMEM, "node %s", nname(n));
    ttc_kop *op = &cx->k->ops[oi];
    op->in[0] = q;
    op->in[1] = k;
    op->in[2] = v;
    op->in[3] = m;
    op->p.attn.scale = scale;
    op->p.attn.causal = causal;
    op->p.attn.e = (int32_t)E;
    op->p.attn.ev = (int32_t)EV;
    return ttc_cx_set_output(cx, n, 0, op->out);
}
