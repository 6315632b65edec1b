/* Batched GEMM for GPUs: TSxTS tiles of A and B staged in local memory, one output element
 * per work-item, then the epilogue. Work-group (TS, TS, 1).
 * Specialised by: KNAME STORE_FN EPI_PARAMS EPI_ARGS TA TB LDA LDB TRANS_B TS. */
__kernel __attribute__((reqd_work_group_size(TS, TS, 1)))
void KNAME(__global const TA *A, int offA, __global const TB *B, int offB, int M, int N, int K,
           int sAb, int sBb EPI_PARAMS) {
    __local float As[TS][TS + 1];
    __local float Bs[TS][TS + 1];
    int tx = get_local_id(0), ty = get_local_id(1);
    int n = get_group_id(0) * TS + tx, m = get_group_id(1) * TS + ty, b = get_global_id(2);
    __global const TA *Ab = A + offA + b * sAb;
    __global const TB *Bb = B + offB + b * sBb;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TS) {
        int ka = k0 + tx;
        As[ty][tx] = (m < M && ka < K) ? LDA(Ab, m * K + ka) : 0.0f;
#if TRANS_B
        int nb = get_group_id(0) * TS + ty, kb = k0 + tx;
        Bs[tx][ty] = (nb < N && kb < K) ? LDB(Bb, nb * K + kb) : 0.0f;
#else
        int kb = k0 + ty;
        Bs[ty][tx] = (n < N && kb < K) ? LDB(Bb, kb * N + n) : 0.0f;
#endif
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int kk = 0; kk < TS; kk++) acc += As[ty][kk] * Bs[kk][tx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (m < M && n < N) STORE_FN(acc, (b * M + m) * N + n EPI_ARGS);
}
