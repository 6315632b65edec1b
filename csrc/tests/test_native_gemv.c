/*
 * The C GEMV of native float32 linears (backend/cpu/native_gemv.c) against a float64 reference:
 * every row count 1..8 (and 11: passes of 8), weight rows not a multiple of the 4-row blocks,
 * K below, at and around the 16 float lanes, on 1 and 2 threads (the step pool) with the same
 * bits. The buffers are exactly their size, so that ASan sees any read past a row's end.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ctest.h"
#include "backend/cpu/native_gemv.h"

static uint32_t rng = 12345;
static float frand(void) {
    rng = rng * 1664525u + 1013904223u;
    return (float)((rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static void case_(int64_t m, int64_t n, int64_t k) {
    float *x = malloc(sizeof(float) * (size_t)(m * k)), *w = malloc(sizeof(float) * (size_t)(n * k));
    float *y1 = malloc(sizeof(float) * (size_t)(m * n)), *y2 = malloc(sizeof(float) * (size_t)(m * n));
    CHECK(x && w && y1 && y2, "out of memory");
    if (!x || !w || !y1 || !y2) goto done;
    for (int64_t i = 0; i < m * k; i++) x[i] = frand();
    for (int64_t i = 0; i < n * k; i++) w[i] = frand() / sqrtf((float)k);
    ttc_native_gemv(x, w, y1, m, n, k, 1);
    ttc_native_gemv(x, w, y2, m, n, k, 2);
    double worst = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = 0;
            for (int64_t q = 0; q < k; q++) acc += (double)x[i * k + q] * w[j * k + q];
            double e = fabs(y1[i * n + j] - acc);
            worst = e > worst || e != e ? e : worst;
        }
    CHECK(worst < 1e-4, "%lldx%lldx%lld: max |y - ref| = %g", (long long)m, (long long)n, (long long)k, worst);
    CHECK(!memcmp(y1, y2, sizeof(float) * (size_t)(m * n)), "%lldx%lldx%lld: 1 and 2 threads differ", (long long)m,
          (long long)n, (long long)k);
done:
    free(x), free(w), free(y1), free(y2);
}

static void test_shapes(void) {
    static const int64_t ns[] = {1, 3, 4, 5, 17, 130, 1031};
    static const int64_t ks[] = {1, 7, 15, 16, 17, 33, 257};
    for (int64_t m = 1; m <= 8; m++)
        for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
            for (size_t b = 0; b < sizeof ks / sizeof ks[0]; b++) case_(m, ns[a], ks[b]);
    case_(11, 37, 40);
}

static void test_counts_calls(void) {
    float x[2] = {1, 2}, w[2] = {3, 4}, y = 0;
    int64_t before = ttc_native_gemv_calls();
    ttc_native_gemv(x, w, &y, 1, 1, 2, 1);
    CHECK(y == 11.0f, "y = %g", y);
    CHECK(ttc_native_gemv_calls() - before == 1, "calls %lld", (long long)(ttc_native_gemv_calls() - before));
}

TEST_MAIN(test_shapes, test_counts_calls)
