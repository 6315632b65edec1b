/*
 * Native GEMMs through oneDNN's matmul (backend/cpu/native_gemm_dnnl.c): an engine's float32
 * linear/addmm/matmul runs as one oneDNN primitive instead of OpenBLAS sgemm where the target
 * chose it (TORCHTRT_C_NATIVE_GEMM, target/target.c) and libdnnl.so.2 loads (the loader of
 * dnnl_api.c). Constant weights are reordered once per engine kernel into the layout
 * the primitive asks for and kept; other operands are read where they lie. Anything oneDNN
 * refuses returns false and the caller runs OpenBLAS.
 *
 *   ttc_dnnl_gemm_shape s = {M, N, K, trans_b};
 *   if (!ttc_dnnl_gemm(e, ki, &s, A, B, b_const, C)) ttc_blas_sgemm(...);
 *   ...
 *   ttc_dnnl_gemm_forget(e);   // when engine e is freed
 */
#ifndef TTC_ENGINE_NATIVE_GEMM_DNNL_H
#define TTC_ENGINE_NATIVE_GEMM_DNNL_H

#include <stdbool.h>
#include <stdint.h>

#include "native_conv_dnnl.h"

typedef struct ttc_dnnl_gemm_shape {
    int64_t m, n, k;
    bool trans_b;   /* B is [N,K] (nn.Linear's weight), else [K,N] (GPT-2's Conv1D, matmul) */
    int64_t ldc;    /* floats from one row of C to the next; 0: n (dense). More: C is a block of
                     * columns of a wider matrix (the weight-only linear's blocks, native_wq.c) */
} ttc_dnnl_gemm_shape;

/* Batched GEMMs over strided operands (attention's Q K^T and P V over every head of a chunk in
 * one call, backend/cpu/native_attn.c): C[b..][M,N] = A[b..][M,K] x B[b..][K,N]. Element strides
 * over (batch dims.., rows, columns); B's batch dims equal A's or 1 (broadcast: grouped-query
 * attention's shared k/v heads). */
enum { TTC_DNNL_BGEMM_MAX_BATCH = 3 };
typedef struct ttc_dnnl_bgemm_shape {
    int32_t nd;                                /* batch dims, 0..TTC_DNNL_BGEMM_MAX_BATCH */
    int64_t da[TTC_DNNL_BGEMM_MAX_BATCH];      /* A's and C's batch dims */
    int64_t db[TTC_DNNL_BGEMM_MAX_BATCH];      /* B's: da[i] or 1 */
    int64_t m, n, k;
    int64_t sa[TTC_DNNL_BGEMM_MAX_BATCH + 2], sb[TTC_DNNL_BGEMM_MAX_BATCH + 2], sc[TTC_DNNL_BGEMM_MAX_BATCH + 2];
} ttc_dnnl_bgemm_shape;

/* Whether oneDNN's matmul can be called (the library loads). */
bool ttc_dnnl_gemm_available(void);
/* Row-major C[M,N] = A[M,K] x op(B) (all dense) as kernel ki of the engine `owner`. b_const: B
 * never changes for this owner, so its reordered copy is kept. Returns false (nothing written)
 * where oneDNN is unavailable or refuses the shape. */
bool ttc_dnnl_gemm(const void *owner, int32_t ki, const ttc_dnnl_gemm_shape *s, const float *A, const float *B,
                   bool b_const, float *C);
/* The same with post (NULL: none; the same for every call of (owner, ki)): bias[N] added to every
 * row, then the activations, inside the matmul (oneDNN's bias argument and eltwise post-ops,
 * backend/cpu/native_post.h plans them). *post_done says whether the primitive applied them (oneDNN
 * may refuse a post-op; then the caller does: ttc_native_post_ref_nhwc over [M, N]). */
bool ttc_dnnl_gemm_post(const void *owner, int32_t ki, const ttc_dnnl_gemm_shape *s, const float *A, const float *B,
                        bool b_const, float *C, const ttc_dnnl_post *post, const float *bias, bool *post_done);
/* The batched GEMM s as call `slot` (>= 0) of kernel ki of `owner` (its primitive is kept per
 * shape). Returns false where oneDNN is unavailable, refuses the shape or has only its reference
 * implementation for it (the caller runs the BLAS per matrix). */
bool ttc_dnnl_bgemm(const void *owner, int32_t ki, int32_t slot, const ttc_dnnl_bgemm_shape *s, const float *A,
                    const float *B, float *C);
/* GEMMs oneDNN ran in this process (diagnostics: tests check which library ran). */
int64_t ttc_dnnl_gemm_calls(void);
/* ... of them with their post-ops inside (bias and/or activations). */
int64_t ttc_dnnl_gemm_post_calls(void);
/* Drops every primitive and weight copy kept for owner (call when it is freed). */
void ttc_dnnl_gemm_forget(const void *owner);

#endif
