/* Direct 2-D convolution, one output element per work-item (any groups, depthwise
 * included); x [N, C, H, W] dense, w [OC, ICG, KH, KW]. Work: (OW, OH, N*OC).
 * Specialised by: KNAME STORE_FN EPI_PARAMS EPI_ARGS TX TW LDX LDW and the static
 * parameters C OC ICG OCG KH KW SH SW PH PW DH DW. */
__kernel void KNAME(__global const TX *X, int offX, __global const TW *W, int offW, int H, int Wd, int OH,
                    int OW EPI_PARAMS) {
    int ow = get_global_id(0), oh = get_global_id(1), z = get_global_id(2);
    if (ow >= OW || oh >= OH) return;
    int oc = z % OC, n = z / OC, g = oc / OCG;
    float acc = 0.0f;
    for (int ic = 0; ic < ICG; ic++) {
        int xb = offX + ((n * C + g * ICG + ic) * H) * Wd;
        int wb = offW + (oc * ICG + ic) * KH * KW;
        for (int kh = 0; kh < KH; kh++) {
            int ih = oh * SH - PH + kh * DH;
            if (ih < 0 || ih >= H) continue;
            for (int kw = 0; kw < KW; kw++) {
                int iw = ow * SW - PW + kw * DW;
                if (iw < 0 || iw >= Wd) continue;
                acc += LDX(X, xb + ih * Wd + iw) * LDW(W, wb + kh * KW + kw);
            }
        }
    }
    STORE_FN(acc, ((n * OC + oc) * OH + oh) * OW + ow EPI_ARGS);
}
