/*
 * Float32 GEMV-shaped products as a native CPU step (backend/cpu/native_gemv.c): y [M, N] =
 * x [M, K] times w [N, K] transposed (a Linear's weight, read in place), for the few rows of a
 * decode step (M <= TTC_GEMV_MAX_M). Each pass of the weights reads every weight vector once and
 * multiplies it with all M rows of x; weight rows are split among `threads` threads (the step
 * pool, backend/cpu/step_threads.h).
 *
 * Why: a decode step's linears are memory-bound; oneDNN's matmul at M = 1 ran a small Llama's
 * 512 x 512 projections at ~10 GB/s (a primitive call, its OpenMP team woken for 1 MB of
 * weights), the 32000 x 512 head at ~38 GB/s. The sums run in 16 float lanes per weight row
 * (partial sums in another order than oneDNN's: results differ in the last bits).
 *
 *   ttc_native_gemv(x, w, y, M, N, K, threads);
 */
#ifndef TTC_BACKEND_CPU_NATIVE_GEMV_H
#define TTC_BACKEND_CPU_NATIVE_GEMV_H

#include <stdint.h>

/* rows of x one weight pass takes at most (the accumulators stay in registers) */
enum { TTC_GEMV_MAX_M = 8 };

/* y[m * N + n] = sum_k x[m * K + k] * w[n * K + k] for m < M (1 <= M <= TTC_GEMV_MAX_M). */
void ttc_native_gemv(const float *x, const float *w, float *y, int64_t M, int64_t N, int64_t K, int32_t threads);

/* GEMV calls this process made so far (tests). */
int64_t ttc_native_gemv_calls(void);

#endif
