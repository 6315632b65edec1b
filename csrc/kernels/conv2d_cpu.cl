/* 2-D convolution for CPU devices (PoCL): pixels along the vector lanes. Each work-item
 * computes OCB=4 output channels x 2 pixel groups x 8 lanes (8 float8 accumulators): per
 * reduction step two 8-pixel input vectors and four broadcast weights give 8 vector FMAs, which
 * keeps x86 FMA units busy without spilling (16 vector registers). Weights are read in their
 * original [OC][ICG][KH][KW] layout (no packing). No local memory.
 *   PW1 = 0: the two groups are output rows oh0 and oh0+1, lanes are 8 adjacent columns.
 *            Work: (ceil(OW/8), ceil(OH/2), KSPLIT*N*G*NOB).
 *   PW1 = 1 (1x1, stride 1, no padding: a GEMM per image): the groups are 16 consecutive
 *            pixels of the flattened H*W plane. Work: (ceil(OH*OW/16), 1, KSPLIT*N*G*NOB).
 * Split-K (KSPLIT > 1): slice s sums input channels [s*ICS, (s+1)*ICS) and writes partials to
 * batch index s*N + n of the [KSPLIT*N, OC, OH, OW] output (a REDUCE op adds the slices).
 * Specialised by: KNAME STORE_FN EPI_PARAMS EPI_ARGS TX TW LDX LDX8 LDW and C OC ICG OCG G NOB
 * KH KW SH SW PH PW DH DW PW1 KSPLIT ICS. */
#define TTC_OCB 4
#if SW == 1
#define TTC_FAST(iw) ((iw) >= 0 && (iw) + 8 <= Wd)
#define TTC_LD(row, iw) LDX8(X, (row) + (iw))
#elif SW == 2
#define TTC_FAST(iw) ((iw) >= 0 && (iw) + 16 <= Wd)
/* even lanes of 16 from two 8-wide loads (a float16 value would go through memory on AVX2) */
#define TTC_EVEN(a, b) ((float8)((a).s0246, (b).s0246))
#define TTC_LD(row, iw) TTC_EVEN(LDX8(X, (row) + (iw)), LDX8(X, (row) + (iw) + 8))
#else
#define TTC_FAST(iw) false
#define TTC_LD(row, iw) ((float8)(0.0f))
#endif
#define TTC_G(row, j) ((iw + (j) * SW >= 0 && iw + (j) * SW < Wd) ? LDX(X, (row) + iw + (j) * SW) : 0.0f)
__kernel void KNAME(__global const TX *X, int offX, __global const TW *W, int offW, int H, int Wd, int OH,
                    int OW, int NB EPI_PARAMS) {
    int z = get_global_id(2);
    int ob = z % NOB, g = (z / NOB) % G, sn = z / (NOB * G);
    int n = sn % NB, s = sn / NB;
    int ic0 = s * ICS, ic1 = min(ICG, ic0 + ICS);
    int ocg0 = ob * TTC_OCB;
    /* weight rows of the 4 channels (clamped into the group: extra channels are not stored) */
    int kt = ICG * KH * KW;
    int wb0 = offW + (g * OCG + min(ocg0, OCG - 1)) * kt, wb1 = offW + (g * OCG + min(ocg0 + 1, OCG - 1)) * kt;
    int wb2 = offW + (g * OCG + min(ocg0 + 2, OCG - 1)) * kt, wb3 = offW + (g * OCG + min(ocg0 + 3, OCG - 1)) * kt;
    float8 a00 = (float8)(0.0f), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00, a30 = a00, a31 = a00;
#if PW1
    int P = OH * OW, p0 = get_global_id(0) * 16;
    if (p0 >= P) return;
    int xb = offX + (n * C + g * ICG) * P + p0;
    bool full = p0 + 16 <= P;
    for (int ic = ic0; ic < ic1; ic++) {
        int xr = xb + ic * P;
        float8 x0, x1;
        if (full) {
            x0 = LDX8(X, xr);
            x1 = LDX8(X, xr + 8);
        } else {
            float t[16];
            for (int j = 0; j < 16; j++) t[j] = p0 + j < P ? LDX(X, xr + j) : 0.0f;
            x0 = vload8(0, t);
            x1 = vload8(1, t);
        }
        float w0 = LDW(W, wb0 + ic), w1 = LDW(W, wb1 + ic), w2 = LDW(W, wb2 + ic), w3 = LDW(W, wb3 + ic);
        a00 += w0 * x0; a01 += w0 * x1; a10 += w1 * x0; a11 += w1 * x1;
        a20 += w2 * x0; a21 += w2 * x1; a30 += w3 * x0; a31 += w3 * x1;
    }
#else
    /* the last column block of a row at least 8 wide is moved left to end at the row's end
     * (more of its taps are interior); it stores only the columns from its own start on, so
     * no output element is written twice */
    int own = get_global_id(0) * 8, oh0 = get_global_id(1) * 2;
    if (own >= OW || oh0 >= OH) return;
    int ow0 = OW >= 8 ? min(own, OW - 8) : own;
    int xb = offX + (n * C + g * ICG) * H * Wd;
    int xlast = offX + NB * C * H * Wd - 8;   /* the last 8-wide window inside the tensor */
    for (int ic = ic0; ic < ic1; ic++) {
        int xc = xb + ic * H * Wd;
        for (int kh = 0; kh < KH; kh++) {
            int ih0 = oh0 * SH - PH + kh * DH, ih1 = ih0 + SH;
            bool v0 = ih0 >= 0 && ih0 < H, v1 = ih1 >= 0 && ih1 < H;
            if (!v0 && !v1) continue;
            int xr0 = xc + (v0 ? ih0 : 0) * Wd, xr1 = xc + (v1 ? ih1 : 0) * Wd;
            int iwl = ow0 * SW - PW, kb = (ic * KH + kh) * KW;
            if (v0 && v1 && TTC_FAST(iwl) && TTC_FAST(iwl + (KW - 1) * DW)) {
                /* interior (most blocks of wide rows): straight-line vector loads */
#pragma unroll
                for (int kw = 0; kw < KW; kw++) {
                    float8 x0 = TTC_LD(xr0, iwl + kw * DW), x1 = TTC_LD(xr1, iwl + kw * DW);
                    int k = kb + kw;
                    float w0 = LDW(W, wb0 + k), w1 = LDW(W, wb1 + k), w2 = LDW(W, wb2 + k), w3 = LDW(W, wb3 + k);
                    a00 += w0 * x0; a01 += w0 * x1; a10 += w1 * x0; a11 += w1 * x1;
                    a20 += w2 * x0; a21 += w2 * x1; a30 += w3 * x0; a31 += w3 * x1;
                }
                continue;
            }
            for (int kw = 0; kw < KW; kw++) {
                int iw = ow0 * SW - PW + kw * DW;
                float8 x0, x1;
                /* interior: whole-vector loads (stride 2: every other lane of 16); edges:
                 * per-lane guarded loads */
                if (TTC_FAST(iw)) {
                    x0 = TTC_LD(xr0, iw);
                    x1 = TTC_LD(xr1, iw);
                }
#if SW == 1
                else if (Wd >= 8) {
                    /* edge block of a row at least 8 wide: load the in-row window nearest to
                     * the wanted columns, move lanes into place, zero the columns outside */
                    int wb = clamp(iw, 0, Wd - 8);
                    int8 col = (int8)(0, 1, 2, 3, 4, 5, 6, 7) + iw;
                    int8 ok = col >= 0 && col < Wd;
                    uint8 m = convert_uint8(clamp(col - wb, 0, 7));
                    x0 = select((float8)(0.0f), shuffle(LDX8(X, xr0 + wb), m), ok);
                    x1 = select((float8)(0.0f), shuffle(LDX8(X, xr1 + wb), m), ok);
                } else if (xlast >= offX) {
                    /* rows narrower than 8: windows ending at the row's end (or the nearest
                     * ones inside the tensor), reaching into neighbouring rows; lanes moved
                     * into place and the columns outside the row zeroed */
                    int s0 = clamp(xr0 + Wd - 8, offX, xlast), s1 = clamp(xr1 + Wd - 8, offX, xlast);
                    int8 col = (int8)(0, 1, 2, 3, 4, 5, 6, 7) + iw;
                    int8 ok = col >= 0 && col < Wd;
                    x0 = select((float8)(0.0f), shuffle(LDX8(X, s0), convert_uint8(clamp(xr0 - s0 + col, 0, 7))), ok);
                    x1 = select((float8)(0.0f), shuffle(LDX8(X, s1), convert_uint8(clamp(xr1 - s1 + col, 0, 7))), ok);
                }
#endif
                else {
                    x0 = (float8)(TTC_G(xr0, 0), TTC_G(xr0, 1), TTC_G(xr0, 2), TTC_G(xr0, 3), TTC_G(xr0, 4),
                                  TTC_G(xr0, 5), TTC_G(xr0, 6), TTC_G(xr0, 7));
                    x1 = (float8)(TTC_G(xr1, 0), TTC_G(xr1, 1), TTC_G(xr1, 2), TTC_G(xr1, 3), TTC_G(xr1, 4),
                                  TTC_G(xr1, 5), TTC_G(xr1, 6), TTC_G(xr1, 7));
                }
                x0 = v0 ? x0 : (float8)(0.0f);
                x1 = v1 ? x1 : (float8)(0.0f);
                int k = (ic * KH + kh) * KW + kw;
                float w0 = LDW(W, wb0 + k), w1 = LDW(W, wb1 + k), w2 = LDW(W, wb2 + k), w3 = LDW(W, wb3 + k);
                a00 += w0 * x0; a01 += w0 * x1; a10 += w1 * x0; a11 += w1 * x1;
                a20 += w2 * x0; a21 += w2 * x1; a30 += w3 * x0; a31 += w3 * x1;
            }
        }
    }
#endif
    /* stores: channel o, group r, lane j */
    float r[8];
    int nc = min(TTC_OCB, OCG - ocg0);
    for (int o = 0; o < nc; o++) {
        int ob_ = ((sn * OC + g * OCG + ocg0 + o) * OH) * OW;
        for (int q = 0; q < 2; q++) {
            float8 v = o == 0 ? (q ? a01 : a00) : o == 1 ? (q ? a11 : a10) : o == 2 ? (q ? a21 : a20) : (q ? a31 : a30);
            vstore8(v, 0, r);
#if PW1
            int p = p0 + q * 8, nl = min(8, P - p);
            for (int j = 0; j < nl; j++) STORE_FN(r[j], ob_ + p + j EPI_ARGS);
#else
            int oh = oh0 + q, nl = min(8, OW - ow0);
            if (oh >= OH) break;
            for (int j = own - ow0; j < nl; j++) STORE_FN(r[j], ob_ + oh * OW + ow0 + j EPI_ARGS);
#endif
        }
    }
}
#undef TTC_OCB
#undef TTC_FAST
#undef TTC_LD
#undef TTC_EVEN
#undef TTC_G
