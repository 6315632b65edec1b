/* The GEMV form of a GEMM kernel ("<name>_v", codegen.c gemv_wanted): C[b] = A[b] (M x K) x
 * B[b]^T (B stored N x K, k-contiguous: a linear layer's weight) for products of few rows, the
 * decode steps of a language model (M = batch). A tile GEMM reads the whole of B once per tile
 * of rows but runs N / BN work-groups, too few to stream B at memory bandwidth; here each warp
 * of 32 work-items owns one row n of B (one output column) for up to GV_MB rows of A at once,
 * so that N warps stream B:
 * - the warp's lanes read B's row in 16-byte chunks (8 halves or 4 floats), 512 consecutive
 *   bytes per warp and step, GV_U steps issued before their sums (loads in flight);
 * - A's rows (a few KB, shared by every warp) come through the caches;
 * - partial sums are float; the 32 lanes' sums are added through local memory at the end,
 *   then the epilogue (STORE_FN) stores each output as the tile kernels do.
 * Grid: dim 0 ceil(N / GV_W) work-groups of GV_W warps, dim 1 ceil(M / GV_MB) (any M is
 * right; the launch chooses this form only for small M), dim 2 the batch. Rows whose chunks
 * are not 16-byte aligned (K not a multiple of the chunk, or an address that is not) take a
 * scalar loop.
 * Arguments: the tile kernel's first nine, then the store function's (codegen.h, gemm_v).
 * Specialised by: KNAME STORE_FN EPI_PARAMS EPI_ARGS TA TB LDA LDB A_F32 B_F32 GV_W GV_MB GV_U
 * GV_UNROLL (_Pragma("unroll") on GPUs; empty on CPU devices). Halves are converted by the PTX
 * prelude's ttc_h2f. */
#define GV_T (GV_W * 32)
#if B_F32
#define GV_E 4                       /* elements per 16-byte chunk (A and B share a dtype) */
#define GV_UNPACK(u, wv) { wv[0] = as_float(u.x); wv[1] = as_float(u.y); wv[2] = as_float(u.z); wv[3] = as_float(u.w); }
#else
#define GV_E 8
#define GV_UNPACK(u, wv)                                                                       \
    { wv[0] = ttc_h2f(u.x); wv[1] = ttc_h2f(u.x >> 16); wv[2] = ttc_h2f(u.y); wv[3] = ttc_h2f(u.y >> 16); \
      wv[4] = ttc_h2f(u.z); wv[5] = ttc_h2f(u.z >> 16); wv[6] = ttc_h2f(u.w); wv[7] = ttc_h2f(u.w >> 16); }
#endif
__kernel __attribute__((reqd_work_group_size(GV_T, 1, 1)))
void KNAME(__global const TA *A, int offA, __global const TB *B, int offB, int M, int N, int K,
           int sAb, int sBb EPI_PARAMS) {
    __local float red[GV_W * GV_MB * 32];
    int lane = get_local_id(0) & 31, w = get_local_id(0) >> 5;
    int n = get_group_id(0) * GV_W + w, m0 = get_group_id(1) * GV_MB, b = get_group_id(2);
    int mb = min(M - m0, GV_MB);
    float acc[GV_MB];
GV_UNROLL
    for (int i = 0; i < GV_MB; i++) acc[i] = 0.0f;
    int a0 = offA + b * sAb + m0 * K, b0 = offB + b * sBb;
    if (n < N) {
        int rb = b0 + n * K;         /* row n of B */
        /* 16-byte loads where the rows start 16-byte aligned as addressed (an input bound at an
         * offset into its storage need not be, whatever its offset argument says) */
        int nch = (K % GV_E == 0 && ((size_t)(B + rb) & 15) == 0) ? K / GV_E : 0;
        bool avec = ((size_t)(A + a0) & 15) == 0;   /* then every row of A is too (K % GV_E == 0) */
        __global const uint4 *Bq = (__global const uint4 *)(B + rb);
        for (int c0 = lane; c0 < nch; c0 += 32 * GV_U) {
            uint4 u[GV_U];
GV_UNROLL
            for (int j = 0; j < GV_U; j++) {
                int c = c0 + j * 32;
                u[j] = c < nch ? Bq[c] : (uint4)(0u);
            }
GV_UNROLL
            for (int j = 0; j < GV_U; j++) {
                int c = c0 + j * 32;
                float wv[GV_E], xv[GV_E];
                GV_UNPACK(u[j], wv);
GV_UNROLL
                for (int i = 0; i < GV_MB; i++) {
                    if (i >= mb || c >= nch) continue;   /* guards, not breaks: the loops unroll */
                    if (avec) {
                        uint4 ua = ((__global const uint4 *)(A + a0 + i * K))[c];
                        GV_UNPACK(ua, xv);
                    } else {
                        for (int e = 0; e < GV_E; e++) xv[e] = LDA(A, a0 + i * K + c * GV_E + e);
                    }
                    float s = 0.0f;
                    for (int e = 0; e < GV_E; e++) s += wv[e] * xv[e];
                    acc[i] += s;
                }
            }
        }
        /* what the chunks left: every element where B's row is unaligned, else none */
        for (int kk = nch * GV_E + lane; kk < K; kk += 32) {
            float wv = LDB(B, rb + kk);
GV_UNROLL
            for (int i = 0; i < GV_MB; i++)
                if (i < mb) acc[i] += wv * LDA(A, a0 + i * K + kk);
        }
    }
GV_UNROLL
    for (int i = 0; i < GV_MB; i++) red[(w * GV_MB + i) * 32 + lane] = acc[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    int t = get_local_id(0);
    if (t < GV_W * GV_MB) {
        int ww = t / GV_MB, i = t % GV_MB, nn = get_group_id(0) * GV_W + ww;
        if (nn < N && i < mb) {
            float v = 0.0f;
            for (int l = 0; l < 32; l++) v += red[(ww * GV_MB + i) * 32 + l];
            STORE_FN(v, (b * M + m0 + i) * N + nn EPI_ARGS);
        }
    }
}
#undef GV_T
#undef GV_E
#undef GV_UNPACK
