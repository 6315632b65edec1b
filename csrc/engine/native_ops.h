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

#include "engine_impl.h"

/* Whether op (of an engine with k->native) runs natively: float32 operands and result, and a
 * GEMM or an ungrouped/grouped (not depthwise), unsplit convolution. */
bool ttc_native_op_ok(const ttc_kir *k, const ttc_kop *op);
/* The kernel spec (and epilogue kernel source) of a native op; P/A_ as for other kinds. */
ttc_status ttc_codegen_native(ttc_sbuf *src, const ttc_kir *k, const ttc_kop *op, ttc_kspec *ks, const char *P,
                              const char *A_);
/* The two above as the code generator takes them (codegen/codegen.h). */
extern const ttc_codegen_native_ops ttc_native_codegen_ops;
/* Scratch bytes the native kernels of plan p need (im2col buffers), 0 when none. */
size_t ttc_native_scratch_bytes(const ttc_engine *e, const ttc_plan *p);
/* Enqueues kernel ki's native call on q (ev: its event, when not NULL). */
ttc_status ttc_native_launch(const ttc_engine *e, const ttc_plan *p, int32_t ki, ttc_queue *q,
                             const ttc_exec_bufs *b, ttc_buf *scratch, ttc_event **ev);

#endif
