/* Implicit-GEMM 2-D convolution for GPUs (NCHW, any stride/padding/dilation, groups).
 * Per group g: out[m][n] = sum_k Wp[g][k][m] * im2col(x)[k][n] with M = OCG output channels,
 * N = batch*OH*OW output pixels, K = KH*KW*ICG ordered (kh, kw, ic) so that when TK divides
 * ICG (KBLK) a K block shares one filter tap: its bounds check and address are computed
 * once per block instead of per element. A work-group computes a TM x TN tile: the
 * weights (packed at build time as [G][K][OCG4], OCG4 = OCG rounded up to 4 and zero
 * filled, so every weight load is a coalesced 4-vector) and the im2col'd input are staged
 * TK rows at a time in local memory; each work-item accumulates an RM x RN micro tile in
 * registers (4-vectors strided across the tile so that local reads are 16-byte and
 * conflict free) and prefetches the next K block into registers while it computes; with
 * DB the local tiles are double-buffered (one barrier per K block instead of two).
 * 1x1 stride-1 unpadded convolutions (PW1) read the input as a plain [K][pixels] matrix.
 * Split-K (KSPLIT > 1): work-group z takes K range [z*KSL, (z+1)*KSL) and writes its
 * partial sums to out[z*N + n] (a REDUCE op adds them up).
 * Work: (ceil(N*OH*OW / TN) * NT, G * MT, KSPLIT), work-group (NT, 1, 1).
 * Specialised by: KNAME STORE_FN EPI_PARAMS EPI_ARGS TX TW LDX LDW4 and C OC ICG OCG OCG4
 * MT KH KW SH SW PH PW DH DW PW1 KBLK TM TN TK RM RN KSPLIT KSL DB. */
#define TTM (TM / RM)
#define TTN (TN / RN)
#define NT (TTM * TTN)
#define KK (KH * KW)
#define KTOT (ICG * KK)
#define NA (TK * TM / 4 / NT)   /* weight 4-vectors each work-item stages per K block */
#define NB (TK * TN / NT)       /* input elements each work-item stages per K block */
#define BRS (NT / TN)           /* row step of the input staging */

__kernel __attribute__((reqd_work_group_size(NT, 1, 1)))
void KNAME(__global const TX *X, int offX, __global const TW *W, int offW, int H, int Wd, int OH, int OW,
           int NB_ EPI_PARAMS) {
    __local float As[1 + DB][TK][TM];
    __local float Bs[1 + DB][TK][TN];
    int lid = get_local_id(0);
    int n0 = get_group_id(0) * TN;
    int g = get_group_id(1) / MT, m0 = (get_group_id(1) % MT) * TM;
    int OHW = OH * OW, NPQ = NB_ * OHW, HW = H * Wd;
    int ksl = get_group_id(2), kbeg = ksl * KSL, kend = min(KTOT, kbeg + KSL);
    /* the input column this work-item stages never changes: decompose it once */
    int bc = lid % TN, br = lid / TN;
    int n = n0 + bc;
    bool nok = n < NPQ;
    int img = nok ? n / OHW : 0, p = nok ? n - img * OHW : 0;
    int xbase = offX + (img * C + g * ICG) * HW;
#if PW1
    xbase += p;
#else
    int oh = p / OW, ow = p - oh * OW;
    int ih0 = oh * SH - PH, iw0 = ow * SW - PW;
#endif
    __global const TW *Wg = W + offW + g * KTOT * OCG4;
    int tm = lid / TTN, tn = lid % TTN;
    float acc[RM][RN];
    for (int i = 0; i < RM; i++)
        for (int j = 0; j < RN; j++) acc[i][j] = 0.0f;
    float4 ra[NA];
    float rb[NB];
#define LOAD_BLOCK(k0)                                                                      \
    for (int j = 0; j < NA; j++) {                                                          \
        int idx = lid + j * NT, r = idx / (TM / 4), c4 = (idx % (TM / 4)) * 4;              \
        int k = (k0) + r, m = m0 + c4;                                                      \
        ra[j] = (k < kend && m < OCG4) ? LDW4(Wg, k * OCG4 + m) : (float4)(0.0f);           \
    }                                                                                       \
    LOAD_XBLOCK(k0)
#if PW1
#define LOAD_X(k, v) v = LDX(X, xbase + (k) * HW)
#else
#define LOAD_X(k, v)                                                                        \
    {                                                                                       \
        int khw = (k) / ICG, ic = (k) - khw * ICG, kh = khw / KW, kw = khw - kh * KW;       \
        int ih = ih0 + kh * DH, iw = iw0 + kw * DW;                                         \
        if (ih >= 0 && ih < H && iw >= 0 && iw < Wd) v = LDX(X, xbase + ic * HW + ih * Wd + iw); \
    }
#endif
#if KBLK
/* the block's rows are channels ic0.. of one tap (kh, kw): k < kend holds (TK | ICG) */
#define LOAD_XBLOCK(k0)                                                                     \
    {                                                                                       \
        int khw = (k0) / ICG, ic0 = (k0) - khw * ICG, kh = khw / KW, kw = khw - kh * KW;    \
        int ih = ih0 + kh * DH, iw = iw0 + kw * DW;                                         \
        bool ok = nok && ih >= 0 && ih < H && iw >= 0 && iw < Wd;                           \
        int rbase = xbase + (ic0 + br) * HW + ih * Wd + iw;                                 \
        for (int j = 0; j < NB; j++) rb[j] = ok ? LDX(X, rbase + j * BRS * HW) : 0.0f;      \
    }
#else
#define LOAD_XBLOCK(k0)                                                                     \
    for (int j = 0; j < NB; j++) {                                                          \
        int k = (k0) + br + j * BRS;                                                        \
        float v = 0.0f;                                                                     \
        if (nok && k < kend) {                                                              \
            LOAD_X(k, v);                                                                   \
        }                                                                                   \
        rb[j] = v;                                                                          \
    }
#endif
#define STAGE(buf)                                                                          \
    for (int j = 0; j < NA; j++) {                                                          \
        int idx = lid + j * NT;                                                             \
        vstore4(ra[j], 0, &As[buf][idx / (TM / 4)][(idx % (TM / 4)) * 4]);                  \
    }                                                                                       \
    for (int j = 0; j < NB; j++) Bs[buf][br + j * BRS][bc] = rb[j];
#define COMPUTE(buf)                                                                        \
    _Pragma("unroll") for (int kk = 0; kk < TK; kk++) {                                     \
        float a[RM], b[RN];                                                                 \
        for (int v = 0; v < RM / 4; v++) {                                                  \
            float4 t = vload4(0, &As[buf][kk][v * 4 * TTM + tm * 4]);                       \
            a[4 * v] = t.x; a[4 * v + 1] = t.y; a[4 * v + 2] = t.z; a[4 * v + 3] = t.w;     \
        }                                                                                   \
        for (int v = 0; v < RN / 4; v++) {                                                  \
            float4 t = vload4(0, &Bs[buf][kk][v * 4 * TTN + tn * 4]);                       \
            b[4 * v] = t.x; b[4 * v + 1] = t.y; b[4 * v + 2] = t.z; b[4 * v + 3] = t.w;     \
        }                                                                                   \
        for (int i = 0; i < RM; i++)                                                        \
            for (int j = 0; j < RN; j++) acc[i][j] = fma(a[i], b[j], acc[i][j]);            \
    }
    LOAD_BLOCK(kbeg)
#if DB
    /* two local buffers: the next block is staged while this one is read, one barrier each */
    STAGE(0)
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k0 = kbeg, cur = 0; k0 < kend; k0 += TK, cur ^= 1) {
        bool more = k0 + TK < kend;
        if (more) {
            LOAD_BLOCK(k0 + TK)
        }
        COMPUTE(cur)
        if (more) {
            STAGE(cur ^ 1)
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#else
    for (int k0 = kbeg; k0 < kend; k0 += TK) {
        STAGE(0)
        barrier(CLK_LOCAL_MEM_FENCE);
        if (k0 + TK < kend) {
            LOAD_BLOCK(k0 + TK)
        }
        COMPUTE(0)
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#endif
    for (int j = 0; j < RN; j++) {
        int nn = n0 + (j / 4) * 4 * TTN + tn * 4 + (j % 4);
        if (nn >= NPQ) continue;
        int im = nn / OHW, pp = nn - im * OHW;
        for (int i = 0; i < RM; i++) {
            int m = m0 + (i / 4) * 4 * TTM + tm * 4 + (i % 4);
            if (m < OCG) STORE_FN(acc[i][j], ((ksl * NB_ + im) * OC + g * OCG + m) * OHW + pp EPI_ARGS);
        }
    }
#undef LOAD_BLOCK
#undef LOAD_XBLOCK
#undef STAGE
#undef COMPUTE
#undef LOAD_X
}
#undef TTM
#undef TTN
#undef NT
#undef KK
#undef KTOT
#undef NA
#undef NB
#undef BRS
