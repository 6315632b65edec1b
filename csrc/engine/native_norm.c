/* Layer norm as a native host task (engine/native_norm.h). */
/* the row loops are meant to vectorise (-O2 of GCC 12 leaves them scalar); the sums are
 * reassociated into vector lanes only through the explicit lane arrays below, so the result
 * does not depend on the compiler's choices */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math")
#endif
#include "native_norm.h"

#include <math.h>

enum { LANES = 16 };

/* sum of x[0..n) in LANES partial sums (vectorisable without reassociation by the compiler) */
static float lane_sum(const float *x, int64_t n, float sub, int squares) {
    float acc[LANES] = {0};
    int64_t j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int l = 0; l < LANES; l++) {
            float d = x[j + l] - sub;
            acc[l] += squares ? d * d : d;
        }
    for (int l = 0; j < n; j++, l++) {
        float d = x[j] - sub;
        acc[l] += squares ? d * d : d;
    }
    float s = 0.0f;
    for (int l = 0; l < LANES; l++) s += acc[l];
    return s;
}

void ttc_native_layer_norm(const float *x, const float *w, const float *b, float *y, int64_t rows, int64_t n,
                           float eps) {
    if (n <= 0) return;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * n;
        float *yr = y + r * n;
        /* summed around the row's first value: rows far from 0 (mean 1e3, values within a
         * few units) keep their digits, where a plain float sum lost 4e-4 of the mean */
        float mean = xr[0] + lane_sum(xr, n, xr[0], 0) / (float)n;
        float var = lane_sum(xr, n, mean, 1) / (float)n;
        float rstd = 1.0f / sqrtf(var + eps);
        if (w && b)
            for (int64_t j = 0; j < n; j++) yr[j] = (xr[j] - mean) * rstd * w[j] + b[j];
        else if (w)
            for (int64_t j = 0; j < n; j++) yr[j] = (xr[j] - mean) * rstd * w[j];
        else if (b)
            for (int64_t j = 0; j < n; j++) yr[j] = (xr[j] - mean) * rstd + b[j];
        else
            for (int64_t j = 0; j < n; j++) yr[j] = (xr[j] - mean) * rstd;
    }
}
