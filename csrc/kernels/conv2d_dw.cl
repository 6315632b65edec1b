/* Depthwise 2-D convolution (one input channel per group; OCG output channels each): a
 * work-item computes OWB adjacent outputs of one row, keeping the channel's KH*KW weights
 * and the input row span the OWB outputs need in registers, so each input element is
 * loaded once per row instead of once per output. x [N, C, H, W] dense, w [OC, 1, KH, KW].
 * Work: (ceil(OW / OWB), OH, N*OC), rounded up to the work-group size that codegen chose on
 * GPUs (NZ = N*OC bounds the last dim): left to the driver, NVIDIA's OpenCL picked groups as
 * small as the divisors of (14, 56, 3072) allow, and a 7x7 depthwise layer of ConvNeXt-T b32
 * took 237 us on the H100.
 * Specialised by: KNAME STORE_FN EPI_PARAMS EPI_ARGS TX TW LDX LDW and C OC OCG KH KW SH SW
 * PH PW DH DW OWB. */
#define SPAN ((OWB - 1) * SW + (KW - 1) * DW + 1)
__kernel void KNAME(__global const TX *X, int offX, __global const TW *W, int offW, int H, int Wd, int OH,
                    int OW, int NZ EPI_PARAMS) {
    int ow0 = get_global_id(0) * OWB, oh = get_global_id(1), z = get_global_id(2);
    if (ow0 >= OW || oh >= OH || z >= NZ) return;
    int oc = z % OC, n = z / OC, g = oc / OCG;
    float w[KH * KW];
    for (int i = 0; i < KH * KW; i++) w[i] = LDW(W, offW + oc * KH * KW + i);
    float acc[OWB];
    for (int j = 0; j < OWB; j++) acc[j] = 0.0f;
    int xb = offX + (n * C + g) * H * Wd, iw0 = ow0 * SW - PW;
    for (int kh = 0; kh < KH; kh++) {
        int ih = oh * SH - PH + kh * DH;
        if (ih < 0 || ih >= H) continue;
        float xr[SPAN];
        int xrow = xb + ih * Wd;
        for (int s = 0; s < SPAN; s++) {
            int iw = iw0 + s;
            xr[s] = (iw >= 0 && iw < Wd) ? LDX(X, xrow + iw) : 0.0f;
        }
        for (int kw = 0; kw < KW; kw++)
            for (int j = 0; j < OWB; j++) acc[j] = fma(xr[j * SW + kw * DW], w[kh * KW + kw], acc[j]);
    }
    int ob = ((n * OC + oc) * OH + oh) * OW + ow0;
    for (int j = 0; j < OWB; j++)
        if (ow0 + j < OW) STORE_FN(acc[j], ob + j EPI_ARGS);
}
#undef SPAN
