/* 2-D convolution for CPU devices: each work-item computes 4 adjacent output columns for
 * 8 output channels (float8 accumulators, weights packed [G][NOB][ICG][KH][KW][8] with
 * zero padding so that every load is a full vector). Work: (ceil(OW/4), OH, N*G*NOB).
 * Specialised by: KNAME STORE_FN EPI_PARAMS EPI_ARGS TX TW LDX LDW8 and C OC ICG OCG G NOB
 * KH KW SH SW PH PW DH DW. */
__kernel void KNAME(__global const TX *X, int offX, __global const TW *W, int offW, int H, int Wd, int OH,
                    int OW EPI_PARAMS) {
    int ow0 = get_global_id(0) * 4, oh = get_global_id(1), z = get_global_id(2);
    if (ow0 >= OW || oh >= OH) return;
    int ob = z % NOB, g = (z / NOB) % G, n = z / (NOB * G);
    float8 a0 = (float8)(0.0f), a1 = a0, a2 = a0, a3 = a0;
    int wg = offW + (g * NOB + ob) * ICG * KH * KW * 8;
    for (int ic = 0; ic < ICG; ic++) {
        int xb = offX + ((n * C + g * ICG + ic) * H) * Wd;
        for (int kh = 0; kh < KH; kh++) {
            int ih = oh * SH - PH + kh * DH;
            if (ih < 0 || ih >= H) continue;
            int xr = xb + ih * Wd;
            for (int kw = 0; kw < KW; kw++) {
                float8 wv = LDW8(W, wg + ((ic * KH + kh) * KW + kw) * 8);
                int iw = ow0 * SW - PW + kw * DW;
                float x0 = (iw >= 0 && iw < Wd) ? LDX(X, xr + iw) : 0.0f;
                float x1 = (iw + SW >= 0 && iw + SW < Wd) ? LDX(X, xr + iw + SW) : 0.0f;
                float x2 = (iw + 2 * SW >= 0 && iw + 2 * SW < Wd) ? LDX(X, xr + iw + 2 * SW) : 0.0f;
                float x3 = (iw + 3 * SW >= 0 && iw + 3 * SW < Wd) ? LDX(X, xr + iw + 3 * SW) : 0.0f;
                a0 += x0 * wv; a1 += x1 * wv; a2 += x2 * wv; a3 += x3 * wv;
            }
        }
    }
    float r[8];
    int nc = min(8, OCG - ob * 8);
    for (int j = 0; j < 4; j++) {
        int ow = ow0 + j;
        if (ow >= OW) break;
        vstore8(j == 0 ? a0 : j == 1 ? a1 : j == 2 ? a2 : a3, 0, r);
        for (int o = 0; o < nc; o++) {
            int oc = g * OCG + ob * 8 + o;
            STORE_FN(r[o], ((n * OC + oc) * OH + oh) * OW + ow EPI_ARGS);
        }
    }
}
