/* Softmax / log-softmax over the last dim (rows of D contiguous elements) with one
 * work-group of LS work-items per row: GPUs (softmax.cl's one work-item per row reads rows
 * uncoalesced and leaves most of the GPU idle for short rows). Three passes (max, sum,
 * write) for stability, statistics in float.
 * Specialised by: KNAME STORE_FN EPI_PARAMS EPI_ARGS TX LDX LOG LS. */
__kernel __attribute__((reqd_work_group_size(LS, 1, 1)))
void KNAME(__global const TX *X, int offX, int D, int rows EPI_PARAMS) {
    __local float sh[LS];
    int o = get_group_id(0), t = get_local_id(0);
    if (o >= rows) return;   /* the whole group */
    int base = o * D;
    float m = -INFINITY;
    for (int k0 = 0; k0 < D; k0 += LS) { int k = k0 + t; if (k < D) m = fmax(m, LDX(X, offX + base + k)); }
    m = ttc_wg_max(m, sh);
    float s = 0.0f;
    for (int k0 = 0; k0 < D; k0 += LS) { int k = k0 + t; if (k < D) s += exp(LDX(X, offX + base + k) - m); }
    s = ttc_wg_sum(s, sh);
#if LOG
    float ls = log(s);
#else
    float inv = 1.0f / s;
#endif
    /* the same trip count for every work-item, the bound checked inside: PoCL's
     * work-item vectoriser stored past the row (D < LS) with `for (k = t; k < D; ...)` */
    for (int k0 = 0; k0 < D; k0 += LS) {
        int k = k0 + t;
        if (k >= D) break;
#if LOG
        STORE_FN(LDX(X, offX + base + k) - m - ls, base + k EPI_ARGS);
#else
        STORE_FN(exp(LDX(X, offX + base + k) - m) * inv, base + k EPI_ARGS);
#endif
    }
}
