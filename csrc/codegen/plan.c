/* Launch plans: shapes, view resolution, the static memory plan and kernel arguments for
 * one set of concrete symbol values. */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

#define ARENA_ALIGN 128

void ttc_plan_free(ttc_plan *p) {
    if (!p) return;
    free(p->sv);
    free(p->res);
    free(p->gws);
    free(p->lws);
    free(p->skip);
    free(p->gemv);
    free(p->argv);  /* argv rows live in one block after the row table */
    free(p);
}

/* The rows one "<name>_v" launch of kernel i covers: a batched A whose batches follow on over a
 * shared B (a linear layer of [B, S, K] input: sBb 0, sAb M * K) is one product of batch * M
 * rows; else M rows per batch (grid dim 2). */
static int64_t gemv_rows(const ttc_plan *p, int32_t i, bool *collapsed) {
    const int64_t *av = p->argv[i];
    int64_t M = av[4], K = av[6], sAb = av[7], sBb = av[8], nb = (int64_t)p->gws[i][2];
    *collapsed = nb > 1 && sBb == 0 && sAb == M * K;
    return *collapsed ? nb * M : M;
}

static void contig_strides(int32_t rank, const int64_t *shape, int64_t *strides) {
    int64_t s = 1;
    for (int32_t d = rank - 1; d >= 0; d--) { strides[d] = s; s *= shape[d] > 0 ? shape[d] : 1; }
}

static bool is_dense(int32_t rank, const int64_t *shape, const int64_t *strides) {
    int64_t s = 1;
    for (int32_t d = rank - 1; d >= 0; d--) {
        if (shape[d] != 1 && strides[d] != s) return false;
        s *= shape[d];
    }
    return true;
}

static int64_t norm_index(int64_t v, int64_t size, bool clamp) {
    if (v < 0) v += size;
    if (clamp) { if (v < 0) v = 0; if (v > size) v = size; }
    return v;
}

static ttc_status resolve_view(const ttc_kir *k, int32_t t, ttc_res *res) {
    const ttc_et *et = &k->ts[t];
    const ttc_res *b = &res[et->base];
    ttc_res *r = &res[t];
    int64_t shape[TTC_MAX_RANK];
    memcpy(shape, r->shape, sizeof shape);   /* from the view's own dims */
    r->root = b->root;
    r->idx = b->idx;
    r->off = b->off;
    int32_t br = k->ts[et->base].rank;
    switch (et->vkind) {
    case TTC_VIEW_RESHAPE:
        if (!is_dense(br, b->shape, b->strides))
            return ttc_fail(TTC_ERR_INTERNAL, "reshape view %s of a non-contiguous tensor", et->name);
        contig_strides(et->rank, shape, r->strides);
        break;
    case TTC_VIEW_PERMUTE:
        for (int32_t d = 0; d < et->rank; d++) {
            r->strides[d] = b->strides[et->perm[d]];
            if (b->shape[et->perm[d]] != shape[d])
                return ttc_fail(TTC_ERR_INTERNAL, "permute view %s: dim %d is %lld, base has %lld", et->name, d,
                                (long long)shape[d], (long long)b->shape[et->perm[d]]);
        }
        break;
    case TTC_VIEW_EXPAND:
        for (int32_t d = 0; d < et->rank; d++) {
            int32_t bd = d - (et->rank - br);
            if (bd < 0 || (b->shape[bd] == 1 && shape[d] != 1)) r->strides[d] = 0;
            else if (b->shape[bd] != shape[d])
                return ttc_fail(TTC_ERR_INPUT, "expand %s: cannot expand dim of size %lld to %lld", et->name,
                                (long long)b->shape[bd], (long long)shape[d]);
            else r->strides[d] = b->strides[bd];
        }
        break;
    case TTC_VIEW_SLICE: {
        int32_t vd = et->vdim;
        int64_t size = b->shape[vd];
        int64_t st = norm_index(et->start, size, true);
        int64_t len;
        if (et->end == TTC_SLICE_END_FROM_TYPE) {   /* end known only at run time: the typed dim */
            len = shape[vd];
            if (len > 0 && st + (len - 1) * et->step >= size)
                return ttc_fail(TTC_ERR_INPUT, "slice %s: %lld elements from %lld by %lld overrun a dim of %lld",
                                et->name, (long long)len, (long long)st, (long long)et->step, (long long)size);
        } else {
            int64_t en = norm_index(et->end, size, true);
            len = en > st ? (en - st + et->step - 1) / et->step : 0;
        }
        memcpy(r->strides, b->strides, sizeof r->strides);
        if (len != shape[vd])
            return ttc_fail(TTC_ERR_INPUT, "slice %s: %lld elements for a dim typed %lld", et->name,
                            (long long)len, (long long)shape[vd]);
        r->off += st * b->strides[vd];
        r->strides[vd] = b->strides[vd] * et->step;
        break;
    }
    case TTC_VIEW_SELECT: {
        int32_t vd = et->vdim;
        int64_t idx = norm_index(et->start, b->shape[vd], false);
        if (idx < 0 || idx >= b->shape[vd])
            return ttc_fail(TTC_ERR_INPUT, "select %s: index %lld out of range for size %lld", et->name,
                            (long long)et->start, (long long)b->shape[vd]);
        r->off += idx * b->strides[vd];
        for (int32_t d = 0, o = 0; d < br; d++)
            if (d != vd) r->strides[o++] = b->strides[d];
        break;
    }
    }
    return TTC_OK;
}

static size_t align_up(size_t v) { return (v + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN; }

/* Greedy by size: each arena tensor takes the lowest offset not overlapping a placed
 * tensor whose lifetime [first, last] intersects its own. */
static ttc_status memory_plan(const ttc_kir *k, ttc_plan *p, const ttc_codegen *cg) {
    int32_t n = k->n_ts;
    int32_t *first = ttc_malloc(sizeof(int32_t) * (size_t)n * 2 + 8);
    size_t *off = ttc_calloc((size_t)n + 1, sizeof(size_t));
    int32_t *order = ttc_malloc(sizeof(int32_t) * (size_t)n + 4);
    if (!first || !off || !order) { free(first); free(off); free(order); return TTC_ERR_NOMEM; }
    int32_t *last = first + n;
    for (int32_t t = 0; t < n; t++) { first[t] = INT32_MAX; last[t] = -1; }
    for (int32_t ki = 0; ki < cg->n_kernels; ki++) {
        const ttc_kspec *ks = &cg->kernels[ki];
        for (int32_t a = 0; a < ks->n_args; a++) {
            if (ks->args[a].kind != TTC_ARG_BUF) continue;
            int32_t t = ks->args[a].t;
            /* attribute uses of views to their root tensor */
            while (k->ts[t].kind == TTC_ET_VIEW) t = k->ts[t].base;
            if (ki < first[t]) first[t] = ki;
            if (ki > last[t]) last[t] = ki;
        }
    }
    int32_t m = 0;
    for (int32_t t = 0; t < n; t++)
        if (p->res[t].root == TTC_ROOT_ARENA && last[t] >= 0) order[m++] = t;
    for (int32_t i = 1; i < m; i++) {  /* insertion sort by size, descending */
        int32_t t = order[i], j = i - 1;
        size_t sz = (size_t)p->res[t].numel * ttc_dtype_size(k->ts[t].dtype);
        while (j >= 0 && (size_t)p->res[order[j]].numel * ttc_dtype_size(k->ts[order[j]].dtype) < sz) {
            order[j + 1] = order[j];
            j--;
        }
        order[j + 1] = t;
    }
    size_t total = 0;
    for (int32_t i = 0; i < m; i++) {
        int32_t t = order[i];
        size_t sz = align_up((size_t)p->res[t].numel * ttc_dtype_size(k->ts[t].dtype));
        if (sz == 0) sz = ARENA_ALIGN;
        size_t o = 0;
        bool moved = true;
        while (moved) {
            moved = false;
            for (int32_t j = 0; j < i; j++) {
                int32_t u = order[j];
                if (last[u] < first[t] || last[t] < first[u]) continue;
                size_t us = align_up((size_t)p->res[u].numel * ttc_dtype_size(k->ts[u].dtype));
                if (us == 0) us = ARENA_ALIGN;
                if (o < off[u] + us && off[u] < o + sz) { o = off[u] + us; moved = true; }
            }
        }
        off[t] = o;
        if (o + sz > total) total = o + sz;
    }
    for (int32_t i = 0; i < m; i++) {
        int32_t t = order[i];
        p->res[t].off = (int64_t)(off[t] / ttc_dtype_size(k->ts[t].dtype));
    }
    p->arena_bytes = total;
    free(first); free(off); free(order);
    return TTC_OK;
}

static int64_t stride_for(const ttc_kir *k, const ttc_res *r, int32_t t, int32_t d, int32_t R) {
    int32_t td = d - (R - k->ts[t].rank);
    if (td < 0 || r->shape[td] == 1) return 0;
    return r->strides[td];
}

ttc_status ttc_plan_make(const ttc_kir *k, const ttc_codegen *cg, const int64_t *sv, ttc_plan **out) {
    ttc_plan *p = ttc_calloc(1, sizeof *p);
    if (!p) return TTC_ERR_NOMEM;
    p->n_syms = k->n_syms;
    p->sv = ttc_calloc((size_t)k->n_syms + 1, sizeof(int64_t));
    p->res = ttc_calloc((size_t)k->n_ts + 1, sizeof(ttc_res));
    p->gws = ttc_calloc((size_t)cg->n_kernels + 1, sizeof *p->gws);
    p->lws = ttc_calloc((size_t)cg->n_kernels + 1, sizeof *p->lws);
    p->skip = ttc_calloc((size_t)cg->n_kernels + 1, sizeof(bool));
    p->gemv = ttc_calloc((size_t)cg->n_kernels + 1, sizeof(bool));
    size_t n_args = 0;
    for (int32_t i = 0; i < cg->n_kernels; i++) n_args += (size_t)cg->kernels[i].n_args;
    p->argv = ttc_malloc(sizeof(int64_t *) * ((size_t)cg->n_kernels + 1) + sizeof(int64_t) * (n_args + 1));
    if (!p->sv || !p->res || !p->gws || !p->lws || !p->skip || !p->gemv || !p->argv) { ttc_plan_free(p); return TTC_ERR_NOMEM; }
    if (k->n_syms) memcpy(p->sv, sv, sizeof(int64_t) * (size_t)k->n_syms);
    int64_t *vals = (int64_t *)(p->argv + cg->n_kernels + 1);
    ttc_status s = TTC_OK;
    for (int32_t t = 0; t < k->n_ts && s == TTC_OK; t++) {
        const ttc_et *et = &k->ts[t];
        ttc_res *r = &p->res[t];
        r->numel = 1;
        for (int32_t d = 0; d < et->rank; d++) {
            r->shape[d] = ttc_dim_eval(et->dims[d], sv);
            if (r->shape[d] < 0) { s = ttc_fail(TTC_ERR_INPUT, "tensor %s: dim %d evaluates to %lld", et->name, d, (long long)r->shape[d]); break; }
            r->numel *= r->shape[d];
        }
        if (s != TTC_OK) break;
        if (r->numel > INT32_MAX) { s = ttc_fail(TTC_ERR_UNSUPPORTED, "tensor %s has %lld elements (at most 2^31-1)", et->name, (long long)r->numel); break; }
        switch (et->kind) {
        case TTC_ET_INPUT: r->root = TTC_ROOT_INPUT; r->idx = et->binding; contig_strides(et->rank, r->shape, r->strides); break;
        case TTC_ET_CONST: r->root = TTC_ROOT_CONST; r->idx = t; contig_strides(et->rank, r->shape, r->strides); break;
        case TTC_ET_INTER:
            r->root = et->producer < 0 ? TTC_ROOT_NONE : et->binding >= 0 ? TTC_ROOT_OUTPUT : TTC_ROOT_ARENA;
            r->idx = et->binding;
            contig_strides(et->rank, r->shape, r->strides);
            break;
        case TTC_ET_VIEW: s = resolve_view(k, t, p->res); break;
        }
    }
    if (s == TTC_OK) s = memory_plan(k, p, cg);
    /* views inherit their root's arena offset */
    if (s == TTC_OK)
        for (int32_t t = 0; t < k->n_ts; t++) {
            if (k->ts[t].kind != TTC_ET_VIEW) continue;
            int32_t root = t;
            while (k->ts[root].kind == TTC_ET_VIEW) root = k->ts[root].base;
            /* view offsets were computed while their arena root sat at offset 0 */
            if (p->res[root].root == TTC_ROOT_ARENA) p->res[t].off += p->res[root].off;
        }
    for (int32_t i = 0; i < cg->n_kernels && s == TTC_OK; i++) {
        const ttc_kspec *ks = &cg->kernels[i];
        p->argv[i] = vals;
        for (int32_t a = 0; a < ks->n_args; a++) {
            const ttc_argspec *as = &ks->args[a];
            const ttc_res *r = &p->res[as->t];
            int64_t v = 0;
            switch (as->kind) {
            case TTC_ARG_BUF: v = as->t; break;
            case TTC_ARG_OFF: v = r->off; break;
            case TTC_ARG_STRIDE: v = stride_for(k, r, as->t, as->d, as->r); break;
            case TTC_ARG_DIM: v = r->shape[as->d]; break;
            case TTC_ARG_PROD:
                v = 1;
                for (int32_t d = as->d; d < as->r; d++) v *= r->shape[d];
                if (as->v > 0) v *= as->v;
                else if (as->v < 0) v /= -as->v;
                break;
            case TTC_ARG_INT: v = as->v; break;
            case TTC_ARG_ERRFLAG: v = 0; break;   /* bound by execute to its context's flag */
            /* OpenCL's size; the CUDA launch path sizes them itself (exec_cuda.c) */
            case TTC_ARG_LOCAL: v = as->v * as->d; break;
            case TTC_ARG_LOCAL_N: v = as->d; break;
            }
            if (as->kind != TTC_ARG_BUF && (v > INT32_MAX || v < INT32_MIN)) {
                s = ttc_fail(TTC_ERR_UNSUPPORTED, "kernel %s: argument %d = %lld does not fit in int", ks->name, a, (long long)v);
                break;
            }
            vals[a] = v;
        }
        vals += ks->n_args;
        for (int32_t d = 0; d < 3; d++) {
            p->gws[i][d] = 1;
            p->lws[i][d] = 1;
            if (d >= ks->work_dims) continue;
            const ttc_gdim *g = &ks->g[d];
            int64_t v = 1;
            for (int32_t x = g->from; x < g->to; x++) v *= p->res[g->t].shape[x];
            v *= g->mul > 0 ? g->mul : 1;
            v = (v + g->div - 1) / g->div;
            if (v == 0) p->skip[i] = true;
            if (g->local > 0) { v = (v + g->local - 1) / g->local * g->local; p->lws[i][d] = (size_t)g->local; }
            p->gws[i][d] = (size_t)(v ? v : 1);
        }
        /* args 4..8: the product's M, N, K and batch strides (codegen.c, emit_gemm) */
        bool collapsed;
        if (ks->gemm_v && ks->n_native_args == 0 && ks->n_args > 8 && gemv_rows(p, i, &collapsed) <= TTC_GEMM_V_ROWS)
            p->gemv[i] = true;
    }
    if (s != TTC_OK) { ttc_plan_free(p); return s; }
    p->refs = 1;
    *out = p;
    return TTC_OK;
}

int32_t ttc_plan_gemv_dims(const ttc_plan *p, int32_t i, size_t gws[3], size_t lws[3]) {
    bool collapsed;
    int64_t M = gemv_rows(p, i, &collapsed), N = p->argv[i][5];
    gws[0] = (size_t)(N + TTC_GEMM_V_WARPS - 1) / TTC_GEMM_V_WARPS * TTC_GEMM_V_WARPS * 32;
    lws[0] = TTC_GEMM_V_WARPS * 32;
    gws[1] = (size_t)(M + TTC_GEMM_V_ROWS - 1) / TTC_GEMM_V_ROWS;
    gws[2] = collapsed ? 1 : p->gws[i][2];
    lws[1] = lws[2] = 1;
    return (int32_t)M;
}

ttc_buf *ttc_exec_buf(const ttc_plan *p, int32_t t, const ttc_exec_bufs *b) {
    const ttc_res *r = &p->res[t];
    ttc_buf *m = NULL;
    switch (r->root) {
    case TTC_ROOT_INPUT: m = b->in[r->idx]; break;
    case TTC_ROOT_OUTPUT: m = b->out[r->idx]; break;
    case TTC_ROOT_CONST: m = b->consts ? b->consts[r->idx] : NULL; break;
    case TTC_ROOT_ARENA: m = b->arena; break;
    default: break;
    }
    return m ? m : b->arena;  /* empty tensors: any valid buffer, never read */
}
