/* Batched GEMM for GPUs, register blocked: a work-group of (BN/TN, BM/TM) work-items computes
 * a BM x BN tile of C[b] = A[b] (MxK, k-contiguous) x B[b] (KxN, or NxK when TRANS_B), BK deep
 * slices of A and B staged in local memory, each work-item accumulating TM x TN outputs (fp32)
 * then applying the epilogue to each. A work-item's rows/columns are strided by the
 * work-group's height/width so that local reads broadcast or hit distinct banks, and stores
 * stay coalesced. Ragged edges (any M, N, K) are zero-filled at load time; interior tiles
 * of k-contiguous operands load 4 consecutive k per work-item without bounds checks when K
 * and the operand's offset are multiples of 4.
 * Specialised by: KNAME STORE_FN EPI_PARAMS EPI_ARGS TA TB LDA LDB TRANS_B BM BN BK TM TN
 * (BK a multiple of 4; BM, BN multiples of TM, TN) and UNROLL (_Pragma("unroll") on GPUs;
 * empty on CPU devices, where unrolling only multiplies PoCL's compile time). */
#define WX (BN / TN)
#define WY (BM / TM)
#define NT (WX * WY)
/* TM and TN multiples of 4: a work-item owns groups of 4 adjacent rows/columns (group q of
 * its rows starts at q * WY * 4 + ty * 4), read from local memory as float4 (one wavefront
 * feeds 4 FMAs per operand); else single rows/columns strided by WY/WX, read as floats. */
#if TM % 4 == 0 && TN % 4 == 0
#define V4 1
#define ROW(i) ((i) / 4 * (WY * 4) + ty * 4 + (i) % 4)
#define COL(j) ((j) / 4 * (WX * 4) + tx * 4 + (j) % 4)
#define AS(kk, r) (((__local float *)As4)[(kk) * (BM + 4) + (r)])
#define BS(kk, c) (((__local float *)Bs4)[(kk) * (BN + 4) + (c)])
#else
#define V4 0
#define ROW(i) (ty + (i) * WY)
#define COL(j) (tx + (j) * WX)
#define AS(kk, r) As[kk][r]
#define BS(kk, c) Bs[kk][c]
#endif
__kernel __attribute__((reqd_work_group_size(WX, WY, 1)))
void KNAME(__global const TA *A, int offA, __global const TB *B, int offB, int M, int N, int K,
           int sAb, int sBb EPI_PARAMS) {
    /* k-major for A (a work-item reads a column of its rows); padded against bank conflicts
     * on the (transposing) stores, by 4 where rows are read as float4 */
#if V4
    __local float4 As4[BK][(BM + 4) / 4];
    __local float4 Bs4[BK][(BN + 4) / 4];
#else
    __local float As[BK][BM + 1];
    __local float Bs[BK][BN + 1];
#endif
    int tx = get_local_id(0), ty = get_local_id(1), tid = ty * WX + tx;
    int m0 = get_group_id(1) * BM, n0 = get_group_id(0) * BN, b = get_group_id(2);
    __global const TA *Ab = A + offA + b * sAb;
    __global const TB *Bb = B + offB + b * sBb;
    bool vecA = (K % 4 == 0) && ((offA + b * sAb) % 4 == 0);
#if TRANS_B
    bool vecB = (K % 4 == 0) && ((offB + b * sBb) % 4 == 0);
#endif
    float acc[TM][TN];
UNROLL
    for (int i = 0; i < TM; i++)
UNROLL
        for (int j = 0; j < TN; j++) acc[i][j] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BK) {
        bool kfull = k0 + BK <= K;
        /* A: BM x BK, k fastest */
        if (vecA && kfull && m0 + BM <= M) {
UNROLL
            for (int l = tid; l < BM * BK / 4; l += NT) {
                int r = l / (BK / 4), kk = (l % (BK / 4)) * 4;
                __global const TA *p = Ab + (m0 + r) * K + k0 + kk;
                AS(kk, r) = LDA(p, 0); AS(kk + 1, r) = LDA(p, 1); AS(kk + 2, r) = LDA(p, 2); AS(kk + 3, r) = LDA(p, 3);
            }
        } else {
UNROLL
            for (int l = tid; l < BM * BK; l += NT) {
                int r = l / BK, kk = l % BK, m = m0 + r, k = k0 + kk;
                AS(kk, r) = (m < M && k < K) ? LDA(Ab, m * K + k) : 0.0f;
            }
        }
#if TRANS_B
        if (vecB && kfull && n0 + BN <= N) {
UNROLL
            for (int l = tid; l < BN * BK / 4; l += NT) {
                int c = l / (BK / 4), kk = (l % (BK / 4)) * 4;
                __global const TB *p = Bb + (n0 + c) * K + k0 + kk;
                BS(kk, c) = LDB(p, 0); BS(kk + 1, c) = LDB(p, 1); BS(kk + 2, c) = LDB(p, 2); BS(kk + 3, c) = LDB(p, 3);
            }
        } else {
UNROLL
            for (int l = tid; l < BN * BK; l += NT) {
                int c = l / BK, kk = l % BK, n = n0 + c, k = k0 + kk;
                BS(kk, c) = (n < N && k < K) ? LDB(Bb, n * K + k) : 0.0f;
            }
        }
#else
UNROLL
        for (int l = tid; l < BN * BK; l += NT) {
            int kk = l / BN, c = l % BN, n = n0 + c, k = k0 + kk;
            BS(kk, c) = (n < N && k < K) ? LDB(Bb, k * N + n) : 0.0f;
        }
#endif
        barrier(CLK_LOCAL_MEM_FENCE);
UNROLL
        for (int kk = 0; kk < BK; kk++) {
            float av[TM], bv[TN];
#if V4
UNROLL
            for (int q = 0; q < TM / 4; q++) {
                float4 v = As4[kk][q * WY + ty];
                av[4 * q] = v.x; av[4 * q + 1] = v.y; av[4 * q + 2] = v.z; av[4 * q + 3] = v.w;
            }
UNROLL
            for (int q = 0; q < TN / 4; q++) {
                float4 v = Bs4[kk][q * WX + tx];
                bv[4 * q] = v.x; bv[4 * q + 1] = v.y; bv[4 * q + 2] = v.z; bv[4 * q + 3] = v.w;
            }
#else
UNROLL
            for (int i = 0; i < TM; i++) av[i] = As[kk][ROW(i)];
UNROLL
            for (int j = 0; j < TN; j++) bv[j] = Bs[kk][COL(j)];
#endif
UNROLL
            for (int i = 0; i < TM; i++)
UNROLL
                for (int j = 0; j < TN; j++) acc[i][j] = mad(av[i], bv[j], acc[i][j]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
UNROLL
    for (int i = 0; i < TM; i++) {
        int m = m0 + ROW(i);
        if (m >= M) continue;
UNROLL
        for (int j = 0; j < TN; j++) {
            int n = n0 + COL(j);
            if (n < N) STORE_FN(acc[i][j], (b * M + m) * N + n EPI_ARGS);
        }
    }
}
#undef WX
#undef WY
#undef NT
#undef V4
#undef ROW
#undef COL
#undef AS
#undef BS
