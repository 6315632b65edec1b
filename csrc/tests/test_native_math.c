/* backend/cpu/native_math.c: every compiled instruction set gives the same bits as the baseline
 * loops (contraction is off, so they must), and the baseline is within a few ulps of libm's
 * double functions over the whole float range, odd lengths included. */
#include <math.h>
#include <stdint.h>

#include "backend/cpu/native_math.h"
#include "tests/ctest.h"

enum { N = 4099 };   /* not a multiple of any vector width */

static float xs[N], ys[N], zs[N];

/* exp(-x) as float32 has it: past FLT_MAX it is inf, so that sigmoid and SiLU are 0 below
 * x = -88.72 (torch's float32 kernels, and the OpenCL spelling, give the same) */
static double exp_neg_f32(double x) {
    double e = exp(-x);
    return isinf((float)e) ? INFINITY : e;
}

static double ref(ttc_eop op, double x) {
    switch (op) {
    case TTC_EOP_EXP: return exp(x);
    case TTC_EOP_ERF: return erf(x);
    case TTC_EOP_TANH: return tanh(x);
    case TTC_EOP_SIGMOID: return 1.0 / (1.0 + exp_neg_f32(x));
    case TTC_EOP_SILU: return x / (1.0 + exp_neg_f32(x));
    case TTC_EOP_GELU_ERF: return 0.5 * x * erfc(-x / sqrt(2.0));
    case TTC_EOP_GELU_TANH: {
        /* u rounded to float as every float32 implementation has it (see the tolerance) */
        float u = 0.79788456080286536f * ((float)x + 0.044715f * (float)x * (float)x * (float)x);
        return x / (1.0 + exp(-2.0 * (double)u));
    }
    default: return NAN;
    }
}

static void fill(void) {
    uint32_t s = 12345;
    const float special[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 0.3f, -0.3f, 0.5f, -0.5f, 10.5f, -10.6f, 88.7f, 89.5f,
                             -87.5f, -103.9f, -104.5f, 1e30f, -1e30f, INFINITY, -INFINITY, NAN};
    size_t ns = sizeof special / sizeof special[0];
    for (size_t i = 0; i < N; i++) {
        s = s * 1664525u + 1013904223u;
        xs[i] = i < ns ? special[i] : ((float)(s >> 8) / 16777216.0f - 0.5f) * (i % 3 ? 24.0f : 200.0f);
    }
}

static void test_isas_agree_and_match_libm(void) {
    const ttc_eop ops[] = {TTC_EOP_EXP, TTC_EOP_ERF, TTC_EOP_TANH, TTC_EOP_SIGMOID, TTC_EOP_SILU,
                           TTC_EOP_GELU_ERF, TTC_EOP_GELU_TANH};
    const char *isas[] = {"avx2", "avx512"};
    fill();
    CHECK(ttc_nm_isa()[0] != 0, "an instruction set is picked");
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        CHECK(ttc_nm_unary_ok(ops[o]), "op %d admitted", (int)ops[o]);
        CHECK(ttc_nm_unary_isa("baseline", ops[o], xs, ys, N), "baseline always runs");
        double worst = 0;
        for (size_t i = 0; i < N; i++) {
            double r = ref(ops[o], xs[i]), y = ys[i];
            float r32 = (float)r;
            if (isnan(r) || isinf(r32)) {
                CHECK(isnan(r) ? isnan(y) : y == r32, "op %d at %g: %g, want %g", (int)ops[o], xs[i], y, r);
                continue;
            }
            double err = fabs(y - r) / fmax(fabs(r), 1e-37), lim = 1e-6;
            if (ops[o] == TTC_EOP_GELU_TANH) lim += 2.0 * fabs(xs[i]) * (1 + fabs(xs[i]) * fabs(xs[i])) * 6e-8;
            if (fabs(r) < 1e-37) err = fabs(y - r) / 1e-37;   /* denormals: absolute */
            CHECK(err <= lim, "op %d at %.9g: %.9g, want %.9g (rel err %.3g)", (int)ops[o], xs[i], y, r, err);
            if (err > worst) worst = err;
        }
        printf("  op %d: worst rel err %.3g\n", (int)ops[o], worst);
        for (size_t k = 0; k < sizeof isas / sizeof isas[0]; k++) {
            if (!ttc_nm_unary_isa(isas[k], ops[o], xs, zs, N)) continue;
            size_t diff = 0;
            for (size_t i = 0; i < N; i++) diff += memcmp(&ys[i], &zs[i], sizeof(float)) != 0 && !(isnan(ys[i]) && isnan(zs[i]));
            CHECK(diff == 0, "op %d: %s differs from the baseline in %zu of %d values", (int)ops[o], isas[k], diff, N);
        }
    }
    CHECK(!ttc_nm_unary_isa("sse9", TTC_EOP_EXP, xs, zs, N), "an unknown instruction set runs nothing");
}

static void test_in_place(void) {
    fill();
    for (size_t i = 0; i < N; i++) ys[i] = xs[i];
    ttc_nm_unary(TTC_EOP_GELU_ERF, ys, ys, N);
    ttc_nm_unary_isa("baseline", TTC_EOP_GELU_ERF, xs, zs, N);
    size_t diff = 0;
    for (size_t i = 0; i < N; i++) diff += memcmp(&ys[i], &zs[i], sizeof(float)) != 0 && !(isnan(ys[i]) && isnan(zs[i]));
    CHECK(diff == 0, "in place differs in %zu values", diff);
}

TEST_MAIN(test_isas_agree_and_match_libm, test_in_place)
