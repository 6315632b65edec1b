/*
 * Layer norm over the last dims as a native CPU kernel (backend/cpu/native_norm.c): ConvNeXt's
 * channels-last LayerNorm sits between its native depthwise convolution and native linear
 * layers, 23 OpenCL kernels (each a launch and two hand-overs on PoCL). Same arithmetic as
 * kernels/norm.cl: two-pass mean and variance per row, 1/sqrt(var + eps), then the affine.
 * rms: the RMS norm (Llama's; passes/fuse_rms_norm.c), the mean taken as 0.
 *
 * Rows are split among `threads` threads (backend/cpu/step_threads.h) when there are enough.
 *
 *   ttc_native_layer_norm(x, w, b, rows, n, eps, false, threads, y);   // w, b: NULL when absent
 */
#ifndef TTC_ENGINE_NATIVE_NORM_H
#define TTC_ENGINE_NATIVE_NORM_H

#include <stdbool.h>
#include <stdint.h>

void ttc_native_layer_norm(const float *x, const float *w, const float *b, int64_t rows, int64_t n, float eps,
                           bool rms, int32_t threads, float *y);

#endif
