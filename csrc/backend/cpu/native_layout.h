/*
 * Channels-last (NHWC) activations between native convolutions (backend/cpu/native_layout.c).
 *
 * oneDNN runs its fast CPU convolutions (brgconv, brdgmm depthwise) on NHWC; with NCHW tensors
 * in the engine every native convolution reordered its input and its result, and on
 * EfficientNet-B0 those reorders took longer than the convolutions. The engine's boundary and
 * its OpenCL kernels keep NCHW; a rank-4 intermediate is stored NHWC when it is made by a
 * native convolution or native elementwise op and read only by native calls that handle it:
 * a native convolution's input, a global average pool's input, a max pool's (whose output is
 * then NHWC too: ResNet's stem), or a leaf of an epilogue
 * evaluated in C (native_epi.c, which then walks the output in its stored order). Decided
 * when the engine is built (after code generation) from the kernel IR and the target, so an
 * engine file needs nothing new: loading rebuilds the same decision.
 *
 *   build:  TTC_TRY(ttc_native_layout_plan(e));        // e->nhwc[t], NULL when none
 *   launch: ttc_native_layout_epi(e, op, &epi);         // after ttc_native_epi_bind*
 *
 * TORCHTRT_C_NATIVE_LAYOUT=0 (the target's native_layout, read at build) keeps every tensor NCHW.
 */
#ifndef TTC_ENGINE_NATIVE_LAYOUT_H
#define TTC_ENGINE_NATIVE_LAYOUT_H

#include "native.h"
#include "native_epi.h"
#include "native_pool.h"

/* Rewrites a bound epilogue of op to walk the output in its stored order: dims permuted to
 * [N, H, W, C] when the output is NHWC, each leaf's strides to its stored layout. */
void ttc_native_layout_epi(const ttc_engine_view *e, const ttc_kop *op, ttc_native_epi *epi);
/* x [n, hw, c] -> y [n, c, hw] and back (the im2col path of a convolution on NHWC tensors). */
void ttc_nhwc_to_nchw(const float *x, float *y, int64_t n, int64_t c, int64_t hw);
void ttc_nchw_to_nhwc(const float *x, float *y, int64_t n, int64_t c, int64_t hw);
/* Max pooling of x [n, h, w, c] into y [n, oh, ow, c] (s->planes unused), output rows split
 * among s->threads (backend/cpu/step_threads.h). */
void ttc_nhwc_max_pool(const ttc_native_pool_shape *s, int64_t n, int64_t c, const float *x, float *y);
/* y[n, c] = mean over hw of x [n, hw, c] (a global average pool of an NHWC tensor). */
void ttc_nhwc_global_avg(const float *x, float *y, int64_t n, int64_t hw, int64_t c);

#endif
