/* Depthwise 2-D convolution, stride 1 and dilation 1 along H (GPU family): a work-item
 * computes OHB vertically adjacent outputs of one column, sliding down the OHB + KH - 1 input
 * rows they need, and neighbouring work-items take neighbouring columns, so each load of a
 * warp reads one contiguous span of a row. conv2d_dw.cl (OWB outputs along a row per
 * work-item) had its lanes OWB elements apart, and ConvNeXt-T b32 fp16's 7x7 layers took
 * 100-104 / 56 / 34 / 20 us at stages 1-4 on the H100 (about 10 ps an output: a sixth of the
 * fp32 FMA rate); one column per work-item with a data-dependent row skip took 99 / 46 / 27 /
 * 14 us. TORCHTRT_C_DW=rows keeps conv2d_dw.cl (for A/B runs).
 * x [N, C, H, W] dense, w [OC, 1, KH, KW]. Work: (OW, ceil(OH / OHB), N*OC) rounded up to the
 * work-group codegen chose (NZ = N*OC bounds the last dim).
 * OWC (1 or 2) adjacent columns per work-item share the rows' loads. Loops have constant
 * trip counts and no early exits, so the arrays stay in registers once unrolled.
 * Specialised by: KNAME STORE_FN EPI_PARAMS EPI_ARGS TX TW LDX LDW and C OC OCG KH KW SW PH PW DW
 * OHB OWC. */
#define SPAN ((OWC - 1) * SW + (KW - 1) * DW + 1)
__kernel void KNAME(__global const TX *X, int offX, __global const TW *W, int offW, int H, int Wd, int OH,
                    int OW, int NZ EPI_PARAMS) {
    int ow0 = get_global_id(0) * OWC, oh0 = get_global_id(1) * OHB, z = get_global_id(2);
    if (ow0 >= OW || oh0 >= OH || z >= NZ) return;
    int oc = z % OC, n = z / OC, g = oc / OCG;
    float w[KH * KW];
#pragma unroll
    for (int i = 0; i < KH * KW; i++) w[i] = LDW(W, offW + oc * KH * KW + i);
    float acc[OHB][OWC];
#pragma unroll
    for (int j = 0; j < OHB; j++)
#pragma unroll
        for (int c = 0; c < OWC; c++) acc[j][c] = 0.0f;
    int xb = offX + (n * C + g) * H * Wd, iw0 = ow0 * SW - PW;
    /* which of the span's columns are inside the row: the same for every row */
    bool cok[SPAN];
#pragma unroll
    for (int s = 0; s < SPAN; s++) cok[s] = iw0 + s >= 0 && iw0 + s < Wd;
#pragma unroll
    for (int r = 0; r < OHB + KH - 1; r++) {
        int ih = oh0 - PH + r;
        bool rok = ih >= 0 && ih < H;
        int xrow = xb + ih * Wd + iw0;
        float xr[SPAN];
#pragma unroll
        for (int s = 0; s < SPAN; s++) xr[s] = rok && cok[s] ? LDX(X, xrow + s) : 0.0f;
        /* input row r feeds output row j through kernel row r - j */
#pragma unroll
        for (int j = 0; j < OHB; j++) {
            int kh = r - j;
            if (kh >= 0 && kh < KH) {
#pragma unroll
                for (int kw = 0; kw < KW; kw++)
#pragma unroll
                    for (int c = 0; c < OWC; c++) acc[j][c] = fma(xr[c * SW + kw * DW], w[kh * KW + kw], acc[j][c]);
            }
        }
    }
    int ob = ((n * OC + oc) * OH + oh0) * OW + ow0;
#pragma unroll
    for (int j = 0; j < OHB; j++)
#pragma unroll
        for (int c = 0; c < OWC; c++)
            if (oh0 + j < OH && ow0 + c < OW) STORE_FN(acc[j][c], ob + j * OW + c EPI_ARGS);
}
#undef SPAN
