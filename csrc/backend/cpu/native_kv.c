/* KV-cache attention as a native CPU step (backend/cpu/native_kv.h). */
/* the lane loops below are meant to vectorise (-O2 leaves them scalar) */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math")
#endif
#include "native_kv.h"

#include <math.h>
#include <string.h>

#include "native_math.h"
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

/* sum_e a[e] * b[e * bs] in KV_LANES partial sums (b dense: bs == 1, the usual cache). */
static float dot(const float *a, int64_t as, const float *b, int64_t bs, int64_t n) {
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

static void kv_row(const kv_job *j, int64_t row, float *acc) {
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
        for (int64_t t = 0; t < cn; t++) {
            int64_t jj = c0 + t;
            float x = -INFINITY;
            if (km[jj * s->kms[1]]) {
                x = dot(q, s->qs[3], kb + jj * s->ks[2], s->ks[3], s->e) * s->scale;
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

static void kv_rows(void *arg, int64_t lo, int64_t hi) {
    const kv_job *j = arg;
    float acc[KV_MAX_EV];
    for (int64_t r = lo; r < hi; r++) kv_row(j, r, acc);
}

void ttc_native_kv_attention(const ttc_native_kv_shape *s, const float *q, const float *kc, const float *vc,
                             const void *slots, const uint8_t *key_mask, float *out) {
    int64_t rows = s->b * s->hq * s->s;
    if (rows <= 0 || s->ev <= 0 || s->ev > KV_MAX_EV) return;
    kv_job j = {s, q, kc, vc, slots, key_mask, out};
    ttc_steps_for(s->threads, rows, ttc_steps_grain(s->l * (s->e + s->ev)), kv_rows, &j);
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
