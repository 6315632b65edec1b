/*
 * What the shape rules share (shape_internal.h): failures naming the op, argument readers,
 * and torch's type promotion and broadcasting.
 *
 * dtype arguments (_to_copy, sum, softmax.int, full, ...) are int constants holding
 * torch's ScalarType code (6 = float32, 4 = int64, ...) or str constants ("float32");
 * None means "as torch would choose". Type promotion follows torch.result_type: dimensioned
 * tensors over zero-dim tensors over Python scalars, by category bool < int < float.
 */
#include "shape_internal.h"

#include <stdarg.h>
#include <stdio.h>

ttc_status ttc_sh_fail(ttc_status s, const ttc_node *n, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ttc_fail(s, "%s: %s", n->op_name, msg);
}

ttc_status ttc_sh_need_tensor(const ttc_node *n, int i) {
    if (i >= n->n_inputs) return BAD(n, "missing input %d", i);
    if (T(n, i)->kind != TTC_TYPE_TENSOR) return BAD(n, "input %d is not a tensor", i);
    if (T(n, i)->rank < 0) return UNSUP(n, "input %d has unknown rank", i);
    return TTC_OK;
}

/* torch ScalarType codes for the dtypes we have */
bool ttc_sh_dtype_arg(const ttc_node *n, int i, ttc_dtype *dt, bool *given) {
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

ttc_status ttc_sh_same_dim(const ttc_node *n, ttc_dim a, ttc_dim b, const char *what) {
    if (ttc_dim_eq(a, b)) return TTC_OK;
    if (a.sym < 0 && b.sym < 0) return BAD(n, "%s: %lld vs %lld", what, (long long)a.add, (long long)b.add);
    return UNSUP(n, "%s: symbolic dims that may differ", what);
}

/* ---- dtype promotion ---- */
bool ttc_sh_promote(ttc_dtype a, ttc_dtype b, ttc_dtype *r) {
    if (a == b) { *r = a; return true; }
    if (a == TTC_DTYPE_BOOL) { *r = b; return true; }
    if (b == TTC_DTYPE_BOOL) { *r = a; return true; }
    int ca = ttc_sh_category(a), cb = ttc_sh_category(b);
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
    if (!ttc_sh_promote(s->d[cls], d, &s->d[cls])) s->ok = false;
}

/* combine_categories(higher, lower) from torch's result_type */
static bool combine(bool hh, ttc_dtype h, bool hl, ttc_dtype l, bool *hr, ttc_dtype *r) {
    if (!hh) { *hr = hl; *r = l; return true; }
    *hr = true;
    if (!hl || is_float(h)) { *r = h; return true; }
    if (h == TTC_DTYPE_BOOL || is_float(l)) return ttc_sh_promote(h, l, r);
    *r = h;
    return true;
}

ttc_status ttc_sh_result_type(const ttc_node *n, const int *idx, int k, ttc_dtype *out) {
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

ttc_status ttc_sh_elementwise(const ttc_node *n, const int *idx, int k, int promo, ttc_type *out) {
    ttc_type t = ttc_type_scalar(TTC_TYPE_TENSOR);
    bool any = false;
    for (int j = 0; j < k; j++) any |= is_tensor(n, idx[j]);
    if (!any) return UNSUP(n, "no tensor inputs");
    TTC_TRY(broadcast(n, idx, k, &t));
    ttc_dtype dt;
    if (promo == 2) dt = TTC_DTYPE_BOOL;
    else {
        TTC_TRY(ttc_sh_result_type(n, idx, k, &dt));
        if (promo == 1 && !is_float(dt)) dt = TTC_DTYPE_FLOAT32;
    }
    t.dtype = dt;
    *out = t;
    return TTC_OK;
}
