/*
 * Layer norm as a native host task (engine/native_ops.c makes the call): rows of n dense
 * elements, two-pass mean and variance as the OpenCL kernel (kernels/norm.cl), affine per
 * element. In a transformer on the CPU it is the op between the native GEMMs of a block: as an
 * OpenCL kernel each one cost two hand-overs between PoCL's threads and the native calls'.
 *
 *   ttc_native_layer_norm(x, w, b, y, rows, n, eps);   // w, b: NULL when absent
 */
#ifndef TTC_ENGINE_NATIVE_NORM_H
#define TTC_ENGINE_NATIVE_NORM_H

#include <stdint.h>

void ttc_native_layer_norm(const float *x, const float *w, const float *b, float *y, int64_t rows, int64_t n,
                           float eps);

#endif
