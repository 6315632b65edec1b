/* Batched GEMM on NVIDIA tensor cores (inline PTX mma.sync m16n8k16, f16 inputs, f32
 * accumulation): C[b] = A[b] (MxK, k-contiguous) x B[b] (KxN, or NxK when TRANS_B), then the
 * epilogue. A work-group of TM x TN x KW warps computes a BM x BN tile; each warp a
 * (BM/TM) x (BN/TN) block of 16x8 mma tiles over 1/KW of every k slice (KW > 1: skinny
 * problems, where few work-groups each walk a long K, get more warps in flight; partial
 * sums meet in local memory before the epilogue). BK-deep slices of A (row-major) and B (stored
 * n-major, k-contiguous, as the .col operand wants) sit in local memory with rows padded
 * by 8 halves so that fragment reads hit 32 distinct banks. The next slice is fetched into
 * registers while the current one is multiplied. Global loads are 8 halves (16 bytes) wide
 * where the operand's k (or n) extent and offset are multiples of 8, else scalar with
 * zero fill (any M, N, K). Halves travel as raw ushort bits: no cl_khr_fp16 needed; float
 * operands (A_F32/B_F32: fp16 engines keep fp32 inputs and weights as declared) are rounded
 * to half while loading.
 * Only for NVIDIA devices (PTX); tune.c selects it. Fragment layout (PTX ISA, m16n8k16 .f16):
 * g = lane / 4, t = lane % 4; A regs {(g, 2t), (g+8, 2t), (g, 2t+8), (g+8, 2t+8)} (row, k),
 * B regs {(2t, g), (2t+8, g)} (k, n), C {(g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1)}.
 * Specialised by: KNAME STORE_FN EPI_PARAMS EPI_ARGS TA TB A_F32 B_F32 TRANS_B BM BN BK TM TN KW
 * (local memory: (BM + BN) * (BK + 8) halves + (KW - 1) * BM * BN floats <= 48 KiB). */
#define NTH (32 * TM * TN * KW)
#define WTM (BM / TM)
#define WTN (BN / TN)
#define MI (WTM / 16)
#define NI (WTN / 8)
#define SK (BK + 8)
#define ACN (BM * BK / 8)               /* 8-half chunks of the A slice */
#define BCN (BN * BK / 8)
#define ACH ((ACN + NTH - 1) / NTH)       /* ... per work-item */
#define BCH ((BCN + NTH - 1) / NTH)
#ifndef TTC_GLUE
#define TTC_GLUE_(a, b) a##b
#define TTC_GLUE(a, b) TTC_GLUE_(a, b)
#endif
#define LD8 TTC_GLUE(KNAME, _ld8)
#define LD8F TTC_GLUE(KNAME, _ld8f)
#define CVT8 TTC_GLUE(KNAME, _cvt8)

static inline uint4 LD8(__global const ushort *p, int i, int lim, bool vec) {
    if (vec && lim >= 8) return *(__global const uint4 *)(p + i);
    ushort h[8];
#pragma unroll
    for (int e = 0; e < 8; e++) h[e] = e < lim ? p[i + e] : (ushort)0;
    return (uint4)(h[0] | ((uint)h[1] << 16), h[2] | ((uint)h[3] << 16), h[4] | ((uint)h[5] << 16),
                   h[6] | ((uint)h[7] << 16));
}

/* float storage (fp16 engines keep fp32 weights/inputs as declared): loaded as is and rounded
 * to half only when stored to local memory, so that the loads stay in flight while the
 * current slice is multiplied */
static inline float8 LD8F(__global const float *p, int i, int lim, bool vec) {
    if (vec && lim >= 8) {
        float4 x = *(__global const float4 *)(p + i), y = *(__global const float4 *)(p + i + 4);
        return (float8)(x, y);
    }
    float f[8];
#pragma unroll
    for (int e = 0; e < 8; e++) f[e] = e < lim ? p[i + e] : 0.0f;
    return (float8)(f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7]);
}

static inline uint4 CVT8(float8 f) {
    uint4 r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r.x) : "f"(f.s1), "f"(f.s0));
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r.y) : "f"(f.s3), "f"(f.s2));
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r.z) : "f"(f.s5), "f"(f.s4));
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r.w) : "f"(f.s7), "f"(f.s6));
    return r;
}

__kernel __attribute__((reqd_work_group_size(NTH, 1, 1)))
void KNAME(__global const TA *A, int offA, __global const TB *B, int offB, int M, int N, int K,
           int sAb, int sBb EPI_PARAMS) {
    __local uint4 As4[BM * SK / 8];
    __local uint4 Bs4[BN * SK / 8];
    __local ushort *As = (__local ushort *)As4;
    __local ushort *Bs = (__local ushort *)Bs4;
    int tid = get_local_id(0), lane = tid & 31, warp = tid >> 5;
    /* warps: KW groups along k (each multiplies its BK/KW of every slice), TM x TN in each */
    int kw = warp / (TM * TN), wr = warp % (TM * TN);
    int wm = wr / TN, wn = wr % TN, g = lane >> 2, t = lane & 3;
    int m0 = get_group_id(1) * BM, n0 = get_group_id(0) * BN, b = get_group_id(2);
    int oA = offA + b * sAb, oB = offB + b * sBb;
#if A_F32
    __global const float *Ab = (__global const float *)A + oA;
#define MLDA LD8F
#define PKA CVT8
    float8 ra[ACH];
#else
    __global const ushort *Ab = (__global const ushort *)A + oA;
#define MLDA LD8
#define PKA
    uint4 ra[ACH];
#endif
#if B_F32
    __global const float *Bb = (__global const float *)B + oB;
#define MLDB LD8F
#define PKB CVT8
    float8 rb[BCH];
#else
    __global const ushort *Bb = (__global const ushort *)B + oB;
#define MLDB LD8
#define PKB
    uint4 rb[BCH];
#endif
    bool vecA = K % 8 == 0 && oA % 8 == 0;
#if TRANS_B
    bool vecB = K % 8 == 0 && oB % 8 == 0;
#else
    bool vecB = N % 8 == 0 && oB % 8 == 0;
#endif
    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < NI; j++)
#pragma unroll
            for (int r = 0; r < 4; r++) acc[i][j][r] = 0.0f;
    /* chunk c of A: row c / (BK/8), k offset (c % (BK/8)) * 8; rows past M load zeros */
#define LOAD_SLICE(k0)                                                                             \
    {                                                                                              \
        _Pragma("unroll") for (int c = 0; c < ACH; c++) {                                          \
            int l = tid + c * NTH, r = l / (BK / 8), kc = (l % (BK / 8)) * 8, m = m0 + r;          \
            int lim = m < M && l < ACN ? K - (k0) - kc : 0;                                        \
            ra[c] = MLDA(Ab, m * K + (k0) + kc, lim, vecA);                                         \
        }                                                                                          \
        _Pragma("unroll") for (int c = 0; c < BCH; c++) {                                          \
            int l = tid + c * NTH;                                                                 \
            LOAD_B(k0)                                                                             \
        }                                                                                          \
    }
#if TRANS_B
#define LOAD_B(k0)                                                                                 \
    int r = l / (BK / 8), kc = (l % (BK / 8)) * 8, n = n0 + r;                                     \
    rb[c] = MLDB(Bb, n * K + (k0) + kc, n < N && l < BCN ? K - (k0) - kc : 0, vecB);
#else
#define LOAD_B(k0)                                                                                 \
    int kr = l / (BN / 8), nc = (l % (BN / 8)) * 8, k = (k0) + kr;                                 \
    rb[c] = MLDB(Bb, k * N + n0 + nc, k < K && l < BCN ? N - n0 - nc : 0, vecB);
#endif
    LOAD_SLICE(0)
    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int c = 0; c < ACH; c++) {
            int l = tid + c * NTH, r = l / (BK / 8), kc = (l % (BK / 8)) * 8;
            if (l < ACN) As4[(r * SK + kc) / 8] = PKA(ra[c]);
        }
#pragma unroll
        for (int c = 0; c < BCH; c++) {
            int l = tid + c * NTH;
            if (l >= BCN) break;
#if TRANS_B
            int r = l / (BK / 8), kc = (l % (BK / 8)) * 8;
            Bs4[(r * SK + kc) / 8] = PKB(rb[c]);
#else
            /* B arrives n-contiguous: scatter into the n-major layout */
            int kr = l / (BN / 8), nc = (l % (BN / 8)) * 8;
            uint4 v = PKB(rb[c]);
            uint w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
            for (int e = 0; e < 8; e++) Bs[(nc + e) * SK + kr] = (ushort)(w[e / 2] >> (16 * (e % 2)));
#endif
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (k0 + BK < K) LOAD_SLICE(k0 + BK)
#pragma unroll
        for (int kq = 0; kq < BK / KW; kq += 16) {
            int ks = kw * (BK / KW) + kq;
            uint af[MI][4], bf[NI][2];
#pragma unroll
            for (int i = 0; i < MI; i++) {
                __local const ushort *p = As + (wm * WTM + i * 16 + g) * SK + ks + 2 * t;
                af[i][0] = *(__local const uint *)p;
                af[i][1] = *(__local const uint *)(p + 8 * SK);
                af[i][2] = *(__local const uint *)(p + 8);
                af[i][3] = *(__local const uint *)(p + 8 * SK + 8);
            }
#pragma unroll
            for (int j = 0; j < NI; j++) {
                __local const ushort *p = Bs + (wn * WTN + j * 8 + g) * SK + ks + 2 * t;
                bf[j][0] = *(__local const uint *)p;
                bf[j][1] = *(__local const uint *)(p + 8);
            }
#pragma unroll
            for (int i = 0; i < MI; i++)
#pragma unroll
                for (int j = 0; j < NI; j++) {
                    float d0, d1, d2, d3;
                    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                                 "{%8,%9}, {%10,%11,%12,%13};"
                                 : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
                                 : "r"(af[i][0]), "r"(af[i][1]), "r"(af[i][2]), "r"(af[i][3]), "r"(bf[j][0]),
                                   "r"(bf[j][1]), "f"(acc[i][j][0]), "f"(acc[i][j][1]), "f"(acc[i][j][2]),
                                   "f"(acc[i][j][3]));
                    acc[i][j][0] = d0; acc[i][j][1] = d1; acc[i][j][2] = d2; acc[i][j][3] = d3;
                }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#if KW > 1
    /* k-split warps hand their partial sums to group 0 through local memory */
    __local float red[(KW - 1) * BM * BN];
    if (kw > 0) {
#pragma unroll
        for (int i = 0; i < MI; i++)
#pragma unroll
            for (int j = 0; j < NI; j++)
#pragma unroll
                for (int r = 0; r < 4; r++)
                    red[((((kw - 1) * TM * TN + wr) * MI + i) * NI + j) * 128 + r * 32 + lane] = acc[i][j][r];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (kw > 0) return;
#pragma unroll
    for (int q = 1; q < KW; q++)
#pragma unroll
        for (int i = 0; i < MI; i++)
#pragma unroll
            for (int j = 0; j < NI; j++)
#pragma unroll
                for (int r = 0; r < 4; r++)
                    acc[i][j][r] += red[((((q - 1) * TM * TN + wr) * MI + i) * NI + j) * 128 + r * 32 + lane];
#endif
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < NI; j++)
#pragma unroll
            for (int r = 0; r < 4; r++) {
                int m = m0 + wm * WTM + i * 16 + g + (r >> 1) * 8;
                int n = n0 + wn * WTN + j * 8 + 2 * t + (r & 1);
                if (m < M && n < N) STORE_FN(acc[i][j][r], (b * M + m) * N + n EPI_ARGS);
            }
}
#undef LOAD_SLICE
#undef LOAD_B
#undef NTH
#undef WTM
#undef WTN
#undef MI
#undef NI
#undef SK
#undef ACH
#undef BCH
#undef ACN
#undef BCN
#undef LD8
#undef LD8F
#undef CVT8
#undef PKA
#undef PKB
#undef MLDA
#undef MLDB
