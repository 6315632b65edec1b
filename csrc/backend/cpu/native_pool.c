/* Native 2-D pooling (backend/cpu/native_pool.h). */
#include "native_pool.h"

#include <string.h>

#include "step_threads.h"

/* Max over the windows of output columns [lo, hi) of one output row, every tap inside the
 * image (no checks): row by row of the window, so the inner loop runs along ow. */
static void max_interior(const ttc_native_pool_shape *s, const float *xp, float *yr, int64_t hs, int64_t lo,
                         int64_t hi) {
    for (int64_t ow = lo; ow < hi; ow++) yr[ow] = -__builtin_inff();
    for (int64_t kh = 0; kh < s->kh; kh++) {
        const float *xr = xp + (hs + kh * s->dh) * s->w;
        for (int64_t kw = 0; kw < s->kw; kw++) {
            const float *xc = xr + kw * s->dw - s->pw;
            for (int64_t ow = lo; ow < hi; ow++) {
                float x = xc[ow * s->sw];
                yr[ow] = (x > yr[ow] || x != x) ? x : yr[ow];
            }
        }
    }
}

/* one output row of one plane: the window's rows inside the image, then its columns */
static void pool_row(const ttc_native_pool_shape *s, const float *xp, float *yr, int64_t oh) {
    int64_t hs = oh * s->sh - s->ph, lo = 0, hi = s->ow;
    if (!s->avg && hs >= 0 && hs + (s->kh - 1) * s->dh < s->h) {
        /* columns whose whole window lies inside the image */
        while (lo < s->ow && lo * s->sw - s->pw < 0) lo++;
        while (hi > lo && (hi - 1) * s->sw - s->pw + (s->kw - 1) * s->dw >= s->w) hi--;
        max_interior(s, xp, yr, hs, lo, hi);
    } else {
        lo = hi = s->ow;
    }
    for (int64_t ow = 0; ow < s->ow; ow++) {
        if (ow == lo) ow = hi;
        if (ow >= s->ow) break;
        int64_t ws = ow * s->sw - s->pw;
        float v = s->avg ? 0.0f : -__builtin_inff();
        int64_t cnt = 0;
        for (int64_t kh = 0; kh < s->kh; kh++) {
            int64_t h = hs + kh * s->dh;
            for (int64_t kw = 0; kw < s->kw; kw++) {
                int64_t w = ws + kw * s->dw;
                bool in = h >= 0 && h < s->h && w >= 0 && w < s->w;
                if (in) {
                    float x = xp[h * s->w + w];
                    if (s->avg) {
                        v += x;
                        cnt++;
                    } else if (x > v || x != x) {
                        v = x;
                    }
                } else if (s->avg && s->count_pad && h < s->h + s->ph && w < s->w + s->pw) {
                    cnt++;
                }
            }
        }
        if (s->avg) v = s->divisor > 0 ? v / (float)s->divisor : v / (float)(cnt > 1 ? cnt : 1);
        yr[ow] = v;
    }
}

/* Global average (SE blocks, classifier heads) of planes [p0, p1): one sum per plane, eight
 * partial sums so that the loop vectorises. */
static void global_avg(const ttc_native_pool_shape *s, const float *x, float *y, int64_t p0, int64_t p1) {
    int64_t n = s->h * s->w;
    for (int64_t p = p0; p < p1; p++) {
        const float *xp = x + p * n;
        float acc[8] = {0};
        int64_t i = 0;
        for (; i + 8 <= n; i += 8)
            for (int j = 0; j < 8; j++) acc[j] += xp[i + j];
        float sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
        for (; i < n; i++) sum += xp[i];
        y[p] = sum / (float)n;
    }
}

static bool is_global_avg(const ttc_native_pool_shape *s) {
    return s->avg && s->oh == 1 && s->ow == 1 && s->kh == s->h && s->kw == s->w && s->ph == 0 && s->pw == 0 &&
           s->divisor == 0 && s->h * s->w > 0;
}

typedef struct pool_job {
    const ttc_native_pool_shape *s;
    const float *x;
    float *y;
} pool_job;

static void pool_planes(void *arg, int64_t p0, int64_t p1) {
    const pool_job *j = arg;
    const ttc_native_pool_shape *s = j->s;
    if (is_global_avg(s)) {
        global_avg(s, j->x, j->y, p0, p1);
        return;
    }
    for (int64_t p = p0; p < p1; p++)
        for (int64_t oh = 0; oh < s->oh; oh++)
            pool_row(s, j->x + p * s->h * s->w, j->y + (p * s->oh + oh) * s->ow, oh);
}

void ttc_native_pool(const ttc_native_pool_shape *s, const float *x, float *y) {
    pool_job j = {s, x, y};
    /* a plane reads its input once per window tap (about h*w for a global average) */
    int64_t per = is_global_avg(s) ? s->h * s->w : s->oh * s->ow * s->kh * s->kw;
    ttc_steps_for(s->threads, s->planes, ttc_steps_grain(per), pool_planes, &j);
}

/* ---- 8-bit max pooling (PT2E's stem: the quantize moved before the pool, native_pool.h) ---- */

typedef struct {
    const ttc_native_pool_shape *s;
    int64_t c;
    bool nhwc, is_signed;
    const uint8_t *x;
    uint8_t *y;
} q8_pool_job;

/* y[j] = max(y[j], x[j]) over c bytes, as int8 or uint8 (vectorised: O3 on these two loops) */
__attribute__((optimize("O3"))) static void max_u8(uint8_t *restrict y, const uint8_t *restrict x, int64_t c) {
    for (int64_t j = 0; j < c; j++) y[j] = x[j] > y[j] ? x[j] : y[j];
}

__attribute__((optimize("O3"))) static void max_s8(int8_t *restrict y, const int8_t *restrict x, int64_t c) {
    for (int64_t j = 0; j < c; j++) y[j] = x[j] > y[j] ? x[j] : y[j];
}

/* output rows [r0, r1) of [n * oh] (NHWC) or of [planes * oh] (NCHW) */
static void q8_pool_rows(void *arg, int64_t r0, int64_t r1) {
    const q8_pool_job *jb = arg;
    const ttc_native_pool_shape *s = jb->s;
    int64_t c = jb->nhwc ? jb->c : 1;
    for (int64_t r = r0; r < r1; r++) {
        int64_t i = r / s->oh, oh = r % s->oh;
        for (int64_t ow = 0; ow < s->ow; ow++) {
            uint8_t *yr = jb->y + (r * s->ow + ow) * c;
            bool first = true;   /* the first tap inside the image is copied, the others maxed in */
            for (int64_t kh = 0; kh < s->kh; kh++) {
                int64_t h = oh * s->sh - s->ph + kh * s->dh;
                if (h < 0 || h >= s->h) continue;
                for (int64_t kw = 0; kw < s->kw; kw++) {
                    int64_t w = ow * s->sw - s->pw + kw * s->dw;
                    if (w < 0 || w >= s->w) continue;
                    const uint8_t *xr = jb->x + ((i * s->h + h) * s->w + w) * c;
                    if (first) memcpy(yr, xr, (size_t)c);
                    else if (jb->is_signed) max_s8((int8_t *)yr, (const int8_t *)xr, c);
                    else max_u8(yr, xr, c);
                    first = false;
                }
            }
        }
    }
}

void ttc_native_max_pool_q8(const ttc_native_pool_shape *s, int64_t n, int64_t c, bool nhwc, bool is_signed,
                            const void *x, void *y) {
    q8_pool_job jb = {s, c, nhwc, is_signed, x, y};
    int64_t rows = (nhwc ? n : s->planes) * s->oh;
    ttc_steps_for(s->threads, rows, ttc_steps_grain(s->ow * (nhwc ? c : 1) * s->kh * s->kw), q8_pool_rows, &jb);
}
