/*
 * Quantized convolutions and linears as native oneDNN int8 steps (backend/cpu/native_qconv.c).
 *
 * PT2E's static int8 layers arrive as TTC_KOP_QCONV2D / TTC_KOP_QGEMM ops (convert/conv_quant.c):
 * acc = sum (x - zx) * w over u8/s8 activations and s8 weights, then an epilogue
 * acc * (sx * sw[c]) [+ bias[c]] [+ residual] [ReLU] [quantize -> u8/s8 | quantize -> dequantize].
 * The portable OpenCL kernels take one work-item per output element; on a CPU whose oneDNN
 * loads, these ops run instead as oneDNN's int8 convolution (VNNI / AMX: u8|s8 x s8 -> s32),
 * with the input zero point, the per-channel scales as output scales, the bias, and the rest of
 * the epilogue as post-ops, writing u8/s8 (or float32) directly: activations stay 8-bit
 * between consecutive quantized layers. A linear is a 1x1 convolution of [M, K, 1, 1].
 * Weights are reordered into oneDNN's blocked layout once per engine.
 *
 * The epilogue is read into a list of post-ops (ttc_qconv_plan) when the engine is built;
 * an epilogue with any other step keeps the op on the OpenCL kernel. The residual of ResNet's
 * blocks is a float32 tensor of the output's shape or an 8-bit one dequantized in the
 * epilogue ((r - zr) * sr); both are a binary post-op.
 *
 * Rounding: oneDNN computes what the epilogue says in float32 (round half to even, as rint);
 * the requantisation differs from torch's float model (conv of dequantized values) by float
 * rounding only, so an output lands at most one quantization step from torch's where a value
 * sits on a rounding tie (tests/device/test_quant_native.py).
 */
#ifndef TTC_BACKEND_CPU_NATIVE_QCONV_H
#define TTC_BACKEND_CPU_NATIVE_QCONV_H

#include <stdbool.h>
#include <stdint.h>

#include "../../kir/kir.h"

#define TTC_QPOST_MAX 16

typedef enum ttc_qpost_kind {
    TTC_QP_LINEAR = 0,   /* alpha x + beta */
    TTC_QP_RELU,
    TTC_QP_ROUND,        /* half to even */
    TTC_QP_CLIP,         /* min(max(x, alpha), beta) */
    TTC_QP_ADD_RES,      /* x + residual (float32, or 8-bit as stored: the linears around it dequantize) */
} ttc_qpost_kind;

typedef struct ttc_qconv_plan {
    int32_t scale_leaf;            /* epilogue leaf of the per-channel scales */
    int32_t bias_leaf;             /* ... of the bias, -1: none */
    int32_t res_leaf;              /* ... of the residual, -1: none */
    int32_t n;
    struct { int32_t kind; float alpha, beta; } op[TTC_QPOST_MAX];
} ttc_qconv_plan;

/* The shape of one call; a linear is n = M, c = K, oc = N and 1x1 everything else. */
typedef struct ttc_qconv_shape {
    int64_t n, c, h, w, oc, oh, ow, g, kh, kw, sh, sw, ph, pw, dh, dw;
    int64_t a_zp;                  /* the input's zero point */
    int64_t x_dt, y_dt, r_dt;      /* ttc_dtype of x (u8/s8), y (u8/s8/f32), residual (-1: none) */
    int64_t x_nhwc, y_nhwc, r_nhwc;
} ttc_qconv_shape;

/* Whether op (QCONV2D, or a QGEMM of a linear: x [M, K] dense, weights a transposed int8
 * constant) has operands and an epilogue the native step takes; fills plan. */
bool ttc_qconv_plan_op(const ttc_kir *k, const ttc_kop *op, ttc_qconv_plan *plan);
/* Whether oneDNN's int8 convolution loads here (the native step needs it). */
bool ttc_qconv_available(void);

/* y = the layer (s, plan) of x, w [oc, c/g, kh, kw] int8 (constant: reordered once per
 * (owner, ki)), scale[oc], bias[oc] (NULL: none), res (NULL: none), through oneDNN where it
 * takes the layer, else in plain C (the same arithmetic). */
void ttc_qconv_run(const void *owner, int32_t ki, const ttc_qconv_shape *s, const ttc_qconv_plan *plan,
                   const void *x, const int8_t *w, const float *scale, const float *bias, const void *res, void *y);
/* The plain C path alone (tests). */
void ttc_qconv_run_ref(const ttc_qconv_shape *s, const ttc_qconv_plan *plan, const void *x, const int8_t *w,
                       const float *scale, const float *bias, const void *res, void *y);
/* Calls that went through oneDNN in this process so far (tests, reports). */
int64_t ttc_qconv_dnnl_calls(void);
/* Drops the primitives and weight copies kept for owner. */
void ttc_qconv_forget(const void *owner);

#endif
