/* Scaled dot-product attention as a native host task (backend/cpu/native_attn.h). */
/* the row loops below are meant to vectorise: -O2 (GCC 12) leaves them scalar and trapping
 * math keeps the selects from if-converting (nothing here relies on FP exceptions) */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math")
#endif
#include "native_attn.h"

#include <math.h>
#include <string.h>

#include "../blas.h"
#include "native_gemm_dnnl.h"
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

/* (batch, head) pairs per chunk: whole batch items, or within one item a number of heads that
 * divides the heads and is a multiple of the group, so that a chunk's Q K^T and P V are each one
 * batched GEMM over (items, k/v heads) (bgemm_chunk). */
static int64_t chunk_heads(const ttc_native_attn_shape *s) {
    int64_t per = s->l * s->s, all = s->d0 * s->d1, G = s->group > 0 ? s->group : 1;
    int64_t c = per > 0 ? ATTN_CHUNK_FLOATS / per : all;
    if (s->d1 > 0 && c >= s->d1) {
        c = c / s->d1 * s->d1;
    } else if (s->d1 > 0 && s->d1 % G == 0) {
        int64_t hk = s->d1 / G, best = 1;
        for (int64_t x = 1; x <= hk; x++)
            if (hk % x == 0 && x * G <= c) best = x;
        c = best * G;
    }
    return c < 1 ? 1 : c > all ? (all > 0 ? all : 1) : c;
}

/* The batched GEMM of one chunk (hc pairs from pair h0, laid out as chunk_heads makes them):
 * qk: scores[t] = Q_t K_t^T, else out[t] = P_t V_t. Returns false where oneDNN cannot run it
 * (the caller goes head by head through the BLAS). */
static bool bgemm_chunk(const ttc_native_attn_shape *s, bool qk, int64_t h0, int64_t hc, const float *x,
                        const float *y, float *dst) {
    int64_t G = s->group > 0 ? s->group : 1, D1 = s->d1;
    if (!s->dnnl || D1 < 1 || D1 % G != 0 || (hc >= D1 ? hc % D1 != 0 : (h0 % D1) + hc > D1 || hc % G != 0))
        return false;
    int64_t L = s->l, S = s->s, N = qk ? S : s->ev, K = qk ? s->e : S;
    /* Grouped-query attention: the G query heads of one k/v head are one GEMM of G * L rows,
     * which needs their q rows evenly spaced (q dense over (head, row), as a rotary embedding
     * leaves it). A batch dim of 1 broadcast over the group instead ran oneDNN's slower
     * gemm:jit kernel for Q K^T (Llama b1: attention 1.16x OpenBLAS per head). */
    if (G > 1 && qk && s->qs[1] != L * s->qs[2]) return false;
    int64_t b0 = h0 / D1, hs = h0 % D1, nb = hc >= D1 ? hc / D1 : 1, hh = hc >= D1 ? D1 : hc;
    const int64_t *ys = qk ? s->ks : s->vs;
    ttc_dnnl_bgemm_shape b;
    memset(&b, 0, sizeof b);
    b.m = G * L;
    b.n = N;
    b.k = K;
    /* batch dims (items, k/v heads); C dense [nb, hh, L, N] */
    b.nd = 2;
    b.da[0] = b.db[0] = nb;
    b.da[1] = b.db[1] = hh / G;
    b.sc[0] = hh * L * N;
    b.sc[1] = G * L * N;
    b.sc[2] = N;
    b.sc[3] = 1;
    if (qk) {   /* A = Q at its strides, B = K^T */
        b.sa[0] = s->qs[0];
        b.sa[1] = G * s->qs[1];
        b.sa[2] = s->qs[2];
        b.sa[3] = s->qs[3];
        x += b0 * s->qs[0] + hs * s->qs[1];
    } else {    /* A = the chunk's dense scores */
        b.sa[0] = hh * L * S;
        b.sa[1] = G * L * S;
        b.sa[2] = S;
        b.sa[3] = 1;
    }
    b.sb[0] = ys[0];
    b.sb[1] = ys[1];
    b.sb[2] = qk ? ys[3] : ys[2];
    b.sb[3] = qk ? ys[2] : ys[3];
    y += b0 * ys[0] + (hs / G) * ys[1];
    return ttc_dnnl_bgemm(s->owner, s->ki, qk ? 0 : 1, &b, x, y, dst);
}

size_t ttc_native_attn_scratch(const ttc_native_attn_shape *s) {
    int64_t c = chunk_heads(s);
    return (size_t)(c * s->l * s->s + s->l * s->e + s->s * s->e + s->s * s->ev + c * s->l);
}

/* Lanes of the partial max / sum below: one scalar chain of dependent adds per row (a float
 * reduction does not vectorise as written) cost more than the exp of the row. */
enum { SM_LANES = 16 };

static float lanes_sum(const float *a) {
    float s = 0.0f;
    for (int k = 0; k < SM_LANES; k += 2) s += a[k] + a[k + 1];
    return s;
}

/* Row i of the scores: scale, mask, causal cut, then exp(x - max) in place; returns 1 / sum
 * (0 when every key is masked: the row's output is 0). Under the causal cut only keys j <= i
 * are computed; the rest are 0 as exp(-inf) would make them. */
static float softmax_row(float *x, int64_t n, int64_t i, const ttc_native_attn_shape *s, const float *mf,
                         const uint8_t *mb) {
    float sc = s->scale;
    int64_t m = s->causal && i + 1 < n ? i + 1 : n, st = s->ms[3];
    for (int64_t j = 0; j < m; j++) x[j] *= sc;
    if (mf)
        for (int64_t j = 0; j < m; j++) x[j] += mf[j * st];
    else if (mb)
        for (int64_t j = 0; j < m; j++) x[j] = mb[j * st] ? x[j] : -INFINITY;
    /* a NaN score wins the max, so that the row turns NaN as in torch */
    float pm[SM_LANES], nan[SM_LANES];
    for (int k = 0; k < SM_LANES; k++) pm[k] = -INFINITY, nan[k] = 0.0f;
    int64_t j = 0;
    for (; j + SM_LANES <= m; j += SM_LANES)
        for (int k = 0; k < SM_LANES; k++) {
            float v = x[j + k];
            pm[k] = v > pm[k] ? v : pm[k];
            nan[k] = v != v ? 1.0f : nan[k];
        }
    float mx = -INFINITY;
    for (int k = 0; k < SM_LANES; k++) mx = pm[k] > mx || nan[k] != 0.0f ? (nan[k] != 0.0f ? NAN : pm[k]) : mx;
    for (; j < m; j++) mx = (x[j] > mx || x[j] != x[j]) ? x[j] : mx;
    if (mx != mx) mx = NAN;
    memset(x + m, 0, sizeof(float) * (size_t)(n - m));
    if (mx == -INFINITY) {
        memset(x, 0, sizeof(float) * (size_t)m);
        return 0.0f;
    }
    for (j = 0; j < m; j++) x[j] -= mx;
    ttc_nm_unary(TTC_EOP_EXP, x, x, m);
    float ps[SM_LANES] = {0};
    for (j = 0; j + SM_LANES <= m; j += SM_LANES)
        for (int k = 0; k < SM_LANES; k++) ps[k] += x[j + k];
    float sum = lanes_sum(ps);
    for (; j < m; j++) sum += x[j];
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
        bool qk_done = bgemm_chunk(s, true, h0, hc, q, k, sc);
        for (int64_t t = 0; !qk_done && t < hc; t++) {
            int64_t b0 = (h0 + t) / s->d1, h = (h0 + t) % s->d1, lq, lk;
            const float *Q = as_matrix(q + b0 * s->qs[0] + h * s->qs[1], L, E, s->qs[2], s->qs[3], qp, &lq);
            const float *K = as_matrix(k + b0 * s->ks[0] + (h / G) * s->ks[1], S, E, s->ks[2], s->ks[3], kp, &lk);
            ttc_blas_sgemm(true, L, S, E, Q, lq, K, lk, sc + t * L * S, S);
        }
        softmax_job j = {s, h0, sc, inv, mask, mask_bool};
        ttc_steps_for(s->threads, hc * L, ttc_steps_grain(4 * S), softmax_rows, &j);
        bool pv_done = bgemm_chunk(s, false, h0, hc, sc, v, out + h0 * L * EV);
        for (int64_t t = 0; t < hc; t++) {
            float *o = out + (h0 + t) * L * EV;
            if (!pv_done) {
                int64_t b0 = (h0 + t) / s->d1, h = (h0 + t) % s->d1, lv;
                const float *V = as_matrix(v + b0 * s->vs[0] + (h / G) * s->vs[1], S, EV, s->vs[2], s->vs[3], vp, &lv);
                ttc_blas_sgemm(false, L, EV, S, sc + t * L * S, S, V, lv, o, EV);
            }
            for (int64_t i = 0; i < L; i++) {
                float *r = o + i * EV, f = inv[t * L + i];
                for (int64_t c = 0; c < EV; c++) r[c] *= f;
            }
        }
    }
}
