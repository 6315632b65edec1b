/* Batched GEMM on tensor cores through the PTX prelude (ptx.cl), with a multi-stage cp.async
 * pipeline: C[b] = A[b] (MxK, k-contiguous) x B[b] (KxN, or NxK when TRANS_B), then the
 * epilogue. TF32 = 0: half operands, mma m16n8k16 (f32 accumulation); float operands
 * (A_F32/B_F32: fp16 engines keep fp32 inputs and weights as declared) are rounded to half on
 * the way into local memory. TF32 = 1: float operands, mma m16n8k8 .tf32, each fragment
 * rounded to nearest TF32 (ttc_tf32) after it is read from local memory.
 *
 * A work-group of TM x TN warps computes a BM x BN tile, each warp a (BM/TM) x (BN/TN) block of
 * 16x8 mma tiles. STAGES BK-deep slices of A and B live in local memory at once: while the
 * warps multiply slice kt, the copies of slices kt+1 .. kt+STAGES-1 are in flight (cp.async
 * groups, one per slice; the wait leaves STAGES-2 of them pending). Local memory is kept in
 * 16-byte chunks (8 halves or 4 floats) with no padding (48 KiB hold three 128x128x32 half
 * stages); the chunk index within a row is XOR-swizzled by the row so that the 8 row addresses
 * of an ldmatrix, and the 8 threads that store one 128-byte line, hit 32 distinct banks.
 * A (m rows, k chunks) and a TRANS_B B (n rows, k chunks) are read with ldmatrix; a row-major B
 * (k rows, n chunks) with ldmatrix.trans in half, with 32-bit reads in TF32 (ldmatrix has no
 * 32-bit transpose; its swizzle is chosen for that read pattern).
 * A chunk whose operand is aligned (k or n extent and offset multiples of the chunk) is an async
 * 16-byte copy with zero fill past the edges; anything else (odd extents, float operands of a
 * half kernel) is loaded element by element, zero-filled, converted and stored synchronously
 * into the same stage: any M, N, K.
 * GM > 0 rasterises the grid in groups of GM tile rows: consecutive work-groups (the order the
 * hardware starts them) walk down GM rows of M tiles before moving along N, so that the
 * work-groups resident at once share A rows and B columns in L2 instead of each wave reading
 * all of B again (worth 1-2% on the H100 at 4096^3: L2 misses were not what limited it).
 * FL & 1: the async copies go through L1 (cp.async.ca) instead of around it (.cg): 1.05-1.36x on
 * the H100 (bench/RESULTS.md), though each work-group's rows are its own; measured, not
 * explained (with the staged epilogue 1.19x at 4096^3; an L2::128B fetch hint added nothing).
 * FL & 2: the epilogue is staged through local memory and stored by rows (see the end).
 * FL & 4: the stages live in a __local kernel argument (dsm) instead of static arrays, and their
 * number nst (2..STAGES) is a kernel argument: the launch sizes both. OpenCL caps local memory
 * per work-group (48 KiB on NVIDIA, where the static arrays stop too); the CUDA launch path
 * (engine/exec_cuda.c) gives the argument dynamic shared memory, up to 227 KiB per block on an
 * H100, so the same PTX keeps more slices in flight there (bench/RESULTS.md, session 10).
 * FL & 8: warpgroup MMA (sm_90a wgmma, through the prelude's TTC_WG_*; its emulation elsewhere):
 * TM = BM / 16 warps, each warpgroup of 4 multiplying its 64 rows by the whole BN straight
 * from local memory (no ldmatrix, no B fragments in registers): half operands, TRANS_B, BK =
 * 64 (one 128-byte swizzled row per slice row, the layout TC_SW already gives), stages from
 * dsm (FL & 4; the region is 1024-byte aligned: ttc_cuda_ptx_prepare aligns the dynamic shared
 * memory so). One group of products stays in flight while the next slice's copies are issued,
 * so a stage is refilled two slices after it was read: nst - 2 slices load ahead.
 * FL & 16 (with FL & 8): on the hardware, the stages are filled by Hopper's tensor copy engine
 * instead of per-work-item copies: work-item 0 issues one box per operand and slice
 * (cp.async.bulk.tensor on the maps tmA / tmB, BM or BN rows x 64 halves, 128-byte swizzle:
 * the layout TC_SW gives), completing on the stage's mbarrier; edges past the operands read as
 * zeros (the engine's out-of-bounds fill). Batches are rows further down the same map (row b *
 * (sAb / K) + m), so rows past M read the next batch's, which only feed outputs never stored.
 * nst - 1 slices load ahead; a barrier per slice, after each warpgroup's wait for its
 * previous products, frees the stage the next box overwrites. No per-work-item address
 * arithmetic and no proxy fence (the copy engine writes through the async proxy): on the
 * H200 0.83-0.89 of cuBLAS at 4096^3 against FL & 8's 0.57 (bench/RESULTS.md, session 16). Half
 * operands only; the emulation runs FL & 8's copies (the maps are bound, never read).
 * Specialised by: KNAME STORE_FN EPI_PARAMS (FL & 4: dsm, nst first; FL & 16: then tmA, tmB)
 * EPI_ARGS TA TB A_F32 B_F32 TRANS_B BM BN BK TM TN
 * STAGES TF32 GM FL NST_MIN (the fewest stages a launch gives) (static local memory: STAGES * (BM + BN) * BK * (TF32 ? 4 : 2) bytes <= 48
 * KiB; with FL & 4 none, and nst stages of that in dsm). */
#define NTH (32 * TM * TN)
#define WTM (BM / TM)
#define WTN (BN / TN)
#define MI (WTM / 16)
#define NI (WTN / 8)
#if TF32
#define CE 4                 /* elements per 16-byte chunk */
#define KSTEP 8
#else
#define CE 8
#define KSTEP 16
#endif
#define LCA (BK / CE)        /* chunks per row of the A slice */
#define ACN (BM * LCA)       /* chunks of the A slice */
#if TRANS_B
#define LCB (BK / CE)
#define BROWS BN
#else
#define LCB (BN / CE)
#define BROWS BK
#endif
#define BCN (BROWS * LCB)
#define ACH ((ACN + NTH - 1) / NTH)
#define BCH ((BCN + NTH - 1) / NTH)
/* the XOR swizzle of chunk c in row r of a layout with lc chunks per row: within each group of
 * 8 chunks (128 bytes), rows 8 apart see the same permutation */
#define TC_SW(r, c, lc) ((c) ^ (((r) / ((lc) >= 8 ? 1 : 8 / (lc))) % ((lc) >= 8 ? 8 : (lc))))
#if TF32 && !TRANS_B
/* row-major float B is read as b[k = t (+4)][n = g]: rows t = 0..3 x 2 chunks per 8 columns,
 * spread over 8 distinct chunks */
#define TC_SWB(r, c) ((c) ^ ((((r) & 3) << 1) & (LCB - 1)))
#else
#define TC_SWB(r, c) TC_SW(r, c, LCB)
#endif
#if (FL & 16) && !(FL & 8)
#error "gemm_tc: tensor copies (FL & 16) feed the warpgroup MMA (FL & 8)"
#endif
#if FL & 8
#if TF32 || !TRANS_B || BK != 64 || TN != 1 || BM != 16 * TM || TM % 4 || !(FL & 4) || STAGES < 3
#error "gemm_tc: warpgroup MMA takes half, TRANS_B, BK 64, TN 1, TM = BM / 16 (4 warps per group), dsm stages >= 3"
#endif
#if BN == 64
#define TC_NA 32
#elif BN == 128
#define TC_NA 64
#elif BN == 256
#define TC_NA 128
#else
#error "gemm_tc: warpgroup MMA takes BN 64, 128 or 256"
#endif
#endif
#if FL & 4
/* nst stages (2 <= nst <= STAGES, set at launch): wait_group takes an immediate, so one per
 * count (uniform branches) */
#if STAGES < 2 || STAGES > 8
#error "gemm_tc: STAGES must be 2..8 with staging from a __local argument"
#endif
#define TC_NST nst
/* at most v (0..6) copy groups left pending */
#define TC_WAITV(v)                                                                                \
    if ((v) >= 6) TTC_CP_ASYNC_WAIT(6);                                                            \
    else if ((v) == 5) TTC_CP_ASYNC_WAIT(5);                                                       \
    else if ((v) == 4) TTC_CP_ASYNC_WAIT(4);                                                       \
    else if ((v) == 3) TTC_CP_ASYNC_WAIT(3);                                                       \
    else if ((v) == 2) TTC_CP_ASYNC_WAIT(2);                                                       \
    else if ((v) == 1) TTC_CP_ASYNC_WAIT(1);                                                       \
    else TTC_CP_ASYNC_WAIT(0);
/* slice kt landed: nst - 1 slices load ahead, so nst - 2 copy groups may stay pending (FL & 8:
 * nst - 2 ahead, nst - 3 pending) */
#define TC_WAIT() TC_WAITV(nst - 2)
#define TC_WAIT8() TC_WAITV(nst - 3)
#else
#define TC_NST STAGES
#if STAGES == 2
#define TC_WAIT() TTC_CP_ASYNC_WAIT(0)
#elif STAGES == 3
#define TC_WAIT() TTC_CP_ASYNC_WAIT(1)
#elif STAGES == 4
#define TC_WAIT() TTC_CP_ASYNC_WAIT(2)
#else
#error "gemm_tc: STAGES must be 2..4"
#endif
#endif
/* loops around prelude calls: unrolled for the hardware; rolled in the emulation, whose calls
 * hold barriers (PoCL compiles every barrier region of an unrolled body separately: minutes) */
#ifdef TTC_PTX
#define TC_UNROLL _Pragma("unroll")
#else
#define TC_UNROLL _Pragma("unroll 1")
#endif
#ifndef TTC_GLUE
#define TTC_GLUE_(a, b) a##b
#define TTC_GLUE(a, b) TTC_GLUE_(a, b)
#endif
#define TC_CHUNK TTC_GLUE(KNAME, _chunk)
#define TC_CHUNKF TTC_GLUE(KNAME, _chunkf)

/* One 16-byte chunk of `lim` (<= CE, may be <= 0) valid elements at p + i, zero-filled. The
 * loads are unconditional (an invalid element reads p[0]: operands are never empty when a
 * work-group runs) and selected afterwards: conditional loads are branches, and every branch
 * between two of the emulation's barriers multiplies PoCL's compile time. */
#if TF32
TTC_INL uint4 TC_CHUNKF(__global const float *p, int i, int lim) {
    uint w[4];
#pragma unroll
    for (int e = 0; e < 4; e++) {
        uint x = as_uint(p[e < lim ? i + e : 0]);
        w[e] = e < lim ? x : 0u;
    }
    return (uint4)(w[0], w[1], w[2], w[3]);
}
#else
TTC_INL uint4 TC_CHUNK(__global const ushort *p, int i, int lim) {
    uint h[8];
#pragma unroll
    for (int e = 0; e < 8; e++) {
        uint x = p[e < lim ? i + e : 0];
        h[e] = e < lim ? x : 0u;
    }
    return (uint4)(h[0] | (h[1] << 16), h[2] | (h[3] << 16), h[4] | (h[5] << 16), h[6] | (h[7] << 16));
}
/* float operands rounded to half (vec: 8 aligned floats, one 32-byte load on the hardware) */
TTC_INL uint4 TC_CHUNKF(__global const float *p, int i, int lim, bool vec) {
    float f[8];
#ifdef TTC_PTX
    if (vec && lim >= 8) {
        float4 x = *(__global const float4 *)(p + i), y = *(__global const float4 *)(p + i + 4);
        f[0] = x.s0; f[1] = x.s1; f[2] = x.s2; f[3] = x.s3; f[4] = y.s0; f[5] = y.s1; f[6] = y.s2; f[7] = y.s3;
    } else
#endif
    {
#pragma unroll
        for (int e = 0; e < 8; e++) {
            float x = p[e < lim ? i + e : 0];
            f[e] = e < lim ? x : 0.0f;
        }
    }
    return (uint4)(ttc_f2h2(f[0], f[1]), ttc_f2h2(f[2], f[3]), ttc_f2h2(f[4], f[5]), ttc_f2h2(f[6], f[7]));
}
#endif

/* The chunk at element index `idx` of operand X with `lim` valid elements into local chunk dst:
 * an async copy when the operand allows (vec), else loaded here. The emulation always loads
 * here (its zero-filling copy is a loop of conditional loads: see above). */
#if TF32
#define TC_SYNC(dst, X, idx, lim, vecf) *(dst) = TC_CHUNKF(X, (idx), (lim));
#define TC_PUTF TC_PUT
#else
#define TC_SYNC(dst, X, idx, lim, vecf) *(dst) = TC_CHUNK(X, (idx), (lim));
#define TC_PUTF(dst, X, idx, lim, vec, vecf) *(dst) = TC_CHUNKF(X, (idx), (lim), (vecf));
#endif
#if FL & 1
#define TC_CPASYNC ttc_cp_async16_zfill_ca
#else
#define TC_CPASYNC ttc_cp_async16_zfill
#endif
#ifdef TTC_PTX
#define TC_PUT(dst, X, idx, lim, vec, vecf)                                                        \
    if (vec) TC_CPASYNC((dst), (lim) > 0 ? (__global const void *)(X + (idx)) : (__global const void *)X, \
                                  (lim) > 0 ? 16 : 0);                                             \
    else TC_SYNC(dst, X, idx, lim, vecf)
#else
#define TC_PUT(dst, X, idx, lim, vec, vecf) TC_SYNC(dst, X, idx, lim, vecf)
#endif
#if A_F32
#define TC_PUTA TC_PUTF
#else
#define TC_PUTA TC_PUT
#endif
#if B_F32
#define TC_PUTB TC_PUTF
#else
#define TC_PUTB TC_PUT
#endif

#if FL & 2
/* the staged epilogue's rows: a 16-row strip of a warp's block as floats, padded by 4 words so
 * that the fragments' float2 writes (rows g, g + 8) spread over the banks */
#define TC_ES (WTN + 4)
#if TM * TN * 16 * TC_ES * 4 > NST_MIN * (ACN + BCN) * 16
#error "gemm_tc: the staged epilogue does not fit in the stages' local memory"
#endif
#endif

__kernel __attribute__((reqd_work_group_size(NTH, 1, 1)))
void KNAME(__global const TA *A, int offA, __global const TB *B, int offB, int M, int N, int K,
           int sAb, int sBb EPI_PARAMS) {
#if FL & 4
    /* the stages live in the __local argument dsm (EPI_PARAMS begins with it and nst: see
     * codegen.c), sized at launch: nst stages of (ACN + BCN) chunks */
    __local uint4 *smem = dsm;
    __local uint4 *smA = smem, *smB = smem + nst * ACN;
#elif FL & 2
    /* one array, so that the epilogue can stage through all of it */
    __local uint4 smem[STAGES * (ACN + BCN)];
    __local uint4 *smA = smem, *smB = smem + STAGES * ACN;
#else
    __local uint4 smA[STAGES * ACN];
    __local uint4 smB[STAGES * BCN];
#endif
#ifdef TTC_PTX
    __local uint *scr = 0;   /* the instructions need no scratch: the 48 KiB stay for the stages */
#if (FL & 16) && (FL & 8)
    __local ulong tc_full[STAGES];   /* one mbarrier per stage: its boxes landed (at kernel scope, as OpenCL wants) */
#endif
#else
    TTC_PTX_SCRATCH(scr, TM * TN);
#endif
    __local const ushort *hA = (__local const ushort *)smA;
    __local const ushort *hB = (__local const ushort *)smB;
    int tid = get_local_id(0), lane = tid & 31, warp = tid >> 5;
    int wm = warp / TN, wn = warp % TN, g = lane >> 2, t = lane & 3;
#if GM
    int nnt = get_num_groups(0), nmt = get_num_groups(1);
    int pid = get_group_id(1) * nnt + get_group_id(0), gw = GM * nnt, fm = pid / gw * GM;
    int gsz = min(nmt - fm, GM), mt = fm + pid % gw % gsz, nt = pid % gw / gsz;
#else
    int mt = get_group_id(1), nt = get_group_id(0);
#endif
    int m0 = mt * BM, n0 = nt * BN, b = get_group_id(2);
    int oA = offA + b * sAb, oB = offB + b * sBb;
#if A_F32
    __global const float *Ab = (__global const float *)A + oA;
#elif TF32
#error "gemm_tc: TF32 needs float operands"
#else
    __global const ushort *Ab = (__global const ushort *)A + oA;
#endif
#if B_F32
    __global const float *Bb = (__global const float *)B + oB;
#else
    __global const ushort *Bb = (__global const ushort *)B + oB;
#endif
    /* async copies need whole aligned chunks of the storage type; float operands of a half
     * kernel are converted here, with 16-byte float loads where 4-aligned */
    bool vecA = !A_F32 || TF32 ? K % CE == 0 && oA % CE == 0 : false;
    bool vecAf = K % 4 == 0 && oA % 4 == 0;
#if TRANS_B
    bool vecB = !B_F32 || TF32 ? K % CE == 0 && oB % CE == 0 : false;
    bool vecBf = K % 4 == 0 && oB % 4 == 0;
#else
    bool vecB = !B_F32 || TF32 ? N % CE == 0 && oB % CE == 0 : false;
    bool vecBf = N % 4 == 0 && oB % 4 == 0;
#endif
    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < NI; j++)
#pragma unroll
            for (int r = 0; r < 4; r++) acc[i][j][r] = 0.0f;

    /* Each thread's chunks of a slice, fixed for the whole k loop, so that a slice costs each
     * chunk an add, a bound and the copy (computed per slice, the index arithmetic was several
     * times the mma instructions of the loop in the PTX): A chunk c is row c / LCA, k chunk c % LCA; its element offset at k = 0, its
     * k offset, whether its row exists, its local chunk (swizzled) within a stage. */
    int aoff[ACH], akc[ACH], adst[ACH];
    bool aok[ACH];
#pragma unroll
    for (int q = 0; q < ACH; q++) {
        int c = tid + q * NTH, r = c / LCA, kc = c % LCA, m = m0 + r;
        aok[q] = m < M;
        akc[q] = kc * CE;
        aoff[q] = aok[q] ? m * K + kc * CE : 0;
        adst[q] = r * LCA + TC_SW(r, kc, LCA);
    }
    /* B chunk c: row c / LCB (n when TRANS_B, else k), chunk c % LCB (k, else n) */
    int boff[BCH], bkc[BCH], bdst[BCH], bnl[BCH];
    bool bok[BCH];
#pragma unroll
    for (int q = 0; q < BCH; q++) {
        int c = tid + q * NTH, r = c / LCB, cc = c % LCB;
#if TRANS_B
        int n = n0 + r;
        bok[q] = n < N;
        bkc[q] = cc * CE;                            /* k offset */
        boff[q] = bok[q] ? n * K + cc * CE : 0;
        bnl[q] = 0;
#else
        int n = n0 + cc * CE;
        bok[q] = n < N;
        bkc[q] = r;                                  /* k row */
        boff[q] = bok[q] ? r * N + n : 0;
        bnl[q] = bok[q] ? min(N - n, CE) : 0;        /* valid n of the chunk */
#endif
        bdst[q] = r * LCB + TC_SWB(r, cc);
    }
#if TRANS_B
#define TC_BLIM(q, k0) (bok[q] ? min(K - (k0) - bkc[q], CE) : 0)
#define TC_BOFF(q, k0) (boff[q] + (k0))
#else
#define TC_BLIM(q, k0) ((k0) + bkc[q] < K ? bnl[q] : 0)
#define TC_BOFF(q, k0) (boff[q] + (k0) * N)
#endif
    /* slice k0 into stage st */
#define TC_LOAD(st, k0)                                                                            \
    {                                                                                              \
        _Pragma("unroll") for (int q = 0; q < ACH; q++) {                                          \
            if (ACN % NTH == 0 || tid + q * NTH < ACN) {                                           \
                int lim = aok[q] ? min(K - (k0) - akc[q], CE) : 0;                                 \
                __local uint4 *dst = smA + (st) * ACN + adst[q];                                   \
                TC_PUTA(dst, Ab, aoff[q] + (k0), lim, vecA, vecAf)                                 \
            }                                                                                      \
        }                                                                                          \
        _Pragma("unroll") for (int q = 0; q < BCH; q++) {                                          \
            if (BCN % NTH == 0 || tid + q * NTH < BCN) {                                           \
                int lim = TC_BLIM(q, k0);                                                          \
                __local uint4 *dst = smB + (st) * BCN + bdst[q];                                   \
                TC_PUTB(dst, Bb, TC_BOFF(q, k0), lim, vecB, vecBf)                                 \
            }                                                                                      \
        }                                                                                          \
    }

    int KT = (K + BK - 1) / BK;
#if FL & 8
    /* warpgroup MMA: warpgroup warp / 4 multiplies rows 64 (warp / 4) .. + 63 of the stage by
     * all of its B; acc[0][j][r] is the product's acc[4j + r] (same layout) */
    {
        __local const uchar *sb = (__local const uchar *)smem;
        int wga = (warp >> 2) * 64 * LCA * 16;   /* byte offset of the warpgroup's A rows in a stage */
        float *af = &acc[0][0][0];
/* stage st's four k16 products (this warpgroup's A rows, all of B), then the wait that leaves
 * them in flight and completes the previous slice's */
#define TC_WG_SLICE(st)                                                                            \
    {                                                                                              \
        int aS = (st) * ACN * 16 + wga, bS = (TC_NST * ACN + (st) * BCN) * 16;                     \
        TTC_WG_FENCE(af, TC_NA);                                                                   \
        TC_UNROLL for (int ks = 0; ks < 4; ks++)                                                   \
            TTC_WG_MMA_F16(af, TC_NA, sb, aS + ks * 32, bS + ks * 32, scr);                        \
        TTC_WG_COMMIT();                                                                           \
        TTC_WG_WAIT1(af, TC_NA);                                                                   \
    }
#if (FL & 16) && defined(TTC_PTX)
#if A_F32 || B_F32
#error "gemm_tc: tensor copies take half operands"
#endif
        uint fb = TTC_SMEM(tc_full), s0 = TTC_SMEM(smem);
        int rA = (sAb && K > 0 ? b * (sAb / K) : 0) + m0, rB = (sBb && K > 0 ? b * (sBb / K) : 0) + n0;
        if (tid == 0) {
            for (int i = 0; i < TC_NST; i++) ttc_mbar_init(fb + 8 * i, 1);
            ttc_mbar_init_fence();
        }
        barrier(CLK_LOCAL_MEM_FENCE);
#define TC_TMA(st, k0)                                                                             \
    {                                                                                              \
        ttc_mbar_expect(fb + 8 * (st), (ACN + BCN) * 16);                                          \
        ttc_tma_load2(s0 + (st) * ACN * 16, tmA, (k0), rA, fb + 8 * (st));                         \
        ttc_tma_load2(s0 + (TC_NST * ACN + (st) * BCN) * 16, tmB, (k0), rB, fb + 8 * (st));        \
    }
        if (tid == 0)
            for (int s = 0; s < TC_NST - 1 && s < KT; s++) TC_TMA(s, s * BK)
        int rd = 0, wr = TC_NST - 1;
        uint ph = 0;
        for (int kt = 0; kt < KT; kt++) {
            ttc_mbar_wait(fb + 8 * rd, ph);
            TC_WG_SLICE(rd)
            /* every warpgroup's products of slice kt - 1 are complete: its stage (wr) is free */
            barrier(CLK_LOCAL_MEM_FENCE);
            if (tid == 0 && kt + TC_NST - 1 < KT) TC_TMA(wr, (kt + TC_NST - 1) * BK)
            if (rd == TC_NST - 1) { rd = 0; ph ^= 1u; } else rd++;
            wr = wr == TC_NST - 1 ? 0 : wr + 1;
        }
#undef TC_TMA
#else
#pragma unroll
        for (int s = 0; s < TC_NST - 2; s++) {
            if (s < KT) TC_LOAD(s, s * BK)
            ttc_cp_async_commit();
        }
        int rd = 0, wr = TC_NST - 2;
        for (int kt = 0; kt < KT; kt++) {
            /* slice kt has landed (this work-item's copies; the barrier shows everyone's), and
             * every warpgroup's products of slice kt - 2 are complete (each waited for them
             * before the barrier): stage wr is free */
            TC_WAIT8();
            ttc_fence_proxy_async();
            barrier(CLK_LOCAL_MEM_FENCE);
            if (kt + TC_NST - 2 < KT) TC_LOAD(wr, (kt + TC_NST - 2) * BK)
            ttc_cp_async_commit();
            TC_WG_SLICE(rd)
            rd = rd == TC_NST - 1 ? 0 : rd + 1;
            wr = wr == TC_NST - 1 ? 0 : wr + 1;
        }
#endif
#undef TC_WG_SLICE
        TTC_WG_WAIT0(af, TC_NA);
    }
#else
#pragma unroll
    for (int s = 0; s < TC_NST - 1; s++) {
        if (s < KT) TC_LOAD(s, s * BK)
        ttc_cp_async_commit();
    }
    int rd = 0, wr = TC_NST - 1;   /* the stage multiplied now, the stage loaded next */
    for (int kt = 0; kt < KT; kt++) {
        /* this thread's copies of slice kt have landed; the barrier shows everyone's, and
         * ends every warp's reads of the stage the next slice overwrites */
        TC_WAIT();
        barrier(CLK_LOCAL_MEM_FENCE);
        if (kt + TC_NST - 1 < KT) TC_LOAD(wr, (kt + TC_NST - 1) * BK)
        ttc_cp_async_commit();
        int aS = rd * ACN, bS = rd * BCN;
TC_UNROLL
        for (int ks = 0; ks < BK / KSTEP; ks++) {
            uint af[MI][4], bf[NI][2];
            /* A 16 x KSTEP tiles: matrices (rows +0/+8) x (k chunk +0/+1), lanes 8i.. give matrix i */
TC_UNROLL
            for (int i = 0; i < MI; i++) {
                int r = wm * WTM + i * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, kc = 2 * ks + (lane >> 4);
                ttc_ldsm_x4(af[i], hA, (aS + r * LCA + TC_SW(r, kc, LCA)) * 8, scr);
#if TF32
TC_UNROLL
                for (int e = 0; e < 4; e++) af[i][e] = ttc_tf32(as_float(af[i][e]));
#endif
            }
#if TRANS_B
            /* two n8 tiles per x4: matrices (n +0, k +0), (n +0, k +1), (n +8, k +0), (n +8, k +1) */
TC_UNROLL
            for (int j = 0; j < NI; j += 2) {
                int r = wn * WTN + j * 8 + (lane & 7) + (lane >> 4) * 8, kc = 2 * ks + ((lane >> 3) & 1);
                uint x[4];
                ttc_ldsm_x4(x, hB, (bS + r * LCB + TC_SWB(r, kc)) * 8, scr);
                bf[j][0] = x[0]; bf[j][1] = x[1]; bf[j + 1][0] = x[2]; bf[j + 1][1] = x[3];
            }
#elif !TF32
            /* k-major half B, transposed on the way: matrices (k +0, n +0), (k +8, n +0), (k +0,
             * n +8), (k +8, n +8) */
TC_UNROLL
            for (int j = 0; j < NI; j += 2) {
                int r = ks * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, nc = (wn * WTN + j * 8) / 8 + (lane >> 4);
                uint x[4];
                ttc_ldsm_x4_trans(x, hB, (bS + r * LCB + TC_SWB(r, nc)) * 8, scr);
                bf[j][0] = x[0]; bf[j][1] = x[1]; bf[j + 1][0] = x[2]; bf[j + 1][1] = x[3];
            }
#else
            /* k-major float B: b0 = B[k = t][n = g], b1 = B[t + 4][g] */
            {
                __local const uint *fB = (__local const uint *)smB;
TC_UNROLL
                for (int j = 0; j < NI; j++) {
                    int n = wn * WTN + j * 8 + g, r0 = ks * 8 + t, r1 = r0 + 4;
                    bf[j][0] = fB[(bS + r0 * LCB + TC_SWB(r0, n / 4)) * 4 + n % 4];
                    bf[j][1] = fB[(bS + r1 * LCB + TC_SWB(r1, n / 4)) * 4 + n % 4];
                }
            }
#endif
#if TF32
TC_UNROLL
            for (int j = 0; j < NI; j++) {
                bf[j][0] = ttc_tf32(as_float(bf[j][0]));
                bf[j][1] = ttc_tf32(as_float(bf[j][1]));
            }
#endif
TC_UNROLL
            for (int i = 0; i < MI; i++)
TC_UNROLL
                for (int j = 0; j < NI; j++) {
#if TF32
                    ttc_mma_tf32(acc[i][j], af[i], bf[j], scr);
#else
                    ttc_mma_f16(acc[i][j], af[i], bf[j], scr);
#endif
                }
        }
        rd = rd == TC_NST - 1 ? 0 : rd + 1;
        wr = wr == TC_NST - 1 ? 0 : wr + 1;
    }
#endif
    TTC_CP_ASYNC_WAIT(0);
#if FL & 2
    /* Staged epilogue: each warp passes its block through local memory one 16-row strip at a
     * time and stores it by rows, lane = column, so that a warp's 32 stores of a row are one
     * contiguous run (the fragment order writes 8 rows x 4 scattered pairs per instruction:
     * 8 sectors for 64 bytes), and the epilogue's own reads (bias, residual) coalesce alike.
     * The barrier ends every warp's reads of the last stage; the strips are warp-private
     * (warp syncs only). */
    barrier(CLK_LOCAL_MEM_FENCE);
    {
        __local float *stg = (__local float *)smem + warp * 16 * TC_ES;
        int mw = m0 + wm * WTM, nw = n0 + wn * WTN;
TC_UNROLL
        for (int i = 0; i < MI; i++) {
#pragma unroll
            for (int j = 0; j < NI; j++) {
                *(__local float2 *)(stg + g * TC_ES + j * 8 + 2 * t) = (float2)(acc[i][j][0], acc[i][j][1]);
                *(__local float2 *)(stg + (g + 8) * TC_ES + j * 8 + 2 * t) = (float2)(acc[i][j][2], acc[i][j][3]);
            }
            ttc_warp_sync(scr);
TC_UNROLL
            for (int rr = 0; rr < 16; rr++) {
                int m = mw + i * 16 + rr;
#pragma unroll
                for (int c0 = 0; c0 < WTN; c0 += 32) {
                    int c = c0 + lane, n = nw + c;
                    if (c < WTN && m < M && n < N) STORE_FN(stg[rr * TC_ES + c], (b * M + m) * N + n EPI_ARGS);
                }
            }
            ttc_warp_sync(scr);
        }
    }
#else
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
#endif
}
#undef TC_ES
#undef TC_LOAD
#undef TC_BLIM
#undef TC_BOFF
#undef TC_PUT
#undef TC_PUTF
#undef TC_SYNC
#undef TC_PUTA
#undef TC_PUTB
#undef TC_CPASYNC
#undef TC_CHUNK
#undef TC_CHUNKF
#undef TC_SW
#undef TC_SWB
#undef TC_WAIT
#undef TC_WAITV
#undef TC_WAIT8
#undef TC_NA
#undef TC_NST
#undef TC_UNROLL
#undef NTH
#undef WTM
#undef WTN
#undef MI
#undef NI
#undef CE
#undef KSTEP
#undef LCA
#undef LCB
#undef ACN
#undef BCN
#undef ACH
#undef BCH
#undef BROWS
