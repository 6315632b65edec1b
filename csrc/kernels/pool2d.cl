/* Max / average / adaptive-average 2-D pooling over x [N*C, H, W] (dense), one output
 * element per work-item. Work: (OW, OH, N*C).
 * Specialised by: KNAME STORE_FN EPI_PARAMS EPI_ARGS TX LDX MODE (0 max, 1 avg, 2 adaptive,
 * 3 global average) KH KW SH SW PH PW DH DW COUNT_PAD DIVISOR, and WG for MODE 3.
 * MODE 3 (GPUs, output 1x1: the squeeze of squeeze-and-excitation blocks, the head of most
 * CNNs): one work-group of WG work-items per plane, striding over it with coalesced loads and
 * summing through rowred.cl; one work-item per plane walked a 112x112 plane alone (EfficientNet
 * b32 on the H100: 283 us for one such pool). Work: (N*C*WG). */
#if MODE == 3
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void KNAME(__global const TX *X, int offX, int H, int Wd, int OH, int OW EPI_PARAMS) {
    __local float sh[WG];
    int z = get_group_id(0), t = get_local_id(0), n = H * Wd, xb = offX + z * n;
    float acc = 0.0f;
    for (int r = t; r < n; r += WG) acc += LDX(X, xb + r);
    acc = ttc_wg_sum(acc, sh);
    if (t == 0) STORE_FN(acc / (float)n, z EPI_ARGS);
}
#else
__kernel void KNAME(__global const TX *X, int offX, int H, int Wd, int OH, int OW EPI_PARAMS) {
    int ow = get_global_id(0), oh = get_global_id(1), z = get_global_id(2);
    if (ow >= OW || oh >= OH) return;
    int xb = offX + z * H * Wd;
#if MODE == 2
    int h0 = (oh * H) / OH, h1 = ((oh + 1) * H + OH - 1) / OH;
    int w0 = (ow * Wd) / OW, w1 = ((ow + 1) * Wd + OW - 1) / OW;
    float s = 0.0f;
    for (int h = h0; h < h1; h++)
        for (int w = w0; w < w1; w++) s += LDX(X, xb + h * Wd + w);
    float v = s / (float)((h1 - h0) * (w1 - w0));
#else
    int hs = oh * SH - PH, ws = ow * SW - PW;
#if MODE == 0
    float v = -INFINITY;
#else
    float v = 0.0f;
    int cnt = 0;
#endif
    for (int kh = 0; kh < KH; kh++) {
        int h = hs + kh * DH;
        for (int kw = 0; kw < KW; kw++) {
            int w = ws + kw * DW;
            bool in = h >= 0 && h < H && w >= 0 && w < Wd;
#if MODE == 0
            if (in) { float x = LDX(X, xb + h * Wd + w); v = (x > v || isnan(x)) ? x : v; }
#else
            if (in) { v += LDX(X, xb + h * Wd + w); cnt++; }
            else if (COUNT_PAD && h < H + PH && w < Wd + PW) cnt++;
#endif
        }
    }
#if MODE == 1
    v = DIVISOR > 0 ? v / (float)DIVISOR : v / (float)max(cnt, 1);
#endif
#endif
    STORE_FN(v, (z * OH + oh) * OW + ow EPI_ARGS);
}
#endif
