/* Layer norm with one warp (32 work-items) per row and RPW rows per work-group (GPUs, rows
 * of up to a few thousand elements): the statistics are warp butterflies (shfl.sync through
 * the PTX prelude on NVIDIA, its emulation elsewhere), no local-memory tree and no barrier.
 * The work-group-per-row norm_wg.cl spent 67 us on ConvNeXt-T b32's 100352 rows of 96 and
 * 21 us on BERT-base b32's 4096 rows of 768 on the H100. Rows as in norm.cl (N elements,
 * affine per element); two-pass variance, statistics in float. No early return: the
 * emulated shuffles hold work-group barriers, so a warp past the last row runs idle.
 * Rows known when building of up to 2048 elements are held in registers (NPL a lane): one
 * read, all of a lane's loads in flight at once (a decode step's single row of 2048 took 26.5-
 * 28.7 us per RMS norm on the H100 in the loop below, a third of a 1B Llama's step). Longer
 * rows, or rows of a run-time length: each lane reads NW_U elements into registers before
 * summing them, so that NW_U independent loads are in flight (a "#pragma unroll 8" of the
 * plain loop did not change the 28.7 us).
 * The time went elsewhere: a store followed by the next element's loads (the weight, an
 * epilogue's operand) that the compiler may not move above it, the pointers possibly aliased,
 * so that each element waited a full load latency (H100, 2026-12-07: a standalone RMS norm of
 * one row of 2048 13.0 us, of 4096 rows of 768 6.5 us: the time follows the row length, not
 * the row count). So the pointers are restrict (codegen makes the epilogue's so too: an
 * element's output is written by the work-item that reads its operands, at the same index) and
 * the affine terms are read with x.
 * Specialised by: KNAME STORE_FN EPI_PARAMS EPI_ARGS TX TW LDX LDW HAS_W HAS_B GROUP RMS EPS RPW NPL
 * (0: the row's length is a run-time value) SPLIT (1: a work-group's warps split rows when there
 * are at most RPW of them). */
#define NW_U 8
#if SPLIT && RPW > 1 && !defined(TTC_NW_SPLIT_SUM)
#define TTC_NW_SPLIT_SUM
/* A warp's sum v (its butterfly done); split: the sum of the work-group's RPW warps' through
 * part[]. Every work-item makes the same two barriers either way. */
TTC_INL float nw_split_sum(float v, int lane, bool split, __local float *part) {
    if (lane == 0) part[ttc_warp()] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (split) {
        v = 0.0f;
        for (int q = 0; q < RPW; q++) v += part[q];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    return v;
}
#endif
__kernel __attribute__((reqd_work_group_size(32 * RPW, 1, 1)))
void KNAME(__global const TX *restrict X, int offX, __global const TW *restrict Wt, int offW,
           __global const TW *restrict Bs, int offB, int N, int rows, int HW, int CG, int G EPI_PARAMS) {
    TTC_PTX_SCRATCH(scr, RPW);
    int lane = ttc_lane(), r = get_group_id(0) * RPW + ttc_warp();
    bool live = r < rows;
    int base = (live ? r : 0) * N;
#if NPL > 0   /* a row known when building, up to 32 * NPL elements: read once, held in registers */
    /* SPLIT: at most RPW rows (a decode step's; one work-group) are split between the group's
     * RPW warps, NQ elements a lane instead of NPL (the time follows the elements a lane,
     * above), the rows one after another, the warps' sums added through local memory. The
     * loop's trip count and its barriers are the same for every work-item (the emulated
     * shuffles hold barriers too). Otherwise a warp a row, one pass. */
#if SPLIT && RPW > 1
#define NQ ((NPL + RPW - 1) / RPW)
    __local float part[RPW];
    bool split = rows <= RPW;
    int nrow = split ? rows : 1, cnt = split ? NQ : NPL, i0 = split ? ttc_warp() * NQ : 0;
#undef NQ
#else
    bool split = false;
    int nrow = 1, cnt = NPL, i0 = 0;
#endif
    for (int rr = 0; rr < nrow; rr++) {
    bool lv = split || live;
    int rb = split ? rr * N : base;
    float xv[NPL];
#pragma unroll
    for (int i = 0; i < NPL; i++) {
        int j = lane + 32 * (i0 + i);
        xv[i] = lv && i < cnt && j < N ? LDX(X, offX + rb + j) : 0.0f;
    }
#if HAS_W   /* the affine terms too, all loads in flight before the first store */
    float wv[NPL];
#pragma unroll
    for (int i = 0; i < NPL; i++) {
        int j = lane + 32 * (i0 + i);
        wv[i] = i < cnt && j < N ? LDW(Wt, offW + j) : 0.0f;
    }
#endif
#if HAS_B
    float bv[NPL];
#pragma unroll
    for (int i = 0; i < NPL; i++) {
        int j = lane + 32 * (i0 + i);
        bv[i] = i < cnt && j < N ? LDW(Bs, offB + j) : 0.0f;
    }
#endif
#if RMS
    float mean = 0.0f;
#else
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < NPL; i++) s += xv[i];
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) s += ttc_shfl_xor(s, m, scr);
#if SPLIT && RPW > 1
    s = nw_split_sum(s, lane, split, part);
#endif
    float mean = s / (float)N;
#endif
    float v = 0.0f;
#pragma unroll
    for (int i = 0; i < NPL; i++)
        if (i < cnt && lane + 32 * (i0 + i) < N) { float d = xv[i] - mean; v += d * d; }
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) v += ttc_shfl_xor(v, m, scr);
#if SPLIT && RPW > 1
    v = nw_split_sum(v, lane, split, part);
#endif
    float rstd = rsqrt(v / (float)N + EPS);
    if (lv) {
#pragma unroll
        for (int i = 0; i < NPL; i++) {
            int j = lane + 32 * (i0 + i);
            if (i < cnt && j < N) {
                float y = (xv[i] - mean) * rstd;
#if HAS_W
                y *= wv[i];
#endif
#if HAS_B
                y += bv[i];
#endif
                STORE_FN(y, rb + j EPI_ARGS);
            }
        }
    }
    }
#else
#if RMS   /* RMS norm: the mean square, around 0 */
    float mean = 0.0f;
#else
    float s = 0.0f;
    if (live) {
        for (int j0 = lane; j0 < N; j0 += 32 * NW_U) {
            float t[NW_U];
#pragma unroll
            for (int u = 0; u < NW_U; u++) t[u] = j0 + 32 * u < N ? LDX(X, offX + base + j0 + 32 * u) : 0.0f;
#pragma unroll
            for (int u = 0; u < NW_U; u++) s += t[u];
        }
    }
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) s += ttc_shfl_xor(s, m, scr);
    float mean = s / (float)N;
#endif
    float v = 0.0f;
    if (live) {
        for (int j0 = lane; j0 < N; j0 += 32 * NW_U) {
            float t[NW_U];   /* NW_U independent loads issued before their sums */
#pragma unroll
            for (int u = 0; u < NW_U; u++) t[u] = j0 + 32 * u < N ? LDX(X, offX + base + j0 + 32 * u) : mean;
#pragma unroll
            for (int u = 0; u < NW_U; u++) { float d = t[u] - mean; v += d * d; }
        }
    }
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) v += ttc_shfl_xor(v, m, scr);
    float rstd = rsqrt(v / (float)N + EPS);
    if (!live) return;
    for (int j0 = lane; j0 < N; j0 += 32 * NW_U) {
        float t[NW_U];
#pragma unroll
        for (int u = 0; u < NW_U; u++) t[u] = j0 + 32 * u < N ? LDX(X, offX + base + j0 + 32 * u) : 0.0f;
#pragma unroll
        for (int u = 0; u < NW_U; u++) {
            int j = j0 + 32 * u;
            if (j >= N) break;
            float y = (t[u] - mean) * rstd;
#if HAS_W
            y *= LDW(Wt, offW + j);
#endif
#if HAS_B
            y += LDW(Bs, offB + j);
#endif
            STORE_FN(y, base + j EPI_ARGS);
        }
    }
#endif
}
#undef NW_U
