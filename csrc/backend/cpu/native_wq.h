/*
 * Weight-only quantized linear as a native CPU step (backend/cpu/native_wq.c): y [M, N] =
 * x [M, K] times the dequantized weight [N, K] transposed, the weight int8 [N, K] or int4 packed
 * two per byte [N, K / 2] (kir.h, TTC_KOP_WQ_LINEAR), scales and zero points [N, K / group].
 *
 * M <= TTC_WQ_GEMV_MAX_M (decode, short prompts): a GEMV over the weight rows, split among `threads` threads,
 * each group of weights dequantized into registers (8-float vectors) and multiplied with up to
 * 8 rows of x at once, so the packed weights are read once per 8 rows. Larger M: blocks of weight
 * rows (16 MB of floats) are dequantized (in parallel) and multiplied by the host BLAS (one sgemm a block);
 * without a BLAS the GEMV loop runs over every row.
 *
 *   ttc_native_wq_linear(&(ttc_native_wq){x, q, s, z, y, M, N, K, group, bits, threads});
 */
#ifndef TTC_BACKEND_CPU_NATIVE_WQ_H
#define TTC_BACKEND_CPU_NATIVE_WQ_H

#include <stdint.h>

/* rows of x a GEMV pass takes; up to TTC_WQ_GEMV_MAX_M rows the GEMV runs in passes of them: a
 * 2048 x 8192 int8 layer at 16 rows took 70 ms that way, 150 ms through dequantized blocks + sgemm
 * (fp32 sgemm: 32 ms; 2 loaded cores). The GEMV is compute-bound at 8 rows a pass (x loaded for
 * every weight vector), so more rows go to sgemm. */
enum { TTC_WQ_GEMV_ROWS = 8, TTC_WQ_GEMV_MAX_M = 16 };

typedef struct ttc_native_wq {
    const float *x;
    const void *q;          /* int8 [N, K] or uint8 [N, K / 2] */
    const float *s, *z;     /* [N, K / group]; z NULL: 0 */
    float *y;
    int64_t M, N, K, group;
    int32_t bits, threads;
} ttc_native_wq;

void ttc_native_wq_linear(const ttc_native_wq *a);

#endif
