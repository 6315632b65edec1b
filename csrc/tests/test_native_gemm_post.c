/*
 * oneDNN matmuls with post-ops (backend/cpu/native_gemm_dnnl.c): bias[N] + an activation inside the
 * primitive, which is made on one thread and run on fresh ones (an engine's native kernel runs
 * on whichever PoCL worker takes it; every primitive runs in user scratchpad mode with the
 * calling thread's buffer). Checked against a float64 GEMM + bias + activation, for B as [N,K]
 * (a Linear's weight) and [K,N], constant (reordered once and kept) or not, odd M/N/K.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>

#include "ctest.h"
#include "backend/cpu/native_gemm_dnnl.h"

typedef struct {
    const void *owner;
    ttc_dnnl_gemm_shape s;
    const float *a, *b, *bias;
    const ttc_dnnl_post *post;
    bool b_const;
    float *c;
    bool ok, done;
} call_t;

static void *run_call(void *v) {
    call_t *c = v;
    c->ok = ttc_dnnl_gemm_post(c->owner, 0, &c->s, c->a, c->b, c->b_const, c->c, c->post, c->bias, &c->done);
    return NULL;
}

static bool call_on_new_thread(call_t *c) {
    pthread_t t;
    if (pthread_create(&t, NULL, run_call, c) != 0) return false;
    pthread_join(t, NULL);
    return true;
}

static double act(ttc_dnnl_act a, double x) {
    switch (a) {
    case TTC_DNNL_GELU_ERF: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case TTC_DNNL_GELU_TANH: return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    case TTC_DNNL_SWISH: return x / (1.0 + exp(-x));
    default: return x;
    }
}

static uint32_t rng = 777;
static float frand(void) {
    rng = rng * 1664525u + 1013904223u;
    return (float)((rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static void case_(int64_t m, int64_t n, int64_t k, bool trans_b, bool b_const, const ttc_dnnl_post *post) {
    float *a = malloc(m * k * sizeof *a), *b = malloc(k * n * sizeof *b), *bias = malloc(n * sizeof *bias);
    float *c = malloc(m * n * sizeof *c);
    double *ref = malloc(m * n * sizeof *ref);
    CHECK(a && b && bias && c && ref, "out of memory");
    if (!a || !b || !bias || !c || !ref) goto done;
    for (int64_t i = 0; i < m * k; i++) a[i] = frand();
    for (int64_t i = 0; i < k * n; i++) b[i] = frand() / sqrtf((float)k);
    for (int64_t i = 0; i < n; i++) bias[i] = frand();
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = post->bias ? bias[j] : 0.0;
            for (int64_t q = 0; q < k; q++) acc += (double)a[i * k + q] * (trans_b ? b[j * k + q] : b[q * n + j]);
            for (int32_t t = 0; t < post->n_act; t++) acc = act(post->act[t], acc);
            ref[i * n + j] = acc;
        }
    static int owner_tag;
    call_t cl = {&owner_tag, {m, n, k, trans_b}, a, b, bias, post, b_const, c, false, false};
    for (int call = 0; call < 3; call++) {
        for (int64_t i = 0; i < m * n; i++) c[i] = NAN;
        CHECK(call_on_new_thread(&cl), "pthread_create failed");
        CHECK(cl.ok, "%lldx%lldx%lld: oneDNN refused the matmul", (long long)m, (long long)n, (long long)k);
        if (!cl.ok) break;
        CHECK(cl.done, "%lldx%lldx%lld: post-ops not applied", (long long)m, (long long)n, (long long)k);
        double worst = 0;
        for (int64_t i = 0; i < m * n; i++) {
            double e = fabs(c[i] - ref[i]);
            worst = e > worst || e != e ? e : worst;
        }
        CHECK(worst < 1e-4, "%lldx%lldx%lld trans_b %d const %d call %d: max |c - ref| = %g", (long long)m,
              (long long)n, (long long)k, trans_b, b_const, call, worst);
    }
    ttc_dnnl_gemm_forget(&owner_tag);
done:
    free(a), free(b), free(bias), free(c), free(ref);
}

static void test_bias_gelu_across_threads(void) {
    if (!ttc_dnnl_gemm_available()) {
        printf("skip (oneDNN not loaded)\n");
        return;
    }
    int64_t before = ttc_dnnl_gemm_post_calls();
    ttc_dnnl_post gelu = {.bias = true, .n_act = 1, .act = {TTC_DNNL_GELU_ERF}};
    ttc_dnnl_post tgelu = {.bias = true, .n_act = 1, .act = {TTC_DNNL_GELU_TANH}};
    ttc_dnnl_post silu = {.bias = false, .n_act = 1, .act = {TTC_DNNL_SWISH}, .alpha = {1.0f}};
    ttc_dnnl_post bias = {.bias = true};
    case_(37, 129, 17, true, true, &gelu);
    case_(130, 33, 96, false, true, &tgelu);
    case_(5, 77, 64, true, false, &silu);
    case_(1, 3, 769, false, false, &bias);
    CHECK(ttc_dnnl_gemm_post_calls() - before == 12, "post calls counted: %lld",
          (long long)(ttc_dnnl_gemm_post_calls() - before));
}

TEST_MAIN(test_bias_gelu_across_threads)
