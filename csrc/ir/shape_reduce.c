/*
 * Shape rules of reductions (sum, mean, amax, argmax, max.dim, var), softmax, and sort/topk:
 * ops that work along dims of input 0.
 */
#include "shape_internal.h"

/* input 0 without the dims of argument dim_arg (all when it is None or < 0; kept as 1 with
 * keepdim), with dtype dt */
static ttc_status reduce(const ttc_node *n, int dim_arg, bool keep, ttc_dtype dt, ttc_type *out) {
    TTC_TRY(ttc_sh_need_tensor(n, 0));
    const ttc_type *x = T(n, 0);
    bool red[TTC_MAX_RANK] = {0};
    ilist l = {0};
    int64_t one;
    if (dim_arg < 0 || arg_none(n, dim_arg)) {
        for (int i = 0; i < x->rank; i++) red[i] = true;
    } else if (arg_int(n, dim_arg, &one)) {
        int32_t d;
        if (!norm_dim(one, x->rank, &d)) return BAD(n, "dim %lld out of range", (long long)one);
        if (x->rank) red[d] = true;
    } else if (arg_ints(n, dim_arg, &l)) {
        for (int i = 0; i < l.n; i++) {
            int32_t d;
            if (!norm_dim(l.v[i], x->rank, &d)) { free(l.v); return BAD(n, "dim %lld out of range", (long long)l.v[i]); }
            if (x->rank) red[d] = true;
        }
        if (!l.n)
            for (int i = 0; i < x->rank; i++) red[i] = true;
        free(l.v);
    } else {
        return UNSUP(n, "reduction dims are not constant");
    }
    ttc_type r = *x;
    r.dtype = dt;
    r.rank = 0;
    for (int i = 0; i < x->rank; i++) {
        if (!red[i]) r.dims[r.rank++] = x->dims[i];
        else if (keep) r.dims[r.rank++] = ttc_dim_const(1);
    }
    *out = r;
    return TTC_OK;
}

static ttc_status keepdim_arg(const ttc_node *n, int i, bool *keep) {
    int64_t k = 0;
    if (arg_none(n, i)) { *keep = false; return TTC_OK; }
    if (!arg_int(n, i, &k)) return UNSUP(n, "keepdim is not constant");
    *keep = k != 0;
    return TTC_OK;
}

/* sum.dim_IntList, mean.dim, prod.dim_int(self, dim, keepdim, dtype): sum and prod of
 * bool/int give int64 */
ttc_status ttc_shape_reduce_dim(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    bool keep, given;
    ttc_dtype dt;
    TTC_TRY(ttc_sh_need_tensor(n, 0));
    TTC_TRY(keepdim_arg(n, 2, &keep));
    if (!ttc_sh_dtype_arg(n, 3, &dt, &given)) return UNSUP(n, "dtype is not a constant");
    if (!given) dt = n->op != TTC_OP_MEAN_DIM && ttc_sh_category(T(n, 0)->dtype) < 2 ? TTC_DTYPE_INT64 : T(n, 0)->dtype;
    return reduce(n, 1, keep, dt, out);
}

/* sum.default, mean.default(self, dtype) */
ttc_status ttc_shape_reduce_all(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    bool given;
    ttc_dtype dt;
    TTC_TRY(ttc_sh_need_tensor(n, 0));
    if (!ttc_sh_dtype_arg(n, 1, &dt, &given)) return UNSUP(n, "dtype is not a constant");
    if (!given) dt = n->op == TTC_OP_SUM && ttc_sh_category(T(n, 0)->dtype) < 2 ? TTC_DTYPE_INT64 : T(n, 0)->dtype;
    return reduce(n, -1, false, dt, out);
}

/* amax, amin(self, dim, keepdim) */
ttc_status ttc_shape_amax(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    bool keep;
    TTC_TRY(ttc_sh_need_tensor(n, 0));
    TTC_TRY(keepdim_arg(n, 2, &keep));
    return reduce(n, 1, keep, T(n, 0)->dtype, out);
}

/* argmax, argmin(self, dim, keepdim): int64 */
ttc_status ttc_shape_argmax(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    bool keep;
    TTC_TRY(ttc_sh_need_tensor(n, 0));
    TTC_TRY(keepdim_arg(n, 2, &keep));
    if (arg_none(n, 1) && keep) return UNSUP(n, "keepdim without dim");
    return reduce(n, 1, keep, TTC_DTYPE_INT64, out);
}

/* max.dim(self, dim, keepdim): (values, int64 indices) */
ttc_status ttc_shape_max_dim(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    bool keep;
    int64_t a;
    TTC_TRY(ttc_sh_need_tensor(n, 0));
    TTC_TRY(keepdim_arg(n, 2, &keep));
    if (n_out != 2) return BAD(n, "needs 2 outputs");
    if (!arg_int(n, 1, &a)) return UNSUP(n, "dim is not constant");
    TTC_TRY(reduce(n, 1, keep, T(n, 0)->dtype, &out[0]));
    out[1] = with_dtype(&out[0], TTC_DTYPE_INT64);
    return TTC_OK;
}

/* var.correction, var.dim(self, dim, correction/unbiased, keepdim) */
ttc_status ttc_shape_var(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    bool keep;
    TTC_TRY(ttc_sh_need_tensor(n, 0));
    TTC_TRY(keepdim_arg(n, 3, &keep));
    return reduce(n, 1, keep, T(n, 0)->dtype, out);
}

/* _softmax, _log_softmax(self, dim, half_to_float) */
ttc_status ttc_shape_softmax(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    int64_t a, b;
    TTC_TRY(ttc_sh_need_tensor(n, 0));
    if (!arg_int(n, 1, &a) || !arg_int(n, 2, &b)) return UNSUP(n, "dim/half_to_float are not constant");
    *out = with_dtype(T(n, 0), b && T(n, 0)->dtype == TTC_DTYPE_FLOAT16 ? TTC_DTYPE_FLOAT32 : T(n, 0)->dtype);
    return TTC_OK;
}

/* softmax.int, log_softmax.int(self, dim, dtype) */
ttc_status ttc_shape_softmax_int(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    bool given;
    ttc_dtype dt;
    TTC_TRY(ttc_sh_need_tensor(n, 0));
    if (!ttc_sh_dtype_arg(n, 2, &dt, &given)) return UNSUP(n, "dtype is not a constant");
    *out = with_dtype(T(n, 0), given ? dt : T(n, 0)->dtype);
    return TTC_OK;
}

/* sort.default(x, dim, desc) / sort.stable(x, stable, dim, desc) / topk(x, k, dim, largest, sorted):
 * (values, int64 indices), x's shape with k on dim for topk */
ttc_status ttc_shape_sort(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    TTC_TRY(ttc_sh_need_tensor(n, 0));
    if (n_out != 2) return BAD(n, "needs 2 outputs");
    int32_t R = T(n, 0)->rank, D;
    int64_t d = -1, kk;
    int di = n->op == TTC_OP_SORT ? 1 : 2;
    if (!arg_none(n, di) && !arg_int(n, di, &d)) return UNSUP(n, "dim is not constant");
    if (!norm_dim(d, R, &D)) return BAD(n, "dim %lld out of range", (long long)d);
    out[0] = *T(n, 0);
    if (n->op == TTC_OP_TOPK) {
        if (!arg_int(n, 1, &kk)) return UNSUP(n, "k is not constant");
        if (R == 0 ? kk > 1 : (kk < 0 || (T(n, 0)->dims[D].sym < 0 && kk > T(n, 0)->dims[D].add)))
            return BAD(n, "k = %lld out of range", (long long)kk);
        if (R > 0) out[0].dims[D] = ttc_dim_const(kk);
    }
    out[1] = with_dtype(&out[0], TTC_DTYPE_INT64);
    return TTC_OK;
}
