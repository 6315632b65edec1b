/* Reductions with two outputs, as pairs of REDUCE kernel ops over the same input:
 * max.dim -> (amax, argmax) and var_mean.correction -> (var, mean). Each output keeps or
 * drops the reduced dim as its IR type says. */
#include "converters_data.h"

#include <stdlib.h>

static const char *nname(const ttc_node *n) { return n->name ? n->name : n->op_name; }

static ttc_status reduce_out(ttc_conv_ctx *cx, const ttc_node *n, int32_t oi, int32_t x, ttc_reduce_kind rk,
                             uint32_t mask, int64_t correction) {
    const ttc_type *ot = &n->outputs[oi]->type;
    bool idx = rk == TTC_RED_ARGMAX || rk == TTC_RED_ARGMIN;
    ttc_dtype dt = idx ? ot->dtype : ttc_cx_float_dtype(cx, ot->dtype);
    int32_t o = ttc_kir_op(cx->k, TTC_KOP_REDUCE, dt, ot->rank, ot->dims, n->outputs[oi]->name);
    if (o < 0) return ttc_fail_context(TTC_ERR_NOMEM, "node %s", nname(n));
    ttc_kop *op = &cx->k->ops[o];
    op->in[0] = x;
    op->p.red.kind = rk;
    op->p.red.mask = mask;
    op->p.red.correction = correction;
    return ttc_cx_set_output(cx, n, oi, op->out);
}

static bool float_in(const ttc_node *n, char **why_not) {
    if (!ttc_data_type_ok(&n->inputs[0]->type, "the input", why_not)) return false;
    ttc_dtype d = n->inputs[0]->type.dtype;
    if (!ttc_dtype_engine_float(d)) {
        if (why_not) *why_not = ttc_strfmt("reduction of %s (only floating inputs)", ttc_dtype_name(d));
        return false;
    }
    return ttc_data_output_ok(n, 0, why_not) && ttc_data_output_ok(n, 1, why_not);
}

bool ttc_validate_max_dim(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    if (!float_in(n, why_not)) return false;
    int64_t d;
    if (n->n_inputs < 2 || !ttc_value_const_int(n->inputs[1], &d)) {
        if (why_not) *why_not = ttc_strdup("dim is not a constant");
        return false;
    }
    if (n->outputs[1]->type.dtype != TTC_DTYPE_INT64) {
        if (why_not) *why_not = ttc_strdup("indices are not int64");
        return false;
    }
    return true;
}

/* max.dim(x, dim, keepdim) -> (values, indices) */
ttc_status ttc_convert_max_dim(ttc_conv_ctx *cx, const ttc_node *n) {
    int32_t x, D;
    int64_t d;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &x));
    TTC_TRY(ttc_cx_int(cx, n, 1, &d));
    int32_t R = cx->k->ts[x].rank;
    TTC_TRY(ttc_cx_dim(n, d, R, &D));
    uint32_t mask = R ? 1u << D : 0;
    TTC_TRY(reduce_out(cx, n, 0, x, TTC_RED_MAX, mask, 0));
    return reduce_out(cx, n, 1, x, TTC_RED_ARGMAX, mask, 0);
}

bool ttc_validate_var_mean(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    if (!float_in(n, why_not)) return false;
    int64_t *dims = NULL;
    int32_t nd = 0;
    if (n->n_inputs > 1 && !ttc_value_is_none(n->inputs[1])) {
        if (!ttc_value_const_ints(n->inputs[1], &dims, &nd)) {
            if (why_not) *why_not = ttc_strdup("dims are not constants");
            return false;
        }
        free(dims);
    }
    double c;
    if (n->n_inputs > 2 && !ttc_value_is_none(n->inputs[2]) && !ttc_value_const_float(n->inputs[2], &c)) {
        if (why_not) *why_not = ttc_strdup("correction is not a constant");
        return false;
    }
    return true;
}

/* var_mean.correction(x, dims, correction, keepdim) -> (var, mean) */
ttc_status ttc_convert_var_mean(ttc_conv_ctx *cx, const ttc_node *n) {
    int32_t x;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &x));
    int32_t R = cx->k->ts[x].rank;
    uint32_t mask = R ? (1u << R) - 1 : 0;
    if (n->n_inputs > 1 && !ttc_cx_is_none(cx, n, 1)) {
        const int64_t *dims;
        int32_t nd;
        TTC_TRY(ttc_cx_ints(cx, n, 1, &dims, &nd));
        if (nd > 0) mask = 0;
        for (int32_t j = 0; j < nd; j++) {
            int32_t dd;
            TTC_TRY(ttc_cx_dim(n, dims[j], R, &dd));
            mask |= 1u << dd;
        }
    }
    double corr = 1;
    if (n->n_inputs > 2 && !ttc_cx_is_none(cx, n, 2)) TTC_TRY(ttc_cx_float(cx, n, 2, &corr));
    TTC_TRY(reduce_out(cx, n, 0, x, TTC_RED_VAR, mask, (int64_t)corr));
    return reduce_out(cx, n, 1, x, TTC_RED_MEAN, mask, 0);
}
