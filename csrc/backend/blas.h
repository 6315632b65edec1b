/*
 * The host BLAS behind native GEMM/convolution (backend/cpu/native_ops.c): OpenBLAS loaded with
 * dlopen, so that the library loads (and the device's own kernels run) on machines without
 * it. Host tasks (backend.h) call it on devices whose queues run host functions.
 *
 *   if (target.native) ... ttc_blas_sgemm(...) inside a host task ...
 */
#ifndef TTC_BACKEND_BLAS_H
#define TTC_BACKEND_BLAS_H

#include "../common/status.h"

/* Whether the library loads (once per process). Never fails. */
bool ttc_blas_available(void);
/* "OpenBLAS <config>" when the library is loaded, else why not. */
const char *ttc_blas_library(void);

/* Row-major C[M,N] = A[M,K] (lda) x op(B) ; op(B) = B[K,N] (ldb) or,
 * trans_b, B[N,K]^T. Only valid once ttc_blas_available returned true. */
void ttc_blas_sgemm(bool trans_b, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                    const float *B, int64_t ldb, float *C, int64_t ldc);

#endif
