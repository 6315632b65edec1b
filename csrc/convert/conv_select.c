/* Converters for sort/topk and the scatter family (issue 11, converters B).
 *
 * sort/topk: a SORT kernel ranks every element of a row (stable: ties keep index order; NaN
 * is the largest value, as torch orders it) and stores the positions of the first k ranks;
 * the values are a torch.gather of the input at those positions (GATHER kernel). The rank of
 * one element costs a pass over its row, so rows are bounded (TTC_SORT_MAX_ROW).
 *
 * scatter.src/value and index_put: a SCATTER kernel computes each output element from x and
 * the updates that land on it, searching the index tensors (O(updates) per element, bounded by
 * TTC_SCATTER_MAX_UPDATES). Duplicate targets: the last update wins (torch leaves the winner
 * unspecified), or with accumulate all are summed. scatter_reduce.two combines them (sum, prod,
 * mean, amax, amin) with or without x's value, in the same kernel. */
#include "converters_data.h"

#include <stdlib.h>
#include <string.h>

#define TTC_SORT_MAX_ROW 4096
#define TTC_SCATTER_MAX_UPDATES 65536

static const char *nname(const ttc_node *n) { return n->name ? n->name : n->op_name; }

static bool no(char **why_not, char *msg) {
    if (why_not) *why_not = msg;
    else free(msg);
    return false;
}

static bool sortable_dtype(ttc_dtype d) {
    return ttc_dtype_engine_float(d) || d == TTC_DTYPE_INT32 || d == TTC_DTYPE_INT64;
}

/* The position of the dim argument: sort.default(x, dim, desc), sort.stable(x, stable, dim, desc),
 * topk(x, k, dim, largest, sorted) */
static int32_t dim_arg(const ttc_node *n) { return n->op == TTC_OP_SORT ? 1 : 2; }
static int32_t desc_arg(const ttc_node *n) { return n->op == TTC_OP_SORT ? 2 : 3; }

bool ttc_validate_sort(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    const ttc_type *t = &n->inputs[0]->type;
    if (!ttc_data_type_ok(t, "the input", why_not) || !ttc_data_output_ok(n, 0, why_not)) return false;
    if (!sortable_dtype(t->dtype))
        return no(why_not, ttc_strfmt("sorting %s tensors (float32/16, int32/64 supported)", ttc_dtype_name(t->dtype)));
    if (t->rank < 1) return no(why_not, ttc_strdup("sorting a 0-d tensor"));
    int64_t d = -1, b;
    if (!ttc_value_is_none(n->inputs[dim_arg(n)]) && !ttc_value_const_int(n->inputs[dim_arg(n)], &d))
        return no(why_not, ttc_strdup("dim is not a constant"));
    if (d < -t->rank || d >= t->rank) return no(why_not, ttc_strdup("dim out of range"));
    ttc_dim row = t->dims[d < 0 ? d + t->rank : d];
    if (row.sym >= 0) return no(why_not, ttc_strdup("the sorted dim is dynamic (the rank kernel needs a static row)"));
    if (row.add > TTC_SORT_MAX_ROW)
        return no(why_not, ttc_strfmt("rows of %lld elements (the rank kernel is quadratic in the row; at most %d)",
                                      (long long)row.add, TTC_SORT_MAX_ROW));
    if (!ttc_value_const_int(n->inputs[desc_arg(n)], &b))
        return no(why_not, ttc_strdup("descending/largest is not a constant"));
    if (n->op == TTC_OP_TOPK && !ttc_value_const_int(n->inputs[1], &b))
        return no(why_not, ttc_strdup("k is not a constant"));
    return true;
}

/* sort -> (values, indices); topk likewise with k of them */
ttc_status ttc_convert_sort(ttc_conv_ctx *cx, const ttc_node *n) {
    ttc_kir *k = cx->k;
    int32_t x, D;
    int64_t d = -1;
    bool desc;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &x));
    if (!ttc_cx_is_none(cx, n, dim_arg(n))) TTC_TRY(ttc_cx_int(cx, n, dim_arg(n), &d));
    TTC_TRY(ttc_cx_dim(n, d, k->ts[x].rank, &D));
    TTC_TRY(ttc_cx_bool(cx, n, desc_arg(n), &desc));
    const ttc_type *it = &n->outputs[1]->type, *vt = &n->outputs[0]->type;
    int32_t si = ttc_kir_op(k, TTC_KOP_SORT, TTC_DTYPE_INT64, it->rank, it->dims, n->outputs[1]->name);
    if (si < 0) return ttc_fail_context(TTC_ERR_NOMEM, "node %s", nname(n));
    k->ops[si].in[0] = x;
    k->ops[si].p.sort.dim = D;
    k->ops[si].p.sort.descending = desc;
    int32_t idx = k->ops[si].out;
    int32_t gi = ttc_kir_op(k, TTC_KOP_GATHER, ttc_cx_float_dtype(cx, vt->dtype), vt->rank, vt->dims, n->outputs[0]->name);
    if (gi < 0) return ttc_fail_context(TTC_ERR_NOMEM, "node %s", nname(n));
    k->ops[gi].in[0] = x;
    k->ops[gi].in[1] = idx;
    k->ops[gi].p.gather.dim = D;
    k->ops[gi].p.gather.mode = 1;
    TTC_TRY(ttc_cx_set_output(cx, n, 0, k->ops[gi].out));
    return ttc_cx_set_output(cx, n, 1, idx);
}

/* ---- scatter / index_put ---- */

static bool int_index(const ttc_type *t, const char *what, char **why_not) {
    if (t->kind != TTC_TYPE_TENSOR || t->rank < 0)
        return no(why_not, ttc_strfmt("%s is not a tensor of known rank", what));
    if (t->dtype != TTC_DTYPE_INT64 && t->dtype != TTC_DTYPE_INT32)
        return no(why_not, ttc_strfmt("%s has dtype %s (only int64/int32 indices; masks stay in torch)", what,
                                      ttc_dtype_name(t->dtype)));
    return true;
}

/* The number of updates the kernel searches per element, when static. */
static bool static_count(const ttc_type *t, int32_t from, int32_t to, int64_t *out) {
    int64_t c = 1;
    for (int32_t d = from; d < to; d++) {
        if (t->dims[d].sym >= 0) return false;
        c *= t->dims[d].add;
    }
    *out = c;
    return true;
}

/* The index list of index_put: a ListConstruct of tensors and Nones. */
static const ttc_node *indices_node(const ttc_node *n) {
    const ttc_node *p = n->inputs[1]->producer;
    return p && p->op == TTC_OP_LIST_CONSTRUCT ? p : NULL;
}

/* scatter_reduce's reduce argument as a TTC_SCATTER_* code, or -1 */
static int32_t reduce_code(const char *s) {
    static const char *names[] = {"sum", "prod", "mean", "amax", "amin"};
    static const int32_t codes[] = {TTC_SCATTER_SUM, TTC_SCATTER_PROD, TTC_SCATTER_MEAN, TTC_SCATTER_AMAX,
                                    TTC_SCATTER_AMIN};
    for (int32_t i = 0; s && i < 5; i++)
        if (!strcmp(s, names[i])) return codes[i];
    return -1;
}

bool ttc_validate_scatter(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    const ttc_type *x = &n->inputs[0]->type;
    if (!ttc_data_type_ok(x, "the input", why_not) || !ttc_data_output_ok(n, 0, why_not)) return false;
    if (x->rank < 1) return no(why_not, ttc_strdup("scattering into a 0-d tensor"));
    if (n->op == TTC_OP_INDEX_PUT) {
        const ttc_node *l = indices_node(n);
        if (!l) return no(why_not, ttc_strdup("the index list is not a list construct"));
        int32_t ni = 0, first = -1, last = -1, rank = -1;
        for (int32_t i = 0; i < l->n_inputs; i++) {
            if (ttc_value_is_none(l->inputs[i])) continue;
            if (!int_index(&l->inputs[i]->type, "an index", why_not)) return false;
            if (rank >= 0 && l->inputs[i]->type.rank != rank)
                return no(why_not, ttc_strdup("index tensors of different ranks"));
            rank = l->inputs[i]->type.rank;
            if (first < 0) first = i;
            last = i;
            ni++;
        }
        if (ni < 1 || ni > 2) return no(why_not, ttc_strfmt("%d index tensors (1 or 2 supported)", ni));
        if (last - first + 1 != ni)
            return no(why_not, ttc_strdup("index tensors separated by a None (their updates go first: not supported)"));
        if (l->n_inputs > x->rank) return no(why_not, ttc_strdup("more indices than input dims"));
        if (!ttc_data_type_ok(&n->inputs[2]->type, "the values", why_not)) return false;
        if (n->inputs[2]->type.rank > x->rank - ni + rank)
            return no(why_not, ttc_strdup("values of higher rank than the indexed result"));
        int64_t acc, c = 1, ci;
        if (!ttc_value_const_int(n->inputs[3], &acc)) return no(why_not, ttc_strdup("accumulate is not a constant"));
        for (int32_t i = 0; i < l->n_inputs; i++) {
            if (ttc_value_is_none(l->inputs[i])) continue;
            const ttc_type *it = &l->inputs[i]->type;
            if (!static_count(it, 0, it->rank, &ci)) return no(why_not, ttc_strdup("index tensors of dynamic size"));
            if (ci > c) c = ci;
        }
        if (c > TTC_SCATTER_MAX_UPDATES)
            return no(why_not, ttc_strfmt("%lld updates (each element searches them; at most %d)", (long long)c,
                                          TTC_SCATTER_MAX_UPDATES));
        return true;
    }
    int64_t d, c;
    if (!ttc_value_const_int(n->inputs[1], &d)) return no(why_not, ttc_strdup("dim is not a constant"));
    if (d < -x->rank || d >= x->rank) return no(why_not, ttc_strdup("dim out of range"));
    const ttc_type *it = &n->inputs[2]->type;
    if (!int_index(it, "the index", why_not)) return false;
    if (it->rank != x->rank) return no(why_not, ttc_strdup("index rank differs from the input's"));
    if (n->op == TTC_OP_SCATTER_REDUCE) {
        const ttc_attr *r = ttc_value_const(n->inputs[4]);
        int64_t incl;
        if (!r || r->kind != TTC_ATTR_STR || reduce_code(r->s) < 0)
            return no(why_not, ttc_strdup("reduce is not a constant sum/prod/mean/amax/amin"));
        if (!ttc_value_const_int(n->inputs[5], &incl)) return no(why_not, ttc_strdup("include_self is not a constant"));
        if (x->dtype == TTC_DTYPE_BOOL) return no(why_not, ttc_strdup("reducing bool tensors"));
        if (n->inputs[3]->type.dtype != x->dtype) return no(why_not, ttc_strdup("src and input dtypes differ"));
    }
    if (n->op == TTC_OP_SCATTER_SRC || n->op == TTC_OP_SCATTER_REDUCE) {
        if (!ttc_data_type_ok(&n->inputs[3]->type, "src", why_not)) return false;
        if (n->inputs[3]->type.rank != x->rank) return no(why_not, ttc_strdup("src rank differs from the input's"));
    } else {
        double v;
        if (!ttc_value_const_float(n->inputs[3], &v)) return no(why_not, ttc_strdup("value is not a constant"));
    }
    int32_t D = (int32_t)(d < 0 ? d + x->rank : d);
    if (!static_count(it, D, D + 1, &c)) return no(why_not, ttc_strdup("the index is dynamic along dim"));
    if (c > TTC_SCATTER_MAX_UPDATES)
        return no(why_not, ttc_strfmt("%lld updates along dim (at most %d)", (long long)c, TTC_SCATTER_MAX_UPDATES));
    return true;
}

/* scatter.src(x, dim, index, src), scatter.value(x, dim, index, value),
 * scatter_reduce.two(x, dim, index, src, reduce, include_self),
 * index_put(x, indices, values, accumulate) */
ttc_status ttc_convert_scatter(ttc_conv_ctx *cx, const ttc_node *n) {
    ttc_kir *k = cx->k;
    int32_t x, src = -1, idx[2] = {-1, -1}, ni = 0, D = 0, at = 0, B = 0;
    int64_t d;
    double value = 0;
    bool acc = false;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &x));
    if (n->op == TTC_OP_INDEX_PUT) {
        const ttc_node *l = indices_node(n);
        if (!l) return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: the index list is not a list construct", nname(n));
        for (int32_t i = 0; i < l->n_inputs; i++) {
            if (ttc_value_is_none(l->inputs[i])) continue;
            if (ni == 2) return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: more than 2 index tensors", nname(n));
            if (ni == 0) at = i;
            TTC_TRY(ttc_cx_tensor(cx, l, i, &idx[ni]));
            B = k->ts[idx[ni]].rank;
            ni++;
        }
        if (ni == 0) return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: no index tensors", nname(n));
        TTC_TRY(ttc_cx_tensor(cx, n, 2, &src));
        TTC_TRY(ttc_cx_bool(cx, n, 3, &acc));
    } else {
        TTC_TRY(ttc_cx_int(cx, n, 1, &d));
        TTC_TRY(ttc_cx_dim(n, d, k->ts[x].rank, &D));
        TTC_TRY(ttc_cx_tensor(cx, n, 2, &idx[0]));
        ni = 1;
        if (n->op == TTC_OP_SCATTER_VALUE) TTC_TRY(ttc_cx_float(cx, n, 3, &value));
        else TTC_TRY(ttc_cx_tensor(cx, n, 3, &src));
    }
    int32_t reduce = TTC_SCATTER_ASSIGN;
    bool incl = true;
    if (n->op == TTC_OP_SCATTER_REDUCE) {
        const ttc_ival *r;
        TTC_TRY(ttc_cx_eval(cx, n, 4, &r));
        reduce = r->kind == TTC_IVAL_STR ? reduce_code(r->s) : -1;
        if (reduce < 0) return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: reduce is not sum/prod/mean/amax/amin", nname(n));
        TTC_TRY(ttc_cx_bool(cx, n, 5, &incl));
    }
    const ttc_type *ot = &n->outputs[0]->type;
    int32_t oi = ttc_kir_op(k, TTC_KOP_SCATTER, ttc_cx_float_dtype(cx, ot->dtype), ot->rank, ot->dims, n->outputs[0]->name);
    if (oi < 0) return ttc_fail_context(TTC_ERR_NOMEM, "node %s", nname(n));
    ttc_kop *op = &k->ops[oi];
    op->in[0] = x;
    op->in[1] = src;
    op->in[2] = idx[0];
    op->in[3] = idx[1];
    op->p.scatter.mode = n->op == TTC_OP_INDEX_PUT ? 1 : 0;
    op->p.scatter.dim = D;
    op->p.scatter.n = ni;
    op->p.scatter.at = at;
    op->p.scatter.brank = B;
    op->p.scatter.accumulate = acc;
    op->p.scatter.value = value;
    op->p.scatter.reduce = reduce;
    op->p.scatter.include_self = incl;
    return ttc_cx_set_output(cx, n, 0, op->out);
}
