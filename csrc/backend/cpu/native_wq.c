/* Weight-only quantized linear on the CPU (native_wq.h). */
#include "native_wq.h"

#include <stdlib.h>
#include <string.h>

#include "../blas.h"
#include "step_threads.h"

/* 8-float vectors: two SSE registers on the baseline, one AVX register in the avx2 clone */
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float v8 __attribute__((vector_size(32)));

enum { WQ_CHUNK = 64 };   /* weights dequantized at a time (a multiple of 8) */

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

static inline __attribute__((always_inline)) float dot(const float *w, const float *x, int64_t len) {
    v8 acc = {0};
    int64_t j = 0;
    for (; j + 8 <= len; j += 8) acc += ld8(w + j) * ld8(x + j);
    float r = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (; j < len; j++) r += w[j] * x[j];
    return r;
}

/* y[m0 .. m0 + mb) [n] for one weight row n: the row dequantized WQ_CHUNK weights at a time, each
 * chunk multiplied with the mb rows of x (mb <= TTC_WQ_GEMV_ROWS). */
__attribute__((target_clones("avx2", "default")))
static void gemv_row(const ttc_native_wq *a, int64_t n, int64_t m0, int64_t mb) {
    float acc[TTC_WQ_GEMV_ROWS] = {0};
    float w[WQ_CHUNK];
    int64_t G = a->K / a->group;
    for (int64_t g = 0; g < G; g++) {
        float s = a->s[n * G + g], z = a->z ? a->z[n * G + g] : 0.0f;
        for (int64_t k0 = g * a->group, end = k0 + a->group; k0 < end; k0 += WQ_CHUNK) {
            int64_t len = end - k0 < WQ_CHUNK ? end - k0 : WQ_CHUNK;
            dequant(a, n, k0, len, s, z, w);
            for (int64_t i = 0; i < mb; i++) acc[i] += dot(w, a->x + (m0 + i) * a->K + k0, len);
        }
    }
    for (int64_t i = 0; i < mb; i++) a->y[(m0 + i) * a->N + n] = acc[i];
}

static void gemv_rows(void *ctx, int64_t lo, int64_t hi) {
    const ttc_native_wq *a = ctx;
    for (int64_t m0 = 0; m0 < a->M; m0 += TTC_WQ_GEMV_ROWS) {
        int64_t mb = a->M - m0 < TTC_WQ_GEMV_ROWS ? a->M - m0 : TTC_WQ_GEMV_ROWS;
        for (int64_t n = lo; n < hi; n++) gemv_row(a, n, m0, mb);
    }
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
    if (a->M > TTC_WQ_GEMV_ROWS && ttc_blas_available()) {
        /* blocks of about 4 MB of float weights */
        int64_t nb = ((int64_t)1 << 20) / (a->K > 0 ? a->K : 1);
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
    int64_t mb = a->M < TTC_WQ_GEMV_ROWS ? a->M : TTC_WQ_GEMV_ROWS;
    ttc_steps_for(a->threads, a->N, ttc_steps_grain(a->K * mb), gemv_rows, (void *)a);
}
