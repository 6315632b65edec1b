/* Converters that move data: cat/stack (one CONCAT kernel per up to four inputs, chained
 * beyond that), split/chunk/unbind (slice/select views: no copy) and constant_pad_nd (one
 * PAD kernel; negative pads crop). Output dims always come from the IR types. */
#include "converters_data.h"

#include <stdlib.h>
#include <string.h>

static const char *nname(const ttc_node *n) { return n->name ? n->name : n->op_name; }

static bool engine_dtype(ttc_dtype d) {
    return ttc_dtype_engine_float(d) || d == TTC_DTYPE_INT64 || d == TTC_DTYPE_INT32 ||
           d == TTC_DTYPE_BOOL || d == TTC_DTYPE_UINT8 || d == TTC_DTYPE_INT8;
}

bool ttc_data_type_ok(const ttc_type *t, const char *what, char **why_not) {
    if (t->kind != TTC_TYPE_TENSOR || t->rank < 0) {
        if (why_not) *why_not = ttc_strfmt("%s is not a tensor of known rank", what);
        return false;
    }
    if (!engine_dtype(t->dtype)) {
        if (why_not) *why_not = ttc_strfmt("%s has dtype %s (not supported by OpenCL engines)", what, ttc_dtype_name(t->dtype));
        return false;
    }
    return true;
}

bool ttc_data_output_ok(const ttc_node *n, int32_t i, char **why_not) {
    if (i >= n->n_outputs) {
        if (why_not) *why_not = ttc_strfmt("output %d missing", i);
        return false;
    }
    return ttc_data_type_ok(&n->outputs[i]->type, "the output", why_not);
}

/* The tensor-list argument of cat/stack: the ListConstruct producing it. */
static const ttc_node *list_node(const ttc_node *n) {
    if (n->n_inputs < 1) return NULL;
    const ttc_node *p = n->inputs[0]->producer;
    return p && p->op == TTC_OP_LIST_CONSTRUCT ? p : NULL;
}

/* torch.cat skips 1-d empty tensors whatever the other inputs' rank (legacy behaviour). */
static bool skipped_in_cat(const ttc_type *t, int32_t out_rank) {
    return out_rank != 1 && t->rank == 1 && t->dims[0].sym < 0 && t->dims[0].add == 0;
}

bool ttc_validate_cat(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    if (!ttc_data_output_ok(n, 0, why_not)) return false;
    const ttc_node *l = list_node(n);
    if (!l || l->n_inputs < 1) {
        if (why_not) *why_not = ttc_strdup("the tensor list is not a list construct");
        return false;
    }
    const ttc_type *ot = &n->outputs[0]->type;
    int64_t dim = 0;
    if (n->n_inputs > 1 && !ttc_value_const_int(n->inputs[1], &dim)) {
        if (why_not) *why_not = ttc_strdup("dim is not a constant");
        return false;
    }
    bool stack = n->op == TTC_OP_STACK;
    int32_t R = ot->rank;
    if (dim < -R || dim >= R || R < 1) {
        if (why_not) *why_not = ttc_strfmt("dim %lld out of range for rank %d", (long long)dim, R);
        return false;
    }
    int32_t D = (int32_t)(dim < 0 ? dim + R : dim);
    ttc_dim len = ttc_dim_const(0);
    for (int32_t i = 0; i < l->n_inputs; i++) {
        const ttc_type *t = &l->inputs[i]->type;
        if (!ttc_data_type_ok(t, "a list element", why_not)) return false;
        if (!stack && skipped_in_cat(t, R)) continue;
        if (t->rank != (stack ? R - 1 : R)) {
            if (why_not) *why_not = ttc_strfmt("list element %d has rank %d for an output of rank %d", i, t->rank, R);
            return false;
        }
        if (!ttc_dim_add(len, stack ? ttc_dim_const(1) : t->dims[D], &len)) {
            if (why_not) *why_not = ttc_strdup("the concatenated dim mixes symbols");
            return false;
        }
    }
    return true;
}

/* cat(tensors, dim), stack(tensors, dim) */
ttc_status ttc_convert_cat(ttc_conv_ctx *cx, const ttc_node *n) {
    ttc_kir *k = cx->k;
    const ttc_type *ot = &n->outputs[0]->type;
    const ttc_node *l = list_node(n);
    if (!l) return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: the tensor list is not a list construct", nname(n));
    bool stack = n->op == TTC_OP_STACK;
    int64_t dim = 0;
    if (n->n_inputs > 1) TTC_TRY(ttc_cx_int(cx, n, 1, &dim));
    int32_t R = ot->rank, D;
    TTC_TRY(ttc_cx_dim(n, dim, R, &D));
    int32_t *ts = ttc_malloc(sizeof(int32_t) * (size_t)(l->n_inputs + 1));
    if (!ts) return TTC_ERR_NOMEM;
    int32_t nt = 0;
    ttc_status s = TTC_OK;
    for (int32_t i = 0; i < l->n_inputs && s == TTC_OK; i++) {
        if (!stack && skipped_in_cat(&l->inputs[i]->type, R)) continue;
        s = ttc_cx_tensor(cx, l, i, &ts[nt++]);
    }
    if (s == TTC_OK && nt == 0) s = ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: nothing to concatenate", nname(n));
    ttc_dtype od = ttc_cx_float_dtype(cx, ot->dtype);
    /* cat([empty 1-d, x]) is x: what Hugging Face's KV cache does on its first update of every
     * layer. No copy kernel then; consumers read x (a view where x is one). */
    if (s == TTC_OK && !stack && nt == 1 && k->ts[ts[0]].dtype == od && k->ts[ts[0]].rank == R) {
        int32_t only = ts[0];
        free(ts);
        return ttc_cx_set_output(cx, n, 0, only);
    }
    int32_t cur = -1, i = 0;
    while (s == TTC_OK && i < nt) {
        int32_t ins[4], m = 0;
        uint32_t stacked = 0;
        ttc_dim len = ttc_dim_const(0);
        if (cur >= 0) { ins[m++] = cur; len = k->ts[cur].dims[D]; }
        while (m < 4 && i < nt) {
            int32_t t = ts[i++];
            ttc_dim add = stack ? ttc_dim_const(1) : k->ts[t].dims[D];
            if (!ttc_dim_add(len, add, &len)) { s = ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: concatenated dim mixes symbols", nname(n)); break; }
            if (stack) stacked |= 1u << m;
            ins[m++] = t;
        }
        if (s != TTC_OK) break;
        ttc_dim dims[TTC_MAX_RANK];
        memcpy(dims, ot->dims, sizeof dims);
        if (i < nt) dims[D] = len;   /* a link of the chain: a partial result */
        int32_t oi = ttc_kir_op(k, TTC_KOP_CONCAT, od, R, dims, n->outputs[0]->name);
        if (oi < 0) { s = ttc_fail_context(TTC_ERR_NOMEM, "node %s", nname(n)); break; }
        ttc_kop *op = &k->ops[oi];
        for (int32_t j = 0; j < m; j++) op->in[j] = ins[j];
        op->p.concat.dim = D;
        op->p.concat.n = m;
        op->p.concat.stacked = stacked;
        cur = op->out;
    }
    free(ts);
    if (s != TTC_OK) return s;
    return ttc_cx_set_output(cx, n, 0, cur);
}

bool ttc_validate_split(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    if (!ttc_data_type_ok(&n->inputs[0]->type, "the input", why_not)) return false;
    int32_t R = n->inputs[0]->type.rank;
    for (int32_t i = 0; i < n->n_outputs; i++)
        if (!ttc_data_output_ok(n, i, why_not)) return false;
    int64_t dim = 0;
    int32_t di = n->op == TTC_OP_UNBIND ? 1 : 2;
    if (n->n_inputs > di && !ttc_value_const_int(n->inputs[di], &dim)) {
        if (why_not) *why_not = ttc_strdup("dim is not a constant");
        return false;
    }
    if (R < 1 || dim < -R || dim >= R) {
        if (why_not) *why_not = ttc_strfmt("dim %lld out of range for rank %d", (long long)dim, R);
        return false;
    }
    int32_t D = (int32_t)(dim < 0 ? dim + R : dim);
    if (n->op == TTC_OP_CHUNK)   /* chunk starts come from the output sizes */
        for (int32_t i = 0; i + 1 < n->n_outputs; i++)
            if (n->outputs[i]->type.rank != R || n->outputs[i]->type.dims[D].sym >= 0) {
                if (why_not) *why_not = ttc_strdup("chunk of a symbolic dim");
                return false;
            }
    return true;
}

static ttc_status slice_view(ttc_conv_ctx *cx, const ttc_node *n, int32_t oi, int32_t x, int32_t D, int64_t start,
                             int64_t end) {
    const ttc_type *ot = &n->outputs[oi]->type;
    int32_t v = ttc_kir_view(cx->k, x, TTC_VIEW_SLICE, ot->rank, ot->dims, n->outputs[oi]->name);
    if (v < 0) return ttc_fail_context(TTC_ERR_NOMEM, "node %s", nname(n));
    ttc_et *t = &cx->k->ts[v];
    t->vdim = D;
    t->start = start;
    t->end = end;
    t->step = 1;
    return ttc_cx_set_output(cx, n, oi, v);
}

/* split.Tensor(x, split_size, dim), split_with_sizes(x, sizes, dim), chunk(x, chunks, dim) */
ttc_status ttc_convert_split(ttc_conv_ctx *cx, const ttc_node *n) {
    int32_t x, D;
    int64_t dim = 0;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &x));
    if (n->n_inputs > 2) TTC_TRY(ttc_cx_int(cx, n, 2, &dim));
    TTC_TRY(ttc_cx_dim(n, dim, cx->k->ts[x].rank, &D));
    const int64_t *sizes = NULL;
    int32_t n_sizes = 0;
    int64_t size = 0;
    if (n->op == TTC_OP_SPLIT_WITH_SIZES) {
        TTC_TRY(ttc_cx_ints(cx, n, 1, &sizes, &n_sizes));
        if (n_sizes < n->n_outputs)
            return ttc_fail(TTC_ERR_INVALID_ARG, "node %s: %d sizes for %d outputs", nname(n), n_sizes, n->n_outputs);
    } else if (n->op == TTC_OP_SPLIT) {
        TTC_TRY(ttc_cx_int(cx, n, 1, &size));
        if (size < 1) return ttc_fail(TTC_ERR_INVALID_ARG, "node %s: split size %lld", nname(n), (long long)size);
    }
    int64_t start = 0;
    for (int32_t i = 0; i < n->n_outputs; i++) {
        int64_t len;
        if (sizes) len = sizes[i];
        else if (n->op == TTC_OP_SPLIT) len = size;
        else {
            ttc_dim d = n->outputs[i]->type.dims[D];
            if (d.sym >= 0 && i + 1 < n->n_outputs)
                return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: chunk of a symbolic dim", nname(n));
            len = d.sym >= 0 ? INT64_MAX / 2 : d.add;   /* the last chunk runs to the end */
        }
        TTC_TRY(slice_view(cx, n, i, x, D, start, start + len));
        start += len;
    }
    return TTC_OK;
}

/* unbind(x, dim): one select view per index. */
ttc_status ttc_convert_unbind(ttc_conv_ctx *cx, const ttc_node *n) {
    int32_t x, D;
    int64_t dim = 0;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &x));
    if (n->n_inputs > 1) TTC_TRY(ttc_cx_int(cx, n, 1, &dim));
    TTC_TRY(ttc_cx_dim(n, dim, cx->k->ts[x].rank, &D));
    for (int32_t i = 0; i < n->n_outputs; i++) {
        const ttc_type *ot = &n->outputs[i]->type;
        int32_t v = ttc_kir_view(cx->k, x, TTC_VIEW_SELECT, ot->rank, ot->dims, n->outputs[i]->name);
        if (v < 0) return ttc_fail_context(TTC_ERR_NOMEM, "node %s", nname(n));
        cx->k->ts[v].vdim = D;
        cx->k->ts[v].start = i;
        TTC_TRY(ttc_cx_set_output(cx, n, i, v));
    }
    return TTC_OK;
}

bool ttc_validate_pad(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    if (!ttc_data_type_ok(&n->inputs[0]->type, "the input", why_not) || !ttc_data_output_ok(n, 0, why_not)) return false;
    int64_t *pad = NULL;
    int32_t np = 0;
    if (!ttc_value_const_ints(n->inputs[1], &pad, &np)) {
        if (why_not) *why_not = ttc_strdup("pad is not a constant list");
        return false;
    }
    free(pad);
    int32_t R = n->inputs[0]->type.rank;
    if (np % 2 || np / 2 > R) {
        if (why_not) *why_not = ttc_strfmt("%d pad values for rank %d", np, R);
        return false;
    }
    double v;
    if (n->n_inputs > 2 && !ttc_value_is_none(n->inputs[2]) && !ttc_value_const_float(n->inputs[2], &v)) {
        if (why_not) *why_not = ttc_strdup("the fill value is not a constant");
        return false;
    }
    return true;
}

/* constant_pad_nd(x, pad, value): pad pairs run from the last dim backwards. */
ttc_status ttc_convert_pad(ttc_conv_ctx *cx, const ttc_node *n) {
    int32_t x;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &x));
    const int64_t *pad;
    int32_t np;
    TTC_TRY(ttc_cx_ints(cx, n, 1, &pad, &np));
    double value = 0;
    if (n->n_inputs > 2 && !ttc_cx_is_none(cx, n, 2)) TTC_TRY(ttc_cx_float(cx, n, 2, &value));
    const ttc_type *ot = &n->outputs[0]->type;
    int32_t R = ot->rank;
    if (np % 2 || np / 2 > R || cx->k->ts[x].rank != R)
        return ttc_fail(TTC_ERR_INVALID_ARG, "node %s: %d pad values for rank %d", nname(n), np, R);
    int32_t oi = ttc_kir_op(cx->k, TTC_KOP_PAD, ttc_cx_float_dtype(cx, ot->dtype), R, ot->dims, n->outputs[0]->name);
    if (oi < 0) return ttc_fail_context(TTC_ERR_NOMEM, "node %s", nname(n));
    ttc_kop *op = &cx->k->ops[oi];
    op->in[0] = x;
    for (int32_t j = 0; j < np / 2; j++) op->p.pad.lo[R - 1 - j] = pad[2 * j];
    op->p.pad.value = value;
    return ttc_cx_set_output(cx, n, 0, op->out);
}
