/*
 * GEMM and convolution as host tasks calling the BLAS (backend/blas.h) inside an engine.
 *
 * When the engine's target runs them (target.native: kir->native, set by the builder), a
 * float32 GEMM or convolution op becomes a kernel spec whose first n_native_args arguments
 * describe a library call (operand buffers, offsets, sizes), enqueued as a host task, which
 * writes the raw result into the op's output. Its epilogue (bias, activation, residual, ...)
 * then runs as a small OpenCL kernel reading that result in place: the remaining arguments
 * are that kernel's. Ops without an epilogue launch only the native call.
 *
 *   TTC_TRY(ttc_codegen_run_native(k, gpu, NULL, &ttc_native_codegen_ops, &cg));   // codegen calls back
 *   ...
 *   if (ks->native) TTC_TRY(ttc_native_launch(e, p, ki, q, &bufs, scratch, NULL));
 */
#ifndef TTC_ENGINE_NATIVE_OPS_H
#define TTC_ENGINE_NATIVE_OPS_H

#include "native.h"

/* The kernel spec (and epilogue kernel source) of a native op; P/A_ as for other kinds. */
ttc_status ttc_codegen_native(ttc_sbuf *src, const ttc_kir *k, const ttc_kop *op, ttc_kspec *ks, const char *P,
                              const char *A_);

#endif
