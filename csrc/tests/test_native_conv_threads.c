/*
 * oneDNN convolutions made on one thread and run on others (backend/cpu/native_conv_dnnl.c): an
 * engine's native kernel runs on whichever PoCL worker takes it, so the primitive made on its
 * first call is later run by threads that never made one. Before user scratchpads, oneDNN's
 * Winograd kernel then took the running thread's (NULL) library scratchpad and crashed
 * (session 8, torchvision ResNet-18 with TORCHTRT_C_CONV_WINOGRAD=1). Each call here runs on a
 * fresh thread and is checked against a float64 direct convolution.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>

#include "ctest.h"
#include "backend/cpu/native_conv_dnnl.h"

typedef struct {
    const void *owner;
    ttc_dnnl_conv_shape s;
    const float *x, *w;
    float *y;
    bool ok;
} call_t;

static void *run_call(void *v) {
    call_t *c = v;
    c->ok = ttc_dnnl_conv(c->owner, 0, &c->s, c->x, c->w, true, c->y);
    return NULL;
}

static bool call_on_new_thread(call_t *c) {
    pthread_t t;
    if (pthread_create(&t, NULL, run_call, c) != 0) return false;
    pthread_join(t, NULL);
    return true;
}

/* y = conv(x, w), NCHW, groups 1, float64 accumulation */
static void conv_ref(const ttc_dnnl_conv_shape *s, const float *x, const float *w, double *y) {
    for (int64_t n = 0; n < s->n; n++)
        for (int64_t o = 0; o < s->oc; o++)
            for (int64_t i = 0; i < s->oh; i++)
                for (int64_t j = 0; j < s->ow; j++) {
                    double acc = 0;
                    for (int64_t c = 0; c < s->c; c++)
                        for (int64_t a = 0; a < s->kh; a++)
                            for (int64_t b = 0; b < s->kw; b++) {
                                int64_t h = i * s->sh - s->ph + a, q = j * s->sw - s->pw + b;
                                if (h < 0 || h >= s->h || q < 0 || q >= s->w) continue;
                                acc += (double)x[((n * s->c + c) * s->h + h) * s->w + q] *
                                       w[((o * s->c + c) * s->kh + a) * s->kw + b];
                            }
                    y[((n * s->oc + o) * s->oh + i) * s->ow + j] = acc;
                }
}

static uint32_t rng = 12345;
static float frand(void) {
    rng = rng * 1664525u + 1013904223u;
    return (float)((rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* The convolution of shape s, first on one thread, then on `calls` fresh threads. */
static void cross_thread(ttc_dnnl_conv_shape s, int calls) {
    int64_t nx = s.n * s.c * s.h * s.w, nw = s.oc * s.c * s.kh * s.kw, ny = s.n * s.oc * s.oh * s.ow;
    float *x = malloc(nx * sizeof *x), *w = malloc(nw * sizeof *w), *y = malloc(ny * sizeof *y);
    double *ref = malloc(ny * sizeof *ref);
    CHECK(x && w && y && ref, "out of memory");
    if (!x || !w || !y || !ref) goto done;
    for (int64_t i = 0; i < nx; i++) x[i] = frand();
    for (int64_t i = 0; i < nw; i++) w[i] = frand() * 0.1f;
    conv_ref(&s, x, w, ref);
    static int owner_tag;
    call_t c = {&owner_tag, s, x, w, y, false};
    for (int k = 0; k <= calls; k++) {
        memset(y, 0, ny * sizeof *y);
        CHECK(call_on_new_thread(&c), "pthread_create failed");
        CHECK(c.ok, "call %d: oneDNN refused a %lldx%lld convolution", k, (long long)s.kh, (long long)s.kw);
        if (!c.ok) break;
        double worst = 0;
        for (int64_t i = 0; i < ny; i++) {
            double e = fabs(y[i] - ref[i]);
            worst = e > worst || e != e ? e : worst;
        }
        CHECK(worst < 1e-3, "call %d on a new thread: max |y - ref| = %g (wino %lld)", k, worst, (long long)s.wino);
    }
    ttc_dnnl_forget(&owner_tag);
done:
    free(x), free(w), free(y), free(ref);
}

static void test_winograd_across_threads(void) {
    if (!ttc_dnnl_available()) {
        printf("skip (%s)\n", ttc_dnnl_library());
        return;
    }
    int64_t before = ttc_dnnl_wino_primitives();
    /* 3x3 stride 1, odd images: oneDNN's Winograd where the CPU has it (AVX-512), else direct.
     * oneDNN 2.6.3 on AVX-512 picks jit_wino_4x3 (a library scratchpad shared per thread: the
     * one that crashed) for the first, jit_fp32_wino_2x3 (one of its own) for the second. */
    ttc_dnnl_conv_shape s = {.n = 1, .c = 128, .h = 27, .w = 29, .oc = 96, .oh = 27, .ow = 29, .g = 1, .kh = 3,
                             .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1, .dh = 1, .dw = 1, .wino = 1};
    cross_thread(s, 3);
    ttc_dnnl_conv_shape small = {.n = 2, .c = 32, .h = 13, .w = 11, .oc = 48, .oh = 13, .ow = 11, .g = 1, .kh = 3,
                                 .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1, .dh = 1, .dw = 1, .wino = 1};
    cross_thread(small, 2);
    printf("     winograd primitives made: %lld\n", (long long)(ttc_dnnl_wino_primitives() - before));
}

static void test_direct_across_threads(void) {
    if (!ttc_dnnl_available()) return;
    ttc_dnnl_conv_shape s = {.n = 1, .c = 5, .h = 17, .w = 9, .oc = 7, .oh = 8, .ow = 3, .g = 1, .kh = 5,
                             .kw = 5, .sh = 2, .sw = 3, .ph = 1, .pw = 2, .dh = 1, .dw = 1};
    cross_thread(s, 2);
}

TEST_MAIN(test_winograd_across_threads, test_direct_across_threads)
