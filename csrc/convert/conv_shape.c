/* Converters for shape ops. They make views (no kernels): reshape-like ops alias dense
 * tensors (a copy is inserted first when the input is a non-dense view, unless the reshape
 * only splits dims or drops size-1 dims of permutes/selects/slices of a dense tensor), permute/transpose, expand, slice and select
 * re-stride (a select or slice of a dense tensor's leading dim stays dense). Output dims always come from the IR types. */
#include "converters.h"

#include <stdlib.h>
#include <string.h>

static ttc_status view_out(ttc_conv_ctx *cx, const ttc_node *n, int32_t base, ttc_view_kind vk, int32_t **perm_out,
                           int32_t *tid) {
    const ttc_type *ot = &n->outputs[0]->type;
    int32_t v = ttc_kir_view(cx->k, base, vk, ot->rank, ot->dims, n->outputs[0]->name);
    if (v < 0) return TTC_ERR_NOMEM;
    if (perm_out) *perm_out = cx->k->ts[v].perm;
    *tid = v;
    return TTC_OK;
}

/* Whether the reshape of a rank-xr tensor of dims xd to ot only splits dims and drops dims of
 * size 1: x dim d becomes output dims [first[d], first[d + 1]) (none for a dropped dim). */
static bool split_groups(const ttc_dim *xd, int32_t xr, const ttc_type *ot, int32_t *first) {
    int32_t R = ot->rank, j = 0;
    if (R > TTC_MAX_RANK) return false;
    for (int32_t d = 0; d < xr; d++) {
        first[d] = j;
        bool one = xd[d].sym < 0 && xd[d].add == 1;
        if (one && (j >= R || ot->dims[j].sym >= 0 || ot->dims[j].add != 1)) continue;   /* dropped */
        if (j >= R) return false;
        ttc_dim p = ot->dims[j++];
        while (!ttc_dim_eq(p, xd[d]))
            if (j >= R || !ttc_dim_mul(p, ot->dims[j++], &p)) return false;
    }
    first[xr] = R;
    return j == R;
}

static bool leading_ones(const ttc_et *t, int32_t d);

/* A view of x with its dims split (and size-1 dims dropped) as `first` groups them into the
 * R dims od, pushed down x's chain of permutes, selects and unit-step slices to the dense
 * tensor at its root, which is reshaped there: no copy. Multi-head attention's q/k/v paths
 * are such chains (torchvision's ViT: select of a permuted projection viewed as heads;
 * GPT-2: c_attn(x).split(E, 2) viewed as heads). *out = -1 where a view on the way does not
 * allow it (an expand, a slice whose bounds cut an inner dim of the split). */
static ttc_status split_down(ttc_kir *k, int32_t x, const ttc_dim *od, int32_t R, const int32_t *first,
                             const char *name, int32_t depth, int32_t *out) {
    *out = -1;
    if (k->ts[x].contig) {
        int32_t v = ttc_kir_view(k, x, TTC_VIEW_RESHAPE, R, od, name);
        if (v < 0) return TTC_ERR_NOMEM;
        *out = v;
        return TTC_OK;
    }
    if (k->ts[x].kind != TTC_ET_VIEW || depth > 2 * TTC_MAX_RANK) return TTC_OK;
    /* copies of what is needed: the views made below may move k->ts */
    ttc_et xe = k->ts[x];
    int32_t b = xe.base, br = k->ts[b].rank, xr = xe.rank, vd = xe.vdim, m = 0;
    ttc_dim bd[TTC_MAX_RANK + 1], full = k->ts[b].dims[vd < 0 ? 0 : vd];
    int32_t bfirst[TTC_MAX_RANK + 2], at[TTC_MAX_RANK], sb = -1, v = -1;
    switch (xe.vkind) {
    case TTC_VIEW_PERMUTE: {
        if (br != xr) return TTC_OK;
        int32_t inv[TTC_MAX_RANK];
        for (int32_t d = 0; d < xr; d++) inv[xe.perm[d]] = d;
        for (int32_t bb = 0; bb < br; bb++) {
            int32_t d = inv[bb];
            bfirst[bb] = at[d] = m;
            for (int32_t i = first[d]; i < first[d + 1]; i++) bd[m++] = od[i];
        }
        bfirst[br] = m;
        TTC_TRY(split_down(k, b, bd, m, bfirst, name, depth + 1, &sb));
        if (sb < 0) return TTC_OK;
        v = ttc_kir_view(k, sb, TTC_VIEW_PERMUTE, R, od, name);
        if (v < 0) return TTC_ERR_NOMEM;
        for (int32_t d = 0; d < xr; d++)
            for (int32_t i = first[d]; i < first[d + 1]; i++) k->ts[v].perm[i] = at[d] + (i - first[d]);
        break;
    }
    case TTC_VIEW_SELECT: {
        if (br != xr + 1 || R + 1 > TTC_MAX_RANK) return TTC_OK;
        int32_t sel = 0;
        for (int32_t bb = 0; bb < br; bb++) {
            bfirst[bb] = m;
            if (bb == vd) { sel = m; bd[m++] = full; continue; }
            int32_t d = bb < vd ? bb : bb - 1;
            for (int32_t i = first[d]; i < first[d + 1]; i++) bd[m++] = od[i];
        }
        bfirst[br] = m;
        TTC_TRY(split_down(k, b, bd, m, bfirst, name, depth + 1, &sb));
        if (sb < 0) return TTC_OK;
        v = ttc_kir_view(k, sb, TTC_VIEW_SELECT, R, od, name);
        if (v < 0) return TTC_ERR_NOMEM;
        k->ts[v].vdim = sel;
        k->ts[v].start = xe.start;
        k->ts[v].contig = k->ts[sb].contig && leading_ones(&k->ts[sb], sel);
        break;
    }
    case TTC_VIEW_SLICE: {
        /* the sliced dim splits as [its base size / P, inner dims], P (their product) dividing
         * the start and the base size */
        if (br != xr || xe.step != 1 || xe.start < 0 || first[vd + 1] <= first[vd] || full.sym >= 0) return TTC_OK;
        int64_t P = 1;
        for (int32_t i = first[vd] + 1; i < first[vd + 1]; i++) {
            if (od[i].sym >= 0 || od[i].add < 1) return TTC_OK;
            P *= od[i].add;
        }
        if (full.add % P != 0 || xe.start % P != 0) return TTC_OK;
        for (int32_t i = 0; i < R; i++) bd[i] = od[i];
        bd[first[vd]] = ttc_dim_const(full.add / P);
        TTC_TRY(split_down(k, b, bd, R, first, name, depth + 1, &sb));
        if (sb < 0) return TTC_OK;
        v = ttc_kir_view(k, sb, TTC_VIEW_SLICE, R, od, name);
        if (v < 0) return TTC_ERR_NOMEM;
        ttc_et *t = &k->ts[v];
        t->vdim = first[vd];
        t->start = xe.start / P;
        t->end = TTC_SLICE_END_FROM_TYPE;   /* the typed dim says how many */
        t->step = 1;
        t->contig = k->ts[sb].contig && leading_ones(&k->ts[sb], first[vd]);
        break;
    }
    default:
        return TTC_OK;
    }
    *out = v;
    return TTC_OK;
}

/* Whether the dims of t before dim d are all 1: a select or unit-step slice there keeps a
 * dense tensor dense (one block of its memory). */
static bool leading_ones(const ttc_et *t, int32_t d) {
    for (int32_t i = 0; i < d; i++)
        if (t->dims[i].sym >= 0 || t->dims[i].add != 1) return false;
    return true;
}

/* view, reshape, _unsafe_view, flatten, squeeze*, unsqueeze */
ttc_status ttc_convert_reshape(ttc_conv_ctx *cx, const ttc_node *n) {
    int32_t x, xc, v;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &x));
    int32_t first[TTC_MAX_RANK + 1];
    v = -1;
    if (!cx->k->ts[x].contig && split_groups(cx->k->ts[x].dims, cx->k->ts[x].rank, &n->outputs[0]->type, first))
        TTC_TRY(split_down(cx->k, x, n->outputs[0]->type.dims, n->outputs[0]->type.rank, first, n->outputs[0]->name, 0,
                           &v));
    if (v >= 0) return ttc_cx_set_output(cx, n, 0, v);
    TTC_TRY(ttc_cx_contiguous(cx, x, n->outputs[0]->name, &xc));
    TTC_TRY(view_out(cx, n, xc, TTC_VIEW_RESHAPE, NULL, &v));
    return ttc_cx_set_output(cx, n, 0, v);
}

/* permute(x, dims), transpose(x, d0, d1), t(x) */
ttc_status ttc_convert_permute(ttc_conv_ctx *cx, const ttc_node *n) {
    int32_t x, v, *perm;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &x));
    int32_t r = cx->k->ts[x].rank;
    int32_t p[TTC_MAX_RANK];
    for (int32_t d = 0; d < r; d++) p[d] = d;
    if (n->op == TTC_OP_PERMUTE) {
        const int64_t *dims;
        int32_t nd;
        TTC_TRY(ttc_cx_ints(cx, n, 1, &dims, &nd));
        if (nd != r) return ttc_fail(TTC_ERR_INVALID_ARG, "node %s: permute of rank %d with %d dims", n->name, r, nd);
        bool seen[TTC_MAX_RANK] = {0};
        for (int32_t d = 0; d < r; d++) {
            TTC_TRY(ttc_cx_dim(n, dims[d], r, &p[d]));
            if (seen[p[d]]) return ttc_fail(TTC_ERR_INVALID_ARG, "node %s: permute repeats dim %d", n->name, p[d]);
            seen[p[d]] = true;
        }
    } else if (n->op == TTC_OP_TRANSPOSE) {
        int64_t a, b;
        int32_t da, db;
        TTC_TRY(ttc_cx_int(cx, n, 1, &a));
        TTC_TRY(ttc_cx_int(cx, n, 2, &b));
        TTC_TRY(ttc_cx_dim(n, a, r, &da));
        TTC_TRY(ttc_cx_dim(n, b, r, &db));
        if (r == 0) return ttc_cx_set_output(cx, n, 0, x);
        p[da] = db;
        p[db] = da;
    } else if (r == 2) {
        p[0] = 1;
        p[1] = 0;
    }
    TTC_TRY(view_out(cx, n, x, TTC_VIEW_PERMUTE, &perm, &v));
    memcpy(perm, p, sizeof(int32_t) * (size_t)r);
    /* a permutation that only moves size-1 dims keeps the memory order */
    return ttc_cx_set_output(cx, n, 0, v);
}

/* expand(x, sizes, implicit) */
ttc_status ttc_convert_expand(ttc_conv_ctx *cx, const ttc_node *n) {
    int32_t x, v;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &x));
    TTC_TRY(view_out(cx, n, x, TTC_VIEW_EXPAND, NULL, &v));
    return ttc_cx_set_output(cx, n, 0, v);
}

/* slice(x, dim, start, end, step) */
ttc_status ttc_convert_slice(ttc_conv_ctx *cx, const ttc_node *n) {
    int32_t x, v;
    int64_t dim = 0, start = 0, end = INT64_MAX, step = 1;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &x));
    if (n->n_inputs > 1) TTC_TRY(ttc_cx_int(cx, n, 1, &dim));
    if (n->n_inputs > 2 && !ttc_cx_is_none(cx, n, 2)) TTC_TRY(ttc_cx_int(cx, n, 2, &start));
    if (n->n_inputs > 3 && !ttc_cx_is_none(cx, n, 3) && !ttc_value_const_int(n->inputs[3], &end)) {
        /* an end known only at run time (x[:, :seq_len] with seq_len a symbolic size): the
         * output's typed dim already says how many elements it takes */
        if (n->inputs[3]->type.kind != TTC_TYPE_INT)
            return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: slice end is not an int", n->name);
        end = TTC_SLICE_END_FROM_TYPE;
    }
    if (n->n_inputs > 4 && !ttc_cx_is_none(cx, n, 4)) TTC_TRY(ttc_cx_int(cx, n, 4, &step));
    if (step < 1) return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: slice step %lld", n->name, (long long)step);
    int32_t d;
    TTC_TRY(ttc_cx_dim(n, dim, cx->k->ts[x].rank, &d));
    TTC_TRY(view_out(cx, n, x, TTC_VIEW_SLICE, NULL, &v));
    ttc_et *t = &cx->k->ts[v];
    t->vdim = d;
    t->start = start;
    t->end = end;
    t->step = step;
    t->contig = step == 1 && cx->k->ts[x].contig && leading_ones(&cx->k->ts[x], d);
    return ttc_cx_set_output(cx, n, 0, v);
}

/* select(x, dim, index) */
ttc_status ttc_convert_select(ttc_conv_ctx *cx, const ttc_node *n) {
    int32_t x, v;
    int64_t dim, idx;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &x));
    TTC_TRY(ttc_cx_int(cx, n, 1, &dim));
    TTC_TRY(ttc_cx_int(cx, n, 2, &idx));
    int32_t d;
    TTC_TRY(ttc_cx_dim(n, dim, cx->k->ts[x].rank, &d));
    TTC_TRY(view_out(cx, n, x, TTC_VIEW_SELECT, NULL, &v));
    cx->k->ts[v].vdim = d;
    cx->k->ts[v].start = idx;
    cx->k->ts[v].contig = cx->k->ts[x].contig && leading_ones(&cx->k->ts[x], d);
    return ttc_cx_set_output(cx, n, 0, v);
}

/* Identity at inference: clone, contiguous, detach, alias, dropout (eval). */
ttc_status ttc_convert_identity(ttc_conv_ctx *cx, const ttc_node *n) {
    int32_t x;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &x));
    return ttc_cx_set_output(cx, n, 0, x);
}

bool ttc_validate_shape(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    if (n->n_outputs != 1 || n->outputs[0]->type.kind != TTC_TYPE_TENSOR || n->outputs[0]->type.rank < 0) {
        if (why_not) *why_not = ttc_strdup("output type unknown");
        return false;
    }
    return true;
}

/* dropout is an identity only at inference (train false or p == 0); in training mode its
 * random mask stays with torch. */
bool ttc_validate_dropout(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    if (ttc_dropout_is_identity(n)) return ttc_validate_shape(g, n, fp16, why_not);
    if (why_not) *why_not = ttc_strdup("dropout in training mode (p > 0, train = true) runs in torch");
    return false;
}

/* aten.sym_size.int(x, dim) makes no kernel: the conversion context evaluates it when a
 * converter asks for the number (static dims only); symbolic dims feed view/expand sizes,
 * which the converters take from the IR types instead. */
bool ttc_validate_sym_size(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    int64_t d;
    const ttc_type *t = n->n_inputs == 2 ? &n->inputs[0]->type : NULL;
    if (!t || t->kind != TTC_TYPE_TENSOR || t->rank < 1) {
        if (why_not) *why_not = ttc_strdup("sym_size of a tensor of unknown rank or a 0-d tensor");
        return false;
    }
    if (!ttc_value_const_int(n->inputs[1], &d) || d < -t->rank || d >= t->rank) {
        if (why_not) *why_not = ttc_strdup("sym_size dim is not a constant within the rank");
        return false;
    }
    return true;
}
