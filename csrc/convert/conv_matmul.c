/* Converters for the matmul family: mm, bmm, addmm, linear, matmul. All become one GEMM
 * kernel op (batched, B optionally transposed); bias/beta/alpha go to the epilogue. */
#include "converters.h"

#include <stdlib.h>
#include <string.h>

static const char *nname(const ttc_node *n) { return n->name ? n->name : n->op_name; }

/* B operand: a [.., N, K] k-contiguous tensor read transposed, or a [.., K, N] dense one. */
static ttc_status gemm_b(ttc_conv_ctx *cx, int32_t b, bool *trans, int32_t *bt, const char *name) {
    ttc_kir *k = cx->k;
    const ttc_et *et = &k->ts[b];
    /* a transpose of the last two dims of a dense tensor: read the base transposed */
    if (et->kind == TTC_ET_VIEW && et->vkind == TTC_VIEW_PERMUTE && k->ts[et->base].contig && et->rank >= 2) {
        bool swap = et->perm[et->rank - 1] == et->rank - 2 && et->perm[et->rank - 2] == et->rank - 1;
        for (int32_t d = 0; d < et->rank - 2; d++) swap = swap && et->perm[d] == d;
        if (swap) { *trans = true; *bt = et->base; return TTC_OK; }
    }
    *trans = false;
    return ttc_cx_contiguous(cx, b, name, bt);
}

/* Emits out = A @ B (+ epilogue added by the caller). a: [.., M, K], b per gemm_b. */
static ttc_status emit_gemm(ttc_conv_ctx *cx, const ttc_node *n, int32_t a, int32_t b, bool trans_b,
                            const ttc_type *ot, int32_t *op_out) {
    ttc_kir *k = cx->k;
    int32_t ac;
    TTC_TRY(ttc_cx_contiguous(cx, a, n->outputs[0]->name, &ac));
    ttc_dtype dt = ttc_cx_float_dtype(cx, ot->dtype);
    int32_t oi = ttc_kir_op(k, TTC_KOP_GEMM, dt, ot->rank, ot->dims, n->outputs[0]->name);
    if (oi < 0) return TTC_ERR_NOMEM;
    k->ops[oi].in[0] = ac;
    k->ops[oi].in[1] = b;
    k->ops[oi].p.gemm.trans_b = trans_b;
    *op_out = oi;
    return TTC_OK;
}

/* Adds `acc * alpha + beta * bias` as the epilogue of op oi. */
static ttc_status add_bias(ttc_conv_ctx *cx, int32_t oi, int32_t bias, double alpha, double beta) {
    ttc_expr *e = &cx->k->ops[oi].epi;
    int32_t acc = ttc_expr_acc(e, TTC_DTYPE_FLOAT32);
    if (alpha != 1.0) acc = ttc_expr_op(e, TTC_EOP_MUL, acc, ttc_expr_const(e, alpha, TTC_DTYPE_FLOAT32), -1, TTC_DTYPE_FLOAT32);
    if (bias >= 0 && beta != 0.0) {
        int32_t bl = ttc_expr_cast(e, ttc_expr_leaf(e, bias, cx->k->ts[bias].dtype == TTC_DTYPE_FLOAT16 ? TTC_DTYPE_FLOAT32 : cx->k->ts[bias].dtype), TTC_DTYPE_FLOAT32);
        if (beta != 1.0) bl = ttc_expr_op(e, TTC_EOP_MUL, bl, ttc_expr_const(e, beta, TTC_DTYPE_FLOAT32), -1, TTC_DTYPE_FLOAT32);
        acc = ttc_expr_op(e, TTC_EOP_ADD, acc, bl, -1, TTC_DTYPE_FLOAT32);
    }
    return acc < 0 ? ttc_fail(TTC_ERR_NOMEM, "building a GEMM epilogue") : TTC_OK;
}

static ttc_status finish(ttc_conv_ctx *cx, const ttc_node *n, int32_t oi) {
    return ttc_cx_set_output(cx, n, 0, cx->k->ops[oi].out);
}

/* mm(a, b), bmm(a, b) */
ttc_status ttc_convert_mm(ttc_conv_ctx *cx, const ttc_node *n) {
    int32_t a, b, bt, oi;
    bool tb;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &a));
    TTC_TRY(ttc_cx_tensor(cx, n, 1, &b));
    TTC_TRY(gemm_b(cx, b, &tb, &bt, n->outputs[0]->name));
    TTC_TRY(emit_gemm(cx, n, a, bt, tb, &n->outputs[0]->type, &oi));
    return finish(cx, n, oi);
}

/* addmm(bias, a, b, beta, alpha) */
ttc_status ttc_convert_addmm(ttc_conv_ctx *cx, const ttc_node *n) {
    int32_t bias, a, b, bt, oi;
    bool tb;
    double beta = 1, alpha = 1;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &bias));
    TTC_TRY(ttc_cx_tensor(cx, n, 1, &a));
    TTC_TRY(ttc_cx_tensor(cx, n, 2, &b));
    if (n->n_inputs > 3) TTC_TRY(ttc_cx_float(cx, n, 3, &beta));
    if (n->n_inputs > 4) TTC_TRY(ttc_cx_float(cx, n, 4, &alpha));
    TTC_TRY(gemm_b(cx, b, &tb, &bt, n->outputs[0]->name));
    TTC_TRY(emit_gemm(cx, n, a, bt, tb, &n->outputs[0]->type, &oi));
    TTC_TRY(add_bias(cx, oi, bias, alpha, beta));
    return finish(cx, n, oi);
}

/* Flattens the leading dims of a [.., K] tensor to [P, K] (a reshape view when dense). */
static ttc_status flatten_rows(ttc_conv_ctx *cx, int32_t a, const ttc_dim *rows, int32_t *out) {
    ttc_kir *k = cx->k;
    int32_t ac;
    TTC_TRY(ttc_cx_contiguous(cx, a, k->ts[a].name, &ac));
    ttc_dim dims[2] = {*rows, k->ts[a].dims[k->ts[a].rank - 1]};
    int32_t v = ttc_kir_view(k, ac, TTC_VIEW_RESHAPE, 2, dims, k->ts[a].name);
    if (v < 0) return TTC_ERR_NOMEM;
    *out = v;
    return TTC_OK;
}

/* The product of dims [0, r) when it stays affine in one symbol. */
static bool dims_product(const ttc_dim *d, int32_t r, ttc_dim *out) {
    ttc_dim p = ttc_dim_const(1);
    for (int32_t i = 0; i < r; i++) {
        if (d[i].sym < 0) {
            if (p.sym < 0) p.add *= d[i].add;
            else { p.mul *= d[i].add; p.add *= d[i].add; }
        } else if (p.sym < 0) {
            ttc_dim q = {d[i].sym, d[i].mul * p.add, d[i].add * p.add};
            p = q;
        } else {
            return false;
        }
    }
    *out = p;
    return true;
}

/* Whether every user of v is a view op (reshape, permute, select...) and v leaves no graph. */
static bool only_views_use(const ttc_value *v) {
    if (v->n_users == 0) return false;
    for (int32_t i = 0; i < v->n_users; i++) {
        const ttc_op_info *info = ttc_op_info_get(v->users[i]->op);
        if (!info || !(info->flags & TTC_OPF_VIEW)) return false;
    }
    return true;
}

/* The view of the linear's result y (dims in x's memory order) as the node's output: y
 * itself, or the permutation x had (see ttc_convert_linear). */
static ttc_status linear_out(ttc_conv_ctx *cx, const ttc_node *n, int32_t y, const int32_t *perm, int32_t pr) {
    ttc_kir *k = cx->k;
    if (pr > 0) {
        const ttc_type *ot = &n->outputs[0]->type;
        int32_t v = ttc_kir_view(k, y, TTC_VIEW_PERMUTE, ot->rank, ot->dims, n->outputs[0]->name);
        if (v < 0) return TTC_ERR_NOMEM;
        memcpy(k->ts[v].perm, perm, sizeof(int32_t) * (size_t)pr);
        y = v;
    }
    return ttc_cx_set_output(cx, n, 0, y);
}

/* linear(x, w[N, K], bias?) ; matmul(a, b) for the shapes that map to one GEMM */
ttc_status ttc_convert_linear(ttc_conv_ctx *cx, const ttc_node *n) {
    ttc_kir *k = cx->k;
    int32_t x, w, oi;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &x));
    TTC_TRY(ttc_cx_tensor(cx, n, 1, &w));
    ttc_type bt = n->outputs[0]->type;
    const ttc_type *ot = &bt;
    /* x a permutation of a dense tensor that keeps the last dim (nn.MultiheadAttention with
     * batch_first transposes x before its in-projection): rows are independent, so the GEMM
     * runs on the dense tensor and its result takes the same permutation, a view, where the
     * input used to be copied */
    int32_t perm[TTC_MAX_RANK], pr = 0;
    if (only_views_use(n->outputs[0])) {   /* else consumers that fuse into the GEMM would not */
        const ttc_et *xe = &k->ts[x];
        if (xe->kind == TTC_ET_VIEW && xe->vkind == TTC_VIEW_PERMUTE && xe->rank >= 2 && xe->rank == bt.rank &&
            xe->perm[xe->rank - 1] == xe->rank - 1 && k->ts[xe->base].contig && k->ts[xe->base].rank == xe->rank) {
            pr = xe->rank;
            memcpy(perm, xe->perm, sizeof(int32_t) * (size_t)pr);
            for (int32_t d = 0; d < pr; d++) bt.dims[perm[d]] = n->outputs[0]->type.dims[d];
            x = xe->base;
        }
    }
    int32_t xr = k->ts[x].rank;
    ttc_dim rows;
    int32_t wc;
    TTC_TRY(ttc_cx_contiguous(cx, w, k->ts[w].name, &wc));
    if (!dims_product(k->ts[x].dims, xr - 1, &rows)) {
        /* [B, S, K] with B and S both symbolic: B*S is no dim we can hold, so a batched GEMM
         * over the leading dims with the weight broadcast (batch stride 0) */
        TTC_TRY(emit_gemm(cx, n, x, wc, true, ot, &oi));
        int32_t bias = -1;
        if (n->n_inputs > 2 && !ttc_cx_is_none(cx, n, 2)) TTC_TRY(ttc_cx_tensor(cx, n, 2, &bias));
        if (bias >= 0) TTC_TRY(add_bias(cx, oi, bias, 1.0, 1.0));
        return linear_out(cx, n, k->ops[oi].out, perm, pr);
    }
    int32_t x2;
    TTC_TRY(flatten_rows(cx, x, &rows, &x2));
    ttc_type t2 = *ot;
    t2.rank = 2;
    t2.dims[0] = rows;
    t2.dims[1] = ot->dims[ot->rank - 1];
    TTC_TRY(emit_gemm(cx, n, x2, wc, true, &t2, &oi));
    int32_t bias = -1;
    if (n->n_inputs > 2 && !ttc_cx_is_none(cx, n, 2)) TTC_TRY(ttc_cx_tensor(cx, n, 2, &bias));
    if (bias >= 0) TTC_TRY(add_bias(cx, oi, bias, 1.0, 1.0));
    int32_t y = k->ops[oi].out;
    if (ot->rank != 2) {
        y = ttc_kir_view(k, y, TTC_VIEW_RESHAPE, ot->rank, ot->dims, n->outputs[0]->name);
        if (y < 0) return TTC_ERR_NOMEM;
    }
    return linear_out(cx, n, y, perm, pr);
}

ttc_status ttc_convert_matmul(ttc_conv_ctx *cx, const ttc_node *n) {
    ttc_kir *k = cx->k;
    int32_t a, b, bt, oi;
    bool tb;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &a));
    TTC_TRY(ttc_cx_tensor(cx, n, 1, &b));
    int32_t ra = k->ts[a].rank, rb = k->ts[b].rank;
    const ttc_type *ot = &n->outputs[0]->type;
    if (ra >= 2 && rb == 2) {
        /* [.., M, K] x [K, N]: fold the batch into the rows */
        ttc_dim rows;
        TTC_TRY(gemm_b(cx, b, &tb, &bt, n->outputs[0]->name));
        if (!dims_product(k->ts[a].dims, ra - 1, &rows)) {
            /* two symbolic leading dims: batched, b broadcast (see linear) */
            TTC_TRY(emit_gemm(cx, n, a, bt, tb, ot, &oi));
            return finish(cx, n, oi);
        }
        int32_t a2;
        TTC_TRY(flatten_rows(cx, a, &rows, &a2));
        ttc_type t2 = *ot;
        t2.rank = 2;
        t2.dims[0] = rows;
        t2.dims[1] = ot->dims[ot->rank - 1];
        TTC_TRY(emit_gemm(cx, n, a2, bt, tb, &t2, &oi));
        int32_t y = k->ops[oi].out;
        if (ot->rank != 2) {
            y = ttc_kir_view(k, y, TTC_VIEW_RESHAPE, ot->rank, ot->dims, n->outputs[0]->name);
            if (y < 0) return TTC_ERR_NOMEM;
        }
        return ttc_cx_set_output(cx, n, 0, y);
    }
    if (ra >= 3 && ra == rb) {
        for (int32_t d = 0; d < ra - 2; d++)
            if (!ttc_dim_eq(k->ts[a].dims[d], k->ts[b].dims[d]))
                return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: matmul with broadcast batch dims", nname(n));
        TTC_TRY(gemm_b(cx, b, &tb, &bt, n->outputs[0]->name));
        TTC_TRY(emit_gemm(cx, n, a, bt, tb, ot, &oi));
        return finish(cx, n, oi);
    }
    return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: matmul of ranks %d and %d", nname(n), ra, rb);
}

bool ttc_validate_matmul(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    const ttc_type *a = &n->inputs[0]->type, *b = n->n_inputs > 1 ? &n->inputs[1]->type : NULL;
    if (n->op == TTC_OP_ADDMM) { a = &n->inputs[1]->type; b = &n->inputs[2]->type; }
    if (a->kind != TTC_TYPE_TENSOR || !b || b->kind != TTC_TYPE_TENSOR) {
        if (why_not) *why_not = ttc_strdup("operands must be tensors");
        return false;
    }
    if (!ttc_dtype_engine_float(a->dtype)) {
        if (why_not) *why_not = ttc_strfmt("matmul on %s is not supported", ttc_dtype_name(a->dtype));
        return false;
    }
    if (n->op == TTC_OP_MATMUL) {
        bool ok = (a->rank >= 2 && b->rank == 2) || (a->rank >= 3 && a->rank == b->rank);
        for (int32_t d = 0; ok && a->rank == b->rank && d < a->rank - 2; d++)
            ok = ttc_dim_eq(a->dims[d], b->dims[d]);
        if (!ok) {
            if (why_not) *why_not = ttc_strfmt("matmul of ranks %d and %d (or broadcast batch) not supported", a->rank, b->rank);
            return false;
        }
    }
    /* more than one symbolic leading dim: a batched GEMM (ttc_convert_linear) */
    return true;
}
