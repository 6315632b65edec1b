/*
 * Weight-only quantized linear as a native CPU step (backend/cpu/native_wq.c): y [M, N] =
 * x [M, K] times the dequantized weight [N, K] transposed, the weight int8 [N, K] or int4 packed
 * two per byte [N, K / 2] (kir.h, TTC_KOP_WQ_LINEAR), scales and zero points [N, K / group].
 *
 * M <= TTC_WQ_GEMV_MAX_M (decode, short prompts; TTC_WQ_VNNI_MAX_M with the VNNI loop): a GEMV
 * over the weight rows, split among `threads` threads,
 * up to 8 rows of x at once, so the packed weights are read once per 8 rows. Its inner loop is the
 * best the CPU has (ttc_native_wq_isa, at most TORCHTRT_C_NATIVE_WQ_ISA, read on every call):
 *   vnni     AVX512-VNNI: x quantized per row to int16 (scale max|x| / 32767, less for groups so
 *            long that int32 sums could overflow) once per call, the weights widened to int16
 *            (32 a instruction) and multiplied by vpdpwssd into int32 per group, each group's
 *            sum converted and scaled in float; 1 to 4 weight rows a block. Error: x rounded to
 *            1 / 65534 of its row's largest |x|, times sum |q s| (q: the stored integers; zero
 *            points are applied apart, on x's float group sums). Rows with several groups whose
 *            bytes are not 2, 4, 8, 16 or a multiple of 32 (int8 groups of 40, ...), and calls with
 *            an inf/NaN in x, take:
 *   avx512   the weights converted to float 16 at a time and multiplied in float (AVX-512F/BW);
 *   avx2     the same 8 at a time (AVX2 + FMA);
 *   generic  the same with GCC's vector extension (any x86-64, and other CPUs).
 * Larger M: blocks of weight rows (16 MB of floats) are dequantized (in parallel) and multiplied
 * one matmul a block: with `owner` set, the float32 linear's oneDNN matmul (native_gemm_dnnl.h,
 * kernel ki of engine owner; post: bias[N] and activations inside it, as the float32 linear
 * takes them), else (or where oneDNN refuses) the host BLAS's sgemm; without a BLAS the GEMV
 * loop runs over every row. BERT-base at batch 32 x seq 128 (2 layers): sgemm 1449 ms a call, 0.58x
 * the float32 engine (OpenBLAS's threads against oneDNN's spinning ones between the layers); see
 * bench/RESULTS.md "Dynamic int8" for the oneDNN figures. The post-ops are always applied on
 * return (in C where the matmul did not: ttc_native_post_ref_nhwc).
 *
 *   ttc_native_wq_linear(&(ttc_native_wq){x, q, s, z, y, M, N, K, group, bits, threads});
 *   ttc_native_wq_linear(&(ttc_native_wq){..., threads, engine, ki, &post, bias});
 */
#ifndef TTC_BACKEND_CPU_NATIVE_WQ_H
#define TTC_BACKEND_CPU_NATIVE_WQ_H

#include <stdint.h>

#include "native_conv_dnnl.h"

/* rows of x a GEMV pass takes; up to TTC_WQ_GEMV_MAX_M rows (TTC_WQ_VNNI_MAX_M where the VNNI
 * loop takes the layer) the GEMV runs in passes of them. Float loops: a 2048 x 8192 int8 layer at
 * 16 rows took 70 ms that way, 150 ms through dequantized blocks + sgemm (fp32 sgemm: 32 ms; 2
 * loaded cores); they are compute-bound at 8 rows a pass, so more rows go to sgemm. The VNNI
 * loop: 1.45 ms a pass of 8 rows on that layer (int8 per channel; int4 g32 1.7 ms), where
 * dequantized blocks + sgemm took 12 ms at 32 rows, 15 ms at 64, 23 ms at 128 (2 cores, load 3). */
enum { TTC_WQ_GEMV_ROWS = 8, TTC_WQ_GEMV_MAX_M = 16, TTC_WQ_VNNI_MAX_M = 64 };

typedef struct ttc_native_wq {
    const float *x;
    const void *q;          /* int8 [N, K] or uint8 [N, K / 2] */
    const float *s, *z;     /* [N, K / group]; z NULL: 0 */
    float *y;
    int64_t M, N, K, group;
    int32_t bits, threads;
    const void *owner;           /* large M through oneDNN's matmul as kernel ki of owner; NULL: BLAS */
    int32_t ki;
    const ttc_dnnl_post *post;   /* NULL: none; else y = act(y + bias) (bias[N] where post->bias) */
    const float *bias;
} ttc_native_wq;

void ttc_native_wq_linear(const ttc_native_wq *a);

/* The GEMV's inner loops, from the baseline up. */
typedef enum ttc_wq_isa { TTC_WQ_GENERIC, TTC_WQ_AVX2, TTC_WQ_AVX512, TTC_WQ_VNNI, TTC_WQ_ISAS } ttc_wq_isa;

/* The loop a GEMV call takes at most: the best this CPU has, capped by TORCHTRT_C_NATIVE_WQ_ISA. */
ttc_wq_isa ttc_native_wq_isa(void);
/* "generic", "avx2", "avx512", "vnni" */
const char *ttc_native_wq_isa_name(ttc_wq_isa isa);
/* GEMV calls that took each loop in this process (tests, profiles). */
int64_t ttc_native_wq_calls(ttc_wq_isa isa);

#endif
