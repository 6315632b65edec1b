/*
 * Shape functions: output types of common ops from their input types and constant
 * arguments, with dims affine in one symbol (ttc_dim). Used by the verifier (types must
 * agree) and by passes that create nodes.
 *
 *   ttc_type out;
 *   ttc_status s = ttc_infer_types(g, node, &out, 1);
 *   // TTC_ERR_UNSUPPORTED: no shape function, non-constant arguments, or a result that is
 *   //   not affine in one symbol (e.g. s0*s1); callers keep the declared type.
 *   // TTC_ERR_INVALID_ARG: the inputs are definitely ill-typed (e.g. mm of 2x3 and 4x5).
 *
 * dtype arguments (_to_copy, sum, softmax.int, full, ...) are int constants holding
 * torch's ScalarType code (6 = float32, 4 = int64, ...) or str constants ("float32");
 * None means "as torch would choose". Type promotion follows torch.result_type: dimensioned
 * tensors over zero-dim tensors over Python scalars, by category bool < int < float.
 */
#include "ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UNSUP(n, ...) shape_fail(TTC_ERR_UNSUPPORTED, (n), __VA_ARGS__)
#define BAD(n, ...) shape_fail(TTC_ERR_INVALID_ARG, (n), __VA_ARGS__)

static ttc_status shape_fail(ttc_status s, const ttc_node *n, const char *fmt, ...) TTC_PRINTF(3, 4);

#include <stdarg.h>
#include <stdio.h>
static ttc_status shape_fail(ttc_status s, const ttc_node *n, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ttc_fail(s, "%s: %s", n->op_name, msg);
}

static bool d_is(ttc_dim d, int64_t v) { return d.sym < 0 && d.add == v; }

/* ---- argument helpers ---- */
static const ttc_type *T(const ttc_node *n, int i) { return &n->inputs[i]->type; }

static bool is_tensor(const ttc_node *n, int i) { return i < n->n_inputs && T(n, i)->kind == TTC_TYPE_TENSOR; }

static ttc_status need_tensor(const ttc_node *n, int i) {
    if (i >= n->n_inputs) return BAD(n, "missing input %d", i);
    if (T(n, i)->kind != TTC_TYPE_TENSOR) return BAD(n, "input %d is not a tensor", i);
    if (T(n, i)->rank < 0) return UNSUP(n, "input %d has unknown rank", i);
    return TTC_OK;
}

static bool arg_int(const ttc_node *n, int i, int64_t *v) { return i < n->n_inputs && ttc_value_const_int(n->inputs[i], v); }
static bool arg_none(const ttc_node *n, int i) { return i >= n->n_inputs || ttc_value_is_none(n->inputs[i]); }

typedef struct ilist { int64_t *v; int32_t n; } ilist;
static bool arg_ints(const ttc_node *n, int i, ilist *l) {
    l->v = NULL;
    l->n = 0;
    return i < n->n_inputs && ttc_value_const_ints(n->inputs[i], &l->v, &l->n);
}

static bool norm_dim(int64_t d, int32_t rank, int32_t *out) {
    int64_t r = rank > 0 ? rank : 1;
    if (d < -r || d >= r) return false;
    *out = (int32_t)(d < 0 ? d + r : d);
    return true;
}

/* torch ScalarType codes for the dtypes we have */
static bool dtype_arg(const ttc_node *n, int i, ttc_dtype *dt, bool *given) {
    *given = false;
    if (arg_none(n, i)) return true;
    const ttc_attr *a = ttc_value_const(n->inputs[i]);
    if (!a) return false;
    if (a->kind == TTC_ATTR_STR) { *given = true; return ttc_dtype_from_name(a->s, dt); }
    if (a->kind != TTC_ATTR_INT) return false;
    static const int codes[] = {[0] = TTC_DTYPE_UINT8 + 1, [1] = TTC_DTYPE_INT8 + 1, [3] = TTC_DTYPE_INT32 + 1,
                                [4] = TTC_DTYPE_INT64 + 1, [5] = TTC_DTYPE_FLOAT16 + 1, [6] = TTC_DTYPE_FLOAT32 + 1,
                                [7] = TTC_DTYPE_FLOAT64 + 1, [11] = TTC_DTYPE_BOOL + 1, [15] = TTC_DTYPE_BFLOAT16 + 1};
    if (a->i < 0 || a->i >= (int64_t)(sizeof codes / sizeof codes[0]) || !codes[a->i]) return false;
    *dt = (ttc_dtype)(codes[a->i] - 1);
    *given = true;
    return true;
}

/* ---- dtype promotion ---- */
static int category(ttc_dtype d) {
    if (d == TTC_DTYPE_BOOL) return 0;
    if (d == TTC_DTYPE_FLOAT16 || d == TTC_DTYPE_BFLOAT16 || d == TTC_DTYPE_FLOAT32 || d == TTC_DTYPE_FLOAT64) return 2;
    return 1;
}

static bool is_float(ttc_dtype d) { return category(d) == 2; }

/* torch.promote_types; false where the result is a dtype we do not have (int16). */
static bool promote(ttc_dtype a, ttc_dtype b, ttc_dtype *r) {
    if (a == b) { *r = a; return true; }
    if (a == TTC_DTYPE_BOOL) { *r = b; return true; }
    if (b == TTC_DTYPE_BOOL) { *r = a; return true; }
    int ca = category(a), cb = category(b);
    if (ca != cb) { *r = ca > cb ? a : b; return true; }
    if (ca == 2) {
        if ((a == TTC_DTYPE_FLOAT16 && b == TTC_DTYPE_BFLOAT16) || (a == TTC_DTYPE_BFLOAT16 && b == TTC_DTYPE_FLOAT16)) {
            *r = TTC_DTYPE_FLOAT32;
            return true;
        }
        static const int rank[TTC_DTYPE_COUNT] = {[TTC_DTYPE_FLOAT16] = 1, [TTC_DTYPE_BFLOAT16] = 1,
                                                  [TTC_DTYPE_FLOAT32] = 2, [TTC_DTYPE_FLOAT64] = 3};
        *r = rank[a] >= rank[b] ? a : b;
        return true;
    }
    if ((a == TTC_DTYPE_UINT8 && b == TTC_DTYPE_INT8) || (a == TTC_DTYPE_INT8 && b == TTC_DTYPE_UINT8)) return false;
    static const int irank[TTC_DTYPE_COUNT] = {[TTC_DTYPE_UINT8] = 1, [TTC_DTYPE_INT8] = 1, [TTC_DTYPE_INT32] = 2,
                                               [TTC_DTYPE_INT64] = 3};
    *r = irank[a] >= irank[b] ? a : b;
    return true;
}

typedef struct rstate { bool has[3]; ttc_dtype d[3]; bool ok; } rstate; /* dim, zero-dim, wrapped */

static void rs_add(rstate *s, int cls, ttc_dtype d) {
    if (!s->has[cls]) { s->has[cls] = true; s->d[cls] = d; return; }
    if (!promote(s->d[cls], d, &s->d[cls])) s->ok = false;
}

/* combine_categories(higher, lower) from torch's result_type */
static bool combine(bool hh, ttc_dtype h, bool hl, ttc_dtype l, bool *hr, ttc_dtype *r) {
    if (!hh) { *hr = hl; *r = l; return true; }
    *hr = true;
    if (!hl || is_float(h)) { *r = h; return true; }
    if (h == TTC_DTYPE_BOOL || is_float(l)) return promote(h, l, r);
    *r = h;
    return true;
}

/* Result dtype over inputs idx[0..k) (tensors and scalars). */
static ttc_status result_type(const ttc_node *n, const int *idx, int k, ttc_dtype *out) {
    rstate s = {.ok = true};
    for (int j = 0; j < k; j++) {
        if (idx[j] >= n->n_inputs) continue;
        const ttc_type *t = T(n, idx[j]);
        switch (t->kind) {
        case TTC_TYPE_TENSOR:
            if (t->rank < 0) return UNSUP(n, "input %d has unknown rank", idx[j]);
            rs_add(&s, t->rank == 0 ? 1 : 0, t->dtype);
            break;
        case TTC_TYPE_INT: rs_add(&s, 2, TTC_DTYPE_INT64); break;
        case TTC_TYPE_FLOAT: rs_add(&s, 2, TTC_DTYPE_FLOAT32); break;
        case TTC_TYPE_BOOL: rs_add(&s, 2, TTC_DTYPE_BOOL); break;
        case TTC_TYPE_NONE: break;
        default: return UNSUP(n, "input %d is not a tensor or number", idx[j]);
        }
    }
    bool h1, h2;
    ttc_dtype d1, d2;
    if (!s.ok || !combine(s.has[1], s.d[1], s.has[2], s.d[2], &h1, &d1) || !combine(s.has[0], s.d[0], h1, d1, &h2, &d2))
        return UNSUP(n, "type promotion gives a dtype we do not have");
    if (!h2) return BAD(n, "no tensor or number inputs");
    *out = d2;
    return TTC_OK;
}

/* ---- broadcasting ---- */
static ttc_status broadcast(const ttc_node *n, const int *idx, int k, ttc_type *out) {
    out->kind = TTC_TYPE_TENSOR;
    out->rank = 0;
    for (int j = 0; j < k; j++) {
        if (idx[j] >= n->n_inputs || T(n, idx[j])->kind != TTC_TYPE_TENSOR) continue;
        const ttc_type *t = T(n, idx[j]);
        if (t->rank < 0) return UNSUP(n, "input %d has unknown rank", idx[j]);
        ttc_type r = *out;
        int32_t rank = t->rank > out->rank ? t->rank : out->rank;
        for (int i = 0; i < rank; i++) {
            int ia = i - (rank - out->rank), ib = i - (rank - t->rank);
            ttc_dim a = ia >= 0 ? out->dims[ia] : ttc_dim_const(1), b = ib >= 0 ? t->dims[ib] : ttc_dim_const(1);
            if (ttc_dim_eq(a, b) || d_is(b, 1)) r.dims[i] = a;
            else if (d_is(a, 1)) r.dims[i] = b;
            else if (a.sym < 0 && b.sym < 0)
                return BAD(n, "cannot broadcast dim %d: %lld vs %lld", i, (long long)a.add, (long long)b.add);
            else return UNSUP(n, "broadcast of symbolic dims");
        }
        r.rank = rank;
        *out = r;
    }
    return TTC_OK;
}

static ttc_status elementwise(const ttc_node *n, const int *idx, int k, int promo, ttc_type *out) {
    /* promo: 0 result type, 1 result type made floating, 2 bool */
    ttc_type t = ttc_type_scalar(TTC_TYPE_TENSOR);
    bool any = false;
    for (int j = 0; j < k; j++) any |= is_tensor(n, idx[j]);
    if (!any) return UNSUP(n, "no tensor inputs");
    TTC_TRY(broadcast(n, idx, k, &t));
    ttc_dtype dt;
    if (promo == 2) dt = TTC_DTYPE_BOOL;
    else {
        TTC_TRY(result_type(n, idx, k, &dt));
        if (promo == 1 && !is_float(dt)) dt = TTC_DTYPE_FLOAT32;
    }
    t.dtype = dt;
    *out = t;
    return TTC_OK;
}

static ttc_type with_dtype(const ttc_type *t, ttc_dtype d) { ttc_type r = *t; r.dtype = d; return r; }

/* ---- reductions ---- */
static ttc_status reduce(const ttc_node *n, int dim_arg, bool keep, ttc_dtype dt, ttc_type *out) {
    TTC_TRY(need_tensor(n, 0));
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

/* ---- matmul family ---- */
static ttc_status same_dim(const ttc_node *n, ttc_dim a, ttc_dim b, const char *what) {
    if (ttc_dim_eq(a, b)) return TTC_OK;
    if (a.sym < 0 && b.sym < 0) return BAD(n, "%s: %lld vs %lld", what, (long long)a.add, (long long)b.add);
    return UNSUP(n, "%s: symbolic dims that may differ", what);
}

static ttc_status matmul(const ttc_node *n, int ia, int ib, ttc_type *out) {
    TTC_TRY(need_tensor(n, ia));
    TTC_TRY(need_tensor(n, ib));
    const ttc_type *a = T(n, ia), *b = T(n, ib);
    if (a->rank == 0 || b->rank == 0) return BAD(n, "matmul of a 0-d tensor");
    ttc_type r = ttc_type_scalar(TTC_TYPE_TENSOR);
    r.dtype = a->dtype;
    ttc_dim ka = a->dims[a->rank - 1], kb = b->dims[b->rank >= 2 ? b->rank - 2 : 0];
    TTC_TRY(same_dim(n, ka, kb, "inner dims differ"));
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

/* ---- view / reshape ---- */
static bool numel_affine(const ttc_type *t, ttc_dim *out) {
    ttc_dim p = ttc_dim_const(1);
    for (int i = 0; i < t->rank; i++)
        if (!ttc_dim_mul(p, t->dims[i], &p)) return false;
    *out = p;
    return true;
}

static ttc_status reshape(const ttc_node *n, ttc_type *out) {
    TTC_TRY(need_tensor(n, 0));
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

/* ---- convolution / pooling ---- */
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
    TTC_TRY(need_tensor(n, 0));
    TTC_TRY(need_tensor(n, 1));
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
        if ((st = same_dim(n, x->dims[1], cin, "input channels do not match the weight"))) goto done;
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
    TTC_TRY(need_tensor(n, 0));
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

/* ---- issue 11: converters B ---- */
/* sort.default(x, dim, desc) / sort.stable(x, stable, dim, desc) / topk(x, k, dim, largest, sorted):
 * (values, int64 indices), x's shape with k on dim for topk */
static ttc_status sort_like(const ttc_node *n, ttc_type *out, int32_t n_out) {
    TTC_TRY(need_tensor(n, 0));
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

/* ---- the table ---- */
static ttc_status infer(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out, bool *no_rule) {
    static const int I01[] = {0, 1}, I12[] = {1, 2}, I0[] = {0}, I012[] = {0, 1, 2};
    int64_t a, b;
    bool keep, given;
    ttc_dtype dt;
    switch (n->op) {
    /* elementwise binary */
    case TTC_OP_ADD_TENSOR: case TTC_OP_ADD_SCALAR: case TTC_OP_SUB_TENSOR: case TTC_OP_SUB_SCALAR:
    case TTC_OP_RSUB_SCALAR: case TTC_OP_MUL_TENSOR: case TTC_OP_MUL_SCALAR: case TTC_OP_DIV_TENSOR_MODE:
    case TTC_OP_POW_TS: case TTC_OP_POW_TT: case TTC_OP_MAXIMUM: case TTC_OP_MINIMUM:
        return elementwise(n, I01, 2, 0, out);
    case TTC_OP_DIV_TENSOR: case TTC_OP_DIV_SCALAR:
        return elementwise(n, I01, 2, 1, out);
    case TTC_OP_EQ_TENSOR: case TTC_OP_EQ_SCALAR: case TTC_OP_NE_TENSOR: case TTC_OP_NE_SCALAR:
    case TTC_OP_LT_TENSOR: case TTC_OP_LT_SCALAR: case TTC_OP_LE_TENSOR: case TTC_OP_LE_SCALAR:
    case TTC_OP_GT_TENSOR: case TTC_OP_GT_SCALAR: case TTC_OP_GE_TENSOR: case TTC_OP_GE_SCALAR:
    case TTC_OP_LOGICAL_AND: case TTC_OP_LOGICAL_OR: case TTC_OP_LOGICAL_XOR:
        return elementwise(n, I01, 2, 2, out);
    case TTC_OP_LOGICAL_NOT:
        return elementwise(n, I0, 1, 2, out);
    case TTC_OP_WHERE_SELF: {
        TTC_TRY(elementwise(n, I012, 3, 0, out));
        return result_type(n, I12, 2, &out->dtype);
    }
    case TTC_OP_MASKED_FILL_S: case TTC_OP_MASKED_FILL_T: {
        TTC_TRY(need_tensor(n, 0));
        TTC_TRY(elementwise(n, I01, 2, 0, out));
        out->dtype = T(n, 0)->dtype;
        return TTC_OK;
    }
    case TTC_OP_CLAMP: case TTC_OP_CLAMP_MIN: case TTC_OP_CLAMP_MAX: {
        TTC_TRY(need_tensor(n, 0));
        for (int i = 1; i < n->n_inputs; i++)
            if (T(n, i)->kind == TTC_TYPE_FLOAT && !is_float(T(n, 0)->dtype)) return UNSUP(n, "float bounds on an int tensor");
            else if (T(n, i)->kind == TTC_TYPE_TENSOR) return UNSUP(n, "tensor bounds");
        *out = *T(n, 0);
        return TTC_OK;
    }
    /* same type as self */
    case TTC_OP_HARDTANH: case TTC_OP_NEG: case TTC_OP_ABS: case TTC_OP_FLOOR: case TTC_OP_CEIL: case TTC_OP_ROUND:
    case TTC_OP_SIGN: case TTC_OP_RELU: case TTC_OP_LEAKY_RELU: case TTC_OP_BITWISE_NOT: case TTC_OP_HARDSWISH:
    case TTC_OP_HARDSIGMOID: case TTC_OP_DROPOUT: case TTC_OP_CLONE: case TTC_OP_CONTIGUOUS: case TTC_OP_DETACH:
    case TTC_OP_ALIAS: case TTC_OP_LIFT_FRESH_COPY: case TTC_OP_LAYER_NORM: case TTC_OP_GROUP_NORM:
    case TTC_OP_BATCH_NORM:
        TTC_TRY(need_tensor(n, 0));
        *out = *T(n, 0);
        return TTC_OK;
    /* floating unary */
    case TTC_OP_EXP: case TTC_OP_LOG: case TTC_OP_SQRT: case TTC_OP_RSQRT: case TTC_OP_RECIPROCAL: case TTC_OP_SIN:
    case TTC_OP_COS: case TTC_OP_ERF: case TTC_OP_LGAMMA: case TTC_OP_SIGMOID: case TTC_OP_TANH: case TTC_OP_GELU:
    case TTC_OP_SILU: case TTC_OP_ELU: case TTC_OP_SOFTPLUS: case TTC_OP_LOG_SIGMOID:
        return elementwise(n, I0, 1, 1, out);
    case TTC_OP_NATIVE_DROPOUT:
        TTC_TRY(need_tensor(n, 0));
        if (n_out != 2) return BAD(n, "needs 2 outputs");
        out[0] = *T(n, 0);
        out[1] = with_dtype(T(n, 0), TTC_DTYPE_BOOL);
        return TTC_OK;
    case TTC_OP_TO_COPY: case TTC_OP_TO_DTYPE:
        TTC_TRY(need_tensor(n, 0));
        if (!dtype_arg(n, 1, &dt, &given)) return UNSUP(n, "dtype is not a constant");
        *out = with_dtype(T(n, 0), given ? dt : T(n, 0)->dtype);
        return TTC_OK;
    /* reductions */
    case TTC_OP_SUM_DIM: case TTC_OP_MEAN_DIM: case TTC_OP_PROD_DIM: {
        TTC_TRY(need_tensor(n, 0));
        TTC_TRY(keepdim_arg(n, 2, &keep));
        if (!dtype_arg(n, 3, &dt, &given)) return UNSUP(n, "dtype is not a constant");
        if (!given) dt = n->op != TTC_OP_MEAN_DIM && category(T(n, 0)->dtype) < 2 ? TTC_DTYPE_INT64 : T(n, 0)->dtype;
        return reduce(n, 1, keep, dt, out);
    }
    case TTC_OP_SUM: case TTC_OP_MEAN:
        TTC_TRY(need_tensor(n, 0));
        if (!dtype_arg(n, 1, &dt, &given)) return UNSUP(n, "dtype is not a constant");
        if (!given) dt = n->op == TTC_OP_SUM && category(T(n, 0)->dtype) < 2 ? TTC_DTYPE_INT64 : T(n, 0)->dtype;
        return reduce(n, -1, false, dt, out);
    case TTC_OP_AMAX: case TTC_OP_AMIN:
        TTC_TRY(need_tensor(n, 0));
        TTC_TRY(keepdim_arg(n, 2, &keep));
        return reduce(n, 1, keep, T(n, 0)->dtype, out);
    case TTC_OP_ARGMAX: case TTC_OP_ARGMIN:
        TTC_TRY(need_tensor(n, 0));
        TTC_TRY(keepdim_arg(n, 2, &keep));
        if (arg_none(n, 1) && keep) return UNSUP(n, "keepdim without dim");
        return reduce(n, 1, keep, TTC_DTYPE_INT64, out);
    case TTC_OP_MAX_DIM:
        TTC_TRY(need_tensor(n, 0));
        TTC_TRY(keepdim_arg(n, 2, &keep));
        if (n_out != 2) return BAD(n, "needs 2 outputs");
        if (!arg_int(n, 1, &a)) return UNSUP(n, "dim is not constant");
        TTC_TRY(reduce(n, 1, keep, T(n, 0)->dtype, &out[0]));
        out[1] = with_dtype(&out[0], TTC_DTYPE_INT64);
        return TTC_OK;
    case TTC_OP_VAR_CORRECTION: case TTC_OP_VAR_DIM:
        TTC_TRY(need_tensor(n, 0));
        TTC_TRY(keepdim_arg(n, 3, &keep));
        return reduce(n, 1, keep, T(n, 0)->dtype, out);
    case TTC_OP_SOFTMAX: case TTC_OP_LOG_SOFTMAX:
        TTC_TRY(need_tensor(n, 0));
        if (!arg_int(n, 1, &a) || !arg_int(n, 2, &b)) return UNSUP(n, "dim/half_to_float are not constant");
        *out = with_dtype(T(n, 0), b && T(n, 0)->dtype == TTC_DTYPE_FLOAT16 ? TTC_DTYPE_FLOAT32 : T(n, 0)->dtype);
        return TTC_OK;
    case TTC_OP_SOFTMAX_INT: case TTC_OP_LOG_SOFTMAX_INT:
        TTC_TRY(need_tensor(n, 0));
        if (!dtype_arg(n, 2, &dt, &given)) return UNSUP(n, "dtype is not a constant");
        *out = with_dtype(T(n, 0), given ? dt : T(n, 0)->dtype);
        return TTC_OK;
    /* matmul family */
    case TTC_OP_MM: case TTC_OP_BMM: {
        TTC_TRY(need_tensor(n, 0));
        TTC_TRY(need_tensor(n, 1));
        int want = n->op == TTC_OP_MM ? 2 : 3;
        if (T(n, 0)->rank != want || T(n, 1)->rank != want) return BAD(n, "needs %d-d inputs", want);
        if (want == 3) TTC_TRY(same_dim(n, T(n, 0)->dims[0], T(n, 1)->dims[0], "batch dims differ"));
        return matmul(n, 0, 1, out);
    }
    case TTC_OP_ADDMM:
        TTC_TRY(need_tensor(n, 1));
        TTC_TRY(need_tensor(n, 2));
        if (T(n, 1)->rank != 2 || T(n, 2)->rank != 2) return BAD(n, "needs 2-d matrices");
        return matmul(n, 1, 2, out);
    case TTC_OP_MATMUL:
        return matmul(n, 0, 1, out);
    case TTC_OP_LINEAR: {
        TTC_TRY(need_tensor(n, 0));
        TTC_TRY(need_tensor(n, 1));
        const ttc_type *x = T(n, 0), *w = T(n, 1);
        if (x->rank < 1 || w->rank != 2) return BAD(n, "needs input rank >= 1 and a 2-d weight");
        /* remove_flatten_linear tags linears that flatten their input from dim 1 first */
        const ttc_attr *fl = ttc_node_attr(n, "flatten_input");
        if (fl && fl->kind == TTC_ATTR_INT && fl->i && x->rank >= 2) {
            ttc_dim p = ttc_dim_const(1);
            for (int i = 1; i < x->rank; i++)
                if (!ttc_dim_mul(p, x->dims[i], &p)) return UNSUP(n, "flattened size is not affine");
            TTC_TRY(same_dim(n, p, w->dims[1], "in_features differ"));
            *out = *x;
            out->rank = 2;
            out->dims[1] = w->dims[0];
            return TTC_OK;
        }
        TTC_TRY(same_dim(n, x->dims[x->rank - 1], w->dims[1], "in_features differ"));
        *out = *x;
        out->dims[x->rank - 1] = w->dims[0];
        return TTC_OK;
    }
    case TTC_OP_CONVOLUTION: return conv(n, 3, 4, 5, 6, 7, 8, out);
    case TTC_OP_CONV2D: case TTC_OP_CONV1D: return conv(n, 3, 4, 5, -1, -1, 6, out);
    case TTC_OP_MAX_POOL2D: return pool2d(n, true, out);
    case TTC_OP_MAX_POOL2D_IDX:
        if (n_out != 2) return BAD(n, "needs 2 outputs");
        TTC_TRY(pool2d(n, true, out));
        out[1] = with_dtype(&out[0], TTC_DTYPE_INT64);
        return TTC_OK;
    case TTC_OP_AVG_POOL2D: return pool2d(n, false, out);
    case TTC_OP_ADAPTIVE_AVG_POOL2D: case TTC_OP_ADAPTIVE_AVG_POOL2D_: {
        TTC_TRY(need_tensor(n, 0));
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
    /* shape ops */
    case TTC_OP_VIEW: case TTC_OP_RESHAPE: case TTC_OP_UNSAFE_VIEW:
        return reshape(n, out);
    case TTC_OP_PERMUTE: {
        TTC_TRY(need_tensor(n, 0));
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
    case TTC_OP_TRANSPOSE: case TTC_OP_T: {
        TTC_TRY(need_tensor(n, 0));
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
    case TTC_OP_UNSQUEEZE: {
        TTC_TRY(need_tensor(n, 0));
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
    case TTC_OP_SQUEEZE: case TTC_OP_SQUEEZE_DIM: case TTC_OP_SQUEEZE_DIMS: {
        TTC_TRY(need_tensor(n, 0));
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
    case TTC_OP_FLATTEN: {
        TTC_TRY(need_tensor(n, 0));
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
    case TTC_OP_SELECT: {
        TTC_TRY(need_tensor(n, 0));
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
    case TTC_OP_SLICE: {
        TTC_TRY(need_tensor(n, 0));
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
    case TTC_OP_CAT: case TTC_OP_STACK: {
        const ttc_value *lv = n->inputs[0];
        if (!lv->producer || lv->producer->op != TTC_OP_LIST_CONSTRUCT) return UNSUP(n, "tensor list is not a ListConstruct");
        const ttc_node *ln = lv->producer;
        if (ln->n_inputs == 0) return BAD(n, "empty tensor list");
        for (int i = 0; i < ln->n_inputs; i++) {
            TTC_TRY(need_tensor(ln, i));
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
            if (!promote(rdt, t->dtype, &rdt)) return UNSUP(n, "dtype promotion");
            for (int j = 0; j < x0->rank; j++)
                if (stack || j != d) TTC_TRY(same_dim(n, t->dims[j], x0->dims[j], "tensor sizes differ"));
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
    case TTC_OP_EXPAND: {
        TTC_TRY(need_tensor(n, 0));
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
    case TTC_OP_EMBEDDING: {
        TTC_TRY(need_tensor(n, 0));
        TTC_TRY(need_tensor(n, 1));
        const ttc_type *w = T(n, 0), *idx = T(n, 1);
        if (w->rank != 2 || idx->rank >= TTC_MAX_RANK) return BAD(n, "needs a 2-d weight");
        *out = *idx;
        out->dtype = w->dtype;
        out->dims[out->rank++] = w->dims[1];
        return TTC_OK;
    }
    case TTC_OP_SYM_SIZE:
        *out = ttc_type_scalar(TTC_TYPE_INT);
        return TTC_OK;
    case TTC_OP_LIST_CONSTRUCT: {
        ttc_type_kind k = n->n_inputs ? T(n, 0)->kind : TTC_TYPE_INT;
        for (int i = 0; i < n->n_inputs; i++)
            if (T(n, i)->kind != k) return UNSUP(n, "mixed list");
        if (k != TTC_TYPE_INT && k != TTC_TYPE_FLOAT && k != TTC_TYPE_BOOL && k != TTC_TYPE_TENSOR)
            return UNSUP(n, "list of %d", (int)k);
        if (!n->n_inputs) return UNSUP(n, "empty list");
        *out = ttc_type_list(k);
        return TTC_OK;
    }
    /* issue 11: converters B */
    case TTC_OP_SORT: case TTC_OP_SORT_STABLE: case TTC_OP_TOPK:
        return sort_like(n, out, n_out);
    case TTC_OP_SCATTER_SRC: case TTC_OP_SCATTER_VALUE: case TTC_OP_INDEX_PUT:
        TTC_TRY(need_tensor(n, 0));
        *out = *T(n, 0);
        return TTC_OK;
    default:
        *no_rule = true;
        return UNSUP(n, "no shape function");
    }
}

ttc_status ttc_infer_types(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    if (!g || !n || (n_out && !out)) return ttc_fail(TTC_ERR_INVALID_ARG, "infer_types: NULL argument");
    if (n->op >= TTC_OP_COUNT) return ttc_fail(TTC_ERR_UNSUPPORTED, "%s: opaque op", n->op_name);
    const ttc_op_info *info = ttc_op_info_get(n->op);
    if ((info->n_inputs >= 0 && n->n_inputs != info->n_inputs) || (info->n_outputs >= 0 && n_out != info->n_outputs))
        return ttc_fail(TTC_ERR_INVALID_ARG, "%s: wrong arity", n->op_name);
    if (n_out == 0) return TTC_OK;
    for (int i = 0; i < n->n_inputs; i++)
        if (!n->inputs[i]) return ttc_fail(TTC_ERR_INVALID_ARG, "%s: input %d is NULL", n->op_name, i);
    for (int i = 0; i < n_out; i++) out[i] = ttc_type_scalar(TTC_TYPE_ANY);
    bool no_rule = false;
    ttc_status s = infer(g, n, out, n_out, &no_rule);
    if (s == TTC_OK && n_out >= 1 && info->n_outputs == 1 && out[0].kind == TTC_TYPE_TENSOR) {
        /* results must be valid types (e.g. a dim that went negative is an ill-typed input) */
        for (int i = 0; i < out[0].rank; i++)
            if (out[0].dims[i].sym < 0 && out[0].dims[i].add < 0)
                return ttc_fail(TTC_ERR_INVALID_ARG, "%s: output dim %d would be negative", n->op_name, i);
    }
    return s;
}

/* Probes infer() with a node of op's arity whose inputs are of unknown type: every rule
 * fails on them, but only the default case says it has none. */
bool ttc_op_has_shape_rule(ttc_op_id op) {
    const ttc_op_info *info = ttc_op_info_get(op);
    if (!info) return false;
    int32_t n_in = info->n_inputs < 0 ? 1 : info->n_inputs, n_out = info->n_outputs < 0 ? 1 : info->n_outputs;
    if (n_in > 16 || n_out > 8) return false;
    ttc_graph *g = ttc_graph_new();
    if (!g) return false;
    ttc_value *ins[16];
    ttc_type any = ttc_type_scalar(TTC_TYPE_ANY), outs[8];
    bool no_rule = true;
    for (int32_t i = 0; i < n_out; i++) outs[i] = any;
    for (int32_t i = 0; i < n_in; i++) {
        char name[8];
        snprintf(name, sizeof name, "a%d", i);
        if (!(ins[i] = ttc_graph_add_input(g, name, &any))) goto done;
    }
    ttc_node *n = ttc_graph_append_node(g, info->name, ins, n_in, outs, n_out, NULL);
    if (!n || n->op != op) goto done;
    ttc_type res[8];
    no_rule = false;
    (void)infer(g, n, res, n_out, &no_rule);
done:
    ttc_graph_free(g);
    return !no_rule;
}
