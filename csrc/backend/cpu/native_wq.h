/*
 * Weight-only quantized linear as a native CPU step (backend/cpu/native_wq.c): y [M, N] =
 * x [M, K] times the dequantized weight [N, K] transposed, the weight int8 [N, K] or int4 packed
 * two per byte [N, K / 2] (kir.h, TTC_KOP_WQ_LINEAR), scales and zero points [N, K / group].
 *
 * M up to a limit (ttc_native_wq_gemv_max_m: 12 to 64 rows by loop, bits and layer size, below;
 * decode and short prompts): a GEMV over the weight rows, split among `threads` threads,
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

/* Rows of x a GEMV pass takes (TTC_WQ_GEMV_ROWS), and the most rows the GEMV takes
 * (ttc_native_wq_gemv_max_m; more: dequantized blocks + oneDNN's matmul), from the crossover
 * measured against that matmul (bench/wq_loops.py --crossover, 2 cores of an AVX512-VNNI Xeon,
 * N x K 768x768 .. 8192x2048, M 1..192; bench/RESULTS.md). The matmul's cost is mostly the
 * dequantization (N K floats written and read a call) up to tens of rows, the GEMV's grows with
 * the rows (compute-bound from 8 rows a pass), so the crossover grows with N K:
 *   vnni     int8: 64 (crossovers 48..64 at 768x768 / 768x3072, 80 to over 192 from 2048x2048);
 *            int4: 32 below N K = 4M (crossovers around 40, 32..64: int4's group scales cost the
 *            GEMV more a row, most with groups of 32), 64 from there (64 to over 128);
 *   avx512   int8: 32 (the GEMV 1.0..1.9x faster at 32 rows); int4: 16 (crossovers 12..24);
 *   avx2     int8: 32 (1.15..1.7x at 32); int4: 12 (about 12 with groups of 32, 16..24 with 128);
 *   generic  16 (not measured).
 * The float loops were timed as caps on the VNNI machine, oneDNN held to the same ISA
 * (ONEDNN_MAX_CPU_ISA). M <= 8 (decode) always takes the GEMV. */
enum {
    TTC_WQ_GEMV_ROWS = 8, TTC_WQ_GEMV_MAX_M = 16, TTC_WQ_FLOAT_INT8_MAX_M = 32, TTC_WQ_AVX2_INT4_MAX_M = 12,
    TTC_WQ_VNNI_MAX_M = 64, TTC_WQ_VNNI_INT4_MAX_M = 32, TTC_WQ_VNNI_INT4_BIG = 1 << 22
};

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

/* The most rows of x the GEMV takes for an N x K layer of this group and bits (more: dequantized
 * blocks + the matmul, where a library is there): TORCHTRT_C_NATIVE_WQ_GEMV_MAX_M where set, else
 * the rule above. Codegen asks it too (a static-row layer on the GEMV keeps its epilogue). */
int64_t ttc_native_wq_gemv_max_m(int64_t N, int64_t K, int64_t group, int32_t bits);

/* The GEMV's inner loops, from the baseline up. */
typedef enum ttc_wq_isa { TTC_WQ_GENERIC, TTC_WQ_AVX2, TTC_WQ_AVX512, TTC_WQ_VNNI, TTC_WQ_ISAS } ttc_wq_isa;

/* The loop a GEMV call takes at most: the best this CPU has, capped by TORCHTRT_C_NATIVE_WQ_ISA. */
ttc_wq_isa ttc_native_wq_isa(void);
/* "generic", "avx2", "avx512", "vnni" */
const char *ttc_native_wq_isa_name(ttc_wq_isa isa);
/* GEMV calls that took each loop in this process (tests, profiles). */
int64_t ttc_native_wq_calls(ttc_wq_isa isa);

#endif
