/*
 * Native CPU kernels: on OpenCL devices that run native kernels (CL_EXEC_NATIVE_KERNEL, e.g.
 * PoCL), GEMMs and convolutions run as host functions enqueued with clEnqueueNativeKernel on
 * the engine's own in-order queue, calling a tuned BLAS (OpenBLAS) loaded with dlopen. Where
 * the library or the capability is missing, or TORCHTRT_C_NATIVE=0, the OpenCL kernels run.
 *
 *   if (ttc_native_available(dev)) { ... ttc_native_sgemm(...) inside a native kernel ... }
 */
#ifndef TTC_RUNTIME_NATIVE_H
#define TTC_RUNTIME_NATIVE_H

#include "runtime.h"

/* Whether engines on d run GEMM/convolution natively: TORCHTRT_C_NATIVE is not "0", d runs
 * native kernels, and the BLAS library loads (once per process). Never fails. */
bool ttc_native_available(ttc_cl_device *d);
/* "OpenBLAS <config>" when the library is loaded, else why not ("" before the first query). */
const char *ttc_native_library(void);

/* Row-major C[M,N] = A[M,K] (lda) x op(B) ; op(B) = B[K,N] (ldb) or,
 * trans_b, B[N,K]^T. Only valid once ttc_native_available returned true. */
void ttc_native_sgemm(bool trans_b, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                      const float *B, int64_t ldb, float *C, int64_t ldc);

#endif
