/* Softmax / log-softmax over one dim of a dense tensor viewed as [outer, D, inner]; one
 * work-item per (inner, outer) row (a 2-D launch), three passes (max, sum, write) for stability.
 * Specialised by: KNAME STORE_FN EPI_PARAMS EPI_ARGS TX LDX LOG. */
__kernel void KNAME(__global const TX *X, int offX, int D, int inner EPI_PARAMS) {
    int i = get_global_id(0), o = get_global_id(1);
    if (i >= inner) return;
    int base = o * D * inner + i;
    float m = -INFINITY;
    for (int k = 0; k < D; k++) m = fmax(m, LDX(X, offX + base + k * inner));
    float s = 0.0f;
    for (int k = 0; k < D; k++) s += exp(LDX(X, offX + base + k * inner) - m);
#if LOG
    float ls = log(s);
    for (int k = 0; k < D; k++) STORE_FN(LDX(X, offX + base + k * inner) - m - ls, base + k * inner EPI_ARGS);
#else
    float inv = 1.0f / s;
    for (int k = 0; k < D; k++) STORE_FN(exp(LDX(X, offX + base + k * inner) - m) * inv, base + k * inner EPI_ARGS);
#endif
}
