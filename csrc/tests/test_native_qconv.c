/*
 * oneDNN int8 convolutions with PT2E's epilogues as post-ops (backend/cpu/native_qconv.c)
 * against the plain C path of the same arithmetic (int32 accumulation, then the post-ops in
 * float32): u8/s8 inputs with and without a zero point, NCHW/NHWC sides, strides, padding,
 * dilation, groups and depthwise, odd channel counts and sizes, a float32 or 8-bit residual,
 * 8-bit and float32 outputs. Each call also runs on a fresh thread (an engine's native kernel
 * runs on whichever PoCL worker takes it). 8-bit outputs agree within one step (float
 * rounding of the requantisation at a tie), float32 ones within 1e-5 of the output's scale.
 * Skips the comparison where oneDNN does not load (the C path alone then runs).
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "ctest.h"
#include "backend/cpu/native_qconv.h"

static uint32_t rng = 4242;
static uint32_t urand(void) {
    rng = rng * 1664525u + 1013904223u;
    return rng >> 8;
}

typedef struct {
    const ttc_qconv_shape *s;
    const ttc_qconv_plan *p;
    const void *x, *res;
    const int8_t *w;
    const float *scale, *bias;
    void *y;
} call_t;

static void *run_call(void *v) {
    call_t *c = v;
    ttc_qconv_run(c, 0, c->s, c->p, c->x, c->w, c->scale, c->bias, c->res, c->y);
    return NULL;
}

static size_t dsize(int64_t dt) { return dt == TTC_DTYPE_FLOAT32 ? 4 : 1; }

static void push(ttc_qconv_plan *p, int32_t kind, float a, float b) {
    p->op[p->n].kind = kind;
    p->op[p->n].alpha = a;
    p->op[p->n].beta = b;
    p->n++;
}

/* one layer: x_dt u8/s8 (zero point zp), y_dt u8/s8/f32, residual r_dt (-1: none), relu */
static void case_(int64_t n, int64_t c, int64_t h, int64_t w, int64_t oc, int64_t k, int64_t st, int64_t pad,
                  int64_t dil, int64_t g, int64_t x_dt, int64_t zp, int64_t y_dt, int64_t r_dt, bool relu,
                  bool x_nhwc, bool y_nhwc, bool clip6) {
    int64_t oh = (h + 2 * pad - dil * (k - 1) - 1) / st + 1, ow = (w + 2 * pad - dil * (k - 1) - 1) / st + 1;
    ttc_qconv_shape s = {n, c, h, w, oc, oh, ow, g, k, k, st, st, pad, pad, dil, dil, zp, x_dt, y_dt, r_dt,
                         x_nhwc, y_nhwc, x_nhwc};
    ttc_qconv_plan p = {0};
    p.scale_leaf = 0;
    p.bias_leaf = 1;
    p.res_leaf = r_dt >= 0 ? 2 : -1;
    /* the PT2E epilogue: [+ (r - 3) * 0.05] [relu] [quantize (1 / 0.04, zero point 5 / -2) | float] */
    if (r_dt == TTC_DTYPE_FLOAT32) push(&p, TTC_QP_ADD_RES, 0, 0);
    if (r_dt >= 0 && r_dt != TTC_DTYPE_FLOAT32) {
        push(&p, TTC_QP_LINEAR, 1.0f / 0.05f, -3.0f);
        push(&p, TTC_QP_ADD_RES, 0, 0);
        push(&p, TTC_QP_LINEAR, 0.05f, 0.0f);
    }
    if (relu) push(&p, TTC_QP_RELU, 0, 0);
    if (clip6 && y_dt != TTC_DTYPE_FLOAT32) {
        /* quantize -> dequantize -> hardtanh(0, 6) (XNNPACK's ReLU6): two clips and two roundings
         * in one chain, each with its own bounds */
        bool u8 = y_dt == TTC_DTYPE_UINT8;
        push(&p, TTC_QP_LINEAR, 1.0f / 0.03f, 0.0f);
        push(&p, TTC_QP_ROUND, 0, 0);
        push(&p, TTC_QP_LINEAR, 1.0f, u8 ? 5.0f : -2.0f);
        push(&p, TTC_QP_CLIP, u8 ? 0.0f : -128.0f, u8 ? 255.0f : 127.0f);
        push(&p, TTC_QP_LINEAR, 1.0f, u8 ? -5.0f : 2.0f);
        push(&p, TTC_QP_LINEAR, 0.03f, 0.0f);
        push(&p, TTC_QP_CLIP, 0.0f, 0.5f);
    }
    if (y_dt != TTC_DTYPE_FLOAT32) {
        bool u8 = y_dt == TTC_DTYPE_UINT8;
        push(&p, TTC_QP_LINEAR, 1.0f / 0.04f, 0.0f);
        push(&p, TTC_QP_ROUND, 0, 0);
        push(&p, TTC_QP_LINEAR, 1.0f, u8 ? 5.0f : -2.0f);
        push(&p, TTC_QP_CLIP, u8 ? 0.0f : -128.0f, u8 ? 255.0f : 127.0f);
    }
    int64_t nx = n * c * h * w, nw = oc * (c / g) * k * k, ny = n * oc * oh * ow;
    uint8_t *x = malloc((size_t)nx), *res = malloc((size_t)ny * 4);
    int8_t *wt = malloc((size_t)nw);
    float *scale = malloc(sizeof(float) * (size_t)oc), *bias = malloc(sizeof(float) * (size_t)oc);
    char *y = malloc((size_t)ny * dsize(y_dt)), *y2 = malloc((size_t)ny * dsize(y_dt)), *yr = malloc((size_t)ny * dsize(y_dt));
    CHECK(x && res && wt && scale && bias && y && y2 && yr, "out of memory");
    if (!x || !res || !wt || !scale || !bias || !y || !y2 || !yr) goto done;
    for (int64_t i = 0; i < nx; i++) x[i] = (uint8_t)urand();
    for (int64_t i = 0; i < nw; i++) wt[i] = (int8_t)(urand() % 255 - 127);
    for (int64_t i = 0; i < oc; i++) {
        /* outputs of a few dozen steps: x_scale * w_scale[c] around 1 / (40 sqrt(taps) 128 64) */
        scale[i] = (float)(0.02 / (64.0 * sqrt((double)(c / g * k * k))) * (0.5 + (urand() % 100) / 100.0));
        bias[i] = (float)((int64_t)(urand() % 200) - 100) / 100.0f;
    }
    if (r_dt == TTC_DTYPE_FLOAT32)
        for (int64_t i = 0; i < ny; i++) ((float *)res)[i] = (float)((int64_t)(urand() % 400) - 200) / 100.0f;
    else
        for (int64_t i = 0; i < ny; i++) res[i] = (uint8_t)urand();
    call_t cl = {&s, &p, x, r_dt >= 0 ? res : NULL, wt, scale, bias, y};
    run_call(&cl);
    call_t c2 = cl;
    c2.y = y2;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, run_call, &c2) == 0, "thread");
    pthread_join(t, NULL);
    ttc_qconv_run_ref(&s, &p, x, wt, scale, bias, r_dt >= 0 ? res : NULL, yr);
    double worst = 0, big = 1e-6;
    int64_t off = 0;
    for (int64_t i = 0; i < ny; i++) {
        double a, b, a2;
        if (y_dt == TTC_DTYPE_FLOAT32) a = ((float *)y)[i], a2 = ((float *)y2)[i], b = ((float *)yr)[i];
        else if (y_dt == TTC_DTYPE_UINT8) a = ((uint8_t *)y)[i], a2 = ((uint8_t *)y2)[i], b = ((uint8_t *)yr)[i];
        else a = ((int8_t *)y)[i], a2 = ((int8_t *)y2)[i], b = ((int8_t *)yr)[i];
        worst = fmax(worst, fabs(a - b));
        big = fmax(big, fabs(b));
        off += a != a2;
    }
    double tol = y_dt == TTC_DTYPE_FLOAT32 ? 1e-5 * big : 1.0;
    CHECK(worst <= tol && off == 0,
          "qconv n%lld c%lld %lldx%lld oc%lld k%lld s%lld p%lld d%lld g%lld x%lld zp%lld y%lld r%lld relu%d nhwc %d/%d: "
          "max |oneDNN - C| %g (tol %g), %lld differ between threads",
          (long long)n, (long long)c, (long long)h, (long long)w, (long long)oc, (long long)k, (long long)st,
          (long long)pad, (long long)dil, (long long)g, (long long)x_dt, (long long)zp, (long long)y_dt,
          (long long)r_dt, relu, x_nhwc, y_nhwc, worst, tol, (long long)off);
done:
    ttc_qconv_forget(&cl);
    ttc_qconv_forget(&c2);
    free(x), free(res), free(wt), free(scale), free(bias), free(y), free(y2), free(yr);
}

static void test_qconv_matches_c(void) {
    const int64_t U8 = TTC_DTYPE_UINT8, S8 = TTC_DTYPE_INT8, F = TTC_DTYPE_FLOAT32;
    int64_t before = ttc_qconv_dnnl_calls();
    /* n, c, h, w, oc, k, stride, pad, dil, groups, x, zp, y, residual, relu, x_nhwc, y_nhwc */
    case_(2, 64, 9, 9, 64, 3, 1, 1, 1, 1, U8, 0, U8, -1, true, true, true, false);
    case_(2, 64, 9, 9, 64, 3, 1, 1, 1, 1, U8, 131, U8, -1, true, false, true, false);
    case_(1, 3, 17, 15, 16, 7, 2, 3, 1, 1, U8, 128, F, -1, true, false, false, false);      /* a stem */
    case_(2, 32, 8, 8, 48, 1, 2, 0, 1, 1, U8, 0, U8, -1, false, true, true, false);        /* downsampling */
    case_(2, 24, 7, 7, 24, 3, 1, 1, 1, 24, U8, 3, U8, -1, true, true, true, false);        /* depthwise */
    case_(1, 20, 6, 5, 30, 3, 1, 2, 2, 2, S8, 4, S8, -1, false, false, false, false);     /* groups, dilation, s8 */
    case_(2, 16, 5, 7, 16, 3, 1, 1, 1, 1, U8, 7, U8, U8, true, true, true, false);        /* 8-bit residual */
    case_(2, 16, 5, 7, 16, 1, 1, 0, 1, 1, U8, 0, F, F, true, true, false, false);         /* float residual */
    case_(3, 13, 1, 1, 11, 1, 1, 0, 1, 1, U8, 9, F, -1, false, false, false, false);      /* a linear */
    case_(5, 13, 3, 3, 7, 3, 1, 0, 1, 1, S8, 0, U8, -1, true, false, true, false);
    /* a hardtanh between two quantizes (PT2E's XNNPACK ReLU6): second clip, second round */
    case_(1, 8, 15, 13, 16, 3, 1, 1, 1, 1, S8, 0, S8, -1, false, false, false, true);
    case_(2, 16, 7, 9, 16, 3, 2, 1, 1, 16, S8, 0, S8, -1, false, true, true, true);   /* depthwise */
    case_(2, 16, 5, 7, 24, 1, 1, 0, 1, 1, U8, 3, U8, -1, true, true, true, true);
    if (ttc_qconv_available())
        CHECK(ttc_qconv_dnnl_calls() > before, "oneDNN loads but no call went through it");
}

TEST_MAIN(test_qconv_matches_c)
