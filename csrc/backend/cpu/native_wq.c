/* Weight-only quantized linear on the CPU (native_wq.h). */
#include "native_wq.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../blas.h"
#include "step_threads.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define WQ_AVX2 1
#endif

/* 8-float vectors: two SSE registers on the baseline, one AVX register in the avx2 clone */
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float v8 __attribute__((vector_size(32)));


static inline __attribute__((always_inline)) v8 ld8(const float *p) {
    v8 v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* w[0, len) = (q[k0 + j] - z) * s for row n. */
static inline __attribute__((always_inline)) void dequant(const ttc_native_wq *a, int64_t n, int64_t k0, int64_t len, float s, float z, float *w) {
    if (a->bits == 8) {
        const int8_t *q = (const int8_t *)a->q + n * a->K + k0;
        for (int64_t j = 0; j < len; j++) w[j] = ((float)q[j] - z) * s;
    } else {
        const uint8_t *q = (const uint8_t *)a->q + n * (a->K / 2) + k0 / 2;
        for (int64_t j = 0; j < len / 2; j++) {
            w[2 * j] = ((float)(q[j] & 15) - z) * s;
            w[2 * j + 1] = ((float)(q[j] >> 4) - z) * s;
        }
    }
}


typedef int8_t v8i8 __attribute__((vector_size(8)));
typedef uint8_t v8u8 __attribute__((vector_size(8)));
typedef int32_t v8i32 __attribute__((vector_size(32)));

static inline __attribute__((always_inline)) float hsum(v8 a) {
    return ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
}

/* What the GEMV reads of x, prepared once per call: x itself (int8: xa = x rows), or for int4
 * its even and odd elements apart (xa: x[2j], xb: x[2j + 1], K / 2 each), so that the low and
 * high nibbles of 8 bytes multiply 8 adjacent floats each; xs: each group's sum of x (the zero
 * point's term, factored out of the loop). */
typedef struct gemv_ctx {
    const ttc_native_wq *a;
    const float *xa, *xb, *xs;
    int64_t lx;   /* floats a row of xa / xb */
    bool avx2;    /* the CPU has AVX2 and FMA */
} gemv_ctx;

/* y[m0 .. m0 + mb) [n] for one weight row n: per group, sum_k q * x in 8-float vectors for the
 * mb rows at once (the weights loaded and converted once), then s * (that - z * sum_k x). */
static inline __attribute__((always_inline)) void gemv_row_mb(const gemv_ctx *c, int64_t n, int64_t m0,
                                                               const int64_t mb) {
    const ttc_native_wq *a = c->a;
    float acc[TTC_WQ_GEMV_ROWS] = {0};
    int64_t G = a->K / a->group, gs = a->group;
    for (int64_t g = 0; g < G; g++) {
        float s = a->s[n * G + g], z = a->z ? a->z[n * G + g] : 0.0f;
        v8 va[TTC_WQ_GEMV_ROWS];
        float tail[TTC_WQ_GEMV_ROWS];
        for (int64_t i = 0; i < mb; i++) {
            va[i] = (v8){0};
            tail[i] = 0.0f;
        }
        if (a->bits == 8) {
            const int8_t *q = (const int8_t *)a->q + n * a->K + g * gs;
            int64_t j = 0;
            for (; j + 8 <= gs; j += 8) {
                v8i8 qi;
                memcpy(&qi, q + j, sizeof qi);
                v8 qf = __builtin_convertvector(__builtin_convertvector(qi, v8i32), v8);
                for (int64_t i = 0; i < mb; i++) va[i] += qf * ld8(c->xa + (m0 + i) * c->lx + g * gs + j);
            }
            for (; j < gs; j++)
                for (int64_t i = 0; i < mb; i++) tail[i] += (float)q[j] * c->xa[(m0 + i) * c->lx + g * gs + j];
        } else {
            const uint8_t *q = (const uint8_t *)a->q + n * (a->K / 2) + g * gs / 2;
            int64_t h = gs / 2, j = 0, o = g * gs / 2;
            for (; j + 8 <= h; j += 8) {
                v8u8 qb;
                memcpy(&qb, q + j, sizeof qb);
                v8 lo = __builtin_convertvector(__builtin_convertvector(qb & (v8u8){15, 15, 15, 15, 15, 15, 15, 15}, v8i32), v8);
                v8 hi = __builtin_convertvector(__builtin_convertvector(qb >> 4, v8i32), v8);
                for (int64_t i = 0; i < mb; i++)
                    va[i] += lo * ld8(c->xa + (m0 + i) * c->lx + o + j) + hi * ld8(c->xb + (m0 + i) * c->lx + o + j);
            }
            for (; j < h; j++)
                for (int64_t i = 0; i < mb; i++)
                    tail[i] += (float)(q[j] & 15) * c->xa[(m0 + i) * c->lx + o + j] +
                               (float)(q[j] >> 4) * c->xb[(m0 + i) * c->lx + o + j];
        }
        for (int64_t i = 0; i < mb; i++) acc[i] += s * ((hsum(va[i]) + tail[i]) - z * c->xs[(m0 + i) * G + g]);
    }
    for (int64_t i = 0; i < mb; i++) a->y[(m0 + i) * a->N + n] = acc[i];
}

/* The same with AVX2 + FMA intrinsics (8 int8 -> 8 int32 -> 8 floats in two instructions, which
 * the vector extension's conversion does not become). */
#ifdef WQ_AVX2
__attribute__((target("avx2,fma"))) static inline __attribute__((always_inline)) void
gemv_row_mb_avx2(const gemv_ctx *c, int64_t n, int64_t m0, const int64_t mb) {
    const ttc_native_wq *a = c->a;
    float acc[TTC_WQ_GEMV_ROWS] = {0};
    __m256 vacc[TTC_WQ_GEMV_ROWS];   /* sum over groups of s * (group's q . x), one hsum at the end */
    for (int64_t i = 0; i < mb; i++) vacc[i] = _mm256_setzero_ps();
    int64_t G = a->K / a->group, gs = a->group;
    const __m128i m15 = _mm_set1_epi8(15);
    for (int64_t g = 0; g < G; g++) {
        float s = a->s[n * G + g], z = a->z ? a->z[n * G + g] : 0.0f;
        __m256 va[TTC_WQ_GEMV_ROWS];
        float tail[TTC_WQ_GEMV_ROWS];
        for (int64_t i = 0; i < mb; i++) {
            va[i] = _mm256_setzero_ps();
            tail[i] = 0.0f;
        }
        if (a->bits == 8) {
            const int8_t *q = (const int8_t *)a->q + n * a->K + g * gs;
            int64_t j = 0;
            for (; j + 8 <= gs; j += 8) {
                __m256 qf = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(q + j))));
                for (int64_t i = 0; i < mb; i++)
                    va[i] = _mm256_fmadd_ps(qf, _mm256_loadu_ps(c->xa + (m0 + i) * c->lx + g * gs + j), va[i]);
            }
            for (; j < gs; j++)
                for (int64_t i = 0; i < mb; i++) tail[i] += (float)q[j] * c->xa[(m0 + i) * c->lx + g * gs + j];
        } else {
            const uint8_t *q = (const uint8_t *)a->q + n * (a->K / 2) + g * gs / 2;
            int64_t h = gs / 2, j = 0, o = g * gs / 2;
            for (; j + 8 <= h; j += 8) {
                __m128i b = _mm_loadl_epi64((const __m128i *)(q + j));
                __m256 lo = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_and_si128(b, m15)));
                __m256 hi = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_and_si128(_mm_srli_epi16(b, 4), m15)));
                for (int64_t i = 0; i < mb; i++) {
                    va[i] = _mm256_fmadd_ps(lo, _mm256_loadu_ps(c->xa + (m0 + i) * c->lx + o + j), va[i]);
                    va[i] = _mm256_fmadd_ps(hi, _mm256_loadu_ps(c->xb + (m0 + i) * c->lx + o + j), va[i]);
                }
            }
            for (; j < h; j++)
                for (int64_t i = 0; i < mb; i++)
                    tail[i] += (float)(q[j] & 15) * c->xa[(m0 + i) * c->lx + o + j] +
                               (float)(q[j] >> 4) * c->xb[(m0 + i) * c->lx + o + j];
        }
        __m256 sv = _mm256_set1_ps(s);
        for (int64_t i = 0; i < mb; i++) {
            vacc[i] = _mm256_fmadd_ps(sv, va[i], vacc[i]);
            acc[i] += s * (tail[i] - z * c->xs[(m0 + i) * G + g]);
        }
    }
    for (int64_t i = 0; i < mb; i++) {
        __m128 h4 = _mm_add_ps(_mm256_castps256_ps128(vacc[i]), _mm256_extractf128_ps(vacc[i], 1));
        h4 = _mm_add_ps(h4, _mm_movehl_ps(h4, h4));
        h4 = _mm_add_ss(h4, _mm_shuffle_ps(h4, h4, 1));
        a->y[(m0 + i) * a->N + n] = _mm_cvtss_f32(h4) + acc[i];
    }
}

__attribute__((target("avx2,fma"))) static void gemv_row_avx2(const gemv_ctx *c, int64_t n, int64_t m0, int64_t mb) {
    switch (mb) {   /* mb a constant in each case: the accumulators stay in registers */
    case 1: gemv_row_mb_avx2(c, n, m0, 1); break;
    case 2: gemv_row_mb_avx2(c, n, m0, 2); break;
    case 3: gemv_row_mb_avx2(c, n, m0, 3); break;
    case 4: gemv_row_mb_avx2(c, n, m0, 4); break;
    case 5: gemv_row_mb_avx2(c, n, m0, 5); break;
    case 6: gemv_row_mb_avx2(c, n, m0, 6); break;
    case 7: gemv_row_mb_avx2(c, n, m0, 7); break;
    default: gemv_row_mb_avx2(c, n, m0, 8); break;
    }
}
#endif

static void gemv_row_generic(const gemv_ctx *c, int64_t n, int64_t m0, int64_t mb) {
    switch (mb) {
    case 1: gemv_row_mb(c, n, m0, 1); break;
    case 2: gemv_row_mb(c, n, m0, 2); break;
    case 3: gemv_row_mb(c, n, m0, 3); break;
    case 4: gemv_row_mb(c, n, m0, 4); break;
    case 5: gemv_row_mb(c, n, m0, 5); break;
    case 6: gemv_row_mb(c, n, m0, 6); break;
    case 7: gemv_row_mb(c, n, m0, 7); break;
    default: gemv_row_mb(c, n, m0, 8); break;
    }
}

static void gemv_rows(void *ctx, int64_t lo, int64_t hi) {
    const gemv_ctx *c = ctx;
    const ttc_native_wq *a = c->a;
    for (int64_t m0 = 0; m0 < a->M; m0 += TTC_WQ_GEMV_ROWS) {
        int64_t mb = a->M - m0 < TTC_WQ_GEMV_ROWS ? a->M - m0 : TTC_WQ_GEMV_ROWS;
#ifdef WQ_AVX2
        if (c->avx2) {
            for (int64_t n = lo; n < hi; n++) gemv_row_avx2(c, n, m0, mb);
            continue;
        }
#endif
        for (int64_t n = lo; n < hi; n++) gemv_row_generic(c, n, m0, mb);
    }
}

/* The GEMV over every row of x (M rows, TTC_WQ_GEMV_ROWS at a time); false: out of memory. */
static bool gemv(const ttc_native_wq *a) {
    int64_t G = a->K / a->group;
    float *xs = malloc(sizeof(float) * (size_t)(a->M * G));
    float *xd = a->bits == 4 ? malloc(sizeof(float) * (size_t)(a->M * a->K)) : NULL;
    if (!xs || (a->bits == 4 && !xd)) {
        free(xs);
        free(xd);
        return false;
    }
    gemv_ctx c = {a, a->x, NULL, xs, a->K, false};
#ifdef WQ_AVX2
    c.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    for (int64_t m = 0; m < a->M; m++) {
        const float *xr = a->x + m * a->K;
        for (int64_t g = 0; g < G; g++) {
            float t = 0.0f;
            for (int64_t j = 0; j < a->group; j++) t += xr[g * a->group + j];
            xs[m * G + g] = t;
        }
    }
    if (a->bits == 4) {
        int64_t h = a->K / 2;
        for (int64_t m = 0; m < a->M; m++)
            for (int64_t j = 0; j < h; j++) {
                xd[m * h + j] = a->x[m * a->K + 2 * j];
                xd[a->M * h + m * h + j] = a->x[m * a->K + 2 * j + 1];
            }
        c.xa = xd;
        c.xb = xd + a->M * h;
        c.lx = h;
    }
    int64_t mb = a->M < TTC_WQ_GEMV_ROWS ? a->M : TTC_WQ_GEMV_ROWS;
    ttc_steps_for(a->threads, a->N, ttc_steps_grain(a->K * mb), gemv_rows, &c);
    free(xs);
    free(xd);
    return true;
}

typedef struct deq_ctx { const ttc_native_wq *a; int64_t n0; float *w; } deq_ctx;

static void deq_rows(void *ctx, int64_t lo, int64_t hi) {
    const deq_ctx *d = ctx;
    const ttc_native_wq *a = d->a;
    int64_t G = a->K / a->group;
    for (int64_t r = lo; r < hi; r++) {
        int64_t n = d->n0 + r;
        for (int64_t g = 0; g < G; g++)
            dequant(a, n, g * a->group, a->group, a->s[n * G + g], a->z ? a->z[n * G + g] : 0.0f,
                    d->w + r * a->K + g * a->group);
    }
}

void ttc_native_wq_linear(const ttc_native_wq *a) {
    if (a->M <= 0 || a->N <= 0) return;
    if (a->M > TTC_WQ_GEMV_MAX_M && ttc_blas_available()) {
        /* blocks of about 16 MB of float weights */
        int64_t nb = ((int64_t)1 << 22) / (a->K > 0 ? a->K : 1);
        if (nb < 16) nb = 16;
        if (nb > a->N) nb = a->N;
        float *w = malloc(sizeof(float) * (size_t)(nb * a->K));
        if (w) {
            for (int64_t n0 = 0; n0 < a->N; n0 += nb) {
                int64_t rows = a->N - n0 < nb ? a->N - n0 : nb;
                deq_ctx d = {a, n0, w};
                ttc_steps_for(a->threads, rows, ttc_steps_grain(a->K), deq_rows, &d);
                ttc_blas_sgemm(true, a->M, rows, a->K, a->x, a->K, w, a->K, a->y + n0, a->N);
            }
            free(w);
            return;
        }
    }
    if (gemv(a)) return;
    /* out of memory for the prepared x: one row at a time through the dequantizing path */
    for (int64_t m = 0; m < a->M; m++)
        for (int64_t n = 0; n < a->N; n++) {
            int64_t G = a->K / a->group;
            float acc = 0.0f;
            for (int64_t k = 0; k < a->K; k++) {
                int64_t g = k / a->group;
                float q = a->bits == 8 ? (float)((const int8_t *)a->q)[n * a->K + k]
                                       : (float)((((const uint8_t *)a->q)[n * (a->K / 2) + k / 2] >> (4 * (k & 1))) & 15);
                acc += (q - (a->z ? a->z[n * G + g] : 0.0f)) * a->s[n * G + g] * a->x[m * a->K + k];
            }
            a->y[m * a->N + n] = acc;
        }
}