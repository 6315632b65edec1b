/* Converters for indexing: embedding, index_select and index.Tensor become one INDEX kernel
 * (the input read at positions taken from index tensors broadcast together), gather one
 * GATHER kernel. Indices may be int64 or int32; negative ones count from the end. Boolean
 * (mask) indices have data-dependent shapes: they stay in torch. Out-of-range indices, an
 * error in torch, are clamped so that a kernel never reads outside its input. */
#include "converters_data.h"

#include <string.h>

static const char *nname(const ttc_node *n) { return n->name ? n->name : n->op_name; }

static bool index_type_ok(const ttc_type *t, const char *what, char **why_not) {
    if (t->kind != TTC_TYPE_TENSOR || t->rank < 0) {
        if (why_not) *why_not = ttc_strfmt("%s is not a tensor of known rank", what);
        return false;
    }
    if (t->dtype != TTC_DTYPE_INT64 && t->dtype != TTC_DTYPE_INT32) {
        if (why_not) *why_not = ttc_strfmt("%s has dtype %s (only int64/int32 indices; masks stay in torch)", what,
                                           ttc_dtype_name(t->dtype));
        return false;
    }
    return true;
}

/* Emits an INDEX op reading x on dims[j] through idx[j]; the broadcast index dims go to
 * output dim `at`. */
static ttc_status emit_index(ttc_conv_ctx *cx, const ttc_node *n, int32_t x, int32_t ni, const int32_t *dims,
                             const int32_t *idx, int32_t at) {
    ttc_kir *k = cx->k;
    const ttc_type *ot = &n->outputs[0]->type;
    int32_t B = 0;
    for (int32_t j = 0; j < ni; j++)
        if (k->ts[idx[j]].rank > B) B = k->ts[idx[j]].rank;
    if (ot->rank != k->ts[x].rank - ni + B)
        return ttc_fail(TTC_ERR_INVALID_ARG, "node %s: output rank %d, expected %d", nname(n), ot->rank,
                        k->ts[x].rank - ni + B);
    ttc_dtype od = ttc_cx_float_dtype(cx, ot->dtype);
    int32_t oi = ttc_kir_op(k, TTC_KOP_INDEX, od, ot->rank, ot->dims, n->outputs[0]->name);
    if (oi < 0) return ttc_fail_context(TTC_ERR_NOMEM, "node %s", nname(n));
    ttc_kop *op = &k->ops[oi];
    op->in[0] = x;
    for (int32_t j = 0; j < ni; j++) {
        op->in[1 + j] = idx[j];
        op->p.index.dims[j] = dims[j];
    }
    op->p.index.n = ni;
    op->p.index.brank = B;
    op->p.index.at = at;
    /* torch wraps negative indices for x[idx] only; embedding/index_select raise on them */
    op->p.index.wrap = n->op == TTC_OP_INDEX_TENSOR;
    return ttc_cx_set_output(cx, n, 0, op->out);
}

bool ttc_validate_embedding(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    if (!ttc_data_type_ok(&n->inputs[0]->type, "the weight", why_not) || !ttc_data_output_ok(n, 0, why_not)) return false;
    if (n->inputs[0]->type.rank != 2) {
        if (why_not) *why_not = ttc_strdup("the weight is not 2-d");
        return false;
    }
    return index_type_ok(&n->inputs[1]->type, "the indices", why_not);
}

/* embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse): rows of weight. */
ttc_status ttc_convert_embedding(ttc_conv_ctx *cx, const ttc_node *n) {
    int32_t w, ix, d0 = 0;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &w));
    TTC_TRY(ttc_cx_tensor(cx, n, 1, &ix));
    return emit_index(cx, n, w, 1, &d0, &ix, 0);
}

/* index_select and gather take their dim as input 1 */
static bool dim_is_const(const ttc_node *n, char **why_not) {
    int64_t dim;
    if (ttc_value_const_int(n->inputs[1], &dim)) return true;
    if (why_not) *why_not = ttc_strdup("dim is not a constant");
    return false;
}

bool ttc_validate_index_select(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    if (!ttc_data_type_ok(&n->inputs[0]->type, "the input", why_not) || !ttc_data_output_ok(n, 0, why_not)) return false;
    if (!index_type_ok(&n->inputs[2]->type, "the index", why_not)) return false;
    if (n->inputs[2]->type.rank != 1 || n->inputs[0]->type.rank < 1) {
        if (why_not) *why_not = ttc_strdup("index_select needs a 1-d index and an input of rank >= 1");
        return false;
    }
    return dim_is_const(n, why_not);
}

/* The (x, dim, index) arguments of index_select and gather: tensors and the normalised dim. */
static ttc_status x_dim_index(ttc_conv_ctx *cx, const ttc_node *n, int32_t *x, int32_t *D, int32_t *ix) {
    int64_t dim;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, x));
    TTC_TRY(ttc_cx_int(cx, n, 1, &dim));
    TTC_TRY(ttc_cx_tensor(cx, n, 2, ix));
    return ttc_cx_dim(n, dim, cx->k->ts[*x].rank, D);
}

/* index_select(x, dim, index) */
ttc_status ttc_convert_index_select(ttc_conv_ctx *cx, const ttc_node *n) {
    int32_t x, ix, D;
    TTC_TRY(x_dim_index(cx, n, &x, &D, &ix));
    return emit_index(cx, n, x, 1, &D, &ix, D);
}

bool ttc_validate_gather(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    if (!ttc_data_type_ok(&n->inputs[0]->type, "the input", why_not) || !ttc_data_output_ok(n, 0, why_not)) return false;
    if (!index_type_ok(&n->inputs[2]->type, "the index", why_not)) return false;
    int32_t R = n->inputs[0]->type.rank;
    if (R < 1 || n->inputs[2]->type.rank != R || n->outputs[0]->type.rank != R) {
        if (why_not) *why_not = ttc_strdup("gather needs input, index and output of one rank >= 1");
        return false;
    }
    return dim_is_const(n, why_not);
}

/* gather(x, dim, index, sparse_grad) */
ttc_status ttc_convert_gather(ttc_conv_ctx *cx, const ttc_node *n) {
    int32_t x, ix, D;
    TTC_TRY(x_dim_index(cx, n, &x, &D, &ix));
    const ttc_type *ot = &n->outputs[0]->type;
    int32_t oi = ttc_kir_op(cx->k, TTC_KOP_GATHER, ttc_cx_float_dtype(cx, ot->dtype), ot->rank, ot->dims,
                            n->outputs[0]->name);
    if (oi < 0) return ttc_fail_context(TTC_ERR_NOMEM, "node %s", nname(n));
    ttc_kop *op = &cx->k->ops[oi];
    op->in[0] = x;
    op->in[1] = ix;
    op->p.gather.dim = D;
    op->p.gather.mode = 1;
    return ttc_cx_set_output(cx, n, 0, op->out);
}

/* The indices list of index.Tensor: a ListConstruct of tensors and Nones. */
static const ttc_node *indices_node(const ttc_node *n) {
    if (n->n_inputs < 2) return NULL;
    const ttc_node *p = n->inputs[1]->producer;
    return p && p->op == TTC_OP_LIST_CONSTRUCT ? p : NULL;
}

bool ttc_validate_index(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    if (!ttc_data_type_ok(&n->inputs[0]->type, "the input", why_not) || !ttc_data_output_ok(n, 0, why_not)) return false;
    const ttc_node *l = indices_node(n);
    if (!l) {
        if (why_not) *why_not = ttc_strdup("the index list is not a list construct");
        return false;
    }
    int32_t ni = 0, B = 0;
    if (l->n_inputs > n->inputs[0]->type.rank) {
        if (why_not) *why_not = ttc_strdup("more indices than input dims");
        return false;
    }
    for (int32_t i = 0; i < l->n_inputs; i++) {
        const ttc_value *v = l->inputs[i];
        if (ttc_value_is_none(v)) continue;
        if (!index_type_ok(&v->type, "an index", why_not)) return false;
        if (v->type.rank > B) B = v->type.rank;
        ni++;
    }
    if (ni < 1 || ni > 3) {
        if (why_not) *why_not = ttc_strfmt("%d index tensors (1 to 3 supported)", ni);
        return false;
    }
    if (n->outputs[0]->type.rank != n->inputs[0]->type.rank - ni + B) {
        if (why_not) *why_not = ttc_strdup("output rank does not match the indices");
        return false;
    }
    return true;
}

/* index.Tensor(x, indices): tensors at adjacent positions put the broadcast index dims in
 * their place; separated by a None (or a slice), they go first, as in numpy. */
ttc_status ttc_convert_index(ttc_conv_ctx *cx, const ttc_node *n) {
    int32_t x;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &x));
    const ttc_node *l = indices_node(n);
    if (!l) return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: the index list is not a list construct", nname(n));
    int32_t dims[3], idx[3], ni = 0, first = -1, last = -1;
    for (int32_t i = 0; i < l->n_inputs; i++) {
        if (ttc_value_is_none(l->inputs[i])) continue;
        if (ni == 3) return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: more than 3 index tensors", nname(n));
        TTC_TRY(ttc_cx_tensor(cx, l, i, &idx[ni]));
        dims[ni++] = i;
        if (first < 0) first = i;
        last = i;
    }
    if (ni == 0) return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: no index tensors", nname(n));
    bool adjacent = last - first + 1 == ni;
    return emit_index(cx, n, x, ni, dims, idx, adjacent ? first : 0);
}
