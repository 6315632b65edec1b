/*
 * The weight-only int8/int4 linear step (backend/cpu/native_wq.c) against a float64 reference,
 * on each of its GEMV loops (TORCHTRT_C_NATIVE_WQ_ISA = generic, avx2, avx512, vnni, each capped
 * by what the CPU has; the test checks which loop ran by its call counter): rows of x 1..8, 11
 * and 16 (passes of 8), 40 (the VNNI loop's passes; the others' dequantized blocks + sgemm) and
 * 70 (blocks + sgemm for all), weight rows not a multiple of the VNNI form's 4-row blocks, int8
 * and int4 with per-channel scales and groups of 2..128 elements, rows whose bytes are not a
 * multiple of the 16- / 32-byte chunks (masked loads), groups the VNNI form does not take (40
 * int8 / 20 bytes: the float form runs), zero points and none; on 1 and 2 threads with the same
 * bits. Buffers are exactly their size, so that ASan sees any read past a row's end.
 * Tolerances: every loop 1e-5 * sum_k (|q| + |z|) s |x| (float sums in another order, the zero
 * point's term apart: sum q s x - z s sum x), q the stored integer; the VNNI loop adds
 * x's rounding to int16, at most sum_k |q s| * max|x| / 65534 (the zero points' term uses x's
 * float sums).
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ctest.h"
#include "backend/blas.h"
#include "backend/cpu/native_wq.h"

static uint32_t rng = 2024;
static uint32_t urand(void) {
    rng = rng * 1664525u + 1013904223u;
    return rng >> 8;
}
static float frand(void) { return (float)(urand() & 0xffff) / 32768.0f - 1.0f; }

static int64_t calls_now(int64_t *c) {
    int64_t t = 0;
    for (int i = 0; i < TTC_WQ_ISAS; i++) t += c[i] = ttc_native_wq_calls((ttc_wq_isa)i);
    return t;
}

/* which loop must take this layer when the cap is `cap` */
static ttc_wq_isa expected(ttc_wq_isa cap, int64_t K, int64_t group, int bits) {
    ttc_wq_isa best = ttc_native_wq_isa();   /* the knob unset: the CPU's best */
    ttc_wq_isa isa = cap < best ? cap : best;
    if (isa == TTC_WQ_VNNI) {
        int64_t G = K / group, gb = bits == 8 ? group : group / 2;
        bool fits = G == 1 || gb % 32 == 0 || gb == 2 || gb == 4 || gb == 8 || gb == 16;
        if (!fits) isa = TTC_WQ_AVX512;
    }
    return isa;
}

/* The GEMV's row limit for the loop that runs (native_wq.h's table, restated): past it the
 * dequantized blocks + the BLAS. */
static int64_t expected_max_m(ttc_wq_isa want, int64_t N, int64_t K, int bits) {
    switch (want) {
    case TTC_WQ_VNNI: return bits == 8 || N * K >= ((int64_t)1 << 22) ? 64 : 32;
    case TTC_WQ_AVX512: return bits == 8 ? 32 : 16;
    case TTC_WQ_AVX2: return bits == 8 ? 32 : 12;
    default: return 16;
    }
}

static void case_(ttc_wq_isa cap, int64_t M, int64_t N, int64_t K, int64_t group, int bits, bool zeros) {
    int64_t G = K / group, B = bits == 8 ? K : K / 2;
    float *x = malloc(sizeof(float) * (size_t)(M * K)), *s = malloc(sizeof(float) * (size_t)(N * G));
    float *z = zeros ? malloc(sizeof(float) * (size_t)(N * G)) : NULL;
    uint8_t *q = malloc((size_t)(N * B));
    float *y1 = malloc(sizeof(float) * (size_t)(M * N)), *y2 = malloc(sizeof(float) * (size_t)(M * N));
    CHECK(x && s && q && y1 && y2 && (!zeros || z), "out of memory");
    if (!x || !s || !q || !y1 || !y2 || (zeros && !z)) goto done;
    for (int64_t i = 0; i < M * K; i++) x[i] = frand() * (i % 7 == 3 ? 4.0f : 1.0f);
    for (int64_t i = 0; i < N * B; i++) q[i] = (uint8_t)urand();
    for (int64_t i = 0; i < N * G; i++) {
        s[i] = 0.01f + 0.05f * (frand() + 1.0f);
        if (z) z[i] = bits == 8 ? (float)((int)(urand() % 9) - 4) : (float)(urand() % 16) + (i % 3 == 0 ? 0.25f : 0.0f);
    }
    setenv("TORCHTRT_C_NATIVE_WQ_ISA", ttc_native_wq_isa_name(cap), 1);
    int64_t before[TTC_WQ_ISAS], after[TTC_WQ_ISAS];
    calls_now(before);
    ttc_native_wq_linear(&(ttc_native_wq){x, q, s, z, y1, M, N, K, group, bits, 1});
    calls_now(after);
    ttc_native_wq_linear(&(ttc_native_wq){x, q, s, z, y2, M, N, K, group, bits, 2});
    unsetenv("TORCHTRT_C_NATIVE_WQ_ISA");
    ttc_wq_isa want = expected(cap, K, group, bits);
    /* more rows: dequantized blocks + sgemm where a BLAS loads (no loop's counter) */
    bool gemv_path = M <= expected_max_m(want, N, K, bits) || !ttc_blas_available();
    int64_t ran = 0;
    for (int i = 0; i < TTC_WQ_ISAS; i++) ran += after[i] - before[i];
    CHECK(ran == (gemv_path ? 1 : 0), "M%lld: %lld GEMV calls", (long long)M, (long long)ran);
    if (gemv_path)
        CHECK(after[want] - before[want] == 1, "cap %s M%lld N%lld K%lld g%lld int%d: the %s loop did not run",
              ttc_native_wq_isa_name(cap), (long long)M, (long long)N, (long long)K, (long long)group, bits,
              ttc_native_wq_isa_name(want));
    double worst = 0;
    for (int64_t m = 0; m < M; m++) {
        double mx = 0;
        for (int64_t k = 0; k < K; k++) mx = fmax(mx, fabs(x[m * K + k]));
        for (int64_t n = 0; n < N; n++) {
            double acc = 0, absq = 0, absp = 0;
            for (int64_t k = 0; k < K; k++) {
                int64_t g = k / group;
                double qv = bits == 8 ? (double)(int8_t)q[n * B + k] : (double)((q[n * B + k / 2] >> (4 * (k & 1))) & 15);
                double w = (qv - (z ? z[n * G + g] : 0.0)) * s[n * G + g];
                acc += w * x[m * K + k];
                absq += fabs(qv * s[n * G + g]);
                absp += (fabs(qv) + (z ? fabs(z[n * G + g]) : 0.0)) * s[n * G + g] * fabs(x[m * K + k]);
            }
            double tol = 1e-5 * absp + 1e-30 + (want == TTC_WQ_VNNI && gemv_path ? absq * mx / 65534.0 * 1.001 : 0.0);
            double e = fabs(y1[m * N + n] - acc);
            if (!(e <= tol)) {
                if (worst == 0)
                    CHECK(0, "cap %s M%lld N%lld K%lld g%lld int%d zeros %d: y[%lld, %lld] = %g, ref %g (tol %g)",
                          ttc_native_wq_isa_name(cap), (long long)M, (long long)N, (long long)K, (long long)group, bits,
                          (int)zeros, (long long)m, (long long)n, y1[m * N + n], acc, tol);
                worst = e > worst || e != e ? (e == e ? e : 1e30) : worst;
            }
        }
    }
    CHECK(!memcmp(y1, y2, sizeof(float) * (size_t)(M * N)), "cap %s M%lld N%lld K%lld g%lld int%d: 1 and 2 threads differ",
          ttc_native_wq_isa_name(cap), (long long)M, (long long)N, (long long)K, (long long)group, bits);
done:
    free(x), free(s), free(z), free(q), free(y1), free(y2);
}

static const struct { int64_t K, group; int bits; } LAYERS[] = {
    {64, 64, 8},    /* per channel, 2 whole chunks */
    {40, 40, 8},    /* per channel, 40 bytes: a masked last chunk */
    {7, 7, 8},      /* per channel, less than a chunk */
    {96, 32, 8},    /* a chunk a group */
    {256, 128, 8},  /* 4 chunks a group */
    {72, 8, 8},     /* 4 groups a chunk, the last chunk 8 bytes */
    {48, 16, 8},    /* 2 groups a chunk */
    {120, 40, 8},   /* groups of 40 bytes: not whole lanes, the float form */
    {128, 32, 4},   /* 16 bytes a group */
    {1376, 32, 4},  /* the small Llama's down projection: 43 groups, 688 bytes */
    {256, 128, 4},  /* 64 bytes a group */
    {72, 8, 4},     /* 4 bytes a group, 36 bytes */
    {96, 96, 4},    /* per channel, 48 bytes */
    {4, 4, 4},      /* 2 bytes a group, one lane */
    {2, 2, 4},      /* one byte */
    {80, 40, 4},    /* 20 bytes a group: the float form */
};

static void test_layers(void) {
    /* both sides of every row limit: 12 | 13 (AVX2 int4), 16 | 24 (AVX-512 int4), 32 | 33 (float
     * int8, VNNI int4), 40 | 70 (VNNI int8) */
    static const int64_t ms[] = {1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 13, 16, 24, 32, 33, 40, 70};
    static const int64_t ns[] = {1, 5, 37};
    for (int cap = 0; cap < TTC_WQ_ISAS; cap++)
        for (size_t l = 0; l < sizeof LAYERS / sizeof LAYERS[0]; l++)
            for (size_t a = 0; a < sizeof ms / sizeof ms[0]; a++)
                for (size_t b = 0; b < sizeof ns / sizeof ns[0]; b++)
                    case_((ttc_wq_isa)cap, ms[a], ns[b], LAYERS[l].K, LAYERS[l].group, LAYERS[l].bits, (a + b + l) % 2 == 0);
}

/* A row of x with inf or NaN: the VNNI loop (which would scale by max|x|) hands the call to the
 * float loop, which gives torch's inf / NaN. */
static void test_non_finite_x(void) {
    const int64_t M = 2, N = 3, K = 64;
    float x[2 * 64], s[3] = {0.1f, 0.2f, 0.3f}, y[6];
    int8_t q[3 * 64];
    for (int64_t i = 0; i < M * K; i++) x[i] = 0.5f;
    for (int64_t i = 0; i < N * K; i++) q[i] = (int8_t)(i % 5 + 1);
    x[3] = INFINITY;
    x[K + 5] = NAN;
    ttc_native_wq_linear(&(ttc_native_wq){x, q, s, NULL, y, M, N, K, K, 8, 1});
    for (int64_t n = 0; n < N; n++) {
        CHECK(isinf(y[n]) && y[n] > 0, "y[0, %lld] = %g", (long long)n, y[n]);
        CHECK(isnan(y[N + n]), "y[1, %lld] = %g", (long long)n, y[N + n]);
    }
}

static void test_knob_names(void) {
    CHECK(!strcmp(ttc_native_wq_isa_name(TTC_WQ_VNNI), "vnni") && !strcmp(ttc_native_wq_isa_name(TTC_WQ_GENERIC), "generic"),
          "names");
    setenv("TORCHTRT_C_NATIVE_WQ_ISA", "generic", 1);   /* the environment: knob_set keeps each value */
    CHECK(ttc_native_wq_isa() == TTC_WQ_GENERIC, "generic cap: %s", ttc_native_wq_isa_name(ttc_native_wq_isa()));
    setenv("TORCHTRT_C_NATIVE_WQ_ISA", "no-such-isa", 1);   /* a WORD: unknown values read as unset */
    ttc_wq_isa unset = ttc_native_wq_isa();
    unsetenv("TORCHTRT_C_NATIVE_WQ_ISA");
    CHECK(unset == ttc_native_wq_isa(), "an unknown value is not the default");
    printf("   this CPU's weight-only GEMV loop: %s\n", ttc_native_wq_isa_name(ttc_native_wq_isa()));
}

TEST_MAIN(test_knob_names, test_layers, test_non_finite_x)
