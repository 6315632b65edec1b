/*
 * cuBLAS as a library step of the CUDA launch path (backend/cuda/exec_cuda_lib.c): a GEMM kernel of
 * an engine called with CUDA tensors may run as one cuBLAS call on torch's stream instead of
 * the engine's own PTX, where cuBLAS is faster (issue 12: our tensor-core GEMM reaches 0.3-0.4
 * of cuBLAS on large shapes, bench/RESULTS.md).
 *
 *   char why[256];
 *   if (ttc_cublas_available(why, sizeof why)) {
 *       ttc_cublas_gemm g = {.a_type = TTC_DTYPE_FLOAT16, ...};   // row-major C = A . B
 *       TTC_TRY(ttc_cublas_gemm_run(ordinal, &g, stream, workspace, workspace_bytes));
 *   }
 *
 * libcublas is dlopen'd on first use, never linked: the CUDA launch path only runs beside a
 * torch built with CUDA, which has loaded its own libcublas already (it is found by soname,
 * RTLD_NOLOAD first); elsewhere ttc_cublas_available says why not. Types are declared by layout.
 *
 * One handle per device, used under a lock: each call sets the caller's stream and workspace
 * (memory the caller owns, stream-ordered with the call: the engine's arena) and enqueues one
 * cublasGemmStridedBatchedEx, so calls on several streams never share scratch memory and a
 * call being captured into a CUDA graph allocates nothing.
 */
#ifndef TTC_BACKEND_CUDA_CUBLAS_H
#define TTC_BACKEND_CUDA_CUBLAS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../common/status.h"
#include "../../include/torchtrt_c.h"

/* Whether a libcublas loads and has what this path needs; why (if given) says what is missing.
 * Never fails; the answer is kept for the process. */
bool ttc_cublas_available(char *why, size_t why_len);

/* Row-major C[b] (m x n, row stride ldc) = A[b] (m x k) . B[b] (k x n), b < batch. Each operand
 * is given by its element strides: a_rs/a_cs (A's row and column strides: one of them 1),
 * b_rs/b_cs likewise, a_bs/b_bs/c_bs the batch strides (0: shared by every batch). A and B have
 * one dtype (float16 or float32), C float16 or float32. tf32: float32 products on TF32 tensor
 * cores (torch's allow_tf32), else true fp32. */
typedef struct ttc_cublas_gemm {
    ttc_dtype ab_type, c_type;
    bool tf32;
    int64_t m, n, k, batch;
    uint64_t a, b, c;                 /* device addresses of the first elements */
    int64_t a_rs, a_cs, b_rs, b_cs, ldc;
    int64_t a_bs, b_bs, c_bs;
    /* The kernel's epilogue inside the product (cuBLASLt, cublaslt.c), one batch only:
     * C = act(A.B + bias + res), each rounded once. bias: n elements of c_type along C's rows
     * (0: none); res: a tensor laid out as C (0: none); act: TTC_CUBLAS_ACT_*. All 0: a plain
     * product (cublasGemmStridedBatchedEx). */
    uint64_t bias, res;
    int32_t act;
} ttc_cublas_gemm;

enum { TTC_CUBLAS_ACT_NONE = 0, TTC_CUBLAS_ACT_GELU_TANH = 1 };

/* Whether g has an epilogue for cuBLASLt (bias, res or act set). */
static inline bool ttc_cublas_gemm_fused(const ttc_cublas_gemm *g) { return g->bias || g->res || g->act; }
/* Whether cuBLASLt (torch's libcublasLt) loads; why (if given) says why not. Kept for the
 * process. */
bool ttc_cublaslt_available(char *why, size_t why_len);
/* Whether cuBLASLt has an algorithm for fused g on device `ordinal` within workspace_bytes
 * (asked once per shape, operand alignment and epilogue; kept for the process). Host work
 * only: may be called while a stream is being recorded. */
bool ttc_cublaslt_ready(int32_t ordinal, const ttc_cublas_gemm *g, size_t workspace_bytes);
/* Enqueues fused g through cuBLASLt (ttc_cublaslt_ready said yes). */
ttc_status ttc_cublaslt_run(int32_t ordinal, const ttc_cublas_gemm *g, uint64_t stream, uint64_t workspace,
                            size_t workspace_bytes);

/* cuBLAS's column-major call for g (ttc_cublas_gemm_ok said yes): C^T (n x m) = B^T (n x k) .
 * A^T (k x m); cuBLAS's A is our B, its B our A: their operations (0 N, 1 T) and leading dims,
 * the operands' and C's cudaDataType and the cublasComputeType. */
typedef struct ttc_cublas_call {
    int opa, opb;
    int64_t lda, ldb;
    int ab, ct, compute;
} ttc_cublas_call;
void ttc_cublas_call_of(const ttc_cublas_gemm *g, ttc_cublas_call *c);
/* Whether cuBLAS can run g as described (sizes within int, strides it takes, dtypes); why (if
 * given) says what not. No call is made. */
bool ttc_cublas_gemm_ok(const ttc_cublas_gemm *g, char *why, size_t why_len);
/* The workspace bytes a call may use (ttc_cublas_gemm_run's workspace). */
size_t ttc_cublas_workspace_bytes(void);
/* Enqueues g on stream (0: the legacy default stream) with the context of `ordinal` current
 * (fused ones through ttc_cublaslt_run). */
ttc_status ttc_cublas_gemm_run(int32_t ordinal, const ttc_cublas_gemm *g, uint64_t stream, uint64_t workspace,
                               size_t workspace_bytes);

#endif
