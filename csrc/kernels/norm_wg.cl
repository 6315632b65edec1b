/* Layer norm / group norm with one work-group of LS work-items per row (GPUs: the
 * one-work-item-per-row norm.cl leaves most of a GPU idle and reads rows uncoalesced).
 * Rows as in norm.cl: N elements, affine per element (layer norm) or per channel of CG*HW
 * elements (group norm); two-pass variance, statistics in float.
 * Specialised by: KNAME STORE_FN EPI_PARAMS EPI_ARGS TX TW LDX LDW HAS_W HAS_B GROUP RMS EPS LS. */
__kernel __attribute__((reqd_work_group_size(LS, 1, 1)))
void KNAME(__global const TX *X, int offX, __global const TW *Wt, int offW, __global const TW *Bs,
           int offB, int N, int rows, int HW, int CG, int G EPI_PARAMS) {
    __local float sh[LS];
    int r = get_group_id(0), t = get_local_id(0);
    if (r >= rows) return;   /* the whole group: r is the group's */
    int base = r * N;
#if RMS   /* RMS norm: the mean square, around 0 */
    float mean = 0.0f;
#else
    float s = 0.0f;
    for (int j0 = 0; j0 < N; j0 += LS) { int j = j0 + t; if (j < N) s += LDX(X, offX + base + j); }
    float mean = ttc_wg_sum(s, sh) / (float)N;
#endif
    float v = 0.0f;
    for (int j0 = 0; j0 < N; j0 += LS) {
        int j = j0 + t;
        if (j < N) { float d = LDX(X, offX + base + j) - mean; v += d * d; }
    }
    float rstd = rsqrt(ttc_wg_sum(v, sh) / (float)N + EPS);
    /* the same trip count for every work-item, the bound checked inside (see softmax_wg.cl) */
    for (int j0 = 0; j0 < N; j0 += LS) {
        int j = j0 + t;
        if (j >= N) break;
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
