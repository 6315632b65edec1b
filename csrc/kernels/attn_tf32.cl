/* Scaled-dot-product attention on tensor cores for fp32 q/k/v, at fp32 accuracy: the sibling of
 * attn_mma.cl (same tiling, online softmax, masks, tails and index space; read that first).
 *
 * Both products, S = Q K^T and O = P V, run on mma.sync m16n8k8 in TF32 split three ways
 * ("3xTF32"): every operand x is big + small, big = tf32(x) and small = tf32(x - big), and a
 * product is big*big + big*small + small*big (the small*small term is below fp32's rounding).
 * The result carries about fp32's error (each term is exact to 2^-22 of the operands), so the
 * engine keeps torch's fp32 semantics whatever torch's TF32 switches say.
 *
 * Non-finite operands: big is x itself (tf32 keeps fp32's exponent), small is 0, and the cross
 * terms use a big that is 0 where x is not finite, so that inf * 0 from a small part never
 * turns an inf into a NaN: what stays is big*big, torch's own product of the values.
 *
 * Fragments (ptx.cl): A (row g / g+8, k t / t+4), B (k t / t+4, n g), C (g / g+8, 2t / 2t+1).
 * P's A fragment is the S accumulators themselves with the keys of a k-step permuted: k-index t
 * is key 2t and t + 4 is key 2t + 1, and V's B fragment reads its rows in the same order
 * (keys 2t and 2t + 1), so no shuffles are needed.
 *
 * Local memory holds a K and a V block in rows of D + 4 floats (K's reads, row g and column t,
 * and V's, row 2t or 2t + 1 and column g, then hit 32 distinct banks), each followed by its
 * small parts: once a block lands, the work-group splits it in place (the big parts over the
 * floats), so that each element is split once rather than once per warp.
 *
 * Specialised by KNAME STORE_FN EPI_PARAMS EPI_ARGS D (head dim, multiple of 8) NW BN MT
 * HAS_MASK MASK_BOOL LDM CAUSAL GROUP SCALE2 UNROLL EXP2, as attn_mma.cl. */
#define NTH (32 * NW)
#define BM (16 * NW)
#define SK (D + 4)
#define DCH (D / 4)
#define SROWS (BM > 4 * BN ? BM : 4 * BN)
#define ATTN_LOG2E 1.4426950408889634f
#ifndef TTC_GLUE
#define TTC_GLUE_(a, b) a##b
#define TTC_GLUE(a, b) TTC_GLUE_(a, b)
#endif
#define TILE TTC_GLUE(KNAME, _tile)
#define SPLIT TTC_GLUE(KNAME, _split)

/* rows [r0, r0 + rows) of a [*, D] float matrix (row stride rs, head-dim stride es, from base)
 * into dst (row stride SK); rows at or past lim are zero */
TTC_INL void TILE(__local float *dst, __global const float *src, int base, int rs, int es, int r0, int rows,
                  int lim, bool vec, int tid) {
    for (int c = tid; c < rows * DCH; c += NTH) {
        int r = c / DCH, e = (c % DCH) * 4, gr = r0 + r;
        __local float *d = dst + r * SK + e;
        bool ok = gr < lim;
        if (vec) {
            ttc_cp_async16_zfill(d, src + (ok ? base + gr * rs + e : 0), ok ? 16 : 0);
        } else {
            for (int x = 0; x < 4; x++) d[x] = ok ? src[base + gr * rs + (e + x) * es] : 0.0f;
        }
    }
}

/* x as big (tf32) and small (tf32 of the rest; 0 where x is not finite) */
TTC_INL void SPLIT(float x, uint *big, uint *small) {
    uint b = ttc_tf32(x);
    bool fin = isfinite(x) && isfinite(ttc_tf32_val(b));
    *big = b;
    *small = fin ? ttc_tf32(x - ttc_tf32_val(b)) : 0u;
}

/* a landed [BN, D] tile split in place: big parts over the floats, small parts into sml */
TTC_INL void TTC_GLUE(KNAME, _split_tile)(__local float *t, __local uint *sml, int tid) {
    for (int c = tid; c < BN * D; c += NTH) {
        int i = (c / D) * SK + c % D;
        uint b, sm;
        SPLIT(t[i], &b, &sm);
        ((__local uint *)t)[i] = b;
        sml[i] = sm;
    }
}
#define SPLIT_TILE TTC_GLUE(KNAME, _split_tile)

/* tf32 bits where finite, else 0 (the cross terms' big part) */
#define FIN(b) (isfinite(ttc_tf32_val(b)) ? (b) : 0u)

__kernel __attribute__((reqd_work_group_size(NTH, 1, 1)))
void KNAME(int L, int S, int nh, __global const float *q, int q_off, int q_s0, int q_s1, int q_s2, int q_s3,
           __global const float *k, int k_off, int k_s0, int k_s1, int k_s2, int k_s3,
           __global const float *v, int v_off, int v_s0, int v_s1, int v_s2, int v_s3,
           __global const MT *m, int m_off, int m_s0, int m_s1, int m_s2, int m_s3 EPI_PARAMS) {
    TTC_PTX_SCRATCH(scr, NW);
    __local float4 sm4[SROWS * SK / 4];
    /* K and V blocks: their floats, then their big parts in place, and their small parts */
    __local float *Ks = (__local float *)sm4, *Vs = Ks + 2 * BN * SK, *Qs = Ks;
    __local uint *Kb = (__local uint *)Ks, *Kl = Kb + BN * SK, *Vb = (__local uint *)Vs, *Vl = Vb + BN * SK;
    int tid = get_local_id(0), lane = ttc_lane(), warp = ttc_warp(), g = lane >> 2, t = lane & 3;
    int bh = get_group_id(1), b0 = bh / nh, b1 = bh % nh, m0 = get_group_id(0) * BM;
    int qb = q_off + b0 * q_s0 + b1 * q_s1;
    int kb = k_off + b0 * k_s0 + (b1 / GROUP) * k_s1;
    int vb = v_off + b0 * v_s0 + (b1 / GROUP) * v_s1;
    bool vq = q_s3 == 1 && ((qb | q_s2) & 3) == 0;
    bool vk = k_s3 == 1 && ((kb | k_s2) & 3) == 0;
    bool vv = v_s3 == 1 && ((vb | v_s2) & 3) == 0;
#if HAS_MASK
    int mb = m_off + b0 * m_s0 + b1 * m_s1;
#endif

    TILE(Qs, q, qb, q_s2, q_s3, m0, BM, L, vq, tid);
    ttc_cp_async_commit();
    TTC_CP_ASYNC_WAIT(0);
    barrier(CLK_LOCAL_MEM_FENCE);
    /* Q's A fragments, split: rows warp*16 + g (+8), dims kd*8 + t (+4) */
    uint qbig[D / 8][4], qsml[D / 8][4];
    UNROLL for (int kd = 0; kd < D / 8; kd++) {
        UNROLL for (int i = 0; i < 4; i++)
            SPLIT(Qs[(warp * 16 + g + (i & 1) * 8) * SK + kd * 8 + t + (i >> 1) * 4], &qbig[kd][i], &qsml[kd][i]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);   /* Q's space becomes K's and V's */

    float o[D / 8][4];
    UNROLL for (int j = 0; j < D / 8; j++) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
    float mr[2] = {-INFINITY, -INFINITY}, lsum[2] = {0.0f, 0.0f};
    int row0 = m0 + warp * 16 + g;   /* rows row0 (c0, c1) and row0 + 8 (c2, c3) */
#if CAUSAL
    int kend = min(S, m0 + BM);
#else
    int kend = S;
#endif
    if (kend > 0) TILE(Ks, k, kb, k_s2, k_s3, 0, BN, S, vk, tid);
    ttc_cp_async_commit();
    for (int n0 = 0; n0 < kend; n0 += BN) {
        TILE(Vs, v, vb, v_s2, v_s3, n0, BN, S, vv, tid);
        ttc_cp_async_commit();
        TTC_CP_ASYNC_WAIT(1);   /* K of this block is in */
        barrier(CLK_LOCAL_MEM_FENCE);
        SPLIT_TILE(Ks, Kl, tid);
        barrier(CLK_LOCAL_MEM_FENCE);
        float s[BN / 8][4];
        UNROLL for (int j = 0; j < BN / 8; j++) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
        UNROLL for (int kd = 0; kd < D / 8; kd++) {
            uint qf[4];   /* Q's big part where finite, for the big * small term */
            UNROLL for (int i = 0; i < 4; i++) qf[i] = FIN(qbig[kd][i]);
            UNROLL for (int j = 0; j < BN / 8; j++) {
                int x = (j * 8 + g) * SK + kd * 8 + t;   /* K^T: k = dim kd*8 + t (+4), n = key j*8 + g */
                uint bb[2] = {Kb[x], Kb[x + 4]}, bs[2] = {Kl[x], Kl[x + 4]}, bf[2] = {FIN(bb[0]), FIN(bb[1])};
                ttc_mma_tf32(s[j], qsml[kd], bf, scr);
                ttc_mma_tf32(s[j], qf, bs, scr);
                ttc_mma_tf32(s[j], qbig[kd], bb, scr);
            }
        }
        /* scores in log2 units; masked ones -inf */
        UNROLL for (int j = 0; j < BN / 8; j++) {
            UNROLL for (int r = 0; r < 4; r++) {
                int i = row0 + (r >> 1) * 8, kj = n0 + j * 8 + 2 * t + (r & 1);
                float x = s[j][r] * SCALE2;
#if HAS_MASK
                if (i < L && kj < S) {
                    int mi = mb + i * m_s2 + kj * m_s3;
#if MASK_BOOL
                    x = m[mi] ? x : -INFINITY;
#else
                    x += LDM(m, mi) * ATTN_LOG2E;
#endif
                }
#endif
                bool dead = kj >= S;
#if CAUSAL
                dead = dead || kj > i;
#endif
                s[j][r] = dead ? -INFINITY : x;
            }
        }
        /* online softmax: the quad of lanes t = 0..3 shares a row */
        UNROLL for (int h = 0; h < 2; h++) {
            float mx = mr[h];
            UNROLL for (int j = 0; j < BN / 8; j++) mx = fmax(mx, fmax(s[j][2 * h], s[j][2 * h + 1]));
            mx = fmax(mx, ttc_shfl_xor(mx, 1, scr));
            mx = fmax(mx, ttc_shfl_xor(mx, 2, scr));
            float base = mx == -INFINITY ? 0.0f : mx;
            float c = EXP2(mr[h] - base);
            mr[h] = mx;
            lsum[h] *= c;
            UNROLL for (int j = 0; j < D / 8; j++) {
                o[j][2 * h] *= c;
                o[j][2 * h + 1] *= c;
            }
            UNROLL for (int j = 0; j < BN / 8; j++) {
                float p0 = EXP2(s[j][2 * h] - base), p1 = EXP2(s[j][2 * h + 1] - base);
                s[j][2 * h] = p0;
                s[j][2 * h + 1] = p1;
                lsum[h] += p0 + p1;
            }
        }
        TTC_CP_ASYNC_WAIT(0);   /* V of this block is in */
        barrier(CLK_LOCAL_MEM_FENCE);   /* ... and every warp is done with K */
        if (n0 + BN < kend) TILE(Ks, k, kb, k_s2, k_s3, n0 + BN, BN, S, vk, tid);
        ttc_cp_async_commit();
        SPLIT_TILE(Vs, Vl, tid);
        barrier(CLK_LOCAL_MEM_FENCE);
        UNROLL for (int kk = 0; kk < BN / 8; kk++) {
            /* P's A fragment for keys kk*8..: k-index t is key 2t (c0 row g, c2 row g+8), t+4 key 2t+1 */
            uint pb[4], ps[4], pf[4];
            SPLIT(s[kk][0], &pb[0], &ps[0]);
            SPLIT(s[kk][2], &pb[1], &ps[1]);
            SPLIT(s[kk][1], &pb[2], &ps[2]);
            SPLIT(s[kk][3], &pb[3], &ps[3]);
            UNROLL for (int i = 0; i < 4; i++) pf[i] = FIN(pb[i]);
            UNROLL for (int dn = 0; dn < D / 8; dn++) {
                int x = (kk * 8 + 2 * t) * SK + dn * 8 + g;   /* V: k = key kk*8 + 2t (+1), n = dim dn*8 + g */
                uint bb[2] = {Vb[x], Vb[x + SK]}, bs[2] = {Vl[x], Vl[x + SK]}, bf[2] = {FIN(bb[0]), FIN(bb[1])};
                ttc_mma_tf32(o[dn], ps, bf, scr);
                ttc_mma_tf32(o[dn], pf, bs, scr);
                ttc_mma_tf32(o[dn], pb, bb, scr);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);   /* every warp is done with V before the next block's */
    }
    float inv[2];
    UNROLL for (int h = 0; h < 2; h++) {
        float l = lsum[h];
        l += ttc_shfl_xor(l, 1, scr);
        l += ttc_shfl_xor(l, 2, scr);
        inv[h] = l > 0.0f ? 1.0f / l : 0.0f;
    }
    UNROLL for (int j = 0; j < D / 8; j++) {
        UNROLL for (int r = 0; r < 4; r++) {
            int i = row0 + (r >> 1) * 8;
            if (i < L) STORE_FN(o[j][r] * inv[r >> 1], (bh * L + i) * D + j * 8 + 2 * t + (r & 1) EPI_ARGS);
        }
    }
}
#undef NTH
#undef BM
#undef SK
#undef DCH
#undef SROWS
#undef ATTN_LOG2E
#undef TILE
#undef SPLIT
#undef SPLIT_TILE
#undef FIN
