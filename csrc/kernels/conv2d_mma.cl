/* Implicit-GEMM 2-D convolution on tensor cores (mma.sync through the PTX prelude, ptx.cl):
 * per group g, out[m][n] = sum_k Wp[g][m][k] * im2col(x)[k][n] with M = OCG output channels,
 * N = batch*OH*OW output pixels (NCHW at both ends: a warp's C fragments hold pixel pairs of
 * one channel, so stores run along W), K = KH*KW*ICG ordered (kh, kw, ic).
 * fp16 (m16n8k16, halves as ushort bits) or, with CONV_TF32, fp32 in TF32 (m16n8k8).
 * Weights are packed at build time as [G][OCG][KP] (KP = K rounded up to 32, zero filled;
 * TF32: already rounded to tf32), so a slice of BM rows x BK is whole 16-byte chunks that
 * cp.async brings into local memory STAGES slices ahead. The activation slice is gathered
 * from NCHW (16-byte k loads would need channels-last; its boundary transposes cost more
 * than they save at these sizes): each work-item owns a chunk of CE consecutive k of one
 * pixel, loads the next slice's values into registers while the current one is multiplied,
 * and stores them as one 16-byte row piece of the [n][k] tile (the layout the .col operand
 * wants). Both tiles keep rows of 64 bytes padded by 16, so that 16-byte stores, ldmatrix
 * rows and 32-bit fragment reads hit distinct banks. When ICG is a multiple of CE a chunk
 * shares one filter tap (one bounds check, one address). A work-group of WM x WN warps
 * computes a BM x BN tile, each warp (BM/WM) x (BN/WN) of 16x8 mma tiles.
 * Split-K (KSPLIT > 1): work-group z takes K range [z*KSL, (z+1)*KSL) and writes partial sums
 * to out[z*N + n] (a REDUCE op adds them up).
 * Work: (ceil(N*OH*OW / BN) * NTH, G * MT, KSPLIT), work-group (NTH, 1, 1).
 * Specialised by: KNAME STORE_FN EPI_PARAMS EPI_ARGS TX X_F32 CONV_TF32 C OC ICG OCG KH KW SH SW
 * PH PW DH DW KP MT BM BN WM WN STAGES KSPLIT KSL
 * (local memory: (STAGES * BM + 2 * BN) * 80 bytes <= 48 KiB). */
#define NTH (32 * WM * WN)
#define WTM (BM / WM)
#define WTN (BN / WN)
#define MI (WTM / 16)
#define NI (WTN / 8)
#define KT (ICG * KH * KW)
#if CONV_TF32
#define BK 16                 /* elements of a slice row (64 bytes) */
#define CE 4                  /* elements of a 16-byte chunk */
#define TW float
#else
#define BK 32
#define CE 8
#define TW ushort
#endif
/* a chunk's elements as loaded (XE), and packed into the 16 bytes of its local row piece */
#if CONV_TF32
#define XE float
#define LDXE(i) X[i]
#define PACK(v) (uint4)(ttc_tf32(v[0]), ttc_tf32(v[1]), ttc_tf32(v[2]), ttc_tf32(v[3]))
#elif X_F32
#define XE float
#define LDXE(i) X[i]
#define PACK(v) (uint4)(ttc_f2h2(v[0], v[1]), ttc_f2h2(v[2], v[3]), ttc_f2h2(v[4], v[5]), ttc_f2h2(v[6], v[7]))
#else
#define XE ushort
#define LDXE(i) ((__global const ushort *)X)[i]
#define PACK(v)                                                                                    \
    (uint4)(v[0] | ((uint)v[1] << 16), v[2] | ((uint)v[3] << 16), v[4] | ((uint)v[5] << 16),       \
            v[6] | ((uint)v[7] << 16))
#endif
#define RW 20                 /* words of a local row: 16 of data + 4 of padding */
#define ACH (BM * 4 / NTH)    /* A chunks per work-item per slice (BM * 4 >= NTH) */
#define BCH (BN * 4 / NTH)
#define KTR ((KT + BK - 1) / BK * BK)
/* cp.async.wait_group takes a literal: STAGES - 2 groups may stay in flight */
#if STAGES == 2
#define CP_WAIT_AHEAD TTC_CP_ASYNC_WAIT(0)
#elif STAGES == 3
#define CP_WAIT_AHEAD TTC_CP_ASYNC_WAIT(1)
#else
#error "conv2d_mma.cl: STAGES must be 2 or 3"
#endif

__kernel __attribute__((reqd_work_group_size(NTH, 1, 1)))
void KNAME(__global const TX *X, int offX, __global const TW *W, int offW, int H, int Wd, int OH, int OW,
           int NB_ EPI_PARAMS) {
    __local uint4 As4[STAGES * BM * RW / 4];
    __local uint4 Bs4[2 * BN * RW / 4];
    TTC_PTX_SCRATCH(scr, WM * WN);
    __local uint *As = (__local uint *)As4;
    __local uint *Bs = (__local uint *)Bs4;
    int tid = get_local_id(0), lane = tid & 31, warp = tid >> 5;
    int wm = warp / WN, wn = warp % WN, g8 = lane >> 2, t4 = lane & 3;
    int n0 = get_group_id(0) * BN;
    int grp = get_group_id(1) / MT, m0 = (get_group_id(1) % MT) * BM;
    int OHW = OH * OW, NPQ = NB_ * OHW, HW = H * Wd;
    int ksl = get_group_id(2), kbeg = ksl * KSL, kend = min(KTR, kbeg + KSL);
    int nk = kend > kbeg ? (kend - kbeg) / BK : 0;
    __global const TW *Wg = W + offW + (size_t)grp * OCG * KP;
    /* packed weights start 16-byte aligned in practice (their own buffer); else plain loads */
    bool wal = offW % CE == 0;

    /* the pixel of each B chunk this work-item gathers never changes: decompose it once */
    int bxb[BCH], bih[BCH], biw[BCH];
#pragma unroll
    for (int j = 0; j < BCH; j++) {
        int n = n0 + (tid + j * NTH) % BN;
        bool ok = n < NPQ;
        int img = ok ? n / OHW : 0, p = ok ? n - img * OHW : 0, oh = p / OW, ow = p - oh * OW;
        bxb[j] = offX + (img * C + grp * ICG) * HW;
        /* an invalid pixel gets a row that no tap can bring inside the image */
        bih[j] = ok ? oh * SH - PH : -(1 << 28);
        biw[j] = ow * SW - PW;
    }
    uint4 rb[BCH];

    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < NI; j++)
#pragma unroll
            for (int r = 0; r < 4; r++) acc[i][j][r] = 0.0f;

    /* A slice s (k from k0) into stage buffer `st`: chunk c is row c / 4, k offset (c % 4) * CE;
     * rows past OCG are zero-filled from a valid address */
#define LOAD_A(st, k0)                                                                             \
    {                                                                                              \
        _Pragma("unroll") for (int c = 0; c < ACH; c++) {                                          \
            int l = tid + c * NTH, r = l >> 2, kc = (l & 3) * CE;                                  \
            bool ok = m0 + r < OCG;                                                                \
            __local uint *dst = As + ((st) * BM + r) * RW + (l & 3) * 4;                           \
            __global const TW *srcp = ok ? Wg + (size_t)(m0 + r) * KP + (k0) + kc : W;              \
            if (wal) {                                                                             \
                ttc_cp_async16_zfill(dst, srcp, ok ? 16 : 0);                                      \
            } else {                                                                               \
                TW e[CE];                                                                          \
                _Pragma("unroll") for (int q = 0; q < CE; q++) e[q] = ok ? srcp[q] : (TW)0;         \
                __local TW *d = (__local TW *)dst;                                                 \
                _Pragma("unroll") for (int q = 0; q < CE; q++) d[q] = e[q];                        \
            }                                                                                      \
        }                                                                                          \
    }

    /* B slice from k0 into registers: chunk j covers k0 + kc .. + CE - 1 of its pixel */
#define GATHER_B(k0)                                                                               \
    {                                                                                              \
        _Pragma("unroll") for (int j = 0; j < BCH; j++) {                                          \
            int kk = (k0) + ((tid + j * NTH) / BN) * CE;                                           \
            XE v[CE];                                                                              \
            GATHER_CHUNK(j, kk, v)                                                                 \
            rb[j] = PACK(v);                                                                       \
        }                                                                                          \
    }
#if ICG % CE == 0
    /* the chunk's k share one tap (and KT is a multiple of CE: all in or all out) */
#define GATHER_CHUNK(j, kk, v)                                                                     \
    {                                                                                              \
        int tap = (kk) / ICG, ic = (kk) - tap * ICG, kh = tap / KW, kw = tap - kh * KW;            \
        int ih = bih[j] + kh * DH, iw = biw[j] + kw * DW;                                          \
        bool ok = (kk) < KT && ih >= 0 && ih < H && iw >= 0 && iw < Wd;                            \
        int a = ok ? bxb[j] + ic * HW + ih * Wd + iw : 0;                                          \
        _Pragma("unroll") for (int e = 0; e < CE; e++) v[e] = ok ? LDXE(a + e * HW) : (XE)0;        \
    }
#else
#define GATHER_CHUNK(j, kk, v)                                                                     \
    {                                                                                              \
        _Pragma("unroll") for (int e = 0; e < CE; e++) {                                           \
            int k = (kk) + e, tap = k / ICG, ic = k - tap * ICG, kh = tap / KW, kw = tap - kh * KW; \
            int ih = bih[j] + kh * DH, iw = biw[j] + kw * DW;                                      \
            bool ok = k < KT && ih >= 0 && ih < H && iw >= 0 && iw < Wd;                           \
            v[e] = ok ? LDXE(bxb[j] + ic * HW + ih * Wd + iw) : (XE)0;                             \
        }                                                                                          \
    }
#endif

#define STORE_B(sb)                                                                                \
    {                                                                                              \
        _Pragma("unroll") for (int j = 0; j < BCH; j++) {                                          \
            int l = tid + j * NTH, n = l % BN, kc = l / BN;                                        \
            *(__local uint4 *)(Bs + ((sb) * BN + n) * RW + kc * 4) = rb[j];                        \
        }                                                                                          \
    }

    _Pragma("unroll") for (int s = 0; s < STAGES - 1; s++) {
        if (s < nk) LOAD_A(s, kbeg + s * BK)
        ttc_cp_async_commit();
    }
    if (nk > 0) GATHER_B(kbeg)
    for (int it = 0; it < nk; it++) {
        int sa = it % STAGES, sb = it & 1;
        STORE_B(sb)
        if (it + 1 < nk) GATHER_B(kbeg + (it + 1) * BK)
        /* slice it's own copies have landed (STAGES - 2 younger groups may be in flight), and
         * after the barrier everybody's, with the B tile; the buffer refilled next was read in
         * the previous iteration, which every work-item has finished */
        CP_WAIT_AHEAD;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (it + STAGES - 1 < nk) LOAD_A((it + STAGES - 1) % STAGES, kbeg + (it + STAGES - 1) * BK)
        ttc_cp_async_commit();
        __local uint *Ast = As + sa * BM * RW;
        __local uint *Bst = Bs + sb * BN * RW;
#if CONV_TF32
#pragma unroll
        for (int kq = 0; kq < BK; kq += 8) {
            uint af[MI][4], bf[NI][2];
#pragma unroll
            for (int i = 0; i < MI; i++) {
                __local const uint *p = Ast + (wm * WTM + i * 16 + g8) * RW + kq + t4;
                af[i][0] = p[0];
                af[i][1] = p[8 * RW];
                af[i][2] = p[4];
                af[i][3] = p[8 * RW + 4];
            }
#pragma unroll
            for (int j = 0; j < NI; j++) {
                __local const uint *p = Bst + (wn * WTN + j * 8 + g8) * RW + kq + t4;
                bf[j][0] = p[0];
                bf[j][1] = p[4];
            }
#pragma unroll
            for (int i = 0; i < MI; i++)
#pragma unroll
                for (int j = 0; j < NI; j++) ttc_mma_tf32(acc[i][j], af[i], bf[j], scr);
        }
#else
        __local const ushort *Ah = (__local const ushort *)Ast, *Bh = (__local const ushort *)Bst;
#pragma unroll
        for (int kq = 0; kq < BK; kq += 16) {
            uint af[MI][4], bf[NI][2];
            /* ldmatrix x4: lanes 0-7 rows 0-7 k 0-7, 8-15 rows 8-15, 16-23 rows 0-7 k 8-15, ... */
#pragma unroll
            for (int i = 0; i < MI; i++)
                ttc_ldsm_x4(af[i], Ah, (wm * WTM + i * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * (2 * RW) + kq +
                            (lane >> 4) * 8, scr);
            /* two n8 blocks per ldmatrix x4: (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), ... */
#pragma unroll
            for (int j = 0; j < NI; j += 2) {
                uint r[4];
                ttc_ldsm_x4(r, Bh, (wn * WTN + j * 8 + (lane & 7) + (lane >> 4) * 8) * (2 * RW) + kq +
                            ((lane >> 3) & 1) * 8, scr);
                bf[j][0] = r[0]; bf[j][1] = r[1]; bf[j + 1][0] = r[2]; bf[j + 1][1] = r[3];
            }
#pragma unroll
            for (int i = 0; i < MI; i++)
#pragma unroll
                for (int j = 0; j < NI; j++) ttc_mma_f16(acc[i][j], af[i], bf[j], scr);
        }
#endif
    }
    TTC_CP_ASYNC_WAIT(0);
    /* c0/c1 are pixels 2t, 2t+1 of row g, c2/c3 the same pixels of row g + 8 */
#pragma unroll
    for (int j = 0; j < NI; j++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int n = n0 + wn * WTN + j * 8 + 2 * t4 + h;
            if (n >= NPQ) continue;
            int img = n / OHW, p = n - img * OHW;
            int ob = (ksl * NB_ + img) * OC * OHW + p;
#pragma unroll
            for (int i = 0; i < MI; i++)
#pragma unroll
                for (int v = 0; v < 2; v++) {
                    int m = m0 + wm * WTM + i * 16 + g8 + v * 8;
                    if (m < OCG) STORE_FN(acc[i][j][v * 2 + h], ob + (grp * OCG + m) * OHW EPI_ARGS);
                }
        }
#undef LOAD_A
#undef GATHER_B
#undef GATHER_CHUNK
#undef STORE_B
}
#undef NTH
#undef WTM
#undef WTN
#undef MI
#undef NI
#undef KT
#undef BK
#undef CE
#undef TW
#undef RW
#undef ACH
#undef BCH
#undef KTR
#undef CP_WAIT_AHEAD
#undef XE
#undef LDXE
#undef PACK
