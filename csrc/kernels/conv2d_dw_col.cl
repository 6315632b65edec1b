/* Depthwise 2-D convolution, stride 1 and dilation 1 along H (GPU family): a work-item
 * computes OHB vertically adjacent outputs of one column, sliding down the OHB + KH - 1 input
 * rows they need, and neighbouring work-items take neighbouring columns, so each load of a
 * warp reads one contiguous span of a row. conv2d_dw.cl (OWB outputs along a row per
 * work-item) had its lanes OWB elements apart: ConvNeXt-T's 7x7 layers at b32 fp16 ran at a
 * seventh of the H100's bandwidth, bound by the cache wavefronts of those scattered loads.
 * x [N, C, H, W] dense, w [OC, 1, KH, KW]. Work: (OW, ceil(OH / OHB), N*OC) rounded up to the
 * work-group codegen chose (NZ = N*OC bounds the last dim).
 * Specialised by: KNAME STORE_FN EPI_PARAMS EPI_ARGS TX TW LDX LDW and C OC OCG KH KW SW PH PW DW
 * OHB. */
__kernel void KNAME(__global const TX *X, int offX, __global const TW *W, int offW, int H, int Wd, int OH,
                    int OW, int NZ EPI_PARAMS) {
    int ow = get_global_id(0), oh0 = get_global_id(1) * OHB, z = get_global_id(2);
    if (ow >= OW || oh0 >= OH || z >= NZ) return;
    int oc = z % OC, n = z / OC, g = oc / OCG;
    float w[KH * KW];
    for (int i = 0; i < KH * KW; i++) w[i] = LDW(W, offW + oc * KH * KW + i);
    float acc[OHB];
    for (int j = 0; j < OHB; j++) acc[j] = 0.0f;
    int xb = offX + (n * C + g) * H * Wd, iw0 = ow * SW - PW;
#pragma unroll
    for (int r = 0; r < OHB + KH - 1; r++) {
        int ih = oh0 - PH + r;
        if (ih < 0 || ih >= H) continue;
        float xr[KW];
        int xrow = xb + ih * Wd;
        for (int kw = 0; kw < KW; kw++) {
            int iw = iw0 + kw * DW;
            xr[kw] = (iw >= 0 && iw < Wd) ? LDX(X, xrow + iw) : 0.0f;
        }
        /* input row r feeds output j through kernel row r - j */
#pragma unroll
        for (int j = 0; j < OHB; j++) {
            int kh = r - j;
            if (kh >= 0 && kh < KH)
                for (int kw = 0; kw < KW; kw++) acc[j] = fma(xr[kw], w[kh * KW + kw], acc[j]);
        }
    }
    int ob = ((n * OC + oc) * OH + oh0) * OW + ow;
    for (int j = 0; j < OHB; j++)
        if (oh0 + j < OH) STORE_FN(acc[j], ob + j * OW EPI_ARGS);
}
