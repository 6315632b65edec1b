/* Batched GEMM for CPU devices: C[b] = A[b] (MxK, k-contiguous) x B[b], then the epilogue.
 * Register blocked with explicit vectors, no local memory (PoCL vectorises float8 well).
 * TRANS_B 0: B is KxN (n-contiguous), each work-item computes 4 rows x 8 columns.
 * TRANS_B 1: B is NxK (k-contiguous, e.g. linear weights), 2 rows x 4 columns of dots.
 * Specialised by: KNAME STORE_FN EPI_PARAMS EPI_ARGS TA TB LDA LDA8 LDB LDB8 TRANS_B. */
__kernel void KNAME(__global const TA *A, int offA, __global const TB *B, int offB, int M, int N,
                    int K, int sAb, int sBb EPI_PARAMS) {
    int b = get_global_id(2);
    /* Work-item order: the launch is (ceil(N/NR), ceil(M/MR)), but consecutive work-items
     * (PoCL runs a work-group's items in a loop, and hands out groups in order) walk down M
     * with the same NR columns, so the B panel they share stays in cache: B is the big
     * operand of linear layers (768x3072 floats: 9 MB), A the small one. */
#if TRANS_B == 0
#define TTC_MR 4
#define TTC_NR 8
#else
#define TTC_MR 2
#define TTC_NR 4
#endif
    int MB = (M + TTC_MR - 1) / TTC_MR, NB = (N + TTC_NR - 1) / TTC_NR;
    int lin = get_global_id(1) * get_global_size(0) + get_global_id(0);
    if (lin >= MB * NB) return;
    int m0 = (lin % MB) * TTC_MR, n0 = (lin / MB) * TTC_NR;
#undef TTC_MR
#undef TTC_NR
#if TRANS_B == 0
    __global const TA *a0 = A + offA + b * sAb + m0 * K;
    __global const TA *a1 = a0 + (m0 + 1 < M ? K : 0);
    __global const TA *a2 = a0 + (m0 + 2 < M ? 2 * K : 0);
    __global const TA *a3 = a0 + (m0 + 3 < M ? 3 * K : 0);
    __global const TB *bp = B + offB + b * sBb + n0;
    float8 c0 = (float8)(0.0f), c1 = (float8)(0.0f), c2 = (float8)(0.0f), c3 = (float8)(0.0f);
    if (n0 + 8 <= N) {
        for (int k = 0; k < K; k++) {
            float8 bv = LDB8(bp, k * N);
            c0 += LDA(a0, k) * bv; c1 += LDA(a1, k) * bv; c2 += LDA(a2, k) * bv; c3 += LDA(a3, k) * bv;
        }
    } else {
        int nr = N - n0;
        for (int k = 0; k < K; k++) {
            float t[8];
            for (int j = 0; j < 8; j++) t[j] = j < nr ? LDB(bp, k * N + j) : 0.0f;
            float8 bv = vload8(0, t);
            c0 += LDA(a0, k) * bv; c1 += LDA(a1, k) * bv; c2 += LDA(a2, k) * bv; c3 += LDA(a3, k) * bv;
        }
    }
    float r[8];
    int base = (b * M + m0) * N + n0;
    int nr = min(8, N - n0);
    vstore8(c0, 0, r);
    for (int j = 0; j < nr; j++) STORE_FN(r[j], base + j EPI_ARGS);
    if (m0 + 1 < M) { vstore8(c1, 0, r); for (int j = 0; j < nr; j++) STORE_FN(r[j], base + N + j EPI_ARGS); }
    if (m0 + 2 < M) { vstore8(c2, 0, r); for (int j = 0; j < nr; j++) STORE_FN(r[j], base + 2 * N + j EPI_ARGS); }
    if (m0 + 3 < M) { vstore8(c3, 0, r); for (int j = 0; j < nr; j++) STORE_FN(r[j], base + 3 * N + j EPI_ARGS); }
#else
    __global const TA *a0 = A + offA + b * sAb + m0 * K;
    __global const TA *a1 = a0 + (m0 + 1 < M ? K : 0);
    __global const TB *bb = B + offB + b * sBb;
    __global const TB *b0 = bb + n0 * K;
    __global const TB *b1 = bb + min(n0 + 1, N - 1) * K;
    __global const TB *b2 = bb + min(n0 + 2, N - 1) * K;
    __global const TB *b3 = bb + min(n0 + 3, N - 1) * K;
    float8 s00 = (float8)(0.0f), s01 = s00, s02 = s00, s03 = s00, s10 = s00, s11 = s00, s12 = s00, s13 = s00;
    int k = 0;
    for (; k + 8 <= K; k += 8) {
        float8 x0 = LDA8(a0, k), x1 = LDA8(a1, k);
        float8 y0 = LDB8(b0, k), y1 = LDB8(b1, k), y2 = LDB8(b2, k), y3 = LDB8(b3, k);
        s00 += x0 * y0; s01 += x0 * y1; s02 += x0 * y2; s03 += x0 * y3;
        s10 += x1 * y0; s11 += x1 * y1; s12 += x1 * y2; s13 += x1 * y3;
    }
    float r0[4], r1[4];
#define TTC_HSUM8(v) (((v).s0 + (v).s4) + ((v).s1 + (v).s5) + ((v).s2 + (v).s6) + ((v).s3 + (v).s7))
    r0[0] = TTC_HSUM8(s00); r0[1] = TTC_HSUM8(s01); r0[2] = TTC_HSUM8(s02); r0[3] = TTC_HSUM8(s03);
    r1[0] = TTC_HSUM8(s10); r1[1] = TTC_HSUM8(s11); r1[2] = TTC_HSUM8(s12); r1[3] = TTC_HSUM8(s13);
#undef TTC_HSUM8
    for (; k < K; k++) {
        float x0 = LDA(a0, k), x1 = LDA(a1, k);
        float y0 = LDB(b0, k), y1 = LDB(b1, k), y2 = LDB(b2, k), y3 = LDB(b3, k);
        r0[0] += x0 * y0; r0[1] += x0 * y1; r0[2] += x0 * y2; r0[3] += x0 * y3;
        r1[0] += x1 * y0; r1[1] += x1 * y1; r1[2] += x1 * y2; r1[3] += x1 * y3;
    }
    int base = (b * M + m0) * N + n0;
    int nr = min(4, N - n0);
    for (int j = 0; j < nr; j++) STORE_FN(r0[j], base + j EPI_ARGS);
    if (m0 + 1 < M)
        for (int j = 0; j < nr; j++) STORE_FN(r1[j], base + N + j EPI_ARGS);
#endif
}
