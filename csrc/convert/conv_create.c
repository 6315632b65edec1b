/* Converters that create tensors. arange becomes a constant computed at build time (or, with
 * a symbolic length, an elementwise op over the element index; start and step must be
 * static); full, zeros, ones, the _like ops and scalar_tensor become an elementwise op
 * with no inputs, which fusion folds into its consumers. Every one takes its (maybe
 * symbolic) shape from the IR type, so they work with dynamic shapes. */
#include "converters_data.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *nname(const ttc_node *n) { return n->name ? n->name : n->op_name; }

static bool is_float(ttc_dtype d) { return ttc_dtype_engine_float(d); }

/* arange argument positions: (start, end, step) indices, -1 where the overload has none. */
static void arange_args(const ttc_node *n, int32_t *a_start, int32_t *a_end, int32_t *a_step) {
    *a_start = *a_step = -1;
    *a_end = 0;
    if (n->op == TTC_OP_ARANGE_START || n->op == TTC_OP_ARANGE_STEP) { *a_start = 0; *a_end = 1; }
    if (n->op == TTC_OP_ARANGE_STEP) *a_step = 2;
}

bool ttc_validate_arange(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    if (!ttc_data_output_ok(n, 0, why_not)) return false;
    const ttc_type *ot = &n->outputs[0]->type;
    if (ot->rank != 1) {
        if (why_not) *why_not = ttc_strdup("arange output is not 1-d");
        return false;
    }
    if (!is_float(ot->dtype) && ot->dtype != TTC_DTYPE_INT64 && ot->dtype != TTC_DTYPE_INT32) {
        if (why_not) *why_not = ttc_strfmt("arange of dtype %s", ttc_dtype_name(ot->dtype));
        return false;
    }
    int32_t a[3];
    arange_args(n, &a[0], &a[1], &a[2]);
    /* the end only matters through the output's length (the IR type, maybe symbolic) */
    for (int32_t i = 0; i < 3; i += 2) {
        double v;
        if (a[i] >= 0 && (a[i] >= n->n_inputs || !ttc_value_const_float(n->inputs[a[i]], &v))) {
            if (why_not) *why_not = ttc_strdup("arange start/step are not constants");
            return false;
        }
    }
    return true;
}

/* arange whose length is symbolic or whose end is computed at run time: start + i * step
 * from the element's index, one elementwise op that fusion folds into its readers. */
static ttc_status arange_by_index(ttc_conv_ctx *cx, const ttc_node *n, double start, double step) {
    const ttc_type *ot = &n->outputs[0]->type;
    ttc_dtype store = ttc_cx_float_dtype(cx, ot->dtype);
    ttc_dtype ct = is_float(store) ? TTC_DTYPE_FLOAT32 : store;
    ttc_expr e;
    ttc_expr_init(&e);
    int32_t i = ttc_expr_index(&e, 0, ct);
    int32_t r = i < 0 ? -1 : ttc_expr_op(&e, TTC_EOP_MUL, i, ttc_expr_const(&e, step, ct), -1, ct);
    r = r < 0 ? -1 : ttc_expr_op(&e, TTC_EOP_ADD, r, ttc_expr_const(&e, start, ct), -1, ct);
    if (r < 0) { ttc_expr_free(&e); return ttc_fail(TTC_ERR_NOMEM, "node %s", nname(n)); }
    int32_t t = ttc_kir_elementwise(cx->k, &e, store, 1, ot->dims, n->outputs[0]->name);
    if (t < 0) return ttc_fail_context(TTC_ERR_NOMEM, "node %s", nname(n));
    return ttc_cx_set_output(cx, n, 0, t);
}

/* arange(end), arange(start, end), arange(start, end, step): values start + i * step,
 * computed in double as torch does for float outputs. */
ttc_status ttc_convert_arange(ttc_conv_ctx *cx, const ttc_node *n) {
    const ttc_type *ot = &n->outputs[0]->type;
    int32_t a_start, a_end, a_step;
    arange_args(n, &a_start, &a_end, &a_step);
    double start = 0, step = 1, end;
    if (a_start >= 0) TTC_TRY(ttc_cx_float(cx, n, a_start, &start));
    if (a_step >= 0) TTC_TRY(ttc_cx_float(cx, n, a_step, &step));
    if (ot->rank != 1) return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: arange output is not 1-d", nname(n));
    if (ot->dims[0].sym >= 0 || !ttc_value_const_float(n->inputs[a_end], &end)) return arange_by_index(cx, n, start, step);
    int64_t len = ot->dims[0].add, shape[1] = {len};
    if (step == 0 || len < 0 || len > ((int64_t)1 << 28))
        return ttc_fail(TTC_ERR_INVALID_ARG, "node %s: arange of %lld elements with step %g", nname(n), (long long)len, step);
    int32_t t;
    if (is_float(ot->dtype)) {
        float *vals = ttc_malloc(sizeof(float) * (size_t)(len + 1));
        if (!vals) return TTC_ERR_NOMEM;
        for (int64_t i = 0; i < len; i++) vals[i] = (float)(start + (double)i * step);
        t = ttc_kir_const_f32(cx->k, ttc_cx_float_dtype(cx, ot->dtype), 1, shape, vals, n->outputs[0]->name);
        free(vals);
    } else {
        size_t es = ttc_dtype_size(ot->dtype);
        void *buf = ttc_malloc(es * (size_t)(len + 1));
        if (!buf) return TTC_ERR_NOMEM;
        for (int64_t i = 0; i < len; i++) {
            int64_t v = (int64_t)start + i * (int64_t)step;
            if (ot->dtype == TTC_DTYPE_INT64) ((int64_t *)buf)[i] = v;
            else ((int32_t *)buf)[i] = (int32_t)v;
        }
        ttc_tensor_data *d = ttc_tensor_data_wrap(buf, es * (size_t)len, free, buf);
        if (!d) { free(buf); return TTC_ERR_NOMEM; }
        t = ttc_kir_const(cx->k, ot->dtype, 1, shape, d, n->outputs[0]->name);
        ttc_tensor_data_unref(d);
    }
    if (t < 0) return ttc_fail_context(TTC_ERR_NOMEM, "node %s", nname(n));
    return ttc_cx_set_output(cx, n, 0, t);
}

/* Position of the fill value (-1: implied by the op) and the implied value. */
static int32_t fill_arg(const ttc_node *n, double *implied) {
    switch (n->op) {
    case TTC_OP_FULL: case TTC_OP_FULL_LIKE: return 1;
    case TTC_OP_SCALAR_TENSOR: return 0;
    case TTC_OP_ONES: case TTC_OP_ONES_LIKE: *implied = 1; return -1;
    default: *implied = 0; return -1;
    }
}

bool ttc_validate_full(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    if (!ttc_data_output_ok(n, 0, why_not)) return false;
    double v = 0;
    int32_t fa = fill_arg(n, &v);
    if (fa >= 0 && (fa >= n->n_inputs || !ttc_value_const_float(n->inputs[fa], &v))) {
        if (why_not) *why_not = ttc_strdup("the fill value is not a constant");
        return false;
    }
    /* sizes computed at run time are fine: the output's (symbolic) dims come from the IR */
    return true;
}

/* full(size, value, ...), zeros/ones(size, ...), *_like(x, ...), scalar_tensor(value, ...) */
ttc_status ttc_convert_full(ttc_conv_ctx *cx, const ttc_node *n) {
    const ttc_type *ot = &n->outputs[0]->type;
    double v = 0;
    int32_t fa = fill_arg(n, &v);
    if (fa >= 0) TTC_TRY(ttc_cx_float(cx, n, fa, &v));
    ttc_dtype store = ttc_cx_float_dtype(cx, ot->dtype);
    ttc_dtype ct = is_float(store) ? TTC_DTYPE_FLOAT32 : store;
    if (store == TTC_DTYPE_BOOL) v = v != 0;
    else if (!is_float(store)) v = trunc(v);
    ttc_expr e;
    ttc_expr_init(&e);
    if (ttc_expr_const(&e, v, ct) < 0) { ttc_expr_free(&e); return TTC_ERR_NOMEM; }
    int32_t t = ttc_kir_elementwise(cx->k, &e, store, ot->rank, ot->dims, n->outputs[0]->name);
    if (t < 0) return ttc_fail_context(TTC_ERR_NOMEM, "node %s", nname(n));
    return ttc_cx_set_output(cx, n, 0, t);
}
