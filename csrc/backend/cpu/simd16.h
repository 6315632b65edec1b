/* 16-float vectors for the CPU steps' lane loops (native_gemv.c, native_kv.c): one AVX-512
 * register in an avx512 clone, two AVX ones in an avx2 clone, four SSE ones on the baseline. */
#ifndef TTC_BACKEND_CPU_SIMD16_H
#define TTC_BACKEND_CPU_SIMD16_H

#include <string.h>

#pragma GCC diagnostic ignored "-Wpsabi"
typedef float v16 __attribute__((vector_size(64)));

static inline __attribute__((always_inline)) v16 ld16(const float *p) {
    v16 v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline __attribute__((always_inline)) float hsum16(v16 a) {
    float s[8];
    for (int i = 0; i < 8; i++) s[i] = a[i] + a[i + 8];
    return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}

#endif
