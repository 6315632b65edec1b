/* Layer norm (rows of N elements, affine per element) and group norm (rows of
 * CG*HW elements, affine per channel); one work-item per row, two-pass variance.
 * RMS: the RMS norm (mean taken as 0, so the variance is the mean square).
 * Specialised by: KNAME STORE_FN EPI_PARAMS EPI_ARGS TX TW LDX LDW HAS_W HAS_B GROUP RMS EPS. */
__kernel void KNAME(__global const TX *X, int offX, __global const TW *Wt, int offW, __global const TW *Bs,
                    int offB, int N, int rows, int HW, int CG, int G EPI_PARAMS) {
    int r = get_global_id(0);
    if (r >= rows) return;
    int base = r * N;
    /* summed around the row's first value: rows far from 0 keep their digits (mean 1e3 with
     * values within a few units lost 2e-4 of the mean in a plain float sum) */
    float mean = 0.0f;
#if !RMS   /* RMS norm: the mean square, around 0 */
    float x0 = N > 0 ? LDX(X, offX + base) : 0.0f;
    for (int j = 0; j < N; j++) mean += LDX(X, offX + base + j) - x0;
    mean = x0 + mean / (float)N;
#endif
    float var = 0.0f;
    for (int j = 0; j < N; j++) { float d = LDX(X, offX + base + j) - mean; var += d * d; }
    float rstd = rsqrt(var / (float)N + EPS);
    for (int j = 0; j < N; j++) {
#if GROUP
        int widx = (r % G) * CG + j / HW;
#else
        int widx = j;
#endif
        float y = (LDX(X, offX + base + j) - mean) * rstd;
#if HAS_W
        y *= LDW(Wt, offW + widx);
#endif
#if HAS_B
        y += LDW(Bs, offB + widx);
#endif
        STORE_FN(y, base + j EPI_ARGS);
    }
}
