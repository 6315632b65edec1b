/* Converters for reductions: sum, mean, amax, amin, var, argmax/argmin, prod. One REDUCE
 * kernel op reads the (possibly strided) input directly; the output keeps or drops the
 * reduced dims as the IR type says (the element order is the same either way). */
#include "converters.h"

#include <stdlib.h>
#include <string.h>

static ttc_status dims_mask(ttc_conv_ctx *cx, const ttc_node *n, int32_t i, int32_t rank, uint32_t *mask) {
    *mask = 0;
    if (i >= n->n_inputs || ttc_cx_is_none(cx, n, i)) { *mask = (1u << rank) - 1; return TTC_OK; }
    const int64_t *d;
    int32_t nd;
    TTC_TRY(ttc_cx_ints(cx, n, i, &d, &nd));
    if (nd == 0) { *mask = (1u << rank) - 1; return TTC_OK; }
    for (int32_t j = 0; j < nd; j++) {
        int32_t dd;
        TTC_TRY(ttc_cx_dim(n, d[j], rank, &dd));
        *mask |= 1u << dd;
    }
    return TTC_OK;
}

ttc_status ttc_convert_reduce(ttc_conv_ctx *cx, const ttc_node *n) {
    ttc_kir *k = cx->k;
    int32_t x;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &x));
    int32_t R = k->ts[x].rank;
    uint32_t mask = 0;
    ttc_reduce_kind rk;
    int64_t correction = 0;
    switch (n->op) {
    case TTC_OP_SUM: case TTC_OP_MEAN:
        mask = (1u << R) - 1;
        rk = n->op == TTC_OP_SUM ? TTC_RED_SUM : TTC_RED_MEAN;
        break;
    case TTC_OP_SUM_DIM: case TTC_OP_MEAN_DIM: case TTC_OP_AMAX: case TTC_OP_AMIN:
        TTC_TRY(dims_mask(cx, n, 1, R, &mask));
        rk = n->op == TTC_OP_SUM_DIM ? TTC_RED_SUM : n->op == TTC_OP_MEAN_DIM ? TTC_RED_MEAN
           : n->op == TTC_OP_AMAX ? TTC_RED_MAX : TTC_RED_MIN;
        break;
    case TTC_OP_PROD_DIM:
        TTC_TRY(dims_mask(cx, n, 1, R, &mask));
        rk = TTC_RED_PROD;
        break;
    case TTC_OP_VAR_CORRECTION:  /* var(x, dims, correction, keepdim) */
        TTC_TRY(dims_mask(cx, n, 1, R, &mask));
        rk = TTC_RED_VAR;
        correction = 1;
        if (n->n_inputs > 2 && !ttc_cx_is_none(cx, n, 2)) {
            double c;
            TTC_TRY(ttc_cx_float(cx, n, 2, &c));
            correction = (int64_t)c;
        }
        break;
    case TTC_OP_VAR_DIM: {  /* var(x, dims, unbiased, keepdim) */
        TTC_TRY(dims_mask(cx, n, 1, R, &mask));
        bool unbiased = true;
        if (n->n_inputs > 2) TTC_TRY(ttc_cx_bool(cx, n, 2, &unbiased));
        rk = TTC_RED_VAR;
        correction = unbiased;
        break;
    }
    case TTC_OP_ARGMAX: case TTC_OP_ARGMIN:  /* argmax(x, dim?, keepdim) */
        if (ttc_cx_is_none(cx, n, 1)) {
            /* over the flattened tensor: reduce all dims of a dense copy */
            mask = (1u << R) - 1;
            TTC_TRY(ttc_cx_contiguous(cx, x, n->outputs[0]->name, &x));
        } else {
            int64_t d;
            int32_t dd;
            TTC_TRY(ttc_cx_int(cx, n, 1, &d));
            TTC_TRY(ttc_cx_dim(n, d, R, &dd));
            mask = 1u << dd;
        }
        rk = n->op == TTC_OP_ARGMAX ? TTC_RED_ARGMAX : TTC_RED_ARGMIN;
        break;
    default:
        return ttc_fail(TTC_ERR_INTERNAL, "no reduction mapping for %s", n->op_name);
    }
    if (R == 0) mask = 0;
    const ttc_type *ot = &n->outputs[0]->type;
    /* indices and integer results keep the IR's dtype (sum of int32/bool is int64, amax of
     * bool is bool); only floating results follow the engine's precision */
    bool int_out = !ttc_dtype_engine_float(ot->dtype);
    ttc_dtype dt = int_out ? ot->dtype : ttc_cx_float_dtype(cx, ot->dtype);
    int32_t oi = ttc_kir_op(k, TTC_KOP_REDUCE, dt, ot->rank, ot->dims, n->outputs[0]->name);
    if (oi < 0) return TTC_ERR_NOMEM;
    ttc_kop *op = &k->ops[oi];
    op->in[0] = x;
    op->p.red.kind = rk;
    op->p.red.mask = mask;
    op->p.red.correction = correction;
    return ttc_cx_set_output(cx, n, 0, op->out);
}

static bool int_dtype(ttc_dtype d) {
    return d == TTC_DTYPE_INT64 || d == TTC_DTYPE_INT32 || d == TTC_DTYPE_INT8 || d == TTC_DTYPE_UINT8 ||
           d == TTC_DTYPE_BOOL;
}

bool ttc_validate_reduce(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    const ttc_type *t = &n->inputs[0]->type, *o = &n->outputs[0]->type;
    if (int_dtype(t->dtype)) {
        /* integer inputs: exact long accumulation (codegen/codegen_ops.c gen_reduce_int) for
         * the reductions whose torch result is an integer; mean/var/prod stay in torch */
        bool ok_op = n->op == TTC_OP_SUM || n->op == TTC_OP_SUM_DIM || n->op == TTC_OP_AMAX || n->op == TTC_OP_AMIN ||
                     n->op == TTC_OP_ARGMAX || n->op == TTC_OP_ARGMIN;
        if (!ok_op) {
            if (why_not) *why_not = ttc_strfmt("%s of %s (integer inputs only for sum, amax, amin, argmax, argmin)",
                                               n->op_name, ttc_dtype_name(t->dtype));
            return false;
        }
        if (!int_dtype(o->dtype)) {
            if (why_not) *why_not = ttc_strfmt("%s of %s to %s (only integer results of integer inputs)", n->op_name,
                                               ttc_dtype_name(t->dtype), ttc_dtype_name(o->dtype));
            return false;
        }
        return true;
    }
    if (!ttc_dtype_engine_float(t->dtype)) {
        if (why_not) *why_not = ttc_strfmt("reduction of %s (only floating and integer inputs)", ttc_dtype_name(t->dtype));
        return false;
    }
    if (!ttc_dtype_engine_float(o->dtype) && o->dtype != TTC_DTYPE_INT64) {
        if (why_not) *why_not = ttc_strfmt("reduction to %s", ttc_dtype_name(o->dtype));
        return false;
    }
    return true;
}
