/*
 * Scaled dot-product attention as a native host task (backend/cpu/native_ops.c makes the call):
 * per (batch, head) the scores Q K^T through the BLAS (or, TORCHTRT_C_NATIVE_ATTN_GEMM not
 * "blas", every head of a chunk in one oneDNN batched matmul: one parallel call on oneDNN's
 * threads instead of a threaded BLAS call per head), scale, mask and causal cut, a softmax
 * whose exp runs through native_math.h's vectorised loops, and P V through the BLAS, scaled
 * by each row's 1 / sum. Heads go in chunks whose scores fill about 1 MB, so that the softmax
 * of a chunk's rows is split among the step threads (the BLAS threads itself).
 *
 * The OpenCL attention kernel (codegen_data.c) computes one query row per work-item with an
 * online softmax: on PoCL it ran BERT-base's attention at ~17 GFLOP/s, a sixth of the BLAS,
 * and every switch between it and the native GEMMs around it cost a hand-over between threads.
 *
 * Semantics as the OpenCL kernel and torch: a float mask is added to the scaled scores, a bool
 * mask keeps the keys where it is true; causal keeps keys j <= i (top-left aligned); a row
 * whose keys are all masked is 0; a NaN score makes its row NaN.
 *
 *   ttc_native_attention(&shape, q, k, v, mask, mask_is_bool, out, scratch);
 */
#ifndef TTC_ENGINE_NATIVE_ATTN_H
#define TTC_ENGINE_NATIVE_ATTN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ttc_native_attn_shape {
    int64_t d0, d1;          /* leading dims (batch, heads); d0 = 1 for rank-3 tensors */
    int64_t l, s, e, ev;     /* queries, keys, head dims of q/k and of v */
    int64_t group;           /* query heads per k/v head (grouped-query attention), >= 1 */
    bool causal;
    float scale;
    /* element strides over (d0, d1, row, column); k/v's d1 stride is per k/v head, a mask's
     * are 0 where it broadcasts */
    int64_t qs[4], ks[4], vs[4], ms[4];
    int32_t threads;         /* the softmax rows split among this many (backend/cpu/step_threads.h) */
    bool dnnl;               /* Q K^T and P V through oneDNN's batched matmul where it runs them */
    const void *owner;       /* with dnnl: the engine and kernel its primitives are kept for */
    int32_t ki;
} ttc_native_attn_shape;

/* Floats of scratch one call needs (scores and packed operands). */
size_t ttc_native_attn_scratch(const ttc_native_attn_shape *s);
/* out: dense [d0, d1, l, ev]; mask: NULL, float32 (added) or bool bytes (mask_bool). */
void ttc_native_attention(const ttc_native_attn_shape *s, const float *q, const float *k, const float *v,
                          const void *mask, bool mask_bool, float *out, float *scratch);

#endif
