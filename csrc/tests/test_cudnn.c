/* cuDNN convolutions (backend/cuda/cudnn.h) against a double-precision CPU convolution, on
 * CUDA device 0: NCHW and NHWC, fp32 (true and TF32), fp16; 1x1, 3x3 stride 2, a 7x7 stem,
 * depthwise, grouped, dilated, asymmetric and odd sizes. Where CUDA or cuDNN is missing (PoCL
 * CI) only the argument checks run and the rest says why it skipped. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "backend/cuda/cuda_driver.h"
#include "backend/cuda/cudnn.h"
#include "tests/ctest.h"

static bool have_cudnn(void) {
    char why[256];
    if (ttc_cudnn_available(why, sizeof why)) return true;
    printf("skip: %s\n", why);
    return false;
}

static ttc_cudnn_conv conv(int n, int c, int h, int w, int k, int g, int kh, int kw, int sh, int sw, int ph, int pw, int dh,
                           int dw) {
    ttc_cudnn_conv d = {.dtype = TTC_DTYPE_FLOAT32, .n = n, .c = c, .h = h, .w = w, .k = k, .groups = g, .kh = kh, .kw = kw,
                        .stride = {sh, sw}, .pad = {ph, pw}, .dil = {dh, dw}};
    d.oh = (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1;
    d.ow = (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1;
    return d;
}

static void test_bad_args(void) {
    ttc_cudnn_plan *p = (ttc_cudnn_plan *)1;
    size_t ws = 1;
    ttc_cudnn_conv d = conv(1, 6, 8, 8, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1);   /* 4 groups do not divide 6 */
    CHECK(ttc_cudnn_conv_prepare(&d, 0, false, &p, &ws) == TTC_ERR_INVALID_ARG && !p && !ws, "groups");
    d = conv(1, 4, 8, 8, 4, 1, 3, 3, 1, 1, 1, 1, 1, 1);
    d.oh = 7;
    CHECK(ttc_cudnn_conv_prepare(&d, 0, false, &p, &ws) == TTC_ERR_INVALID_ARG, "output size");
    d = conv(1, 4, 2, 2, 4, 1, 5, 5, 1, 1, 0, 0, 1, 1);                 /* kernel larger than the input */
    CHECK(ttc_cudnn_conv_prepare(&d, 0, false, &p, &ws) == TTC_ERR_INVALID_ARG, "empty output");
    d = conv(1, 4, 8, 8, 4, 1, 3, 3, 1, 1, 1, 1, 1, 1);
    d.stride[0] = 0;
    CHECK(ttc_cudnn_conv_prepare(&d, 0, false, &p, &ws) == TTC_ERR_INVALID_ARG, "stride 0");
    d = conv(1, 4, 8, 8, 4, 1, 3, 3, 1, 1, 1, 1, 1, 1);
    d.dtype = TTC_DTYPE_INT32;
    CHECK(ttc_cudnn_conv_prepare(&d, 0, false, &p, &ws) == TTC_ERR_UNSUPPORTED, "int32");
    d.dtype = TTC_DTYPE_FLOAT32;
    CHECK(ttc_cudnn_conv_prepare(&d, -1, false, &p, &ws) == TTC_ERR_INVALID_ARG, "ordinal");
    CHECK(ttc_cudnn_conv_run(NULL, 16, 16, 16, 0, 0, 0) == TTC_ERR_INVALID_ARG, "no plan");
    if (!ttc_cudnn_available(NULL, 0))
        CHECK(ttc_cudnn_conv_prepare(&d, 0, false, &p, &ws) == TTC_ERR_UNSUPPORTED, "no cuDNN: %s", ttc_last_error());
}

static uint16_t to_half(float f) {   /* round to nearest even; the test's values are normal */
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000u;
    int32_t e = (int32_t)((u >> 23) & 0xff) - 127 + 15;
    uint32_t m = u & 0x7fffffu;
    if (e <= 0) return (uint16_t)sign;   /* below half's normal range: 0 is close enough here */
    uint32_t h = sign | ((uint32_t)e << 10) | (m >> 13);
    uint32_t rest = m & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) h++;
    return (uint16_t)h;
}

static float from_half(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ffu, u;
    if (!e) return m ? (sign ? -1.0f : 1.0f) * ldexpf((float)m, -24) : (sign ? -0.0f : 0.0f);
    u = sign | ((e - 15 + 127) << 23) | (m << 13);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float uniform(void) {   /* [-1, 1) */
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng >> 40) & 0xffffff) / 8388608.0f - 1.0f;
}

/* Index of element (a, b, i, j) of a tensor of sizes (A, B, I, J) stored NCHW-like or with
 * the second dimension last (NHWC, OHWI). */
static size_t at(bool last, int B, int I, int J, int a, int b, int i, int j) {
    return last ? (((size_t)a * I + i) * J + j) * B + b : (((size_t)a * B + b) * I + i) * J + j;
}

/* y and, per output, the sum of |x * w| (the scale its rounding error grows with). */
static void reference(const ttc_cudnn_conv *d, const float *x, const float *w, double *y, double *mag) {
    int cg = d->c / d->groups, kg = d->k / d->groups;
    for (int n = 0; n < d->n; n++)
        for (int k = 0; k < d->k; k++)
            for (int oy = 0; oy < d->oh; oy++)
                for (int ox = 0; ox < d->ow; ox++) {
                    double acc = 0, m = 0;
                    int g = k / kg;
                    for (int ci = 0; ci < cg; ci++)
                        for (int r = 0; r < d->kh; r++)
                            for (int s = 0; s < d->kw; s++) {
                                int iy = oy * d->stride[0] - d->pad[0] + r * d->dil[0];
                                int ix = ox * d->stride[1] - d->pad[1] + s * d->dil[1];
                                if (iy < 0 || iy >= d->h || ix < 0 || ix >= d->w) continue;
                                double p = (double)x[at(d->nhwc, d->c, d->h, d->w, n, g * cg + ci, iy, ix)] *
                                           w[at(d->nhwc, cg, d->kh, d->kw, k, ci, r, s)];
                                acc += p;
                                m += fabs(p);
                            }
                    size_t o = at(d->nhwc, d->k, d->oh, d->ow, n, k, oy, ox);
                    y[o] = acc;
                    mag[o] = m;
                }
}

/* One convolution through cuDNN against the reference: |y - ref| <= tol * sum|x * w| for
 * every output. */
static void check_conv(ttc_cudnn_conv d, const char *what) {
    size_t nx = (size_t)d.n * d.c * d.h * d.w, nw = (size_t)d.k * (d.c / d.groups) * d.kh * d.kw,
           ny = (size_t)d.n * d.k * d.oh * d.ow;
    bool half = d.dtype == TTC_DTYPE_FLOAT16;
    size_t es = half ? 2 : 4;
    float *x = malloc(nx * 4), *w = malloc(nw * 4), *y = malloc(ny * 4);
    double *ref = malloc(ny * sizeof(double)), *mag = malloc(ny * sizeof(double));
    void *hx = malloc(nx * es), *hw = malloc(nw * es), *hy = malloc(ny * es);
    uint64_t dx = 0, dw = 0, dy = 0, dws = 0;
    ttc_cuda_scope sc = {0};
    if (!x || !w || !y || !ref || !mag || !hx || !hw || !hy) { CHECK(0, "out of memory"); goto done; }
    for (size_t i = 0; i < nx; i++) {
        x[i] = uniform();
        if (half) { ((uint16_t *)hx)[i] = to_half(x[i]); x[i] = from_half(((uint16_t *)hx)[i]); }
    }
    for (size_t i = 0; i < nw; i++) {
        w[i] = uniform();
        if (half) { ((uint16_t *)hw)[i] = to_half(w[i]); w[i] = from_half(((uint16_t *)hw)[i]); }
    }
    if (!half) { memcpy(hx, x, nx * 4); memcpy(hw, w, nw * 4); }
    reference(&d, x, w, ref, mag);
    ttc_cudnn_plan *p = NULL, *p2 = NULL;
    size_t ws = 0, ws2 = 0;
    /* NHWC cases take cuDNN's heuristic choice (what a stream being captured gets), NCHW ones
     * the timed one */
    ttc_status s = ttc_cudnn_conv_prepare(&d, 0, !d.nhwc, &p, &ws);
    CHECK(s == TTC_OK, "%s: prepare: %s", what, ttc_last_error());
    if (s != TTC_OK) goto done;
    CHECK_OK(ttc_cudnn_conv_prepare(&d, 0, false, &p2, &ws2));
    CHECK(p2 == p && ws2 == ws, "%s: the plan is made once", what);
    bool timed0;
    ttc_cudnn_plan_algo(p, &timed0, NULL, NULL, NULL);
    CHECK(timed0 == !d.nhwc, "%s: timed %d", what, timed0);
    CHECK_OK(ttc_cuda_enter(0, &sc));
    if (ttc_cuda_alloc(nx * es, &dx) || ttc_cuda_alloc(nw * es, &dw) || ttc_cuda_alloc(ny * es, &dy) ||
        (ws && ttc_cuda_alloc(ws, &dws))) {
        CHECK(0, "%s: cuMemAlloc: %s", what, ttc_last_error());
        goto done;
    }
    CHECK_OK(ttc_cuda_upload(dx, hx, nx * es));
    CHECK_OK(ttc_cuda_upload(dw, hw, nw * es));
    if (ws) CHECK(ttc_cudnn_conv_run(p, dx, dw, dy, dws, ws - 1, 0) == TTC_ERR_INVALID_ARG, "%s: short workspace", what);
    s = ttc_cudnn_conv_run(p, dx, dw, dy, dws, ws, 0);
    CHECK(s == TTC_OK, "%s: run: %s", what, ttc_last_error());
    if (s != TTC_OK) goto done;
    CHECK_OK(ttc_cuda_download(hy, dy, ny * es, 0));
    double tol = d.dtype == TTC_DTYPE_FLOAT32 ? (d.tf32 ? 2e-3 : 1e-5) : 2e-3, worst = 0;
    size_t bad = 0, worst_at = 0;
    for (size_t i = 0; i < ny; i++) {
        double v = half ? from_half(((uint16_t *)hy)[i]) : ((float *)hy)[i];
        double e = fabs(v - ref[i]) / (mag[i] + 1e-30);
        if (!(e <= tol)) bad++;
        if (!(e <= worst)) { worst = e; worst_at = i; }
    }
    bool timed;
    int32_t algo, math;
    double us;
    ttc_cudnn_plan_algo(p, &timed, &algo, &math, &us);
    CHECK(!bad, "%s: %zu of %zu outputs off by more than %g of sum|x*w| (worst %g at %zu: %g vs %g); algo %d math %d",
          what, bad, ny, tol, worst, worst_at,
          half ? from_half(((uint16_t *)hy)[worst_at]) : ((float *)hy)[worst_at], ref[worst_at], algo, math);
    printf("  %-34s algo %d math %d%s %.1f us ws %zu: worst %.2g of sum|x*w|\n", what, algo, math, timed ? " (timed)" : "", us, ws,
           worst);
done:
    if (dx) ttc_cuda_free(dx);
    if (dw) ttc_cuda_free(dw);
    if (dy) ttc_cuda_free(dy);
    if (dws) ttc_cuda_free(dws);
    ttc_cuda_leave(&sc);
    free(x); free(w); free(y); free(ref); free(mag); free(hx); free(hw); free(hy);
}

static void test_convolutions(void) {
    if (!have_cudnn()) return;
    printf("  cuDNN %zu\n", ttc_cudnn_version());
    struct { const char *name; ttc_cudnn_conv d; } cases[] = {
        {"1x1", conv(2, 16, 7, 9, 24, 1, 1, 1, 1, 1, 0, 0, 1, 1)},
        {"3x3 stride 2", conv(2, 8, 13, 11, 16, 1, 3, 3, 2, 2, 1, 1, 1, 1)},
        {"7x7 stem", conv(1, 3, 33, 31, 8, 1, 7, 7, 2, 2, 3, 3, 1, 1)},
        {"depthwise 3x3", conv(2, 16, 10, 9, 16, 16, 3, 3, 1, 1, 1, 1, 1, 1)},
        {"grouped 3x3 g4", conv(1, 16, 9, 9, 32, 4, 3, 3, 1, 1, 1, 1, 1, 1)},
        {"dilated 3x3 d2", conv(1, 8, 12, 15, 8, 1, 3, 3, 1, 1, 2, 2, 2, 2)},
        {"1x5 stride (1,2)", conv(3, 5, 7, 17, 7, 1, 1, 5, 1, 2, 0, 2, 1, 1)},
    };
    struct { ttc_dtype t; bool tf32; const char *name; } modes[] = {
        {TTC_DTYPE_FLOAT32, false, "fp32"}, {TTC_DTYPE_FLOAT32, true, "tf32"}, {TTC_DTYPE_FLOAT16, false, "fp16"}};
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++)
        for (int nhwc = 0; nhwc < 2; nhwc++)
            for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
                ttc_cudnn_conv d = cases[i].d;
                d.dtype = modes[m].t;
                d.tf32 = modes[m].tf32;
                d.nhwc = nhwc;
                char what[96];
                snprintf(what, sizeof what, "%s %s %s", modes[m].name, nhwc ? "NHWC" : "NCHW", cases[i].name);
                check_conv(d, what);
            }
}

TEST_MAIN(test_bad_args, test_convolutions)
