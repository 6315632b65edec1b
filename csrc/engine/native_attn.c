/* Scaled dot-product attention as a native host task (engine/native_attn.h). */
/* the row loops below are meant to vectorise: -O2 (GCC 12) leaves them scalar and trapping
 * math keeps the selects from if-converting (nothing here relies on FP exceptions) */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math")
#endif
#include "native_attn.h"

#include <math.h>
#include <string.h>

#include "../backend/blas.h"
#include "native_math.h"
#include "step_threads.h"

/* Operand m (rows x cols, strides rs/cs) as a row-major matrix the BLAS takes: itself with
 * leading dimension rs where its rows are dense and do not overlap, else packed into pack. */
static const float *as_matrix(const float *m, int64_t rows, int64_t cols, int64_t rs, int64_t cs, float *pack,
                              int64_t *ld) {
    if (cs == 1 && (rs >= cols || rows == 1)) {
        *ld = rows == 1 && rs < cols ? cols : rs;
        return m;
    }
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) pack[r * cols + c] = m[r * rs + c * cs];
    *ld = cols;
    return pack;
}

/* Scores of this many floats at most are computed before their softmax (1 MB: they stay in
 * L2), so that the softmax of all those rows is one job for the step threads. */
enum { ATTN_CHUNK_FLOATS = 1 << 18 };

/* (batch, head) pairs per chunk. */
static int64_t chunk_heads(const ttc_native_attn_shape *s) {
    int64_t per = s->l * s->s, all = s->d0 * s->d1;
    int64_t c = per > 0 ? ATTN_CHUNK_FLOATS / per : all;
    return c < 1 ? 1 : c > all ? (all > 0 ? all : 1) : c;
}

size_t ttc_native_attn_scratch(const ttc_native_attn_shape *s) {
    int64_t c = chunk_heads(s);
    return (size_t)(c * s->l * s->s + s->l * s->e + s->s * s->e + s->s * s->ev + c * s->l);
}

/* Row i of the scores: scale, mask, causal cut, then exp(x - max) in place; returns 1 / sum
 * (0 when every key is masked: the row's output is 0). */
static float softmax_row(float *x, int64_t n, int64_t i, const ttc_native_attn_shape *s, const float *mf,
                         const uint8_t *mb) {
    float sc = s->scale;
    for (int64_t j = 0; j < n; j++) x[j] *= sc;
    if (mf) {
        int64_t st = s->ms[3];
        for (int64_t j = 0; j < n; j++) x[j] += mf[j * st];
    } else if (mb) {
        int64_t st = s->ms[3];
        for (int64_t j = 0; j < n; j++) x[j] = mb[j * st] ? x[j] : -INFINITY;
    }
    if (s->causal)
        for (int64_t j = i + 1; j < n; j++) x[j] = -INFINITY;
    /* a NaN score wins the max, so that the row turns NaN as in torch */
    float mx = -INFINITY;
    for (int64_t j = 0; j < n; j++) mx = (x[j] > mx || x[j] != x[j]) ? x[j] : mx;
    if (mx == -INFINITY) {
        memset(x, 0, sizeof(float) * (size_t)n);
        return 0.0f;
    }
    for (int64_t j = 0; j < n; j++) x[j] -= mx;
    ttc_nm_unary(TTC_EOP_EXP, x, x, n);
    float sum = 0.0f;
    for (int64_t j = 0; j < n; j++) sum += x[j];
    return sum > 0.0f ? 1.0f / sum : 0.0f;
}

typedef struct softmax_job {
    const ttc_native_attn_shape *s;
    int64_t h0;              /* the chunk's first (batch, head) pair */
    float *sc, *inv;
    const void *mask;
    bool mask_bool;
} softmax_job;

/* Rows [r0, r1) of a chunk's scores (row r: pair h0 + r / l, query r % l). */
static void softmax_rows(void *arg, int64_t r0, int64_t r1) {
    const softmax_job *j = arg;
    const ttc_native_attn_shape *s = j->s;
    for (int64_t r = r0; r < r1; r++) {
        int64_t t = r / s->l, i = r % s->l, hh = j->h0 + t;
        int64_t mrow = (hh / s->d1) * s->ms[0] + (hh % s->d1) * s->ms[1] + i * s->ms[2];
        const float *mf = j->mask && !j->mask_bool ? (const float *)j->mask + mrow : NULL;
        const uint8_t *mb = j->mask && j->mask_bool ? (const uint8_t *)j->mask + mrow : NULL;
        j->inv[r] = softmax_row(j->sc + r * s->s, s->s, i, s, mf, mb);
    }
}

void ttc_native_attention(const ttc_native_attn_shape *s, const float *q, const float *k, const float *v,
                          const void *mask, bool mask_bool, float *out, float *scratch) {
    int64_t L = s->l, S = s->s, E = s->e, EV = s->ev, G = s->group > 0 ? s->group : 1;
    int64_t H = s->d0 * s->d1, C = chunk_heads(s);
    float *sc = scratch, *qp = sc + C * L * S, *kp = qp + L * E, *vp = kp + S * E, *inv = vp + S * EV;
    if (L <= 0 || EV <= 0) return;
    if (S <= 0) {   /* no keys: every row is "all masked" */
        memset(out, 0, sizeof(float) * (size_t)(H * L * EV));
        return;
    }
    for (int64_t h0 = 0; h0 < H; h0 += C) {
        int64_t hc = H - h0 < C ? H - h0 : C;
        for (int64_t t = 0; t < hc; t++) {
            int64_t b0 = (h0 + t) / s->d1, h = (h0 + t) % s->d1, lq, lk;
            const float *Q = as_matrix(q + b0 * s->qs[0] + h * s->qs[1], L, E, s->qs[2], s->qs[3], qp, &lq);
            const float *K = as_matrix(k + b0 * s->ks[0] + (h / G) * s->ks[1], S, E, s->ks[2], s->ks[3], kp, &lk);
            ttc_blas_sgemm(true, L, S, E, Q, lq, K, lk, sc + t * L * S, S);
        }
        softmax_job j = {s, h0, sc, inv, mask, mask_bool};
        ttc_steps_for(s->threads, hc * L, ttc_steps_grain(4 * S), softmax_rows, &j);
        for (int64_t t = 0; t < hc; t++) {
            int64_t b0 = (h0 + t) / s->d1, h = (h0 + t) % s->d1, lv;
            float *o = out + (h0 + t) * L * EV;
            const float *V = as_matrix(v + b0 * s->vs[0] + (h / G) * s->vs[1], S, EV, s->vs[2], s->vs[3], vp, &lv);
            ttc_blas_sgemm(false, L, EV, S, sc + t * L * S, S, V, lv, o, EV);
            for (int64_t i = 0; i < L; i++) {
                float *r = o + i * EV, f = inv[t * L + i];
                for (int64_t c = 0; c < EV; c++) r[c] *= f;
            }
        }
    }
}
