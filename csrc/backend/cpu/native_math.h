/*
 * Vectorised float32 math for native host code (epilogues inside native calls, native
 * attention's softmax): exp, erf, tanh, GELU (both forms), sigmoid and SiLU over arrays.
 *
 * libm's expf/erff/tanhf are scalar calls that keep a loop from vectorising, so the formulas
 * are branch-free C (both sides of every range switch computed, one selected). erf, tanh and
 * GELU are kernels/mathfn.cl's (its header has the error analysis: erf 2.1 ulp, GELU 4.3 ulp
 * against float64); exp is ours here as well: x = n ln2 + r, |r| <= ln2/2 (ln2 split so that
 * n * ln2_hi is exact), e^r by its Taylor series to r^7 (truncation below 1e-8 relative), 2^n
 * applied in two halves so that denormal results come out and large ones overflow to inf.
 * NaN propagates; exp(-inf) = 0, exp(+inf) = inf.
 *
 * The loops are compiled for the baseline x86-64 (SSE2) and again for AVX2+FMA and AVX-512
 * (native_math.c), picked once by what the CPU supports; the build flags stay portable.
 * Contraction stays off (-std=c11), so every variant gives the same bits.
 *
 *   if (ttc_nm_unary_ok(op)) ttc_nm_unary(op, x, y, n);     // y[j] = op(x[j])
 */
#ifndef TTC_ENGINE_NATIVE_MATH_H
#define TTC_ENGINE_NATIVE_MATH_H

#include <stdbool.h>
#include <stdint.h>

#include "../../kir/kir.h"

/* Whether ttc_nm_unary computes op: EXP, ERF, TANH, SIGMOID, SILU, GELU_ERF, GELU_TANH. */
bool ttc_nm_unary_ok(ttc_eop op);
/* y[j] = op(x[j]) for j < n (y may be x). */
void ttc_nm_unary(ttc_eop op, const float *x, float *y, int64_t n);
/* The instruction set the loops run with: "avx512", "avx2" or "baseline". */
const char *ttc_nm_isa(void);
/* Tests: ttc_nm_unary with the named instruction set's loops; false (nothing written) where
 * they are not compiled in or the CPU lacks the instructions. */
bool ttc_nm_unary_isa(const char *isa, ttc_eop op, const float *x, float *y, int64_t n);

#endif
