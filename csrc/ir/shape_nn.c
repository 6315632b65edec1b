/*
 * Shape rules of the matmul family, convolution, pooling and embedding.
 */
#include "shape_internal.h"

static ttc_status matmul(const ttc_node *n, int ia, int ib, ttc_type *out) {
    TTC_TRY(ttc_sh_need_tensor(n, ia));
    TTC_TRY(ttc_sh_need_tensor(n, ib));
    const ttc_type *a = T(n, ia), *b = T(n, ib);
    if (a->rank == 0 || b->rank == 0) return BAD(n, "matmul of a 0-d tensor");
    ttc_type r = ttc_type_scalar(TTC_TYPE_TENSOR);
    r.dtype = a->dtype;
    ttc_dim ka = a->dims[a->rank - 1], kb = b->dims[b->rank >= 2 ? b->rank - 2 : 0];
    TTC_TRY(ttc_sh_same_dim(n, ka, kb, "inner dims differ"));
    /* batch dims broadcast */
    ttc_type ba = *a, bb = *b;
    ba.rank = a->rank >= 2 ? a->rank - 2 : 0;
    bb.rank = b->rank >= 2 ? b->rank - 2 : 0;
    ttc_type bt = ttc_type_scalar(TTC_TYPE_TENSOR);
    int32_t br = ba.rank > bb.rank ? ba.rank : bb.rank;
    for (int i = 0; i < br; i++) {
        int i1 = i - (br - ba.rank), i2 = i - (br - bb.rank);
        ttc_dim x = i1 >= 0 ? ba.dims[i1] : ttc_dim_const(1), y = i2 >= 0 ? bb.dims[i2] : ttc_dim_const(1);
        if (ttc_dim_eq(x, y) || d_is(y, 1)) bt.dims[i] = x;
        else if (d_is(x, 1)) bt.dims[i] = y;
        else if (x.sym < 0 && y.sym < 0) return BAD(n, "batch dims do not broadcast");
        else return UNSUP(n, "symbolic batch broadcast");
    }
    r.rank = 0;
    for (int i = 0; i < br; i++) r.dims[r.rank++] = bt.dims[i];
    if (a->rank >= 2) r.dims[r.rank++] = a->dims[a->rank - 2];
    if (b->rank >= 2) r.dims[r.rank++] = b->dims[b->rank - 1];
    if (r.rank > TTC_MAX_RANK) return UNSUP(n, "rank too large");
    *out = r;
    return TTC_OK;
}

/* mm(a, b), bmm(a, b): exactly 2-d / 3-d */
ttc_status ttc_shape_mm(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    TTC_TRY(ttc_sh_need_tensor(n, 0));
    TTC_TRY(ttc_sh_need_tensor(n, 1));
    int want = n->op == TTC_OP_MM ? 2 : 3;
    if (T(n, 0)->rank != want || T(n, 1)->rank != want) return BAD(n, "needs %d-d inputs", want);
    if (want == 3) TTC_TRY(ttc_sh_same_dim(n, T(n, 0)->dims[0], T(n, 1)->dims[0], "batch dims differ"));
    return matmul(n, 0, 1, out);
}

/* addmm(bias, a, b, beta, alpha) */
ttc_status ttc_shape_addmm(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    TTC_TRY(ttc_sh_need_tensor(n, 1));
    TTC_TRY(ttc_sh_need_tensor(n, 2));
    if (T(n, 1)->rank != 2 || T(n, 2)->rank != 2) return BAD(n, "needs 2-d matrices");
    return matmul(n, 1, 2, out);
}

/* matmul(a, b): 1-d operands and batch broadcasting */
ttc_status ttc_shape_matmul(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    return matmul(n, 0, 1, out);
}

/* linear(x, weight, bias): x @ weight.T */
ttc_status ttc_shape_linear(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    TTC_TRY(ttc_sh_need_tensor(n, 0));
    TTC_TRY(ttc_sh_need_tensor(n, 1));
    const ttc_type *x = T(n, 0), *w = T(n, 1);
    if (x->rank < 1 || w->rank != 2) return BAD(n, "needs input rank >= 1 and a 2-d weight");
    /* remove_flatten_linear tags linears that flatten their input from dim 1 first */
    const ttc_attr *fl = ttc_node_attr(n, "flatten_input");
    if (fl && fl->kind == TTC_ATTR_INT && fl->i && x->rank >= 2) {
        ttc_dim p = ttc_dim_const(1);
        for (int i = 1; i < x->rank; i++)
            if (!ttc_dim_mul(p, x->dims[i], &p)) return UNSUP(n, "flattened size is not affine");
        TTC_TRY(ttc_sh_same_dim(n, p, w->dims[1], "in_features differ"));
        *out = *x;
        out->rank = 2;
        out->dims[1] = w->dims[0];
        return TTC_OK;
    }
    TTC_TRY(ttc_sh_same_dim(n, x->dims[x->rank - 1], w->dims[1], "in_features differ"));
    *out = *x;
    out->dims[x->rank - 1] = w->dims[0];
    return TTC_OK;
}

static bool list_at(const ilist *l, int i, int64_t dflt, int64_t *v) {
    if (l->n == 0) { *v = dflt; return true; }
    if (l->n == 1) { *v = l->v[0]; return true; }
    if (i >= l->n) return false;
    *v = l->v[i];
    return true;
}

/* out = floor((in + 2p - d(k-1) - 1) / s) + 1 */
static bool pool_out(ttc_dim in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode, ttc_dim *r) {
    int64_t c = 2 * p - d * (k - 1) - 1;
    ttc_dim t;
    if (s <= 0 || k <= 0 || d <= 0 || p < 0) return false;
    if (!ceil_mode) return ttc_dim_add_const(in, c, &t) && ttc_dim_floordiv(t, s, &t) && ttc_dim_add_const(t, 1, r);
    if (in.sym >= 0) return false;
    int64_t o = ttc_i64_floordiv(in.add + c + s - 1, s) + 1;
    if ((o - 1) * s >= in.add + p) o--;
    *r = ttc_dim_const(o);
    return true;
}

static ttc_status conv(const ttc_node *n, int stride_i, int pad_i, int dil_i, int transposed_i, int outpad_i,
                       int groups_i, ttc_type *out) {
    TTC_TRY(ttc_sh_need_tensor(n, 0));
    TTC_TRY(ttc_sh_need_tensor(n, 1));
    const ttc_type *x = T(n, 0), *w = T(n, 1);
    int sp = w->rank - 2;
    if (sp < 1 || x->rank != w->rank) return UNSUP(n, "only batched convolutions are shaped here");
    int64_t tr = 0, groups;
    if (transposed_i >= 0 && !arg_int(n, transposed_i, &tr)) return UNSUP(n, "transposed is not constant");
    if (!arg_int(n, groups_i, &groups) || groups <= 0) return UNSUP(n, "groups is not a positive constant");
    ilist s = {0}, p = {0}, d = {0}, op = {0};
    ttc_status st = TTC_OK;
    if (!arg_ints(n, stride_i, &s) || !arg_ints(n, pad_i, &p) || !arg_ints(n, dil_i, &d) ||
        (outpad_i >= 0 && tr && !arg_ints(n, outpad_i, &op))) {
        st = UNSUP(n, "stride/padding/dilation are not constant");
        goto done;
    }
    ttc_type r = *x;
    r.dims[0] = x->dims[0];
    if (!tr) {
        ttc_dim cin;
        if (!ttc_dim_mul_const(w->dims[1], groups, &cin)) { st = UNSUP(n, "overflow"); goto done; }
        if ((st = ttc_sh_same_dim(n, x->dims[1], cin, "input channels do not match the weight"))) goto done;
        r.dims[1] = w->dims[0];
    } else {
        if (!ttc_dim_mul_const(w->dims[1], groups, &r.dims[1])) { st = UNSUP(n, "overflow"); goto done; }
    }
    for (int i = 0; i < sp; i++) {
        int64_t si, pi, di, oi = 0;
        ttc_dim kd = w->dims[2 + i];
        if (kd.sym >= 0 || !list_at(&s, i, 1, &si) || !list_at(&p, i, 0, &pi) || !list_at(&d, i, 1, &di) ||
            !list_at(&op, i, 0, &oi)) {
            st = UNSUP(n, "kernel or parameter lists do not fit");
            goto done;
        }
        bool ok;
        if (!tr) ok = pool_out(x->dims[2 + i], kd.add, si, pi, di, false, &r.dims[2 + i]);
        else {
            ttc_dim t; /* (in-1)*s - 2p + d(k-1) + op + 1 */
            ok = ttc_dim_add_const(x->dims[2 + i], -1, &t) && ttc_dim_mul_const(t, si, &t) &&
                 ttc_dim_add_const(t, -2 * pi + di * (kd.add - 1) + oi + 1, &r.dims[2 + i]);
        }
        if (!ok) { st = UNSUP(n, "output size is not affine"); goto done; }
        if (r.dims[2 + i].sym < 0 && r.dims[2 + i].add <= 0) { st = BAD(n, "output size %lld is not positive", (long long)r.dims[2 + i].add); goto done; }
    }
    *out = r;
done:
    free(s.v);
    free(p.v);
    free(d.v);
    free(op.v);
    return st;
}

static ttc_status pool2d(const ttc_node *n, bool is_max, ttc_type *out) {
    TTC_TRY(ttc_sh_need_tensor(n, 0));
    const ttc_type *x = T(n, 0);
    if (x->rank != 3 && x->rank != 4) return BAD(n, "pooling needs a 3-d or 4-d input");
    ilist k = {0}, s = {0}, p = {0}, d = {0};
    int64_t ceil_mode = 0;
    ttc_status st = TTC_OK;
    int ceil_i = is_max ? 5 : 4;
    if (!arg_ints(n, 1, &k) || !arg_ints(n, 2, &s) || !arg_ints(n, 3, &p) || (is_max && !arg_ints(n, 4, &d)) ||
        !arg_int(n, ceil_i, &ceil_mode)) {
        st = UNSUP(n, "pooling parameters are not constant");
        goto done;
    }
    ttc_type r = *x;
    for (int i = 0; i < 2; i++) {
        int64_t ki, si, pi, di;
        if (!list_at(&k, i, 1, &ki) || !list_at(&s, i, ki, &si) || !list_at(&p, i, 0, &pi) || !list_at(&d, i, 1, &di) ||
            !pool_out(x->dims[x->rank - 2 + i], ki, si, pi, di, ceil_mode != 0, &r.dims[x->rank - 2 + i])) {
            st = UNSUP(n, "output size is not affine");
            goto done;
        }
    }
    *out = r;
done:
    free(k.v);
    free(s.v);
    free(p.v);
    free(d.v);
    return st;
}

/* convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups) */
ttc_status ttc_shape_convolution(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    return conv(n, 3, 4, 5, 6, 7, 8, out);
}

/* conv2d, conv1d(input, weight, bias, stride, padding, dilation, groups) */
ttc_status ttc_shape_conv(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    return conv(n, 3, 4, 5, -1, -1, 6, out);
}

ttc_status ttc_shape_max_pool2d(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    return pool2d(n, true, out);
}

/* (values, int64 indices) */
ttc_status ttc_shape_max_pool2d_idx(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    if (n_out != 2) return BAD(n, "needs 2 outputs");
    TTC_TRY(pool2d(n, true, out));
    out[1] = with_dtype(&out[0], TTC_DTYPE_INT64);
    return TTC_OK;
}

ttc_status ttc_shape_avg_pool2d(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    return pool2d(n, false, out);
}

/* adaptive_avg_pool2d(self, output_size), also the _ overload */
ttc_status ttc_shape_adaptive_avg_pool2d(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    TTC_TRY(ttc_sh_need_tensor(n, 0));
    ilist l;
    const ttc_type *x = T(n, 0);
    if (x->rank != 3 && x->rank != 4) return BAD(n, "needs a 3-d or 4-d input");
    if (!arg_ints(n, 1, &l)) return UNSUP(n, "output_size is not constant");
    ttc_status st = TTC_OK;
    *out = *x;
    for (int i = 0; i < 2 && !st; i++) {
        int64_t v;
        if (!list_at(&l, i, 1, &v) || v < 0) st = BAD(n, "bad output_size");
        else out->dims[x->rank - 2 + i] = ttc_dim_const(v);
    }
    free(l.v);
    return st;
}

/* embedding(weight, indices, ...): indices' shape + the row size */
ttc_status ttc_shape_embedding(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    TTC_TRY(ttc_sh_need_tensor(n, 0));
    TTC_TRY(ttc_sh_need_tensor(n, 1));
    const ttc_type *w = T(n, 0), *idx = T(n, 1);
    if (w->rank != 2 || idx->rank >= TTC_MAX_RANK) return BAD(n, "needs a 2-d weight");
    *out = *idx;
    out->dtype = w->dtype;
    out->dims[out->rank++] = w->dims[1];
    return TTC_OK;
}
