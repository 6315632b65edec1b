/* Library steps of the CUDA launch path: GEMM descriptors and the per-shape choices
 * (exec_cuda_lib.h). */
#include "exec_cuda_lib.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* Batch dims [0, nb) of a tensor as one stride: *count elements of *stride apart (stride 0
 * for a single batch). False when they do not collapse into one stride. */
static bool batch_stride(const ttc_res *r, int32_t nb, int64_t *count, int64_t *stride) {
    int64_t n = 1, s = 0;
    for (int32_t d = nb - 1; d >= 0; d--) {
        if (r->shape[d] == 1) continue;
        if (n == 1) s = r->strides[d];
        else if (r->strides[d] != s * n) return false;
        n *= r->shape[d];
    }
    *count = n;
    *stride = n > 1 ? s : 0;
    return true;
}

/* Row-major contiguous over its shape (size-1 dims take any stride). */
static bool dense(const ttc_res *r, int32_t rank) {
    int64_t want = 1;
    for (int32_t d = rank - 1; d >= 0; d--) {
        if (r->shape[d] != 1 && r->strides[d] != want) return false;
        want *= r->shape[d];
    }
    return true;
}

bool ttc_cuda_lib_gemm(const ttc_engine_view *e, const ttc_plan *p, int32_t ki, ttc_cuda_addr_fn addr, void *ctx,
                       ttc_cublas_gemm *g, char *why, size_t why_len) {
    const ttc_kir *k = e->k;
    const ttc_kop *op = &k->ops[e->cg->kernels[ki].op];
    const char *w = NULL;
    memset(g, 0, sizeof *g);
    if (op->kind != TTC_KOP_GEMM) { w = "not a GEMM"; goto out; }
    int32_t st = ttc_kop_gemm_shape(op), A = op->in[0], B = op->in[1], C = op->out;
    const ttc_res *rs = &p->res[st], *ra = &p->res[A], *rb = &p->res[B], *rc = &p->res[C];
    int32_t R = k->ts[st].rank, RA = k->ts[A].rank, RB = k->ts[B].rank, RC = k->ts[C].rank;
    if (R < 2 || RA < 2 || RB < 2) { w = "operands below rank 2"; goto out; }
    g->ab_type = k->ts[A].dtype;
    g->c_type = k->ts[C].dtype;
    if (k->ts[B].dtype != g->ab_type) { w = "A and B of different dtypes"; goto out; }
    g->tf32 = e->tg->tf32_matmul;
    g->m = rs->shape[R - 2];
    g->n = rs->shape[R - 1];
    g->k = ra->shape[RA - 1];
    g->batch = 1;
    for (int32_t d = 0; d < R - 2; d++) g->batch *= rs->shape[d];
    /* C: dense, the GEMM's [.., M, N] at the same linear index (a fused reshape included) */
    if (!dense(rc, RC)) { w = "the output is not dense"; goto out; }
    if (rc->numel != g->batch * g->m * g->n || rc->numel > 2147483647) { w = "output size"; goto out; }
    g->ldc = g->n;
    g->c_bs = g->m * g->n;
    g->a_rs = ra->strides[RA - 2];
    g->a_cs = ra->strides[RA - 1];
    if (ra->shape[RA - 2] != g->m) { w = "A's rows"; goto out; }
    /* B as [K, N]: stored [N, K] when trans_b */
    bool tb = op->p.gemm.trans_b;
    g->b_rs = rb->strides[RB - (tb ? 1 : 2)];
    g->b_cs = rb->strides[RB - (tb ? 2 : 1)];
    if (rb->shape[RB - (tb ? 1 : 2)] != g->k || rb->shape[RB - (tb ? 2 : 1)] != g->n) { w = "B's shape"; goto out; }
    int64_t na, nb;
    if (!batch_stride(ra, RA - 2, &na, &g->a_bs) || !batch_stride(rb, RB - 2, &nb, &g->b_bs)) {
        w = "batch dims that do not collapse";
        goto out;
    }
    if ((na != 1 && na != g->batch) || (nb != 1 && nb != g->batch)) { w = "broadcast batch dims"; goto out; }
    g->a = addr(ctx, A);
    g->b = addr(ctx, B);
    g->c = addr(ctx, C);
    /* a GEMM of a batched A with a shared B whose rows follow on: one taller product */
    if (g->batch > 1 && g->b_bs == 0 && g->a_cs == 1 && g->a_bs == g->m * g->a_rs) {
        g->m *= g->batch;
        g->batch = 1;
        g->a_bs = g->c_bs = 0;
    }
    char cw[96];
    if (!ttc_cublas_gemm_ok(g, cw, sizeof cw)) {
        if (why && why_len) snprintf(why, why_len, "%s", cw);
        return false;
    }
out:
    if (why && why_len) snprintf(why, why_len, "%s", w ? w : "");
    return !w;
}

static bool floaty(ttc_dtype d) { return d == TTC_DTYPE_FLOAT16 || d == TTC_DTYPE_FLOAT32; }

/* Node i past float16/float32 casts of float values (the epilogue's roundings, which one
 * rounding of cuBLASLt's fp32 result replaces). */
static int32_t past_casts(const ttc_expr *x, int32_t i) {
    while (i >= 0 && i < x->n && x->nodes[i].op == TTC_EOP_CAST && floaty(x->nodes[i].dtype) && x->nodes[i].a >= 0 &&
           x->nodes[i].a < i && floaty(x->nodes[x->nodes[i].a].dtype))
        i = x->nodes[i].a;
    return i;
}

/* The terms of a sum: the accumulator once and up to two leaves, each once. */
typedef struct epi_terms {
    int32_t acc, n, leaf[2];
} epi_terms;

static bool sum_terms(const ttc_expr *x, int32_t i, epi_terms *t, int32_t depth) {
    i = past_casts(x, i);
    if (i < 0 || i >= x->n || depth > 8) return false;
    const ttc_enode *nd = &x->nodes[i];
    if (nd->op == TTC_EOP_ADD)
        return nd->a < i && nd->b < i && sum_terms(x, nd->a, t, depth + 1) && sum_terms(x, nd->b, t, depth + 1);
    if (nd->op != TTC_EOP_LEAF || !floaty(nd->dtype)) return false;
    if (nd->a < 0) return t->acc++ == 0;
    if (nd->a >= x->n_leaves || t->n == 2) return false;
    for (int32_t j = 0; j < t->n; j++)
        if (t->leaf[j] == nd->a) return false;
    t->leaf[t->n++] = nd->a;
    return true;
}

/* Stride of tensor t (its plan entry r) for dim d of a rank-R index space, right-aligned, 0
 * where it broadcasts. */
static int64_t stride_in(const ttc_kir *k, const ttc_res *r, int32_t t, int32_t d, int32_t R) {
    int32_t td = d - (R - k->ts[t].rank);
    return td < 0 || r->shape[td] == 1 ? 0 : r->strides[td];
}

/* kir/eops.def's CUBLAS column: the cuBLASLt epilogue activation each expression op may be */
static const int32_t cublas_act[TTC_EOP_COUNT] = {
#define EOP(name, arity, cmp, half, native, mathfn, dnnl, cublas) [TTC_EOP_##name] = TTC_CUBLAS_ACT_##cublas,
#include "../../kir/eops.def"
#undef EOP
};

bool ttc_cuda_lib_gemm_epi(const ttc_engine_view *e, const ttc_plan *p, int32_t ki, ttc_cuda_addr_fn addr, void *ctx,
                           ttc_cublas_gemm *g) {
    const ttc_kir *k = e->k;
    const ttc_kop *op = &k->ops[e->cg->kernels[ki].op];
    const ttc_expr *x = &op->epi;
    int32_t C = op->out, R = k->ts[C].rank;
    const ttc_res *rc = &p->res[C];
    if (op->kind != TTC_KOP_GEMM || x->n == 0 || g->batch != 1 || R < 1 || rc->shape[R - 1] != g->n) return false;
    int32_t act = TTC_CUBLAS_ACT_NONE, top = past_casts(x, x->root);
    if (top < 0 || top >= x->n) return false;
    /* not ReLU: cuBLASLt's is a max(x, 0) whose NaN handling is not torch's (oneDNN's, on the
     * CPU path, turns NaN into 0); tanh GELU is arithmetic that carries NaN */
    if (cublas_act[x->nodes[top].op] != TTC_CUBLAS_ACT_NONE) {
        act = cublas_act[x->nodes[top].op];
        if (x->nodes[top].a >= top) return false;
        top = x->nodes[top].a;
    }
    epi_terms t = {0};
    if (!sum_terms(x, top, &t, 0) || t.acc != 1) return false;
    uint64_t bias = 0, res = 0;
    for (int32_t j = 0; j < t.n; j++) {
        int32_t lt = x->leaves[t.leaf[j]];
        const ttc_res *rl = &p->res[lt];
        if (k->ts[lt].dtype != k->ts[C].dtype || k->ts[lt].rank > R) return false;
        bool along_n = stride_in(k, rl, lt, R - 1, R) == 1 && rl->shape[k->ts[lt].rank - 1] == g->n;
        for (int32_t d = 0; d < R - 1 && along_n; d++) along_n = stride_in(k, rl, lt, d, R) == 0;
        bool same = k->ts[lt].rank == R && dense(rl, R);
        for (int32_t d = 0; d < R && same; d++) same = rl->shape[d] == rc->shape[d];
        if (along_n && !bias) bias = addr(ctx, lt);
        else if (same && !res) res = addr(ctx, lt);
        else return false;
    }
    g->bias = bias;
    g->res = res;
    g->act = act;
    return true;
}

bool ttc_cuda_lib_conv(const ttc_engine_view *e, const ttc_plan *p, int32_t ki, ttc_cuda_addr_fn addr, void *ctx,
                       ttc_cudnn_conv *d, uint64_t *x, uint64_t *y, char *why, size_t why_len) {
    const ttc_kir *k = e->k;
    const ttc_kop *op = &k->ops[e->cg->kernels[ki].op];
    const char *w = NULL;
    memset(d, 0, sizeof *d);
    *x = *y = 0;
    if (op->kind != TTC_KOP_CONV2D) { w = "not a convolution"; goto out; }
    if (op->p.conv.ksplit > 1) { w = "split-K partial sums"; goto out; }
    int32_t X = op->in[0], Y = op->out;
    const ttc_res *rx = &p->res[X], *ry = &p->res[Y];
    if (k->ts[X].rank != 4 || k->ts[Y].rank != 4) { w = "not 4-D"; goto out; }
    /* Depthwise (one input channel per group) stays ours: timed, cuDNN lost every such layer
     * (README), and MobileNetV2's first call at batch 1 with the libraries on never ended in
     * sessions 13-15 (the main thread running inside the launch; with TORCHTRT_C_CUDA_LIBS=0
     * it ran in 0.38 ms): bench/RESULTS.md, session 15. */
    if (op->p.conv.groups > 1 && rx->shape[1] == op->p.conv.groups) { w = "depthwise: the engine's own kernel"; goto out; }
    d->dtype = k->ts[X].dtype;
    if (k->ts[Y].dtype != d->dtype || (d->dtype != TTC_DTYPE_FLOAT32 && d->dtype != TTC_DTYPE_FLOAT16)) {
        w = "dtypes";
        goto out;
    }
    if (!dense(rx, 4) || !dense(ry, 4)) { w = "strided input or output"; goto out; }
    for (int32_t i = 0; i < 4; i++)
        if (rx->shape[i] > 2147483647 || ry->shape[i] > 2147483647) { w = "sizes beyond int"; goto out; }
    d->tf32 = e->tg->tf32_conv;
    d->n = (int32_t)rx->shape[0];
    d->c = (int32_t)rx->shape[1];
    d->h = (int32_t)rx->shape[2];
    d->w = (int32_t)rx->shape[3];
    d->k = (int32_t)ry->shape[1];
    d->groups = op->p.conv.groups;
    d->kh = op->p.conv.k[0];
    d->kw = op->p.conv.k[1];
    memcpy(d->stride, op->p.conv.stride, sizeof d->stride);
    memcpy(d->pad, op->p.conv.pad, sizeof d->pad);
    memcpy(d->dil, op->p.conv.dil, sizeof d->dil);
    d->oh = (int32_t)ry->shape[2];
    d->ow = (int32_t)ry->shape[3];
    if (ry->shape[0] != d->n) { w = "batch sizes differ"; goto out; }
    *x = addr(ctx, X);
    *y = addr(ctx, Y);
    /* cuDNN's tensor-core kernels want 16-byte aligned tensors */
    if ((*x | *y) & 15) { w = "misaligned input or output"; goto out; }
out:
    if (why && why_len) snprintf(why, why_len, "%s", w ? w : "");
    return !w;
}

void ttc_cuda_lib_key_conv(const ttc_cudnn_conv *d, int32_t mma, bool epi, ttc_cuda_lib_key *k) {
    memset(k, 0, sizeof *k);
    /* v[0] negative: never a GEMM's key (whose v[0] is a dtype) */
    int64_t v[16] = {-1 - (d->dtype * 4 + d->tf32 * 2 + epi), d->n, d->c, d->h, d->w, d->k, d->groups, d->kh, d->kw,
                     d->stride[0] * 65536 + d->stride[1], d->pad[0] * 65536 + d->pad[1], d->dil[0] * 65536 + d->dil[1],
                     d->oh, d->ow, mma, 0};
    memcpy(k->v, v, sizeof v);
}

void ttc_cuda_lib_key_make(const ttc_cublas_gemm *g, int32_t tile, bool epi, ttc_cuda_lib_key *k) {
    memset(k, 0, sizeof *k);
    int64_t v[] = {g->ab_type, g->c_type, g->tf32, g->m, g->n, g->k, g->batch, g->a_rs, g->a_cs,
                   g->b_rs, g->b_cs, g->a_bs != 0, g->b_bs != 0, tile, epi};
    memcpy(k->v, v, sizeof v);
}

#define CHOICES 4096
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static ttc_cuda_lib_key keys[CHOICES];
static int8_t picks[CHOICES];
static int32_t n_keys;

int ttc_cuda_lib_choice(const ttc_cuda_lib_key *k) {
    int r = -1;
    pthread_mutex_lock(&lock);
    for (int32_t i = 0; i < n_keys; i++)
        if (!memcmp(&keys[i], k, sizeof *k)) { r = picks[i]; break; }
    pthread_mutex_unlock(&lock);
    return r;
}

void ttc_cuda_lib_choose(const ttc_cuda_lib_key *k, bool lib) {
    pthread_mutex_lock(&lock);
    int32_t i = 0;
    while (i < n_keys && memcmp(&keys[i], k, sizeof *k)) i++;
    if (i == n_keys && n_keys < CHOICES) n_keys++;
    if (i < n_keys) {   /* a full table forgets nothing: new shapes are timed again */
        keys[i] = *k;
        picks[i] = lib;
    }
    pthread_mutex_unlock(&lock);
}

bool ttc_cuda_lib_conv_guess(const ttc_cudnn_conv *d) { return d->groups == 1; }

bool ttc_cuda_lib_guess(const ttc_cublas_gemm *g) {
    return 2.0 * (double)g->m * (double)g->n * (double)g->k * (double)g->batch >= 2e9;
}
