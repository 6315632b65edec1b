/*
 * The native KV-cache steps (backend/cpu/native_kv.c) against a float64 reference: attention
 * over the filled slots with grouped heads, head dims off the 16 lanes (and of 4-key blocks),
 * more keys than a chunk (128), a sliding window, soft-capping, masked keys and a fully masked
 * row (0), int32 and int64 slots, q with strides of a transposed view; slot_write of a strided x
 * into the cache, and a slot outside the cache (nothing written, the flag set). Buffers are
 * exactly their size (ASan: no read past them). Tolerance 1e-5 relative to the row's scale.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ctest.h"
#include "backend/cpu/native_kv.h"

static uint32_t rng = 4242;
static float frand(void) {
    rng = rng * 1664525u + 1013904223u;
    return (float)((rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static void attn_case(int64_t B, int64_t Hq, int64_t Hk, int64_t S, int64_t E, int64_t EV, int64_t L, int64_t pos0,
                      int32_t window, float softcap, bool slots64, bool q_transposed, int32_t threads) {
    int64_t G = Hq / Hk;
    float *q = malloc(sizeof(float) * (size_t)(B * Hq * S * E)), *kc = malloc(sizeof(float) * (size_t)(B * Hk * L * E));
    float *vc = malloc(sizeof(float) * (size_t)(B * Hk * L * EV)), *out = malloc(sizeof(float) * (size_t)(B * Hq * S * EV));
    uint8_t *km = malloc((size_t)(B * L));
    int64_t *s64 = malloc(sizeof(int64_t) * (size_t)S);
    int32_t *s32 = malloc(sizeof(int32_t) * (size_t)S);
    CHECK(q && kc && vc && out && km && s64 && s32, "out of memory");
    if (!q || !kc || !vc || !out || !km || !s64 || !s32) goto done;
    for (int64_t i = 0; i < B * Hq * S * E; i++) q[i] = frand();
    for (int64_t i = 0; i < B * Hk * L * E; i++) kc[i] = frand();
    for (int64_t i = 0; i < B * Hk * L * EV; i++) vc[i] = frand();
    for (int64_t i = 0; i < B * L; i++) km[i] = (i % 7) != 3;
    if (B > 1) memset(km + (B - 1) * L, 0, (size_t)(pos0 + S < L ? pos0 + S : L));   /* the last batch row: all masked */
    for (int64_t i = 0; i < S; i++) s64[i] = s32[i] = (int32_t)(pos0 + i);
    ttc_native_kv_shape sh = {B, Hq, S, L, E, EV, G, {0}, {Hk * L * E, L * E, E, 1}, {Hk * L * EV, L * EV, EV, 1},
                              1, {L, 1}, slots64, 1.0f / sqrtf((float)E), softcap, window, threads};
    if (q_transposed) {   /* q stored [B, S, Hq, E], read as [B, Hq, S, E] */
        sh.qs[0] = S * Hq * E, sh.qs[1] = E, sh.qs[2] = Hq * E, sh.qs[3] = 1;
    } else {
        sh.qs[0] = Hq * S * E, sh.qs[1] = S * E, sh.qs[2] = E, sh.qs[3] = 1;
    }
    ttc_native_kv_attention(&sh, q, kc, vc, slots64 ? (const void *)s64 : (const void *)s32, km, out);
    double worst = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t si = 0; si < S; si++) {
                int64_t pos = pos0 + si, hk = h / G, nk = pos + 1 < L ? pos + 1 : L;
                int64_t lo = window > 0 && pos - window + 1 > 0 ? pos - window + 1 : 0;
                const float *qr = q + b * sh.qs[0] + h * sh.qs[1] + si * sh.qs[2];
                double m = -INFINITY, sc[1024];
                for (int64_t j = lo; j < nk; j++) {
                    sc[j] = -INFINITY;
                    if (!km[b * L + j]) continue;
                    double d = 0;
                    for (int64_t e = 0; e < E; e++) d += (double)qr[e] * kc[((b * Hk + hk) * L + j) * E + e];
                    d *= sh.scale;
                    if (softcap > 0) d = softcap * tanh(d / softcap);
                    sc[j] = d;
                    m = d > m ? d : m;
                }
                double l = 0;
                for (int64_t j = lo; j < nk; j++) l += m == -INFINITY ? 0 : exp(sc[j] - m);
                for (int64_t e = 0; e < EV; e++) {
                    double a = 0;
                    for (int64_t j = lo; j < nk && l > 0; j++)
                        a += exp(sc[j] - m) * vc[((b * Hk + hk) * L + j) * EV + e];
                    double want = l > 0 ? a / l : 0.0, got = out[((b * Hq + h) * S + si) * EV + e];
                    double err = fabs(got - want);
                    worst = err > worst || err != err ? err : worst;
                }
            }
    CHECK(worst < 1e-5, "B%lld Hq%lld Hk%lld S%lld E%lld EV%lld L%lld pos%lld w%d cap%g: max err %g", (long long)B,
          (long long)Hq, (long long)Hk, (long long)S, (long long)E, (long long)EV, (long long)L, (long long)pos0,
          window, softcap, worst);
done:
    free(q), free(kc), free(vc), free(out), free(km), free(s64), free(s32);
}

static void test_attention(void) {
    attn_case(1, 8, 8, 1, 64, 64, 264, 200, 0, 0.0f, true, false, 2);     /* a small Llama's decode */
    attn_case(2, 6, 2, 1, 20, 20, 301, 300, 0, 0.0f, true, true, 2);      /* 3 chunks, E % 16 = 4 */
    attn_case(1, 3, 1, 9, 33, 17, 140, 120, 50, 0.0f, false, true, 1);    /* a prompt, window, EV != E */
    attn_case(3, 4, 4, 2, 7, 5, 19, 0, 0, 2.5f, false, false, 2);         /* tiny dims, soft-capping */
}

static void test_slot_write(void) {
    /* x [2, 3, S=2, 5] stored [2, S, 3, 5]; cache [2, 3, L=4, 5] */
    float x[2 * 2 * 3 * 5], cache[2 * 3 * 4 * 5];
    for (int i = 0; i < 60; i++) x[i] = (float)i;
    for (int i = 0; i < 120; i++) cache[i] = -1.0f;
    int64_t slots[2] = {3, 1};
    ttc_native_slot_shape s = {{2, 3, 2, 5}, {30, 5, 15, 1}, 4, 1, true, 7};
    int32_t flag = 0;
    ttc_native_slot_write(&s, x, slots, cache, &flag);
    CHECK(flag == 0, "flag %d", flag);
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++)
            for (int l = 0; l < 4; l++)
                for (int e = 0; e < 5; e++) {
                    int si = l == 3 ? 0 : l == 1 ? 1 : -1;
                    float want = si < 0 ? -1.0f : x[a * 30 + si * 15 + b * 5 + e];
                    CHECK(cache[((a * 3 + b) * 4 + l) * 5 + e] == want, "cache[%d,%d,%d,%d]", a, b, l, e);
                }
    int32_t bad[2] = {4, -1};
    float before[120];
    memcpy(before, cache, sizeof cache);
    s.slots64 = false;
    ttc_native_slot_write(&s, x, bad, cache, &flag);
    CHECK(flag == 7, "flag %d", flag);
    CHECK(!memcmp(before, cache, sizeof cache), "a bad slot wrote");
}

TEST_MAIN(test_attention, test_slot_write)
