/* Weight-only quantized linear on the CPU (native_wq.h). */
/* the register blocks below are loops over constants: unrolled, the accumulators stay in
 * registers */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#include "native_wq.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../../target/knobs.h"
#include "../blas.h"
#include "native_gemm_dnnl.h"
#include "native_post.h"
#include "step_threads.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define WQ_AVX2 1
#define WQ_AVX512 1
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
        for (int64_t i = 0; i < mb; i++)   /* no zero point: no term (0 * an inf sum of x would be NaN) */
            acc[i] += s * ((hsum(va[i]) + tail[i]) - (a->z ? z * c->xs[(m0 + i) * G + g] : 0.0f));
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
            acc[i] += s * (tail[i] - (a->z ? z * c->xs[(m0 + i) * G + g] : 0.0f));
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

#ifdef WQ_AVX512
#define A512 __attribute__((target("avx512f,avx512bw,avx512vl,fma")))
#define AVNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,fma")))
#define AI inline __attribute__((always_inline))

/* lanes [0, rem) of 16 (rem <= 0: none) */
static AI __mmask16 mask16(int64_t rem) {
    return rem >= 16 ? (__mmask16)0xffff : rem <= 0 ? (__mmask16)0 : (__mmask16)((1u << rem) - 1);
}

/* The float form with AVX-512: 16 weights a conversion (int8: 16 bytes; int4: 16 bytes, their
 * low and high nibbles against 16 even and 16 odd elements of x), the group's last chunk read
 * under a mask (the lanes past it load as 0, nothing past the row is touched); two accumulators
 * a row of x up to 4 rows (int8: alternate chunks; int4: low / high nibbles), so that few rows
 * of x keep more than one multiply-add in flight. */
A512 static AI void gemv_row_mb_avx512(const gemv_ctx *c, int64_t n, int64_t m0, const int mb) {
    const ttc_native_wq *a = c->a;
    const int64_t G = a->K / a->group, gb = a->bits == 8 ? a->group : a->group / 2;   /* bytes a group */
    const uint8_t *qrow = (const uint8_t *)a->q + n * (G * gb);
    __m512 vacc[TTC_WQ_GEMV_ROWS];
    float zacc[TTC_WQ_GEMV_ROWS];
#pragma GCC unroll 8
    for (int i = 0; i < mb; i++) vacc[i] = _mm512_setzero_ps(), zacc[i] = 0.0f;
    const __m512i m15 = _mm512_set1_epi32(15);
    const bool two = mb <= 4;   /* more rows: one accumulator each (the registers), in flight already */
    for (int64_t g = 0; g < G; g++) {
        const float s = a->s[n * G + g], z = a->z ? a->z[n * G + g] : 0.0f;
        const uint8_t *q = qrow + g * gb;
        const int64_t o = g * gb;   /* the group's first element in a row of xa / xb */
        __m512 va[TTC_WQ_GEMV_ROWS], vb[TTC_WQ_GEMV_ROWS];
#pragma GCC unroll 8
        for (int i = 0; i < mb; i++) va[i] = _mm512_setzero_ps(), vb[i] = _mm512_setzero_ps();
        if (a->bits == 8) {
            int64_t j = 0;
            for (; j + 32 <= gb; j += 32) {   /* whole chunks: plain loads (a masked load costs a uop more) */
                __m512 q0 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(q + j))));
                __m512 q1 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(q + j + 16))));
#pragma GCC unroll 8
                for (int i = 0; i < mb; i++) {
                    const float *xr = c->xa + (m0 + i) * c->lx + o + j;
                    va[i] = _mm512_fmadd_ps(q0, _mm512_loadu_ps(xr), va[i]);
                    if (two) vb[i] = _mm512_fmadd_ps(q1, _mm512_loadu_ps(xr + 16), vb[i]);
                    else va[i] = _mm512_fmadd_ps(q1, _mm512_loadu_ps(xr + 16), va[i]);
                }
            }
            for (; j < gb; j += 16) {   /* the group's last 1..31 weights */
                __mmask16 k = mask16(gb - j);
                __m512 q0 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(k, q + j)));
#pragma GCC unroll 8
                for (int i = 0; i < mb; i++)
                    va[i] = _mm512_fmadd_ps(q0, _mm512_maskz_loadu_ps(k, c->xa + (m0 + i) * c->lx + o + j), va[i]);
            }
        } else {
            for (int64_t j = 0; j < gb; j += 16) {
                const bool part = gb - j < 16;
                __mmask16 k = mask16(gb - j);
                __m512i w = _mm512_cvtepu8_epi32(part ? _mm_maskz_loadu_epi8(k, q + j) : _mm_loadu_si128((const __m128i *)(q + j)));
                __m512 lo = _mm512_cvtepi32_ps(_mm512_and_si512(w, m15));
                __m512 hi = _mm512_cvtepi32_ps(_mm512_srli_epi32(w, 4));
#pragma GCC unroll 8
                for (int i = 0; i < mb; i++) {
                    const float *xa = c->xa + (m0 + i) * c->lx + o + j, *xb = c->xb + (m0 + i) * c->lx + o + j;
                    __m512 a0 = part ? _mm512_maskz_loadu_ps(k, xa) : _mm512_loadu_ps(xa);
                    __m512 b0 = part ? _mm512_maskz_loadu_ps(k, xb) : _mm512_loadu_ps(xb);
                    va[i] = _mm512_fmadd_ps(lo, a0, va[i]);
                    if (two) vb[i] = _mm512_fmadd_ps(hi, b0, vb[i]);
                    else va[i] = _mm512_fmadd_ps(hi, b0, va[i]);
                }
            }
        }
        const __m512 sv = _mm512_set1_ps(s);
#pragma GCC unroll 8
        for (int i = 0; i < mb; i++) {
            vacc[i] = _mm512_fmadd_ps(sv, two ? _mm512_add_ps(va[i], vb[i]) : va[i], vacc[i]);
            if (a->z) zacc[i] += s * z * c->xs[(m0 + i) * G + g];
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < mb; i++) a->y[(m0 + i) * a->N + n] = _mm512_reduce_add_ps(vacc[i]) - zacc[i];
}

A512 static void gemv_row_avx512(const gemv_ctx *c, int64_t n, int64_t m0, int64_t mb) {
    switch (mb) {
    case 1: gemv_row_mb_avx512(c, n, m0, 1); break;
    case 2: gemv_row_mb_avx512(c, n, m0, 2); break;
    case 3: gemv_row_mb_avx512(c, n, m0, 3); break;
    case 4: gemv_row_mb_avx512(c, n, m0, 4); break;
    case 5: gemv_row_mb_avx512(c, n, m0, 5); break;
    case 6: gemv_row_mb_avx512(c, n, m0, 6); break;
    case 7: gemv_row_mb_avx512(c, n, m0, 7); break;
    default: gemv_row_mb_avx512(c, n, m0, 8); break;
    }
}
#endif

typedef void (*row_fn)(const gemv_ctx *c, int64_t n, int64_t m0, int64_t mb);

typedef struct rows_ctx {
    gemv_ctx c;
    row_fn row;
} rows_ctx;

static void gemv_rows(void *ctx, int64_t lo, int64_t hi) {
    const rows_ctx *r = ctx;
    const ttc_native_wq *a = r->c.a;
    for (int64_t m0 = 0; m0 < a->M; m0 += TTC_WQ_GEMV_ROWS) {
        int64_t mb = a->M - m0 < TTC_WQ_GEMV_ROWS ? a->M - m0 : TTC_WQ_GEMV_ROWS;
        for (int64_t n = lo; n < hi; n++) r->row(&r->c, n, m0, mb);
    }
}

#ifdef WQ_AVX512
/* ---- the VNNI form ----
 * A chunk is 32 bytes of a weight row: int8, 32 weights widened to 32 int16 lanes; int4, 64
 * weights, the low nibbles (elements 2j) and the high ones (2j + 1) in 32 int16 lanes each. x is
 * quantized to int16 in the same order (int8: one stream of K; int4: two of K / 2, the even and
 * the odd elements), each stream padded with zeros to whole chunks. vpdpwssd adds the products of
 * int16 lanes 2l and 2l + 1 into int32 lane l: lane l holds bytes 2l, 2l + 1 of the chunk. Groups
 * of gb bytes are whole lanes when gb is a multiple of 32 (cpg chunks a group) or 2, 4, 8, 16
 * (gpc = 32 / gb groups a chunk, gb / 2 lanes each), or when a row is one group; at a group's end
 * its int32 lanes are converted and multiplied by the group's scale (a vector of the chunk's
 * scales, each over its lanes, where a chunk holds several groups), into float accumulators
 * that are summed at the row's end and multiplied by x's scale. Zero points: - sum_g s z sum(x_g),
 * with the float sums of x. */
typedef struct vnni_ctx {
    const ttc_native_wq *a;
    const int16_t *xq;    /* [M][streams][lq] */
    const float *sx;      /* [M]: x's scale a row */
    const float *xs;      /* [M][G]: each group's float sum of x */
    int64_t lq;           /* int16 a stream (bytes a weight row, rounded up to 32) */
    int64_t B, nch, cpg, gpc;
    int32_t gidx[16];     /* lane -> group within the chunk */
    uint32_t ktail;       /* the bytes of the last chunk (a mask of 32) */
    uint16_t kfull, klast;  /* gpc > 1: the scales of a span, of the last span (masks of 16) */
} vnni_ctx;

/* Can the VNNI form take this layer, and with which int16 scale (the largest |x| maps to X)? */
static bool vnni_layout(const ttc_native_wq *a, int64_t *cpg, int64_t *gpc, float *X) {
    int64_t G = a->K / a->group, gb = a->bits == 8 ? a->group : a->group / 2;
    int64_t B = G * gb, nch = (B + 31) / 32;
    if (G == 1) *cpg = nch, *gpc = 1;
    else if (gb % 32 == 0) *cpg = gb / 32, *gpc = 1;
    else if (gb == 2 || gb == 4 || gb == 8 || gb == 16) *cpg = 1, *gpc = 32 / gb;
    else return false;
    /* an int32 lane adds ppl products of |w| <= wmax and |xq| <= X between conversions */
    double ppl = (double)*cpg * (a->bits == 8 ? 2 : 4), wmax = a->bits == 8 ? 128 : 15;
    double lim = 2147483647.0 / (ppl * wmax);
    *X = lim >= 32767 ? 32767.0f : (float)floor(lim);
    return *X >= 1024;   /* longer groups: x would keep too few bits */
}

/* NR weight rows from n, MB rows of x from m0. */
AVNNI static AI void vnni_block(const vnni_ctx *c, int64_t n, int64_t m0, const int NR, const int MB, const int BITS) {
    const ttc_native_wq *a = c->a;
    const int64_t G = a->K / a->group, B = c->B, lq = c->lq, S = BITS == 8 ? 1 : 2;
    const uint8_t *q = (const uint8_t *)a->q + n * B;
    __m512i acc[4][TTC_WQ_GEMV_ROWS];
    __m512 facc[4][TTC_WQ_GEMV_ROWS];
#pragma GCC unroll 4
    for (int r = 0; r < NR; r++)
#pragma GCC unroll 8
        for (int m = 0; m < MB; m++) acc[r][m] = _mm512_setzero_si512(), facc[r][m] = _mm512_setzero_ps();
    const __m512i m15 = _mm512_set1_epi16(15);
    const __m512i gidx = _mm512_loadu_si512(c->gidx);
    const int64_t nspan = (c->nch + c->cpg - 1) / c->cpg;
    const float *srow[4];
#pragma GCC unroll 4
    for (int r = 0; r < NR; r++) srow[r] = a->s + (n + r) * G;
    /* spans of cpg chunks, each ending one group (gpc == 1) or gpc groups */
    for (int64_t span = 0; span < nspan; span++) {
        const int64_t c0 = span * c->cpg, c1 = c0 + c->cpg < c->nch ? c0 + c->cpg : c->nch;
        for (int64_t ch = c0; ch < c1; ch++) {
            const bool part = ch == c->nch - 1 && c->ktail != 0xffffffffu;   /* masked loads cost a uop more */
            const int16_t *x0 = c->xq + m0 * S * lq + ch * 32;
#pragma GCC unroll 4
            for (int r = 0; r < NR; r++) {
                __m256i b = part ? _mm256_maskz_loadu_epi8((__mmask32)c->ktail, q + r * B + ch * 32)
                                 : _mm256_loadu_si256((const __m256i *)(q + r * B + ch * 32));
                if (BITS == 8) {
                    __m512i w = _mm512_cvtepi8_epi16(b);
#pragma GCC unroll 8
                    for (int m = 0; m < MB; m++)
                        acc[r][m] = _mm512_dpwssd_epi32(acc[r][m], w, _mm512_loadu_si512(x0 + m * lq));
                } else {
                    __m512i w = _mm512_cvtepu8_epi16(b);
                    __m512i lo = _mm512_and_si512(w, m15), hi = _mm512_srli_epi16(w, 4);
#pragma GCC unroll 8
                    for (int m = 0; m < MB; m++) {
                        acc[r][m] = _mm512_dpwssd_epi32(acc[r][m], lo, _mm512_loadu_si512(x0 + 2 * m * lq));
                        acc[r][m] = _mm512_dpwssd_epi32(acc[r][m], hi, _mm512_loadu_si512(x0 + (2 * m + 1) * lq));
                    }
                }
            }
        }
        const __mmask16 ks = span == nspan - 1 ? (__mmask16)c->klast : (__mmask16)c->kfull;
#pragma GCC unroll 4
        for (int r = 0; r < NR; r++) {   /* the span's group(s) end */
            const __m512 sv = c->gpc == 1 ? _mm512_set1_ps(srow[r][span])
                                          : _mm512_permutexvar_ps(gidx, _mm512_maskz_loadu_ps(ks, srow[r] + span * c->gpc));
#pragma GCC unroll 8
            for (int m = 0; m < MB; m++) {
                facc[r][m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[r][m]), sv, facc[r][m]);
                acc[r][m] = _mm512_setzero_si512();
            }
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < NR; r++) {
        __m512 zt[TTC_WQ_GEMV_ROWS];
#pragma GCC unroll 8
        for (int m = 0; m < MB; m++) zt[m] = _mm512_setzero_ps();
        if (a->z)
            for (int64_t g = 0; g < G; g += 16) {
                __mmask16 kg = mask16(G - g);
                __m512 sz = _mm512_mul_ps(_mm512_maskz_loadu_ps(kg, a->s + (n + r) * G + g),
                                          _mm512_maskz_loadu_ps(kg, a->z + (n + r) * G + g));
#pragma GCC unroll 8
                for (int m = 0; m < MB; m++)
                    zt[m] = _mm512_fmadd_ps(sz, _mm512_maskz_loadu_ps(kg, c->xs + (m0 + m) * G + g), zt[m]);
            }
#pragma GCC unroll 8
        for (int m = 0; m < MB; m++)
            a->y[(m0 + m) * a->N + n + r] =
                c->sx[m0 + m] * _mm512_reduce_add_ps(facc[r][m]) - _mm512_reduce_add_ps(zt[m]);
    }
}

/* Weight rows [lo, hi) for MB rows of x from m0: blocks of 4 weight rows for 1-2 rows of x, 2
 * for 3-4, else 1 (the int32 and float accumulators within the 32 registers, and enough
 * vpdpwssd chains in flight for one row of x). */
AVNNI static AI void vnni_rows_mb(const vnni_ctx *c, int64_t lo, int64_t hi, int64_t m0, const int MB, const int BITS) {
    const int NR = MB <= 2 ? 4 : MB <= 4 ? 2 : 1;
    int64_t n = lo;
    for (; n + NR <= hi; n += NR) vnni_block(c, n, m0, NR, MB, BITS);
    for (; n < hi; n++) vnni_block(c, n, m0, 1, MB, BITS);
}

#define VNNI_ROWS(BITS)                                                                                            \
    AVNNI static void vnni_rows_##BITS(void *ctx, int64_t lo, int64_t hi) {                                        \
        const vnni_ctx *c = ctx;                                                                                   \
        for (int64_t m0 = 0; m0 < c->a->M; m0 += TTC_WQ_GEMV_ROWS) {                                               \
            int64_t mb = c->a->M - m0 < TTC_WQ_GEMV_ROWS ? c->a->M - m0 : TTC_WQ_GEMV_ROWS;                        \
            switch (mb) {                                                                                          \
            case 1: vnni_rows_mb(c, lo, hi, m0, 1, BITS); break;                                                   \
            case 2: vnni_rows_mb(c, lo, hi, m0, 2, BITS); break;                                                   \
            case 3: vnni_rows_mb(c, lo, hi, m0, 3, BITS); break;                                                   \
            case 4: vnni_rows_mb(c, lo, hi, m0, 4, BITS); break;                                                   \
            case 5: vnni_rows_mb(c, lo, hi, m0, 5, BITS); break;                                                   \
            case 6: vnni_rows_mb(c, lo, hi, m0, 6, BITS); break;                                                   \
            case 7: vnni_rows_mb(c, lo, hi, m0, 7, BITS); break;                                                   \
            default: vnni_rows_mb(c, lo, hi, m0, 8, BITS); break;                                                  \
            }                                                                                                      \
        }                                                                                                          \
    }
VNNI_ROWS(8)
VNNI_ROWS(4)
#endif

/* The VNNI form over every row of x; false: it does not take this call (layout, inf/NaN in x,
 * out of memory), the float form does. xs: the groups' float sums of x. */
static bool gemv_vnni(const ttc_native_wq *a, const float *xs) {
#ifdef WQ_AVX512
    int64_t cpg, gpc;
    float X;
    if (!vnni_layout(a, &cpg, &gpc, &X)) return false;
    const int64_t G = a->K / a->group, B = G * (a->bits == 8 ? a->group : a->group / 2);
    const int64_t lq = (B + 31) / 32 * 32, S = a->bits == 8 ? 1 : 2;
    float *sx = malloc(sizeof(float) * (size_t)a->M);
    int16_t *xq = calloc((size_t)(a->M * S * lq), sizeof(int16_t));
    bool ok = sx && xq;
    for (int64_t m = 0; ok && m < a->M; m++) {
        const float *xr = a->x + m * a->K;
        float mx = 0.0f;
        for (int64_t k = 0; k < a->K; k++) mx = fmaxf(mx, fabsf(xr[k]));
        if (!isfinite(mx)) ok = false;   /* fmaxf skips NaN: look for one too */
        for (int64_t k = 0; ok && k < a->K; k++) ok = !isnan(xr[k]);
        if (!ok) break;
        const float inv = mx > 0.0f ? X / mx : 0.0f;
        sx[m] = mx > 0.0f ? mx / X : 0.0f;
        int16_t *d = xq + m * S * lq;
        if (a->bits == 8)
            for (int64_t k = 0; k < a->K; k++) d[k] = (int16_t)lrintf(xr[k] * inv);
        else
            for (int64_t j = 0; j < a->K / 2; j++) {
                d[j] = (int16_t)lrintf(xr[2 * j] * inv);
                d[lq + j] = (int16_t)lrintf(xr[2 * j + 1] * inv);
            }
    }
    if (ok) {
        const int64_t nch = (B + 31) / 32, nspan = (nch + cpg - 1) / cpg;
        vnni_ctx c = {a, xq, sx, xs, lq, B, nch, cpg, gpc, {0}, 0, 0, 0};
        for (int l = 0; l < 16; l++) c.gidx[l] = (int32_t)(gpc > 1 ? l / (16 / gpc) : 0);
        c.ktail = B % 32 ? (1u << (B % 32)) - 1 : 0xffffffffu;
        c.kfull = mask16(gpc);
        c.klast = mask16(G - (nspan - 1) * gpc);
        int64_t mb = a->M < TTC_WQ_GEMV_ROWS ? a->M : TTC_WQ_GEMV_ROWS;
        ttc_steps_for(a->threads, a->N, ttc_steps_grain(a->K * mb), a->bits == 8 ? vnni_rows_8 : vnni_rows_4, &c);
    }
    free(sx);
    free(xq);
    return ok;
#else
    (void)a, (void)xs;
    return false;
#endif
}

/* ---- which loop ---- */

static const char *const isa_names[TTC_WQ_ISAS] = {"generic", "avx2", "avx512", "vnni"};
static int64_t isa_calls[TTC_WQ_ISAS];

const char *ttc_native_wq_isa_name(ttc_wq_isa isa) {
    return isa >= 0 && isa < TTC_WQ_ISAS ? isa_names[isa] : "?";
}

int64_t ttc_native_wq_calls(ttc_wq_isa isa) {
    return isa >= 0 && isa < TTC_WQ_ISAS ? __atomic_load_n(&isa_calls[isa], __ATOMIC_RELAXED) : 0;
}

static ttc_wq_isa cpu_best(void) {
#ifdef WQ_AVX512
    __builtin_cpu_init();
    bool a512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma");
    if (a512 && __builtin_cpu_supports("avx512vnni")) return TTC_WQ_VNNI;
    if (a512) return TTC_WQ_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return TTC_WQ_AVX2;
#endif
    return TTC_WQ_GENERIC;
}

ttc_wq_isa ttc_native_wq_isa(void) {
    static int best = -1;
    int b = __atomic_load_n(&best, __ATOMIC_RELAXED);
    if (b < 0) {
        b = (int)cpu_best();
        __atomic_store_n(&best, b, __ATOMIC_RELAXED);
    }
    const char *v = ttc_knob_str(TTC_KNOB_NATIVE_WQ_ISA);   /* a cap, read on every call */
    for (int i = 0; v && i < b; i++)
        if (!strcmp(v, isa_names[i])) return (ttc_wq_isa)i;
    return (ttc_wq_isa)b;
}

/* The row limits of native_wq.h: past them the dequantized blocks + oneDNN's matmul took less
 * time (bench/wq_loops.py --crossover; bench/RESULTS.md). */
int64_t ttc_native_wq_gemv_max_m(int64_t N, int64_t K, int64_t group, int32_t bits) {
    const char *v = ttc_knob_str(TTC_KNOB_NATIVE_WQ_GEMV_MAX_M);   /* an A/B override, read on every call */
    if (v) {
        char *end;
        long long m = strtoll(v, &end, 10);
        if (end != v && !*end && m >= 0) return (int64_t)m;
    }
    ttc_wq_isa isa = ttc_native_wq_isa();
#ifdef WQ_AVX512
    if (isa == TTC_WQ_VNNI) {
        int64_t cpg, gpc;
        float X;
        ttc_native_wq l = {.N = N, .K = K, .group = group, .bits = bits};
        if (K > 0 && group > 0 && vnni_layout(&l, &cpg, &gpc, &X))
            return bits == 8 || N * K >= TTC_WQ_VNNI_INT4_BIG ? TTC_WQ_VNNI_MAX_M : TTC_WQ_VNNI_INT4_MAX_M;
        isa = TTC_WQ_AVX512;   /* the float form takes the layer */
    }
    if (isa == TTC_WQ_AVX512) return bits == 8 ? TTC_WQ_FLOAT_INT8_MAX_M : TTC_WQ_GEMV_MAX_M;
#endif
#ifdef WQ_AVX2
    if (isa == TTC_WQ_AVX2) return bits == 8 ? TTC_WQ_FLOAT_INT8_MAX_M : TTC_WQ_AVX2_INT4_MAX_M;
#endif
    (void)N, (void)K, (void)group, (void)bits, (void)isa;
    return TTC_WQ_GEMV_MAX_M;
}

/* The GEMV over every row of x (M rows, TTC_WQ_GEMV_ROWS at a time); false: out of memory. */
static bool gemv(const ttc_native_wq *a) {
    int64_t G = a->K / a->group;
    float *xs = malloc(sizeof(float) * (size_t)(a->M * G));
    if (!xs) return false;
    for (int64_t m = 0; m < a->M; m++) {
        const float *xr = a->x + m * a->K;
        for (int64_t g = 0; g < G; g++) {
            float t = 0.0f;
            for (int64_t j = 0; j < a->group; j++) t += xr[g * a->group + j];
            xs[m * G + g] = t;
        }
    }
    ttc_wq_isa isa = ttc_native_wq_isa();
    if (isa == TTC_WQ_VNNI) {
        if (gemv_vnni(a, xs)) {
            __atomic_add_fetch(&isa_calls[TTC_WQ_VNNI], 1, __ATOMIC_RELAXED);
            free(xs);
            return true;
        }
        isa = TTC_WQ_AVX512;
    }
    float *xd = a->bits == 4 ? malloc(sizeof(float) * (size_t)(a->M * a->K)) : NULL;
    if (a->bits == 4 && !xd) {
        free(xs);
        return false;
    }
    rows_ctx r = {{a, a->x, NULL, xs, a->K}, gemv_row_generic};
#ifdef WQ_AVX512
    if (isa == TTC_WQ_AVX512) r.row = gemv_row_avx512;
#endif
#ifdef WQ_AVX2
    if (isa == TTC_WQ_AVX2) r.row = gemv_row_avx2;
#endif
    if (r.row == gemv_row_generic) isa = TTC_WQ_GENERIC;
    __atomic_add_fetch(&isa_calls[isa], 1, __ATOMIC_RELAXED);
    if (a->bits == 4) {
        int64_t h = a->K / 2;
        for (int64_t m = 0; m < a->M; m++)
            for (int64_t j = 0; j < h; j++) {
                xd[m * h + j] = a->x[m * a->K + 2 * j];
                xd[a->M * h + m * h + j] = a->x[m * a->K + 2 * j + 1];
            }
        r.c.xa = xd;
        r.c.xb = xd + a->M * h;
        r.c.lx = h;
    }
    int64_t mb = a->M < TTC_WQ_GEMV_ROWS ? a->M : TTC_WQ_GEMV_ROWS;
    ttc_steps_for(a->threads, a->N, ttc_steps_grain(a->K * mb), gemv_rows, &r);
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

/* Large M: blocks of weight rows dequantized, one matmul a block into y's columns [n0, n0 + rows)
 * (oneDNN with the post-ops inside where it takes them, else the BLAS, the post-ops in C after);
 * false: out of memory or no library, nothing written. */
static bool deq_matmul(const ttc_native_wq *a) {
    if (!a->owner && !ttc_blas_available()) return false;
    /* blocks of about 16 MB of float weights */
    int64_t nb = ((int64_t)1 << 22) / (a->K > 0 ? a->K : 1);
    if (nb < 16) nb = 16;
    if (nb > a->N) nb = a->N;
    float *w = ttc_dnnl_scratch_at(TTC_SCRATCH_WQ, sizeof(float) * (size_t)(nb * a->K));
    if (!w) return false;
    bool ok = true;
    for (int64_t n0 = 0; ok && n0 < a->N; n0 += nb) {
        int64_t rows = a->N - n0 < nb ? a->N - n0 : nb;
        deq_ctx d = {a, n0, w};
        ttc_steps_for(a->threads, rows, ttc_steps_grain(a->K), deq_rows, &d);
        ttc_dnnl_gemm_shape gs = {a->M, rows, a->K, true, a->N};
        const float *bias = a->post && a->post->bias ? a->bias + n0 : NULL;
        bool done = false;
        if (!(a->owner && ttc_dnnl_gemm_post(a->owner, a->ki, &gs, a->x, w, false, a->y + n0, a->post, bias, &done))) {
            ok = ttc_blas_available();
            if (ok) ttc_blas_sgemm(true, a->M, rows, a->K, a->x, a->K, w, a->K, a->y + n0, a->N);
        }
        if (ok && a->post && !done)
            for (int64_t m = 0; m < a->M; m++) ttc_native_post_ref_nhwc(a->post, bias, a->y + m * a->N + n0, 1, rows);
    }
    return ok;
}

void ttc_native_wq_linear(const ttc_native_wq *a) {
    if (a->M <= 0 || a->N <= 0) return;
    if (a->M > ttc_native_wq_gemv_max_m(a->N, a->K, a->group, a->bits) && deq_matmul(a)) return;
    if (!gemv(a)) {
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
    if (a->post) ttc_native_post_ref_nhwc(a->post, a->bias, a->y, a->M, a->N);
}
