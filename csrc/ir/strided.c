/*
 * Whether torch holds a value as a non-contiguous view of its input's memory: a permute that
 * reorders dims of size > 1, an expand that broadcasts, a slice/select/split below the leading
 * dims or with a step, or a squeeze/unsqueeze of such a view. A reshape of one is a copy in
 * torch (reshape copies where the strides do not allow a view; _unsafe_view comes after the
 * decompositions' clone), as a contiguous() of one is: the copies that make a graph of views
 * real work (the partitioner counts them as compute, remove_noops keeps such a contiguous()
 * where it is a graph output).
 *
 *   if (n->op == TTC_OP_VIEW && ttc_value_is_strided_view(n->inputs[0])) ... a copy
 */
#include "ir.h"

#include <stdlib.h>

static bool is_one(ttc_dim d) { return d.sym < 0 && d.add == 1; }

static bool dims_before_are_one(const ttc_type *t, int64_t d) {
    for (int64_t i = 0; i < d && i < t->rank; i++)
        if (!is_one(t->dims[i])) return false;
    return true;
}

static bool norm_dim(int64_t d, int32_t rank, int64_t *out) {
    if (rank <= 0) return false;
    if (d < 0) d += rank;
    if (d < 0 || d >= rank) return false;
    *out = d;
    return true;
}

/* A slice or split along dim d of x making v: a view of a block of x's memory only when every
 * dim before d is 1 (or it takes the whole dim) and the step is 1. */
static bool strided_cut(const ttc_type *xt, const ttc_type *vt, int64_t d, int64_t step) {
    if (step != 1) return true;
    if (vt->rank == xt->rank && d < vt->rank && ttc_dim_eq(vt->dims[d], xt->dims[d])) return false;
    return !dims_before_are_one(xt, d);
}

static bool strided(const ttc_value *v, int depth) {
    const ttc_node *p = v->producer;
    if (!p || p->n_inputs < 1 || depth > 64) return false;
    const ttc_value *x = p->inputs[0];
    const ttc_type *xt = &x->type, *vt = &v->type;
    if (xt->kind != TTC_TYPE_TENSOR || vt->kind != TTC_TYPE_TENSOR || xt->rank < 0 || vt->rank < 0) return false;
    int32_t r = xt->rank;
    switch (p->op) {
    case TTC_OP_PERMUTE:
    case TTC_OP_TRANSPOSE:
    case TTC_OP_T: {
        int64_t perm[TTC_MAX_RANK];
        for (int32_t d = 0; d < r; d++) perm[d] = d;
        if (p->op == TTC_OP_PERMUTE) {
            int64_t *ps = NULL;
            int32_t n = 0;
            if (!ttc_value_const_ints(p->inputs[1], &ps, &n) || n != r) { free(ps); return true; }
            for (int32_t d = 0; d < r; d++)
                if (!norm_dim(ps[d], r, &perm[d])) { free(ps); return true; }
            free(ps);
        } else if (p->op == TTC_OP_TRANSPOSE) {
            int64_t a, b, da, db;
            if (p->n_inputs < 3 || !ttc_value_const_int(p->inputs[1], &a) || !ttc_value_const_int(p->inputs[2], &b))
                return true;
            if (r == 0) return strided(x, depth + 1);
            if (!norm_dim(a, r, &da) || !norm_dim(b, r, &db)) return true;
            perm[da] = db;
            perm[db] = da;
        } else if (r == 2) {
            perm[0] = 1;
            perm[1] = 0;
        }
        /* only dims of size 1 move: the memory order stays */
        int64_t last = -1;
        for (int32_t d = 0; d < r; d++) {
            if (is_one(xt->dims[perm[d]])) continue;
            if (perm[d] < last) return true;
            last = perm[d];
        }
        return strided(x, depth + 1);
    }
    case TTC_OP_EXPAND:
        for (int32_t d = 0; d < vt->rank; d++) {
            int32_t xd = d - (vt->rank - r);
            if (is_one(vt->dims[d])) continue;
            if (xd < 0 || (is_one(xt->dims[xd]) && !ttc_dim_eq(vt->dims[d], xt->dims[xd]))) return true;
        }
        return strided(x, depth + 1);
    case TTC_OP_SLICE: {
        int64_t dim = 0, step = 1, d;
        if (p->n_inputs > 1 && !ttc_value_const_int(p->inputs[1], &dim)) return true;
        if (p->n_inputs > 4 && !ttc_value_is_none(p->inputs[4]) && !ttc_value_const_int(p->inputs[4], &step)) return true;
        if (!norm_dim(dim, r, &d)) return true;
        return strided_cut(xt, vt, d, step) || strided(x, depth + 1);
    }
    case TTC_OP_SELECT: {
        int64_t dim, d;
        if (!ttc_value_const_int(p->inputs[1], &dim) || !norm_dim(dim, r, &d)) return true;
        return !dims_before_are_one(xt, d) || strided(x, depth + 1);
    }
    case TTC_OP_SPLIT:
    case TTC_OP_SPLIT_WITH_SIZES:
    case TTC_OP_CHUNK:
    case TTC_OP_UNBIND: {
        int64_t dim = 0, d;
        int32_t at = p->op == TTC_OP_UNBIND ? 1 : 2;
        if (p->n_inputs > at && !ttc_value_const_int(p->inputs[at], &dim)) return true;
        if (!norm_dim(dim, r, &d)) return true;
        if (p->op == TTC_OP_UNBIND) return !dims_before_are_one(xt, d) || strided(x, depth + 1);
        return strided_cut(xt, vt, d, 1) || strided(x, depth + 1);
    }
    case TTC_OP_SQUEEZE:
    case TTC_OP_SQUEEZE_DIM:
    case TTC_OP_SQUEEZE_DIMS:
    case TTC_OP_UNSQUEEZE:
        return strided(x, depth + 1);
    default:
        return false;   /* computed, or a reshape (a copy where its input was strided) */
    }
}

bool ttc_value_is_strided_view(const ttc_value *v) { return v && strided(v, 0); }
