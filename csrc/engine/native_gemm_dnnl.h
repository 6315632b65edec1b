/*
 * Native GEMMs through oneDNN's matmul (engine/native_gemm_dnnl.c): an engine's float32
 * linear/addmm/matmul runs as one oneDNN primitive instead of OpenBLAS sgemm where the target
 * chose it (TORCHTRT_C_NATIVE_GEMM, backend/target.c) and libdnnl.so.2 loads (the loader of
 * native_conv_dnnl.c). Constant weights are reordered once per engine kernel into the layout
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

typedef struct ttc_dnnl_gemm_shape {
    int64_t m, n, k;
    bool trans_b;   /* B is [N,K] (nn.Linear's weight), else [K,N] (GPT-2's Conv1D, matmul) */
} ttc_dnnl_gemm_shape;

/* Whether oneDNN's matmul can be called (the library loads). */
bool ttc_dnnl_gemm_available(void);
/* Row-major C[M,N] = A[M,K] x op(B) (all dense) as kernel ki of the engine `owner`. b_const: B
 * never changes for this owner, so its reordered copy is kept. Returns false (nothing written)
 * where oneDNN is unavailable or refuses the shape. */
bool ttc_dnnl_gemm(const void *owner, int32_t ki, const ttc_dnnl_gemm_shape *s, const float *A, const float *B,
                   bool b_const, float *C);
/* GEMMs oneDNN ran in this process (diagnostics: tests check which library ran). */
int64_t ttc_dnnl_gemm_calls(void);
/* Drops every primitive and weight copy kept for owner (call when it is freed). */
void ttc_dnnl_gemm_forget(const void *owner);

#endif
