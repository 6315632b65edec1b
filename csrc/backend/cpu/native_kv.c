/* KV-cache attention as a native CPU step (backend/cpu/native_kv.h). */
/* the lane loops below are meant to vectorise (-O2 leaves them scalar) */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math", "fp-contract=fast")
#endif
#include "native_kv.h"

#include <math.h>
#include <string.h>

#include "native_math.h"
#include "simd16.h"
#include "step_threads.h"

/* keys scored before their softmax step; lanes of the partial dot products */
enum { KV_CHUNK = 128, KV_LANES = 16, KV_MAX_EV = TTC_NATIVE_KV_MAX_EV };

typedef struct kv_job {
    const ttc_native_kv_shape *s;
    const float *q, *kc, *vc;
    const void *slots;
    const uint8_t *km;
    float *out;
} kv_job;


/* Dense q and keys (the usual cache): the dot products of q with keys k0 .. k0 + 3 (rows ld
 * apart), four keys at a time so each q vector is loaded once for them. */
static inline __attribute__((always_inline)) void dot4(const float *q, const float *k0, int64_t ld, int64_t n,
                                                       float *out) {
    v16 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
    int64_t e = 0;
    for (; e + 16 <= n; e += 16) {
        v16 qv = ld16(q + e);
        a0 += qv * ld16(k0 + e);
        a1 += qv * ld16(k0 + ld + e);
        a2 += qv * ld16(k0 + 2 * ld + e);
        a3 += qv * ld16(k0 + 3 * ld + e);
    }
    float t[4] = {hsum16(a0), hsum16(a1), hsum16(a2), hsum16(a3)};
    for (; e < n; e++)
        for (int i = 0; i < 4; i++) t[i] += q[e] * k0[i * ld + e];
    for (int i = 0; i < 4; i++) out[i] = t[i];
}

/* sum_e a[e] * b[e * bs] in KV_LANES partial sums (b dense: bs == 1, the usual cache). */
static inline __attribute__((always_inline)) float dot(const float *a, int64_t as, const float *b, int64_t bs, int64_t n) {
    float acc[KV_LANES] = {0};
    int64_t e = 0;
    if (as == 1 && bs == 1)
        for (; e + KV_LANES <= n; e += KV_LANES)
            for (int i = 0; i < KV_LANES; i++) acc[i] += a[e + i] * b[e + i];
    float t = 0.0f;
    for (; e < n; e++) t += a[e * as] * b[e * bs];
    for (int i = 0; i < KV_LANES; i += 2) t += acc[i] + acc[i + 1];
    return t;
}

static inline __attribute__((always_inline)) void kv_row(const kv_job *j, int64_t row, float *acc) {
    const ttc_native_kv_shape *s = j->s;
    int64_t si = row % s->s, r = row / s->s, h = r % s->hq, b = r / s->hq, hk = h / s->group;
    int64_t pos = s->slots64 ? ((const int64_t *)j->slots)[si * s->sls] : ((const int32_t *)j->slots)[si * s->sls];
    int64_t nk = pos < 0 ? 0 : pos + 1 < s->l ? pos + 1 : s->l;
    int64_t lo = s->window > 0 && pos - s->window + 1 > 0 ? pos - s->window + 1 : 0;
    const float *q = j->q + b * s->qs[0] + h * s->qs[1] + si * s->qs[2];
    const float *kb = j->kc + b * s->ks[0] + hk * s->ks[1], *vb = j->vc + b * s->vs[0] + hk * s->vs[1];
    const uint8_t *km = j->km + b * s->kms[0];
    int64_t EV = s->ev;
    float m = -INFINITY, l = 0.0f, sc[KV_CHUNK];
    for (int64_t e = 0; e < EV; e++) acc[e] = 0.0f;
    for (int64_t c0 = lo; c0 < nk; c0 += KV_CHUNK) {
        int64_t cn = nk - c0 < KV_CHUNK ? nk - c0 : KV_CHUNK;
        float cm = -INFINITY;
        int64_t t4 = 0;
        if (s->qs[3] == 1 && s->ks[3] == 1)   /* raw dot products four keys at a time, masked below */
            for (; t4 + 4 <= cn; t4 += 4) dot4(q, kb + (c0 + t4) * s->ks[2], s->ks[2], s->e, sc + t4);
        for (int64_t t = 0; t < cn; t++) {
            int64_t jj = c0 + t;
            float x = -INFINITY;
            if (km[jj * s->kms[1]]) {
                x = (t < t4 ? sc[t] : dot(q, s->qs[3], kb + jj * s->ks[2], s->ks[3], s->e)) * s->scale;
                if (s->softcap > 0.0f) x = s->softcap * tanhf(x / s->softcap);
            }
            sc[t] = x;
            cm = x > cm ? x : cm;   /* a NaN score leaves the maximum; the sums turn NaN below */
        }
        float mn = cm > m ? cm : m;
        if (mn == -INFINITY) continue;
        float corr = expf(m - mn), ps = 0.0f;
        for (int64_t t = 0; t < cn; t++) sc[t] -= mn;
        ttc_nm_unary(TTC_EOP_EXP, sc, sc, cn);   /* vectorised (libm's expf is a call per key) */
        for (int64_t t = 0; t < cn; t++) ps += sc[t];
        l = l * corr + ps;
        for (int64_t e = 0; e < EV; e++) acc[e] *= corr;
        for (int64_t t = 0; t < cn; t++) {
            float p = sc[t];
            if (p == 0.0f) continue;   /* masked keys (and their values) add nothing */
            const float *v = vb + (c0 + t) * s->vs[2];
            if (s->vs[3] == 1)
                for (int64_t e = 0; e < EV; e++) acc[e] += p * v[e];
            else
                for (int64_t e = 0; e < EV; e++) acc[e] += p * v[e * s->vs[3]];
        }
        m = mn;
    }
    float inv = l > 0.0f ? 1.0f / l : 0.0f;
    float *o = j->out + row * EV;
    for (int64_t e = 0; e < EV; e++) o[e] = acc[e] * inv;
}

/* The rows' loops compiled for the baseline and again for AVX2+FMA and AVX-512 (the build
 * flags stay portable; the baseline's SSE loops over the value row ran at a fraction of these),
 * picked once by what the CPU supports. */
#define KV_ROWS(NAME, ATTR)                                                                                           \
    ATTR static void NAME(void *arg, int64_t lo, int64_t hi) {                                                        \
        const kv_job *j = arg;                                                                                        \
        float acc[KV_MAX_EV];                                                                                         \
        for (int64_t r = lo; r < hi; r++) kv_row(j, r, acc);                                                          \
    }
KV_ROWS(kv_rows_generic, )
#if defined(__x86_64__) && defined(__GNUC__)
#define KV_X86 1
KV_ROWS(kv_rows_avx512, __attribute__((target("avx512f,fma"))))
KV_ROWS(kv_rows_avx2, __attribute__((target("avx2,fma"))))
#endif

static ttc_step_fn kv_pick(void) {
#ifdef KV_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return kv_rows_avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return kv_rows_avx2;
#endif
    return kv_rows_generic;
}

void ttc_native_kv_attention(const ttc_native_kv_shape *s, const float *q, const float *kc, const float *vc,
                             const void *slots, const uint8_t *key_mask, float *out) {
    int64_t rows = s->b * s->hq * s->s;
    if (rows <= 0 || s->ev <= 0 || s->ev > KV_MAX_EV) return;
    kv_job j = {s, q, kc, vc, slots, key_mask, out};
    static ttc_step_fn rows_fn;
    ttc_step_fn fn = __atomic_load_n(&rows_fn, __ATOMIC_RELAXED);
    if (!fn) {
        fn = kv_pick();
        __atomic_store_n(&rows_fn, fn, __ATOMIC_RELAXED);
    }
    ttc_steps_for(s->threads, rows, ttc_steps_grain(s->l * (s->e + s->ev)), fn, &j);
}

void ttc_native_slot_write(const ttc_native_slot_shape *s, const float *x, const void *slots, float *cache,
                           int32_t *errf) {
    const int64_t *d = s->dims, *xs = s->xs;
    for (int64_t si = 0; si < d[2]; si++) {
        int64_t slot = s->slots64 ? ((const int64_t *)slots)[si * s->sls] : ((const int32_t *)slots)[si * s->sls];
        if (slot < 0 || slot >= s->l) {
            if (errf) __atomic_compare_exchange_n(errf, &(int32_t){0}, s->err_code, false, __ATOMIC_RELAXED,
                                                  __ATOMIC_RELAXED);
            continue;
        }
        for (int64_t a = 0; a < d[0]; a++)
            for (int64_t b = 0; b < d[1]; b++) {
                const float *xr = x + a * xs[0] + b * xs[1] + si * xs[2];
                float *o = cache + ((a * d[1] + b) * s->l + slot) * d[3];
                if (xs[3] == 1) memcpy(o, xr, sizeof(float) * (size_t)d[3]);
                else
                    for (int64_t e = 0; e < d[3]; e++) o[e] = xr[e * xs[3]];
            }
    }
}
