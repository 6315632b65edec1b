/* Transposed 2-D convolution in gather form: each work-item computes one output element by
 * summing the input positions that reach it (ih * SH - PH + kh * DH == oh, likewise for w),
 * so no scatter and no atomics. x [N, C, H, W] dense; w repacked by the converter to
 * [OC, ICG, KH, KW] (torch keeps [C, OCG, KH, KW]). Work: (OW, OH, N*OC).
 * Specialised by: KNAME STORE_FN EPI_PARAMS EPI_ARGS TX TW LDX LDW and the static
 * parameters C OC ICG OCG KH KW SH SW PH PW DH DW. */
__kernel void KNAME(__global const TX *X, int offX, __global const TW *W, int offW, int H, int Wd, int OH,
                    int OW EPI_PARAMS) {
    int ow = get_global_id(0), oh = get_global_id(1), z = get_global_id(2);
    if (ow >= OW || oh >= OH) return;
    int oc = z % OC, n = z / OC, g = oc / OCG;
    int HW = H * Wd;
    float acc = 0.0f;
    /* Undilated: only every SH-th tap (from (oh + PH) % SH) lands on an input row; the others
     * are skipped outright. Dilated: each tap is tested (th < 0 first: the sign of % of a
     * negative number is not to be relied on). */
#if DH == 1
    for (int kh = (oh + PH) % SH; kh < KH; kh += SH) {
        int th = oh + PH - kh;
        if (th < 0) break;
        if (th / SH >= H) continue;
#else
    for (int kh = 0; kh < KH; kh++) {
        int th = oh + PH - kh * DH;
        if (th < 0 || th % SH != 0 || th / SH >= H) continue;
#endif
        int ih = th / SH;
#if DW == 1
        for (int kw = (ow + PW) % SW; kw < KW; kw += SW) {
            int tw = ow + PW - kw;
            if (tw < 0) break;
            if (tw / SW >= Wd) continue;
#else
        for (int kw = 0; kw < KW; kw++) {
            int tw = ow + PW - kw * DW;
            if (tw < 0 || tw % SW != 0 || tw / SW >= Wd) continue;
#endif
            int xo = offX + (n * C + g * ICG) * HW + ih * Wd + tw / SW;
            int wo = offW + (oc * ICG * KH + kh) * KW + kw;
            for (int ic = 0; ic < ICG; ic++) acc += LDX(X, xo + ic * HW) * LDW(W, wo + ic * KH * KW);
        }
    }
    STORE_FN(acc, ((n * OC + oc) * OH + oh) * OW + ow EPI_ARGS);
}
