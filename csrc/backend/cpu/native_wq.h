/*
 * Weight-only quantized linear as a native CPU step (backend/cpu/native_wq.c): y [M, N] =
 * x [M, K] times the dequantized weight [N, K] transposed, the weight int8 [N, K] or int4 packed
 * two per byte [N, K / 2] (kir.h, TTC_KOP_WQ_LINEAR), scales and zero points [N, K / group].
 *
 * M <= TTC_WQ_GEMV_ROWS (decode): a GEMV over the weight rows, split among `threads` threads,
 * each group of weights dequantized into registers (8-float vectors) and multiplied with up to
 * 8 rows of x at once, so the packed weights are read once. Larger M: blocks of weight rows are
 * dequantized to float (in parallel) and multiplied by the host BLAS (one sgemm per block);
 * without a BLAS the GEMV loop runs over every row.
 *
 *   ttc_native_wq_linear(&(ttc_native_wq){x, q, s, z, y, M, N, K, group, bits, threads});
 */
#ifndef TTC_BACKEND_CPU_NATIVE_WQ_H
#define TTC_BACKEND_CPU_NATIVE_WQ_H

#include <stdint.h>

enum { TTC_WQ_GEMV_ROWS = 8 };

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
