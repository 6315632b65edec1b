/* Scaled-dot-product attention on tensor cores (fp16 q/k/v, f32 accumulation), flash style:
 * a work-group of NW warps owns BM = 16 * NW query rows of one (batch, head), each warp 16 of
 * them. It walks the keys in blocks of BN: S = Q K^T on mma.sync m16n8k16, the scale (times
 * log2 e, so that exp2 does the softmax), mask and tails applied in registers, an online
 * softmax per row (running max and sum, the accumulator rescaled when the max grows), then P
 * (rounded to half in the A-fragment layout the S accumulators already have) times V on
 * mma.sync into O. O is divided by the row sum at the end. Nothing of size L x S is stored.
 *
 * Local memory holds one K block and one V block (BN rows of D halves, rows padded by 8 halves
 * so that the 8 row addresses of an ldmatrix hit distinct banks); the Q tile passes through the
 * same space once. Loads are cp.async 16-byte copies (zero-filled past the key/query tails), V
 * of block j overlapping S of block j and K of block j+1 overlapping P V of block j. Tensors
 * whose head dim is not contiguous or whose strides/offset are not multiples of 8 halves take
 * plain loads instead (slower, same result).
 *
 * Rows are as torch: masked keys (bool false, -inf, past S, after the query when CAUSAL
 * (top-left aligned)) add nothing; a row with every key masked is 0 (as the row kernel and
 * torch's CPU kernels give).
 *
 * Index space: rank 4 [B, H, L, D], lower ranks padded in front (strides 0, sizes 1):
 * get_group_id(1) = b * nh + h (the output's batch/head linear index), get_group_id(0) the
 * query tile. With GROUP > 1 (GQA) query head h reads k/v head h / GROUP.
 * Specialised by KNAME STORE_FN EPI_PARAMS EPI_ARGS D (head dim, multiple of 16) NW BN MT
 * (mask storage type) HAS_MASK MASK_BOOL LDM (float loader of a non-bool mask) CAUSAL GROUP
 * SCALE2 (scale * log2 e) UNROLL EXP2; the PTX prelude (ptx.cl) comes before. */
#define NTH (32 * NW)
#define BM (16 * NW)
#define SK (D + 8)
#define DCH (D / 8)
#define SROWS (BM > 2 * BN ? BM : 2 * BN)
#define ATTN_LOG2E 1.4426950408889634f
#ifndef TTC_GLUE
#define TTC_GLUE_(a, b) a##b
#define TTC_GLUE(a, b) TTC_GLUE_(a, b)
#endif
#define TILE TTC_GLUE(KNAME, _tile)

/* rows [r0, r0 + rows) of a [*, D] matrix (row stride rs, head-dim stride es from base) into
 * dst (row stride SK); rows at or past lim are zero, so that tails add nothing (a zero V row
 * times p = 0 stays 0, where stale data could be NaN) */
static inline void TILE(__local ushort *dst, __global const ushort *src, int base, int rs, int es, int r0,
                        int rows, int lim, bool vec, int tid) {
    for (int c = tid; c < rows * DCH; c += NTH) {
        int r = c / DCH, e = (c % DCH) * 8, gr = r0 + r;
        __local ushort *d = dst + r * SK + e;
        bool ok = gr < lim;
        if (vec) {
            ttc_cp_async16_zfill(d, src + (ok ? base + gr * rs + e : 0), ok ? 16 : 0);
        } else {
            for (int x = 0; x < 8; x++) d[x] = ok ? src[base + gr * rs + (e + x) * es] : (ushort)0;
        }
    }
}

__kernel __attribute__((reqd_work_group_size(NTH, 1, 1)))
void KNAME(int L, int S, int nh, __global const half *q, int q_off, int q_s0, int q_s1, int q_s2, int q_s3,
           __global const half *k, int k_off, int k_s0, int k_s1, int k_s2, int k_s3,
           __global const half *v, int v_off, int v_s0, int v_s1, int v_s2, int v_s3,
           __global const MT *m, int m_off, int m_s0, int m_s1, int m_s2, int m_s3 EPI_PARAMS) {
    TTC_PTX_SCRATCH(scr, NW);
    __local uint4 sm4[SROWS * SK / 8];
    __local ushort *Ks = (__local ushort *)sm4, *Vs = Ks + BN * SK, *Qs = Ks;
    __global const ushort *qh = (__global const ushort *)q, *kh = (__global const ushort *)k,
                          *vh = (__global const ushort *)v;
    int tid = get_local_id(0), lane = ttc_lane(), warp = ttc_warp(), g = lane >> 2, t = lane & 3;
    int bh = get_group_id(1), b0 = bh / nh, b1 = bh % nh, m0 = get_group_id(0) * BM;
    int qb = q_off + b0 * q_s0 + b1 * q_s1;
    int kb = k_off + b0 * k_s0 + (b1 / GROUP) * k_s1;
    int vb = v_off + b0 * v_s0 + (b1 / GROUP) * v_s1;
    bool vq = q_s3 == 1 && ((qb | q_s2) & 7) == 0;
    bool vk = k_s3 == 1 && ((kb | k_s2) & 7) == 0;
    bool vv = v_s3 == 1 && ((vb | v_s2) & 7) == 0;
#if HAS_MASK
    int mb = m_off + b0 * m_s0 + b1 * m_s1;
#endif
    /* this lane's A-fragment row and ldmatrix addresses (lanes 8i..8i+7 name matrix i's rows) */
    int lr = lane & 7, li = lane >> 3;

    TILE(Qs, qh, qb, q_s2, q_s3, m0, BM, L, vq, tid);
    ttc_cp_async_commit();
    TTC_CP_ASYNC_WAIT(0);
    barrier(CLK_LOCAL_MEM_FENCE);
    uint qf[D / 16][4];
    UNROLL for (int kd = 0; kd < D / 16; kd++)
        ttc_ldsm_x4(qf[kd], Qs, (warp * 16 + lr + (li & 1) * 8) * SK + kd * 16 + (li >> 1) * 8, scr);
    barrier(CLK_LOCAL_MEM_FENCE);   /* Q's space becomes K's and V's */

    float o[D / 8][4];
    UNROLL for (int j = 0; j < D / 8; j++) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
    float mr[2] = {-INFINITY, -INFINITY}, lsum[2] = {0.0f, 0.0f};
    int row0 = m0 + warp * 16 + g;   /* rows row0 (c0, c1) and row0 + 8 (c2, c3) */
#if CAUSAL
    int kend = min(S, m0 + BM);   /* keys after the tile's last query are masked for every row */
#else
    int kend = S;
#endif
    if (kend > 0) TILE(Ks, kh, kb, k_s2, k_s3, 0, BN, S, vk, tid);
    ttc_cp_async_commit();
    for (int n0 = 0; n0 < kend; n0 += BN) {
        TILE(Vs, vh, vb, v_s2, v_s3, n0, BN, S, vv, tid);
        ttc_cp_async_commit();
        TTC_CP_ASYNC_WAIT(1);   /* K of this block is in */
        barrier(CLK_LOCAL_MEM_FENCE);
        float s[BN / 8][4];
        UNROLL for (int j = 0; j < BN / 8; j++) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
        UNROLL for (int np = 0; np < BN / 16; np++) {
            UNROLL for (int kd = 0; kd < D / 16; kd++) {
                uint b[4];   /* keys np*16 + 0..7 and + 8..15, dims kd*16 + 0..7 and + 8..15 */
                ttc_ldsm_x4(b, Ks, (np * 16 + lr + (li >> 1) * 8) * SK + kd * 16 + (li & 1) * 8, scr);
                ttc_mma_f16(s[2 * np], qf[kd], b, scr);
                ttc_mma_f16(s[2 * np + 1], qf[kd], b + 2, scr);
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
            /* every key so far masked: subtract 0 so that exp2(-inf) gives 0, never NaN */
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
        if (n0 + BN < kend) TILE(Ks, kh, kb, k_s2, k_s3, n0 + BN, BN, S, vk, tid);
        ttc_cp_async_commit();
        UNROLL for (int kk = 0; kk < BN / 16; kk++) {
            /* S's accumulators of key tiles 2kk, 2kk+1 are P's A fragment for keys kk*16.. */
            uint a[4] = {ttc_f2h2(s[2 * kk][0], s[2 * kk][1]), ttc_f2h2(s[2 * kk][2], s[2 * kk][3]),
                         ttc_f2h2(s[2 * kk + 1][0], s[2 * kk + 1][1]), ttc_f2h2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
            UNROLL for (int dn = 0; dn < D / 16; dn++) {
                uint b[4];   /* V transposed: keys kk*16 + 0..7 / 8..15 of dims dn*16 + 0..7, then + 8..15 */
                ttc_ldsm_x4_trans(b, Vs, (kk * 16 + lr + (li & 1) * 8) * SK + dn * 16 + (li >> 1) * 8, scr);
                ttc_mma_f16(o[2 * dn], a, b, scr);
                ttc_mma_f16(o[2 * dn + 1], a, b + 2, scr);
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
