/*
 * Shape rules of layout ops (view, reshape, permute, transpose, squeeze, flatten, select,
 * slice, cat, expand) and of the size/list values they read.
 */
#include "shape_internal.h"

static bool numel_affine(const ttc_type *t, ttc_dim *out) {
    ttc_dim p = ttc_dim_const(1);
    for (int i = 0; i < t->rank; i++)
        if (!ttc_dim_mul(p, t->dims[i], &p)) return false;
    *out = p;
    return true;
}

static ttc_status reshape(const ttc_node *n, ttc_type *out) {
    TTC_TRY(ttc_sh_need_tensor(n, 0));
    const ttc_type *x = T(n, 0);
    ilist l;
    if (!arg_ints(n, 1, &l)) return UNSUP(n, "target shape is not constant");
    ttc_status st = TTC_OK;
    ttc_type r = *x;
    if (l.n > TTC_MAX_RANK) { st = BAD(n, "rank %d too large", l.n); goto done; }
    r.rank = l.n;
    int infer = -1;
    ttc_dim known = ttc_dim_const(1), total;
    for (int i = 0; i < l.n; i++) {
        if (l.v[i] == -1 && infer < 0) { infer = i; continue; }
        if (l.v[i] < 0) { st = BAD(n, "bad size %lld", (long long)l.v[i]); goto done; }
        r.dims[i] = ttc_dim_const(l.v[i]);
        if (!ttc_dim_mul_const(known, l.v[i], &known)) { st = UNSUP(n, "size overflow"); goto done; }
    }
    if (!numel_affine(x, &total)) { st = UNSUP(n, "numel is not affine"); goto done; }
    if (infer >= 0) {
        if (d_is(known, 0) || !ttc_dim_divexact(total, known, &r.dims[infer])) {
            st = total.sym < 0 ? BAD(n, "cannot infer -1: %lld elements into %lld", (long long)total.add, (long long)known.add)
                               : UNSUP(n, "-1 is not affine");
            goto done;
        }
    } else if (!ttc_dim_eq(total, known)) {
        st = total.sym < 0 ? BAD(n, "%lld elements do not fit shape of %lld", (long long)total.add, (long long)known.add)
                           : UNSUP(n, "symbolic numel into a static shape");
        goto done;
    }
    *out = r;
done:
    free(l.v);
    return st;
}

/* view, reshape, _unsafe_view(self, size) */
ttc_status ttc_shape_reshape(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    return reshape(n, out);
}

/* permute(self, dims) */
ttc_status ttc_shape_permute(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    TTC_TRY(ttc_sh_need_tensor(n, 0));
    ilist l;
    const ttc_type *x = T(n, 0);
    if (!arg_ints(n, 1, &l)) return UNSUP(n, "dims are not constant");
    ttc_status st = TTC_OK;
    bool seen[TTC_MAX_RANK] = {0};
    if (l.n != x->rank) st = BAD(n, "%d dims for a rank-%d tensor", l.n, x->rank);
    *out = *x;
    for (int i = 0; i < l.n && !st; i++) {
        int32_t d;
        if (!norm_dim(l.v[i], x->rank, &d) || seen[d]) st = BAD(n, "bad permutation");
        else { seen[d] = true; out->dims[i] = x->dims[d]; }
    }
    free(l.v);
    return st;
}

/* transpose.int(self, dim0, dim1), t(self) */
ttc_status ttc_shape_transpose(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    int64_t a, b;
    TTC_TRY(ttc_sh_need_tensor(n, 0));
    const ttc_type *x = T(n, 0);
    int32_t d0, d1;
    if (n->op == TTC_OP_T) {
        if (x->rank > 2) return BAD(n, "t() needs rank <= 2");
        a = 0;
        b = x->rank == 2 ? 1 : 0;
    } else if (!arg_int(n, 1, &a) || !arg_int(n, 2, &b)) return UNSUP(n, "dims are not constant");
    if (!norm_dim(a, x->rank, &d0) || !norm_dim(b, x->rank, &d1)) return BAD(n, "dim out of range");
    *out = *x;
    if (x->rank) { out->dims[d0] = x->dims[d1]; out->dims[d1] = x->dims[d0]; }
    return TTC_OK;
}

/* unsqueeze(self, dim) */
ttc_status ttc_shape_unsqueeze(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    int64_t a;
    TTC_TRY(ttc_sh_need_tensor(n, 0));
    const ttc_type *x = T(n, 0);
    int32_t d;
    if (!arg_int(n, 1, &a)) return UNSUP(n, "dim is not constant");
    if (x->rank >= TTC_MAX_RANK || !norm_dim(a, x->rank + 1, &d)) return BAD(n, "dim out of range");
    *out = *x;
    out->rank = x->rank + 1;
    for (int i = x->rank; i > d; i--) out->dims[i] = x->dims[i - 1];
    out->dims[d] = ttc_dim_const(1);
    return TTC_OK;
}

/* squeeze(self), squeeze.dim(self, dim), squeeze.dims(self, dims): only dims known to be 1 */
ttc_status ttc_shape_squeeze(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    TTC_TRY(ttc_sh_need_tensor(n, 0));
    const ttc_type *x = T(n, 0);
    bool sel[TTC_MAX_RANK] = {0};
    if (n->op == TTC_OP_SQUEEZE) {
        for (int i = 0; i < x->rank; i++) sel[i] = true;
    } else {
        ilist l = {0};
        int64_t one;
        if (arg_int(n, 1, &one)) { l.v = &one; l.n = 1; }
        else if (!arg_ints(n, 1, &l)) return UNSUP(n, "dims are not constant");
        bool ok = true;
        for (int i = 0; i < l.n; i++) {
            int32_t d;
            if (!norm_dim(l.v[i], x->rank, &d)) ok = false;
            else if (x->rank) sel[d] = true;
        }
        if (l.v != &one) free(l.v);
        if (!ok) return BAD(n, "dim out of range");
    }
    *out = *x;
    out->rank = 0;
    for (int i = 0; i < x->rank; i++) {
        if (sel[i] && x->dims[i].sym >= 0) return UNSUP(n, "squeeze of a symbolic dim");
        if (!(sel[i] && d_is(x->dims[i], 1))) out->dims[out->rank++] = x->dims[i];
    }
    return TTC_OK;
}

/* flatten.using_ints(self, start_dim, end_dim) */
ttc_status ttc_shape_flatten(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    int64_t a, b;
    TTC_TRY(ttc_sh_need_tensor(n, 0));
    const ttc_type *x = T(n, 0);
    int32_t s, e;
    if (!arg_int(n, 1, &a) || !arg_int(n, 2, &b)) return UNSUP(n, "dims are not constant");
    if (!norm_dim(a, x->rank, &s) || !norm_dim(b, x->rank, &e) || s > e) return BAD(n, "bad start/end dims");
    if (x->rank == 0) { *out = *x; out->rank = 1; out->dims[0] = ttc_dim_const(1); return TTC_OK; }
    ttc_dim p = ttc_dim_const(1);
    for (int i = s; i <= e; i++)
        if (!ttc_dim_mul(p, x->dims[i], &p)) return UNSUP(n, "flattened size is not affine");
    *out = *x;
    out->rank = 0;
    for (int i = 0; i < s; i++) out->dims[out->rank++] = x->dims[i];
    out->dims[out->rank++] = p;
    for (int i = e + 1; i < x->rank; i++) out->dims[out->rank++] = x->dims[i];
    return TTC_OK;
}

/* select.int(self, dim, index) */
ttc_status ttc_shape_select(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    int64_t a, b;
    TTC_TRY(ttc_sh_need_tensor(n, 0));
    const ttc_type *x = T(n, 0);
    int32_t d;
    if (!arg_int(n, 1, &a)) return UNSUP(n, "dim is not constant");
    if (x->rank == 0 || !norm_dim(a, x->rank, &d)) return BAD(n, "dim out of range");
    if (arg_int(n, 2, &b) && x->dims[d].sym < 0 && (b >= x->dims[d].add || b < -x->dims[d].add))
        return BAD(n, "index %lld out of range for size %lld", (long long)b, (long long)x->dims[d].add);
    *out = *x;
    out->rank--;
    for (int i = d; i < out->rank; i++) out->dims[i] = x->dims[i + 1];
    return TTC_OK;
}

/* slice.Tensor(self, dim, start, end, step): symbolic sizes only where the result stays affine */
ttc_status ttc_shape_slice(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    int64_t a;
    TTC_TRY(ttc_sh_need_tensor(n, 0));
    const ttc_type *x = T(n, 0);
    int32_t d;
    int64_t start = 0, end = INT64_MAX, step = 1;
    if (!arg_int(n, 1, &a)) return UNSUP(n, "dim is not constant");
    if (x->rank == 0 || !norm_dim(a, x->rank, &d)) return BAD(n, "dim out of range");
    if ((!arg_none(n, 2) && !arg_int(n, 2, &start)) || (!arg_none(n, 3) && !arg_int(n, 3, &end)) ||
        (!arg_none(n, 4) && !arg_int(n, 4, &step)))
        return UNSUP(n, "start/end/step are not constant");
    if (step <= 0) return BAD(n, "step must be positive");
    ttc_dim sz = x->dims[d];
    *out = *x;
    if (sz.sym < 0) {
        int64_t len = sz.add;
        if (start < 0) start = start + len < 0 ? 0 : start + len;
        if (end < 0) end = end + len < 0 ? 0 : end + len;
        if (start > len) start = len;
        if (end > len) end = len;
        out->dims[d] = ttc_dim_const(end > start ? (end - start + step - 1) / step : 0);
        return TTC_OK;
    }
    /* symbolic: start and end must stay on one side of the size for every value */
    if (step != 1 || start < 0) return UNSUP(n, "symbolic slice with step or negative start");
    const ttc_symbol *sym = &g->syms[sz.sym];
    int64_t lo;
    if (__builtin_mul_overflow(sz.mul, sym->min, &lo) || __builtin_add_overflow(lo, sz.add, &lo)) return UNSUP(n, "overflow");
    ttc_dim e;
    if (end >= INT64_MAX / 2) e = sz;
    else if (end < 0) { if (!ttc_dim_add_const(sz, end, &e)) return UNSUP(n, "overflow"); }
    else return UNSUP(n, "symbolic slice with a constant end");
    if (sz.mul <= 0 || lo < start || lo + (end < 0 && end < INT64_MAX / 2 ? end : 0) < start)
        return UNSUP(n, "slice size may be clamped");
    if (!ttc_dim_add_const(e, -start, &out->dims[d])) return UNSUP(n, "overflow");
    return TTC_OK;
}

/* cat, stack(tensors, dim): tensors is a prim.ListConstruct */
ttc_status ttc_shape_cat(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    int64_t a;
    const ttc_value *lv = n->inputs[0];
    if (!lv->producer || lv->producer->op != TTC_OP_LIST_CONSTRUCT) return UNSUP(n, "tensor list is not a ListConstruct");
    const ttc_node *ln = lv->producer;
    if (ln->n_inputs == 0) return BAD(n, "empty tensor list");
    for (int i = 0; i < ln->n_inputs; i++) {
        TTC_TRY(ttc_sh_need_tensor(ln, i));
        if (T(ln, i)->rank != T(ln, 0)->rank) return UNSUP(n, "tensors of different rank");
    }
    const ttc_type *x0 = T(ln, 0);
    int32_t d;
    bool stack = n->op == TTC_OP_STACK;
    if (!arg_int(n, 1, &a)) return UNSUP(n, "dim is not constant");
    if (!norm_dim(a, x0->rank + (stack ? 1 : 0), &d) || (!stack && x0->rank == 0)) return BAD(n, "dim out of range");
    if (stack && x0->rank >= TTC_MAX_RANK) return UNSUP(n, "rank too large");
    ttc_dim sum = ttc_dim_const(0);
    ttc_dtype rdt = x0->dtype;
    for (int i = 0; i < ln->n_inputs; i++) {
        const ttc_type *t = T(ln, i);
        if (!ttc_sh_promote(rdt, t->dtype, &rdt)) return UNSUP(n, "dtype promotion");
        for (int j = 0; j < x0->rank; j++)
            if (stack || j != d) TTC_TRY(ttc_sh_same_dim(n, t->dims[j], x0->dims[j], "tensor sizes differ"));
        if (!stack && !ttc_dim_add(sum, t->dims[d], &sum)) return UNSUP(n, "concatenated size is not affine");
    }
    *out = *x0;
    out->dtype = rdt;
    if (!stack) { out->dims[d] = sum; return TTC_OK; }
    out->rank = x0->rank + 1;
    for (int i = x0->rank; i > d; i--) out->dims[i] = x0->dims[i - 1];
    out->dims[d] = ttc_dim_const(ln->n_inputs);
    return TTC_OK;
}

/* expand(self, size, implicit) */
ttc_status ttc_shape_expand(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    TTC_TRY(ttc_sh_need_tensor(n, 0));
    const ttc_type *x = T(n, 0);
    ilist l;
    if (!arg_ints(n, 1, &l)) return UNSUP(n, "sizes are not constant");
    ttc_status st = TTC_OK;
    if (l.n < x->rank || l.n > TTC_MAX_RANK) st = BAD(n, "cannot expand rank %d to %d", x->rank, l.n);
    *out = *x;
    out->rank = l.n;
    for (int i = 0; i < l.n && !st; i++) {
        int xi = i - (l.n - x->rank);
        ttc_dim src = xi >= 0 ? x->dims[xi] : ttc_dim_const(1);
        if (l.v[i] == -1) {
            if (xi < 0) st = BAD(n, "-1 for a new leading dim");
            out->dims[i] = src;
        } else if (l.v[i] < 0) st = BAD(n, "bad size");
        else if (d_is(src, 1) || d_is(src, l.v[i])) out->dims[i] = ttc_dim_const(l.v[i]);
        else if (src.sym < 0) st = BAD(n, "cannot expand size %lld to %lld", (long long)src.add, (long long)l.v[i]);
        else st = UNSUP(n, "expand of a symbolic dim to a constant");
    }
    free(l.v);
    return st;
}

/* sym_size.int(self, dim): an int */
ttc_status ttc_shape_sym_size(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    *out = ttc_type_scalar(TTC_TYPE_INT);
    return TTC_OK;
}

/* prim.ListConstruct: a list of one kind */
ttc_status ttc_shape_list_construct(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    ttc_type_kind k = n->n_inputs ? T(n, 0)->kind : TTC_TYPE_INT;
    for (int i = 0; i < n->n_inputs; i++)
        if (T(n, i)->kind != k) return UNSUP(n, "mixed list");
    if (k != TTC_TYPE_INT && k != TTC_TYPE_FLOAT && k != TTC_TYPE_BOOL && k != TTC_TYPE_TENSOR)
        return UNSUP(n, "list of %d", (int)k);
    if (!n->n_inputs) return UNSUP(n, "empty list");
    *out = ttc_type_list(k);
    return TTC_OK;
}
