/* Channels-last activations between native convolutions (backend/cpu/native_layout.h). */
#include "native_layout.h"

#include <stdlib.h>
#include <string.h>

#include "native_conv_dnnl.h"
#include "step_threads.h"

/* The native kinds of backend/cpu/native_ops.c whose argument slots are read below (kept equal to
 * its enum: NATIVE_CONV 2, NATIVE_POOL 3, NATIVE_EW 4; x at slot 0 for both readers). */
enum { LAYOUT_CONV = 2, LAYOUT_POOL = 3, LAYOUT_EW = 4, LAYOUT_QCONV = 10 };
/* ... and the int8 convolution's (native_qconv.h): x at slot 0, the residual at slot 10 */
enum { QCONV_RES_SLOT = 10 };

/* A rank-4 permute of a tensor itself (not of another view): ConvNeXt's depthwise result seen
 * channels-last by its layer norm, which over a NHWC tensor is a plain copy. */
static bool permute_of_root(const ttc_kir *k, int32_t t) {
    const ttc_et *v = &k->ts[t];
    return v->kind == TTC_ET_VIEW && v->vkind == TTC_VIEW_PERMUTE && v->rank == 4 && v->base >= 0 &&
           k->ts[v->base].kind != TTC_ET_VIEW;
}

/* Whether a native call of kernel ks reads tensor t at argument a in its stored layout: a
 * convolution's or global average pool's input, or a leaf of an epilogue evaluated in C whose
 * dims are the output's (a broadcast leaf is read through strides that the layout would change). */
static bool reads_any_layout(const ttc_kir *k, const ttc_kspec *ks, const ttc_kop *op, int32_t a, int32_t t) {
    if (!ks->native || ks->native_epi) return false;
    if (a == 0 && ks->native == LAYOUT_CONV && op->in[0] == t) return true;
    /* an int8 convolution reads its input and residual in either layout (reorders where oneDNN
     * wants the other); its epilogue never runs as code reading the leaves */
    if (ks->native == LAYOUT_QCONV)
        return (a == 0 && op->in[0] == t) || (a == QCONV_RES_SLOT && ks->args[a].t == t) || t == op->out ||
               a >= ks->n_native_args;
    /* a max pool reads NHWC when it writes NHWC too (settled in ttc_native_layout_plan) */
    if (a == 0 && ks->native == LAYOUT_POOL && op->in[0] == t && k->ts[t].rank == 4 &&
        (op->p.pool.kind == TTC_POOL_ADAPTIVE_AVG || op->p.pool.kind == TTC_POOL_MAX))
        return true;
    if (t == op->out) return true;   /* its own output: written in the stored order */
    if (a < ks->n_native_args + 1) return false;
    /* a leaf read through a permute of a kept tensor: strides from the stored layout (ttc_native_layout_epi) */
    for (int32_t l = 0; l < op->epi.n_leaves; l++)
        if (op->epi.leaves[l] == t)
            return ttc_dims_eq(k->ts[t].rank, k->ts[t].dims, k->ts[op->out].rank, k->ts[op->out].dims);
    return false;
}

ttc_status ttc_native_layout_plan(ttc_engine_view *e) {
    const ttc_kir *k = e->k;
    free(e->nhwc);
    e->nhwc = NULL;
    e->n_nhwc = 0;
    if (!e->tg->native_layout || !k->native || !ttc_dnnl_available()) return TTC_OK;
    uint8_t *cand = ttc_calloc((size_t)k->n_ts + 1, 1);
    if (!cand) return TTC_ERR_NOMEM;
    /* 1. made by a native convolution or elementwise op evaluated in C, image-shaped, internal */
    for (int32_t ki = 0; ki < e->cg->n_kernels; ki++) {
        const ttc_kspec *ks = &e->cg->kernels[ki];
        const ttc_kop *op = &k->ops[ks->op];
        const ttc_et *o = &k->ts[op->out];
        bool max_pool = ks->native == LAYOUT_POOL && op->p.pool.kind == TTC_POOL_MAX;
        /* float32 or 8-bit: int8 convolutions, and 8-bit max pools between them */
        bool qconv = (ks->native == LAYOUT_QCONV || max_pool) && o->rank == 4;
        if (!ks->native || ks->native_epi || (ks->native != LAYOUT_CONV && ks->native != LAYOUT_EW && !max_pool && !qconv))
            continue;
        if (o->kind != TTC_ET_INTER || o->binding >= 0 || o->rank != 4 || (o->dtype != TTC_DTYPE_FLOAT32 && !qconv))
            continue;
        /* one pixel: both layouts are the same bytes; nothing to gain */
        if (o->dims[2].sym < 0 && o->dims[3].sym < 0 && o->dims[2].add * o->dims[3].add == 1) continue;
        cand[op->out] = 1;
    }
    /* 2. ... and read only by native calls that take either layout, never through a view */
    for (int32_t t = 0; t < k->n_ts; t++)
        if (k->ts[t].kind == TTC_ET_VIEW && !permute_of_root(k, t)) cand[ttc_kir_root(k, t)] = 0;
    for (int32_t ki = 0; ki < e->cg->n_kernels; ki++) {
        const ttc_kspec *ks = &e->cg->kernels[ki];
        const ttc_kop *op = &k->ops[ks->op];
        for (int32_t a = 0; a < ks->n_args; a++) {
            if (ks->args[a].kind != TTC_ARG_BUF) continue;
            int32_t t = ks->args[a].t, r = ttc_kir_root(k, t);
            bool direct = t == r || (permute_of_root(k, t) && a >= ks->n_native_args + 1);
            if (r >= 0 && cand[r] && (!direct || !reads_any_layout(k, ks, op, a, t))) cand[r] = 0;
        }
    }
    /* 3. a max pool (ResNet's stem) keeps its input's layout: both NHWC or both NCHW */
    for (bool changed = true; changed;) {
        changed = false;
        for (int32_t ki = 0; ki < e->cg->n_kernels; ki++) {
            const ttc_kspec *ks = &e->cg->kernels[ki];
            const ttc_kop *op = &k->ops[ks->op];
            if (ks->native != LAYOUT_POOL || op->p.pool.kind != TTC_POOL_MAX) continue;
            int32_t in = op->in[0];
            if (in >= 0 && k->ts[in].kind != TTC_ET_VIEW && cand[in] == cand[op->out]) continue;
            changed = changed || cand[op->out] || (in >= 0 && cand[ttc_kir_root(k, in)]);
            cand[op->out] = 0;
            if (in >= 0) cand[ttc_kir_root(k, in)] = 0;
        }
    }
    int32_t n = 0;
    for (int32_t t = 0; t < k->n_ts; t++) n += cand[t];
    if (n == 0) {
        free(cand);
        return TTC_OK;
    }
    e->nhwc = cand;
    e->n_nhwc = n;
    return TTC_OK;
}

void ttc_native_layout_epi(const ttc_engine_view *e, const ttc_kop *op, ttc_native_epi *epi) {
    if (!e->nhwc || epi->rank != 4) return;
    bool out_nhwc = ttc_native_nhwc(e, op->out), any = out_nhwc;
    for (int32_t l = 0; l < epi->n_leaves; l++) any = any || ttc_native_nhwc(e, ttc_kir_root(e->k, op->epi.leaves[l]));
    if (!any) return;
    const int64_t *d = epi->dims;
    /* iteration order: the output's stored order */
    static const int32_t nchw[4] = {0, 1, 2, 3}, nhwc[4] = {0, 2, 3, 1};
    const int32_t *perm = out_nhwc ? nhwc : nchw;
    int64_t pd[4], cs[4];   /* permuted dims, and the dense strides over them */
    for (int32_t i = 0; i < 4; i++) pd[i] = d[perm[i]];
    cs[3] = 1;
    for (int32_t i = 2; i >= 0; i--) cs[i] = cs[i + 1] * pd[i + 1];
    for (int32_t l = 0; l < epi->n_leaves; l++) {
        int64_t s[4];   /* the leaf's strides by logical dim, in its stored layout */
        int32_t t = op->epi.leaves[l];
        if (t != ttc_kir_root(e->k, t) && ttc_native_nhwc(e, ttc_kir_root(e->k, t))) {
            /* a permute of a NHWC tensor (the plan allows no other view of one): dim i of the
             * leaf is dim perm[i] of the tensor, whose dims follow from the output's */
            const int32_t *pm = e->k->ts[t].perm;
            int64_t rd[4], rs[4];
            for (int32_t i = 0; i < 4; i++) rd[pm[i]] = d[i];
            rs[0] = rd[1] * rd[2] * rd[3];
            rs[1] = 1;
            rs[2] = rd[3] * rd[1];
            rs[3] = rd[1];
            for (int32_t i = 0; i < 4; i++) s[i] = rs[pm[i]];
        } else if (ttc_native_nhwc(e, t)) {   /* the plan checked: dims are the output's */
            s[0] = d[1] * d[2] * d[3];
            s[1] = 1;
            s[2] = d[3] * d[1];
            s[3] = d[1];
        } else if (epi->dense[l]) {
            s[0] = d[1] * d[2] * d[3];
            s[1] = d[2] * d[3];
            s[2] = d[3];
            s[3] = 1;
        } else {
            memcpy(s, epi->strides[l], sizeof s);
        }
        bool dense = true;
        for (int32_t i = 0; i < 4; i++) {
            epi->strides[l][i] = s[perm[i]];
            dense = dense && (pd[i] == 1 || epi->strides[l][i] == cs[i]);
        }
        epi->dense[l] = dense;
    }
    memcpy(epi->dims, pd, sizeof pd);
}

/* Tiles of 8 x 64: one side's rows stay in cache while the other's are written. */
static void transpose(const float *x, float *y, int64_t rows, int64_t cols) {
    enum { TR = 8, TC = 64 };
    for (int64_t r0 = 0; r0 < rows; r0 += TR)
        for (int64_t c0 = 0; c0 < cols; c0 += TC) {
            int64_t r1 = r0 + TR < rows ? r0 + TR : rows, c1 = c0 + TC < cols ? c0 + TC : cols;
            for (int64_t c = c0; c < c1; c++)
                for (int64_t r = r0; r < r1; r++) y[c * rows + r] = x[r * cols + c];
        }
}

void ttc_nhwc_to_nchw(const float *x, float *y, int64_t n, int64_t c, int64_t hw) {
    for (int64_t i = 0; i < n; i++) transpose(x + i * hw * c, y + i * hw * c, hw, c);
}

void ttc_nchw_to_nhwc(const float *x, float *y, int64_t n, int64_t c, int64_t hw) {
    for (int64_t i = 0; i < n; i++) transpose(x + i * hw * c, y + i * hw * c, c, hw);
}

/* The max of one output pixel's taps over channels [0, 16): a local accumulator of a constant
 * width, so that the loop vectorises at -O2 and y is written once, not once per tap (written
 * as a scalar loop over the taps with y as the accumulator, ResNet-18's stem pool at batch 8
 * took 44 ms, a quarter of the model). */
enum { POOL_CB = 16 };
static void max_taps16(const float *const *taps, int32_t nt, float *restrict y) {
    float acc[POOL_CB];
    for (int32_t j = 0; j < POOL_CB; j++) acc[j] = -__builtin_inff();
    for (int32_t t = 0; t < nt; t++) {
        const float *restrict xr = taps[t];
        /* NaN wins, as in native_pool.c and torch */
        for (int32_t j = 0; j < POOL_CB; j++) acc[j] = (xr[j] > acc[j] || xr[j] != xr[j]) ? xr[j] : acc[j];
    }
    for (int32_t j = 0; j < POOL_CB; j++) y[j] = acc[j];
}

typedef struct nhwc_pool_job {
    const ttc_native_pool_shape *s;
    int64_t c;
    const float *x;
    float *y;
} nhwc_pool_job;

/* output rows [r0, r1) of [n * oh] */
static void nhwc_pool_rows(void *arg, int64_t r0, int64_t r1) {
    const nhwc_pool_job *jb = arg;
    const ttc_native_pool_shape *s = jb->s;
    int64_t c = jb->c;
    enum { MAX_TAPS = 64 };
    const float *taps[MAX_TAPS];
    for (int64_t r = r0; r < r1; r++) {
        int64_t i = r / s->oh, oh = r % s->oh;
        for (int64_t ow = 0; ow < s->ow; ow++) {
            float *yr = jb->y + (r * s->ow + ow) * c;
            int32_t nt = 0;
            bool many = false;   /* more taps than the list holds: the scalar loop below */
            for (int64_t kh = 0; kh < s->kh && !many; kh++) {
                int64_t h = oh * s->sh - s->ph + kh * s->dh;
                if (h < 0 || h >= s->h) continue;
                for (int64_t kw = 0; kw < s->kw; kw++) {
                    int64_t w = ow * s->sw - s->pw + kw * s->dw;
                    if (w < 0 || w >= s->w) continue;
                    if (nt == MAX_TAPS) {
                        many = true;
                        break;
                    }
                    taps[nt++] = jb->x + ((i * s->h + h) * s->w + w) * c;
                }
            }
            int64_t j0 = 0;
            if (!many) {
                for (; j0 + POOL_CB <= c; j0 += POOL_CB) {
                    max_taps16(taps, nt, yr + j0);
                    for (int32_t t = 0; t < nt; t++) taps[t] += POOL_CB;
                }
            }
            /* the channels left over (or every channel of a window over MAX_TAPS taps) */
            for (int64_t j = j0; j < c; j++) yr[j] = -__builtin_inff();
            for (int64_t kh = 0; kh < s->kh && j0 < c; kh++) {
                int64_t h = oh * s->sh - s->ph + kh * s->dh;
                if (h < 0 || h >= s->h) continue;
                for (int64_t kw = 0; kw < s->kw; kw++) {
                    int64_t w = ow * s->sw - s->pw + kw * s->dw;
                    if (w < 0 || w >= s->w) continue;
                    const float *xr = jb->x + ((i * s->h + h) * s->w + w) * c;
                    for (int64_t j = j0; j < c; j++) yr[j] = (xr[j] > yr[j] || xr[j] != xr[j]) ? xr[j] : yr[j];
                }
            }
        }
    }
}

void ttc_nhwc_max_pool(const ttc_native_pool_shape *s, int64_t n, int64_t c, const float *x, float *y) {
    nhwc_pool_job jb = {s, c, x, y};
    ttc_steps_for(s->threads, n * s->oh, ttc_steps_grain(s->ow * c * s->kh * s->kw), nhwc_pool_rows, &jb);
}

void ttc_nhwc_global_avg(const float *x, float *y, int64_t n, int64_t hw, int64_t c) {
    for (int64_t i = 0; i < n; i++) {
        float *yi = y + i * c;
        for (int64_t j = 0; j < c; j++) yi[j] = 0.0f;
        for (int64_t s = 0; s < hw; s++) {
            const float *xr = x + (i * hw + s) * c;
            for (int64_t j = 0; j < c; j++) yi[j] += xr[j];
        }
        for (int64_t j = 0; j < c; j++) yi[j] /= (float)(hw > 0 ? hw : 1);
    }
}
