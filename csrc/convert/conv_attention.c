/* scaled_dot_product_attention as one fused ATTENTION kernel: per query row, the scores
 * against every key, an online softmax and the weighted sum of the values, without the
 * [L, S] score matrix in memory. The whole torch 2.13 schema:
 *   sdpa(q, k, v, attn_mask=None, dropout_p=0., is_causal=False, *, scale=None, enable_gqa=False)
 * - batch/head dims of q, k, v and the mask broadcast against the output's (right-aligned,
 *   size 1 or equal), ranks may differ as in torch;
 * - masks: bool (true = attend) or float (added to the scores), any broadcast shape of
 *   [..., L, S]; a row with every key masked gives 0, as torch's CPU kernels do;
 * - is_causal masks keys after the query (top-left aligned, as torch); with a mask torch
 *   raises, so that case stays in torch, which raises the same error;
 * - enable_gqa: k/v have Hkv heads (dim -3), query head h reads k/v head h / (Hq / Hkv);
 * - dropout_p must be a constant 0 (inference); anything else falls back with the reason.
 * The head dims must be static (they size private arrays). */
#include "converters_data.h"

#include <math.h>

static const char *nname(const ttc_node *n) { return n->name ? n->name : n->op_name; }

#define TTC_ATTN_MAX_HEAD_DIM 256

static bool fail(char **why_not, const char *msg) {
    if (why_not) *why_not = ttc_strdup(msg);
    return false;
}

static bool dim_is1(ttc_dim d) { return d.sym < 0 && d.add == 1; }

/* t's dim aligned with output dim d (rank R) fits it: absent, 1, or equal. */
static bool bcast_ok(const ttc_type *t, const ttc_type *o, int32_t d) {
    int32_t td = d - (o->rank - t->rank);
    return td < 0 || dim_is1(t->dims[td]) || ttc_dim_eq(t->dims[td], o->dims[d]);
}

/* Query heads per k/v head: 1 without GQA (or when it is not needed); 0 when the k/v head
 * dim cannot be grouped (symbolic, or not dividing the query heads). */
static int32_t gqa_group(const ttc_type *q, const ttc_type *kv) {
    if (q->rank < 3 || kv->rank < 3) return 1;
    ttc_dim hq = q->dims[q->rank - 3], hk = kv->dims[kv->rank - 3];
    if (ttc_dim_eq(hq, hk) || dim_is1(hk)) return 1;
    if (hq.sym >= 0 || hk.sym >= 0 || hk.add < 1 || hq.add % hk.add) return 0;
    return (int32_t)(hq.add / hk.add);
}

bool ttc_validate_sdpa(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    if (n->n_inputs < 3) return fail(why_not, "query, key and value are needed");
    if (!ttc_data_output_ok(n, 0, why_not)) return false;
    const ttc_type *q = &n->inputs[0]->type, *k = &n->inputs[1]->type, *v = &n->inputs[2]->type;
    const ttc_type *o = &n->outputs[0]->type;
    const ttc_type *ts[3] = {q, k, v};
    for (int32_t i = 0; i < 3; i++) {
        if (!ttc_data_type_ok(ts[i], "query/key/value", why_not)) return false;
        if (!ttc_dtype_engine_float(ts[i]->dtype)) return fail(why_not, "query/key/value are not floating");
        if (ts[i]->rank < 2) return fail(why_not, "query, key and value need rank >= 2");
    }
    int32_t R = o->rank;
    if (R < 2 || q->rank > R || k->rank > R || v->rank > R) return fail(why_not, "output rank below an input's");
    int64_t gqa = 0;
    if (n->n_inputs > 7 && !ttc_value_const_int(n->inputs[7], &gqa)) return fail(why_not, "enable_gqa is not a constant");
    int32_t group = gqa ? gqa_group(q, k) : 1;
    if (gqa && (group == 0 || gqa_group(q, v) != group))
        return fail(why_not, "enable_gqa: key/value heads are symbolic or do not divide the query heads");
    for (int32_t d = 0; d < R - 2; d++) {
        bool head = d == R - 3 && group > 1;
        if (!bcast_ok(q, o, d) || (!head && (!bcast_ok(k, o, d) || !bcast_ok(v, o, d))))
            return fail(why_not, "batch/head dims of query, key and value do not broadcast to the output's");
    }
    if (!ttc_dim_eq(q->dims[q->rank - 2], o->dims[R - 2])) return fail(why_not, "query length differs from the output's");
    if (!ttc_dim_eq(k->dims[k->rank - 2], v->dims[v->rank - 2])) return fail(why_not, "key and value lengths differ");
    ttc_dim e = q->dims[q->rank - 1], ev = v->dims[v->rank - 1];
    if (e.sym >= 0 || ev.sym >= 0 || !ttc_dim_eq(e, k->dims[k->rank - 1]) || !ttc_dim_eq(ev, o->dims[R - 1]))
        return fail(why_not, "head dims are symbolic or differ");
    if (e.add < 1 || ev.add < 1 || e.add > TTC_ATTN_MAX_HEAD_DIM || ev.add > TTC_ATTN_MAX_HEAD_DIM)
        return fail(why_not, "head dim outside [1, 256]");
    bool has_mask = n->n_inputs > 3 && !ttc_value_is_none(n->inputs[3]);
    if (has_mask) {
        const ttc_type *m = &n->inputs[3]->type;
        if (!ttc_data_type_ok(m, "the mask", why_not)) return false;
        if (m->dtype != TTC_DTYPE_BOOL && !ttc_dtype_engine_float(m->dtype))
            return fail(why_not, "the mask is neither bool nor floating");
        if (m->rank > R) return fail(why_not, "the mask has a higher rank than the output");
        for (int32_t d = 0; d < R - 1; d++)
            if (!bcast_ok(m, o, d)) return fail(why_not, "the mask does not broadcast to [..., L, S]");
        if (m->rank >= 1 && !dim_is1(m->dims[m->rank - 1]) && !ttc_dim_eq(m->dims[m->rank - 1], k->dims[k->rank - 2]))
            return fail(why_not, "the mask's last dim is neither 1 nor the key length");
    }
    double dp = 0;
    if (n->n_inputs > 4 && (!ttc_value_const_float(n->inputs[4], &dp) || dp != 0))
        return fail(why_not, "dropout_p is not a constant 0 (training-time dropout runs in torch)");
    int64_t causal = 0;
    if (n->n_inputs > 5 && !ttc_value_const_int(n->inputs[5], &causal)) return fail(why_not, "is_causal is not a constant");
    if (causal && has_mask) return fail(why_not, "both a mask and is_causal (torch raises on this)");
    double sc;
    if (n->n_inputs > 6 && !ttc_value_is_none(n->inputs[6]) && !ttc_value_const_float(n->inputs[6], &sc))
        return fail(why_not, "scale is not a constant");
    return true;
}

ttc_status ttc_convert_sdpa(ttc_conv_ctx *cx, const ttc_node *n) {
    int32_t q, k, v, m = -1;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &q));
    TTC_TRY(ttc_cx_tensor(cx, n, 1, &k));
    TTC_TRY(ttc_cx_tensor(cx, n, 2, &v));
    if (n->n_inputs > 3 && !ttc_cx_is_none(cx, n, 3)) TTC_TRY(ttc_cx_tensor(cx, n, 3, &m));
    bool causal = false, gqa = false;
    if (n->n_inputs > 5) TTC_TRY(ttc_cx_bool(cx, n, 5, &causal));
    if (n->n_inputs > 7) TTC_TRY(ttc_cx_bool(cx, n, 7, &gqa));
    const ttc_et *qt = &cx->k->ts[q], *vt = &cx->k->ts[v];
    if (qt->dims[qt->rank - 1].sym >= 0 || vt->dims[vt->rank - 1].sym >= 0)
        return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: symbolic head dims", nname(n));
    int64_t E = qt->dims[qt->rank - 1].add, EV = vt->dims[vt->rank - 1].add;
    double scale = 1.0 / sqrt((double)E);
    if (n->n_inputs > 6 && !ttc_cx_is_none(cx, n, 6)) TTC_TRY(ttc_cx_float(cx, n, 6, &scale));
    const ttc_type *ot = &n->outputs[0]->type;
    int32_t group = gqa ? gqa_group(&n->inputs[0]->type, &n->inputs[1]->type) : 1;
    if (group < 1) return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: key/value heads do not divide the query heads", nname(n));
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
    op->p.attn.group = group;
    return ttc_cx_set_output(cx, n, 0, op->out);
}
