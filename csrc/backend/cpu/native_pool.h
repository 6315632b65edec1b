/*
 * Max / average 2-D pooling as a native CPU kernel (backend/cpu/native_pool.c), so that a pooling
 * between two native convolutions (ResNet's stem) does not hand over to an OpenCL kernel and
 * back: on PoCL each hand-over costs a launch and a thread wake-up. Same results as
 * kernels/pool2d.cl (NaN wins a max; count_include_pad and divisor_override as there).
 *
 *   ttc_native_pool_shape s = {...};
 *   ttc_native_pool(&s, x, y);
 */
#ifndef TTC_ENGINE_NATIVE_POOL_H
#define TTC_ENGINE_NATIVE_POOL_H

#include <stdbool.h>
#include <stdint.h>

typedef struct ttc_native_pool_shape {
    int64_t planes, h, w, oh, ow;        /* x [planes, h, w] -> y [planes, oh, ow], dense */
    int64_t avg, kh, kw, sh, sw, ph, pw, dh, dw, count_pad, divisor;   /* avg: 0 max, 1 average */
    int32_t threads;                     /* planes split among this many (backend/cpu/step_threads.h) */
} ttc_native_pool_shape;

void ttc_native_pool(const ttc_native_pool_shape *s, const float *x, float *y);
/* Max pooling of 8-bit values (int8 when is_signed, else uint8): x [n, c, h, w] stored NHWC
 * (nhwc) or as s->planes = n * c planes, into y in the same layout; every window holds at least
 * one tap inside the image (torch's padding <= kernel / 2). */
void ttc_native_max_pool_q8(const ttc_native_pool_shape *s, int64_t n, int64_t c, bool nhwc, bool is_signed,
                            const void *x, void *y);

#endif
