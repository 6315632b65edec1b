/* Batched GEMM for GPUs, register blocked: a work-group computes a BM x BN tile of
 * C[b] = A[b] (MxK, k-contiguous) x B[b] (KxN, or NxK when TRANS_B), each work-item
 * accumulating TM x TN outputs (fp32) then applying the epilogue to each.
 * - KW k-groups: the work-group is (BN/TN * KW, BM/TM) work-items; a stage holds KB = BK * KW
 *   of k, and k-group g computes its BK deep slice of it, so that a small-M problem (few
 *   tiles) still has many warps per SM and a deep K runs KW times fewer sequential steps.
 *   The KW partial tiles are summed through local memory before the epilogue, each k-group
 *   storing a share of the outputs.
 * - Double buffering: the next stage is loaded from global memory into registers before the
 *   current one is computed, then stored to the other local buffer (one barrier per stage;
 *   the loads' latency hides behind the FMAs).
 * - Loads move 4 consecutive elements per work-item: k-runs of A and of a TRANS_B B, n-runs of
 *   a plain B; interior tiles of aligned operands (K, resp. N, and the offset multiples of 4)
 *   load them as one vector without bounds checks, ragged edges (any M, N, K) zero-fill.
 * A work-item's rows/columns are strided by the work-group's height/width so that local
 * reads broadcast or hit distinct banks, and stores stay coalesced.
 * Specialised by: KNAME STORE_FN EPI_PARAMS EPI_ARGS TA TB LDA LDB A_F32 B_F32 TRANS_B BM BN
 * BK TM TN KW (BK a multiple of 4; BM, BN multiples of TM, TN) and UNROLL (_Pragma("unroll")
 * on GPUs; empty on CPU devices, where unrolling only multiplies PoCL's compile time). */
#define WX (BN / TN)
#define WY (BM / TM)
#define NC (WX * WY)               /* work-items of one k-group */
#define NT (NC * KW)
#define KB (BK * KW)               /* k depth of a stage */
/* TM and TN multiples of 4: a work-item owns groups of 4 adjacent rows/columns (group q of
 * its rows starts at q * WY * 4 + ty * 4), read from local memory as float4 (one wavefront
 * feeds 4 FMAs per operand); else single rows/columns strided by WY/WX, read as floats. */
#if TM % 4 == 0 && TN % 4 == 0
#define V4 1
#define PAD 4
#define ROW(i) ((i) / 4 * (WY * 4) + ty * 4 + (i) % 4)
#define COL(j) ((j) / 4 * (WX * 4) + tx * 4 + (j) % 4)
#else
#define V4 0
#define PAD 1
#define ROW(i) (ty + (i) * WY)
#define COL(j) (tx + (j) * WX)
#endif
/* a stage: A k-major (KB rows of BM + PAD: a work-item reads a column of its rows; padded
 * against bank conflicts on the transposing stores), then B likewise; two stages */
#define ASZ (KB * (BM + PAD))
#define STAGE (ASZ + KB * (BN + PAD))
#define RED (KW > 1 ? BM * BN * KW : 0)
#define SMSZ (2 * STAGE > RED ? 2 * STAGE : RED)
#define AS(s, kk, r) sm[(s) * STAGE + (kk) * (BM + PAD) + (r)]
#define BS(s, kk, c) sm[(s) * STAGE + ASZ + (kk) * (BN + PAD) + (c)]
#define QA (BM * KB / 4)           /* 4-element loads per stage */
#define QB (BN * KB / 4)
#define LA ((QA + NT - 1) / NT)    /* ... per work-item */
#define LB ((QB + NT - 1) / NT)
#define VEC4_(T) T##4
#define VEC4(T) VEC4_(T)
#if A_F32
#define LDA4(p) convert_float4(*(__global const VEC4(TA) *)(p))
#else
#define LDA4(p) vload_half4(0, (p))
#endif
#if B_F32
#define LDB4(p) convert_float4(*(__global const VEC4(TB) *)(p))
#else
#define LDB4(p) vload_half4(0, (p))
#endif
__kernel __attribute__((reqd_work_group_size(WX * KW, WY, 1)))
void KNAME(__global const TA *A, int offA, __global const TB *B, int offB, int M, int N, int K,
           int sAb, int sBb EPI_PARAMS) {
    __local float4 sm4[SMSZ / 4];
    __local float *sm = (__local float *)sm4;
    int lx = get_local_id(0), ty = get_local_id(1);
    int kg = lx / WX, tx = lx % WX, tid = ty * (WX * KW) + lx;
    int m0 = get_group_id(1) * BM, n0 = get_group_id(0) * BN, b = get_group_id(2);
    __global const TA *Ab = A + offA + b * sAb;
    __global const TB *Bb = B + offB + b * sBb;
    bool vecA = (K % 4 == 0) && ((offA + b * sAb) % 4 == 0) && m0 + BM <= M;
#if TRANS_B
    bool vecB = (K % 4 == 0) && ((offB + b * sBb) % 4 == 0) && n0 + BN <= N;
#else
    bool vecB = (N % 4 == 0) && ((offB + b * sBb) % 4 == 0) && n0 + BN <= N;
#endif
    float acc[TM][TN];
UNROLL
    for (int i = 0; i < TM; i++)
UNROLL
        for (int j = 0; j < TN; j++) acc[i][j] = 0.0f;
    float4 ra[LA], rb[LB];
    /* stage k0 -> registers: load l of A is row l / (KB/4), k-run (l % (KB/4)) * 4 */
#define LOAD_STAGE(k0)                                                                         \
    {                                                                                          \
        bool kfull = (k0) + KB <= K;                                                           \
UNROLL                                                                                         \
        for (int q = 0; q < LA; q++) {                                                         \
            int l = tid + q * NT, r = l / (KB / 4), kk = (l % (KB / 4)) * 4;                   \
            int m = m0 + r, k = (k0) + kk;                                                     \
            if (QA % NT != 0 && l >= QA) break;                                                \
            if (vecA && kfull) ra[q] = LDA4(Ab + m * K + k);                                   \
            else ra[q] = (float4)(m < M && k < K ? LDA(Ab, m * K + k) : 0.0f,                  \
                                  m < M && k + 1 < K ? LDA(Ab, m * K + k + 1) : 0.0f,          \
                                  m < M && k + 2 < K ? LDA(Ab, m * K + k + 2) : 0.0f,          \
                                  m < M && k + 3 < K ? LDA(Ab, m * K + k + 3) : 0.0f);         \
        }                                                                                      \
        LOAD_B(k0)                                                                             \
    }
#if TRANS_B
    /* load l of B is column l / (KB/4), k-run (l % (KB/4)) * 4 */
#define LOAD_B(k0)                                                                             \
UNROLL                                                                                         \
        for (int q = 0; q < LB; q++) {                                                         \
            int l = tid + q * NT, c = l / (KB / 4), kk = (l % (KB / 4)) * 4;                   \
            int n = n0 + c, k = (k0) + kk;                                                     \
            if (QB % NT != 0 && l >= QB) break;                                                \
            if (vecB && kfull) rb[q] = LDB4(Bb + n * K + k);                                   \
            else rb[q] = (float4)(n < N && k < K ? LDB(Bb, n * K + k) : 0.0f,                  \
                                  n < N && k + 1 < K ? LDB(Bb, n * K + k + 1) : 0.0f,          \
                                  n < N && k + 2 < K ? LDB(Bb, n * K + k + 2) : 0.0f,          \
                                  n < N && k + 3 < K ? LDB(Bb, n * K + k + 3) : 0.0f);         \
        }
#define STORE_B(s)                                                                             \
UNROLL                                                                                         \
        for (int q = 0; q < LB; q++) {                                                         \
            int l = tid + q * NT, c = l / (KB / 4), kk = (l % (KB / 4)) * 4;                   \
            if (QB % NT != 0 && l >= QB) break;                                                \
            BS(s, kk, c) = rb[q].x; BS(s, kk + 1, c) = rb[q].y;                                \
            BS(s, kk + 2, c) = rb[q].z; BS(s, kk + 3, c) = rb[q].w;                            \
        }
#else
    /* load l of B is k row l / (BN/4), n-run (l % (BN/4)) * 4 */
#define LOAD_B(k0)                                                                             \
UNROLL                                                                                         \
        for (int q = 0; q < LB; q++) {                                                         \
            int l = tid + q * NT, kk = l / (BN / 4), c = (l % (BN / 4)) * 4;                   \
            int n = n0 + c, k = (k0) + kk;                                                     \
            if (QB % NT != 0 && l >= QB) break;                                                \
            if (vecB && kfull) rb[q] = LDB4(Bb + k * N + n);                                   \
            else rb[q] = (float4)(k < K && n < N ? LDB(Bb, k * N + n) : 0.0f,                  \
                                  k < K && n + 1 < N ? LDB(Bb, k * N + n + 1) : 0.0f,          \
                                  k < K && n + 2 < N ? LDB(Bb, k * N + n + 2) : 0.0f,          \
                                  k < K && n + 3 < N ? LDB(Bb, k * N + n + 3) : 0.0f);         \
        }
#define STORE_B(s)                                                                             \
UNROLL                                                                                         \
        for (int q = 0; q < LB; q++) {                                                         \
            int l = tid + q * NT, kk = l / (BN / 4), c = (l % (BN / 4)) * 4;                   \
            if (QB % NT != 0 && l >= QB) break;                                                \
            BS(s, kk, c) = rb[q].x; BS(s, kk, c + 1) = rb[q].y;                                \
            BS(s, kk, c + 2) = rb[q].z; BS(s, kk, c + 3) = rb[q].w;                            \
        }
#endif
#define STORE_STAGE(s)                                                                         \
    {                                                                                          \
UNROLL                                                                                         \
        for (int q = 0; q < LA; q++) {                                                         \
            int l = tid + q * NT, r = l / (KB / 4), kk = (l % (KB / 4)) * 4;                   \
            if (QA % NT != 0 && l >= QA) break;                                                \
            AS(s, kk, r) = ra[q].x; AS(s, kk + 1, r) = ra[q].y;                                \
            AS(s, kk + 2, r) = ra[q].z; AS(s, kk + 3, r) = ra[q].w;                            \
        }                                                                                      \
        STORE_B(s)                                                                             \
    }
    LOAD_STAGE(0)
    STORE_STAGE(0)
    barrier(CLK_LOCAL_MEM_FENCE);
    int s = 0;
    for (int k0 = 0; k0 < K; k0 += KB) {
        bool more = k0 + KB < K;
        if (more) LOAD_STAGE(k0 + KB)
UNROLL
        for (int k = 0; k < BK; k++) {
            int kk = kg * BK + k;
            float av[TM], bv[TN];
#if V4
            __local const float4 *a4 = (__local const float4 *)&AS(s, kk, 0);
            __local const float4 *b4 = (__local const float4 *)&BS(s, kk, 0);
UNROLL
            for (int q = 0; q < TM / 4; q++) {
                float4 v = a4[q * WY + ty];
                av[4 * q] = v.x; av[4 * q + 1] = v.y; av[4 * q + 2] = v.z; av[4 * q + 3] = v.w;
            }
UNROLL
            for (int q = 0; q < TN / 4; q++) {
                float4 v = b4[q * WX + tx];
                bv[4 * q] = v.x; bv[4 * q + 1] = v.y; bv[4 * q + 2] = v.z; bv[4 * q + 3] = v.w;
            }
#else
UNROLL
            for (int i = 0; i < TM; i++) av[i] = AS(s, kk, ROW(i));
UNROLL
            for (int j = 0; j < TN; j++) bv[j] = BS(s, kk, COL(j));
#endif
UNROLL
            for (int i = 0; i < TM; i++)
UNROLL
                for (int j = 0; j < TN; j++) acc[i][j] = mad(av[i], bv[j], acc[i][j]);
        }
        /* the other buffer was last read before the previous barrier */
        if (more) STORE_STAGE(s ^ 1)
        barrier(CLK_LOCAL_MEM_FENCE);
        s ^= 1;
    }
#if KW > 1
    /* partial tiles -> local memory (the stages are dead after the loop's last barrier);
     * k-group g then sums and stores outputs g, g + KW, ... of each work-item */
    int ct = ty * WX + tx;
UNROLL
    for (int i = 0; i < TM; i++)
UNROLL
        for (int j = 0; j < TN; j++) sm[((kg * TM + i) * TN + j) * NC + ct] = acc[i][j];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int e = kg; e < TM * TN; e += KW) {
        int i = e / TN, j = e % TN, m = m0 + ROW(i), n = n0 + COL(j);
        float v = 0.0f;
UNROLL
        for (int g = 0; g < KW; g++) v += sm[((g * TM + i) * TN + j) * NC + ct];
        if (m < M && n < N) STORE_FN(v, (b * M + m) * N + n EPI_ARGS);
    }
#else
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
#endif
}
#undef WX
#undef WY
#undef NC
#undef NT
#undef KB
#undef V4
#undef PAD
#undef ROW
#undef COL
#undef ASZ
#undef STAGE
#undef RED
#undef SMSZ
#undef AS
#undef BS
#undef QA
#undef QB
#undef LA
#undef LB
#undef VEC4_
#undef VEC4
#undef LDA4
#undef LDB4
#undef LOAD_STAGE
#undef LOAD_B
#undef STORE_B
#undef STORE_STAGE
