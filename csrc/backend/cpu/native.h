/*
 * The native CPU steps as the engine sees them (backend/cpu/): GEMMs, convolutions, attention,
 * norms, pooling and elementwise ops of float32 engines run as host tasks calling oneDNN,
 * the host BLAS and C steps, where the engine's target allows it (target.native). The
 * engine includes this header only; the steps read the engine through its view
 * (codegen/plan.h, ttc_engine_view) and never include the engine.
 *
 *   codegen: TTC_TRY(ttc_codegen_run_native(k, gpu, NULL, &ttc_native_codegen_ops, &cg));
 *   build:   TTC_TRY(ttc_native_layout_plan(view));          // after the constants and bindings
 *   launch:  if (ks->native) TTC_TRY(ttc_native_launch(view, p, ki, q, &bufs, scratch, NULL));
 *   free:    ttc_native_forget(view);
 *
 * The files: native_ops.c (specs and launches), native_conv_dnnl.c / native_gemm_dnnl.c
 * (oneDNN), native_attn.c, native_norm.c, native_pool.c, native_epi.c (epilogues in C),
 * native_post.c (oneDNN post-ops), native_qconv.c (PT2E int8 convolutions/linears through
 * oneDNN int8), native_layout.c (channels-last between convolutions),
 * native_math.c (the C math of the steps), step_threads.c (their thread pool).
 */
#ifndef TTC_BACKEND_CPU_NATIVE_H
#define TTC_BACKEND_CPU_NATIVE_H

#include "../../codegen/plan.h"
#include "../backend.h"
#include "step_threads.h"

/* Whether op (of an engine with k->native) runs natively: float32 operands and result, and a
 * GEMM or an ungrouped/grouped (not depthwise), unsplit convolution. */
bool ttc_native_op_ok(const ttc_kir *k, const ttc_kop *op);
/* ttc_native_op_ok and native_ops.h's ttc_codegen_native as the code generator takes them
 * (codegen/codegen.h: ttc_codegen_run_native). */
extern const ttc_codegen_native_ops ttc_native_codegen_ops;
/* Scratch bytes the native kernels of plan p need (im2col buffers), 0 when none. */
size_t ttc_native_scratch_bytes(const ttc_engine_view *e, const ttc_plan *p);
/* Enqueues kernel ki's native call on q (ev: its event, when not NULL). */
ttc_status ttc_native_launch(const ttc_engine_view *e, const ttc_plan *p, int32_t ki, ttc_queue *q,
                             const ttc_exec_bufs *b, ttc_buf *scratch, ttc_event **ev);
/* Sets e->nhwc (one flag per tensor id; NULL where no tensor is kept channels-last). */
ttc_status ttc_native_layout_plan(ttc_engine_view *e);
/* Whether tensor t (not a view) is stored NHWC. */
static inline bool ttc_native_nhwc(const ttc_engine_view *e, int32_t t) { return e->nhwc && t >= 0 && e->nhwc[t]; }
/* Drops what the steps keep per engine (oneDNN primitives and reordered weights) for the
 * engine whose view this is (call when it is freed). */
void ttc_native_forget(const ttc_engine_view *e);

#endif
