/* The integer GEMM kernel (TTC_KOP_QGEMM): out[m, n] = sum_k (A[m, k] - a_zp) * B[k, n] with
 * A int8/uint8 [M, K] and B int8 [K, N] at any strides (a transposed weight is a permuted
 * view), accumulated exactly in int (aten._int_mm's int32 result; int8 x int8 products add up
 * to 2^31 only past K = 131072).
 *
 * One work-item per output element, the portable form every OpenCL device runs: the GPU
 * kernel families (TORCHTRT_C_KERNELS=gpu) take it as well, 4 products per step through
 * OpenCL's integer dot product where the reduction is dense (both operands with unit stride
 * along K), else one at a time. An epilogue (the dynamic-quantization scales, a bias) reads
 * the accumulator as float, converted once as torch converts the int32 result.
 *
 * The integer convolution (TTC_KOP_QCONV2D) likewise, one work-item per output element. Both
 * have a tensor-core form on NVIDIA sm_80+ (emit_mma_s8 below: mma.sync m16n8k32 s8), the
 * convolution as an implicit GEMM, with the same int32 sums and the same epilogue. */
#include <stdlib.h>

#include "codegen_impl.h"

static ttc_status gen_qgemm_mma(const ttc_kgen *g);

/* The integer GEMM's parameters (both forms): n = M * N outputs, N, K, then A and B with their
 * offsets and strides. */
static ttc_status qgemm_params(ttc_kparams *p, const ttc_kir *k, ttc_kspec *ks, const ttc_kop *op) {
    ttc_kp_init(p, k, ks, false);
    ttc_kp_int(p, TTC_ARG_PROD, op->out, 0, 2, 0, "n");
    ttc_kp_int(p, TTC_ARG_DIM, op->out, 1, 0, 0, "N");
    ttc_kp_int(p, TTC_ARG_DIM, op->in[0], 1, 0, 0, "K");
    ttc_kp_tensor(p, op->in[0], "a", 0);
    ttc_kp_tensor(p, op->in[1], "b", 0);
    return ttc_kp_done(p);
}

/* Whether k's integer kernels run on int8 tensor cores (gen_qgemm_mma, gen_qconv2d_mma): on
 * NVIDIA sm_80+ unless TORCHTRT_C_QGEMM_MMA says otherwise (=1: any device, the PTX prelude's
 * emulation; 0: never). */
static bool int8_mma_on(const ttc_kir *k) {
    const ttc_target *tg = ttc_kir_target(k);
    return tg->qgemm_mma == 1 || (tg->qgemm_mma == -1 && tg->nvidia && tg->nv_sm >= 80);
}

/* Activations the tensor-core forms take: int8 or uint8 with a zero point of their range. */
static bool q8_activation(ttc_dtype d, int32_t zp) {
    return (d == TTC_DTYPE_INT8 && zp >= -128 && zp <= 127) || (d == TTC_DTYPE_UINT8 && zp >= 0 && zp <= 255);
}

/* QGEMM: int8/uint8 A (aten._int_mm's symmetric int8, PT2E linears' uint8 with a zero point)
 * times int8 B. */
static bool qgemm_mma_wanted(const ttc_kir *k, const ttc_kop *op) {
    return int8_mma_on(k) && q8_activation(k->ts[op->in[0]].dtype, op->p.qgemm.a_zp) &&
           k->ts[op->in[1]].dtype == TTC_DTYPE_INT8;
}

ttc_status ttc_gen_qgemm(const ttc_kgen *g) {
    TTC_KGEN_LOCALS(g);
    const ttc_et *out = &k->ts[op->out];
    const ttc_et *a = op->in[0] >= 0 ? &k->ts[op->in[0]] : NULL;
    const ttc_et *b = op->in[1] >= 0 ? &k->ts[op->in[1]] : NULL;
    if (!a || !b || out->rank != 2 || a->rank != 2 || b->rank != 2)
        return ttc_fail(TTC_ERR_INTERNAL, "qgemm %s: operands of rank %d, %d -> %d", op->name, a ? a->rank : -1,
                        b ? b->rank : -1, out->rank);
    if (qgemm_mma_wanted(k, op)) return gen_qgemm_mma(g);
    ttc_kparams p;
    ttc_status s = qgemm_params(&p, k, ks, op);
    if (s != TTC_OK) goto fail;
    const char *at = ttc_cl_storage_type(a->dtype), *bt = ttc_cl_storage_type(b->dtype);
    ttc_sbuf_printf(src, "__kernel void %s(%s%s) {\n    int lin = get_global_id(0);\n    if (lin >= n) return;\n",
                    ks->name, ttc_kp_sig(&p), P);
    ttc_sbuf_printf(src,
        "    int m = lin / N, j = lin - m * N;\n"
        "    __global const %s *ap = a + a_off + m * a_s0;\n"
        "    __global const %s *bp = b + b_off + j * b_s1;\n"
        "    int acc = 0, kk = 0;\n", at, bt);
    /* a dense reduction: 4 products at a time (K's multiple of 4; the rest one by one) */
    ttc_sbuf_printf(src,
        "    if (a_s1 == 1 && b_s0 == 1) {\n"
        "        for (; kk + 4 <= K; kk += 4) {\n"
        "            int4 av = convert_int4(vload4(0, ap + kk)) - (int4)(%d);\n"
        "            int4 bv = convert_int4(vload4(0, bp + kk));\n"
        "            acc += av.x * bv.x + av.y * bv.y + av.z * bv.z + av.w * bv.w;\n"
        "        }\n"
        "    }\n"
        "    for (; kk < K; kk++) acc += ((int)ap[kk * a_s1] - %d) * (int)bp[kk * b_s0];\n",
        (int)op->p.qgemm.a_zp, (int)op->p.qgemm.a_zp);
    ttc_codegen_write_out(g, "acc", "lin");
    ttc_sbuf_printf(src, "}\n");
fail:
    ttc_kp_free(&p);
    return s;
}

/* The integer convolution's parameters (both forms): n outputs, OC, OH, OW, H, W, ICG, KH, KW,
 * then x and w with their offsets and strides. */
static ttc_status qconv_params(ttc_kparams *p, const ttc_kir *k, ttc_kspec *ks, const ttc_kop *op) {
    ttc_kp_init(p, k, ks, false);
    ttc_kp_int(p, TTC_ARG_PROD, op->out, 0, 4, 0, "n");
    ttc_kp_int(p, TTC_ARG_DIM, op->out, 1, 0, 0, "OC");
    ttc_kp_int(p, TTC_ARG_DIM, op->out, 2, 0, 0, "OH");
    ttc_kp_int(p, TTC_ARG_DIM, op->out, 3, 0, 0, "OW");
    ttc_kp_int(p, TTC_ARG_DIM, op->in[0], 2, 0, 0, "H");
    ttc_kp_int(p, TTC_ARG_DIM, op->in[0], 3, 0, 0, "W");
    ttc_kp_int(p, TTC_ARG_DIM, op->in[1], 1, 0, 0, "ICG");
    ttc_kp_int(p, TTC_ARG_DIM, op->in[1], 2, 0, 0, "KH");
    ttc_kp_int(p, TTC_ARG_DIM, op->in[1], 3, 0, 0, "KW");
    ttc_kp_tensor(p, op->in[0], "x", 0);
    ttc_kp_tensor(p, op->in[1], "w", 0);
    return ttc_kp_done(p);
}

/* QCONV2D: one group, q8_activation x, int8 weights of constant shape; grouped and depthwise
 * convolutions stay portable. */
static bool qconv_mma_wanted(const ttc_kir *k, const ttc_kop *op) {
    const ttc_et *x = &k->ts[op->in[0]], *w = &k->ts[op->in[1]], *out = &k->ts[op->out];
    if (!int8_mma_on(k) || op->p.qconv.groups != 1 || !q8_activation(x->dtype, op->p.qconv.a_zp) ||
        w->dtype != TTC_DTYPE_INT8 || out->dims[1].sym >= 0)
        return false;
    for (int32_t d = 0; d < 4; d++)
        if (w->dims[d].sym >= 0) return false;
    return w->dims[1].add * w->dims[2].add * w->dims[3].add > 0 && w->dims[0].add == out->dims[1].add;
}

static ttc_status gen_qconv2d_mma(const ttc_kgen *g);

/* The integer convolution (TTC_KOP_QCONV2D): one work-item per output element [N, OC, OH,
 * OW], the taps of its group accumulated in int; padding taps skipped (they would read the
 * zero point, adding 0). */
ttc_status ttc_gen_qconv2d(const ttc_kgen *g) {
    TTC_KGEN_LOCALS(g);
    const ttc_et *out = &k->ts[op->out];
    const ttc_et *x = op->in[0] >= 0 ? &k->ts[op->in[0]] : NULL;
    const ttc_et *w = op->in[1] >= 0 ? &k->ts[op->in[1]] : NULL;
    if (!x || !w || out->rank != 4 || x->rank != 4 || w->rank != 4)
        return ttc_fail(TTC_ERR_INTERNAL, "qconv2d %s: operands of rank %d, %d -> %d", op->name, x ? x->rank : -1,
                        w ? w->rank : -1, out->rank);
    if (qconv_mma_wanted(k, op)) return gen_qconv2d_mma(g);
    ttc_kparams p;
    ttc_status s = qconv_params(&p, k, ks, op);
    if (s != TTC_OK) goto fail;
    const int32_t *st = op->p.qconv.stride, *pd = op->p.qconv.pad, *dl = op->p.qconv.dil;
    ttc_sbuf_printf(src, "__kernel void %s(%s%s) {\n    int lin = get_global_id(0);\n    if (lin >= n) return;\n",
                    ks->name, ttc_kp_sig(&p), P);
    ttc_sbuf_printf(src,
        "    int ow = lin %% OW, t = lin / OW;\n"
        "    int oh = t %% OH; t /= OH;\n"
        "    int oc = t %% OC, b = t / OC;\n"
        "    int c0 = (oc / (OC / %d)) * ICG;\n"
        "    int acc = 0;\n"
        "    for (int ic = 0; ic < ICG; ic++) {\n"
        "        __global const %s *xp = x + x_off + b * x_s0 + (c0 + ic) * x_s1;\n"
        "        __global const %s *wp = w + w_off + oc * w_s0 + ic * w_s1;\n"
        "        for (int kh = 0; kh < KH; kh++) {\n"
        "            int ih = oh * %d - %d + kh * %d;\n"
        "            if (ih < 0 || ih >= H) continue;\n"
        "            for (int kw = 0; kw < KW; kw++) {\n"
        "                int iw = ow * %d - %d + kw * %d;\n"
        "                if (iw < 0 || iw >= W) continue;\n"
        "                acc += ((int)xp[ih * x_s2 + iw * x_s3] - %d) * (int)wp[kh * w_s2 + kw * w_s3];\n"
        "            }\n"
        "        }\n"
        "    }\n",
        (int)op->p.qconv.groups, ttc_cl_storage_type(x->dtype), ttc_cl_storage_type(w->dtype),
        (int)st[0], (int)pd[0], (int)dl[0], (int)st[1], (int)pd[1], (int)dl[1], (int)op->p.qconv.a_zp);
    ttc_codegen_write_out(g, "acc", "lin");
    ttc_sbuf_printf(src, "}\n");
fail:
    ttc_kp_free(&p);
    return s;
}

/* The int8 tensor-core tile of both integer kernels (mma.sync m16n8k32 s8, ptx.cl ttc_mma_s8;
 * elsewhere the prelude's emulation): out = A [M, K] x B [K, NC] in int32, a work-group of 4 warps
 * computing a 64 x 64 tile, each warp 32 x 32 (2 x 4 mma tiles), over 64-byte slices of K staged
 * in local memory: A's rows and B's columns (k-contiguous, as the .row / .col operands read them)
 * 80 bytes apart, so that a fragment read (rows g, words t) hits 32 distinct banks. Work-item tid
 * loads the 16-byte chunks c = tid + 128 j (j = 0, 1: row or column c / 4, bytes (c % 4) * 16 on)
 * of both slices through the caller's loaders, which see gm / gn (in range), kk (the chunk's first
 * k; bytes past K must multiply to 0: zero-filled on at least one side) and j, and set va / vb.
 * The kernel's epilogue sees the exact int32 sum as the portable kernels' do.
 *   a_u8: A's bytes are uint8, turned into int8 as loaded (x - 128: the top bit flipped);
 *   zp: A's zero point (sum of (a - zp) * b wanted): the loaders read raw values (padding as zp),
 *       and with ez = zp - (a_u8 ? 128 : 0) the kernel takes ez * (B's column sum, summed from
 *       the bytes it loads) off each sum: exact in int32 wrap-around, as the sums themselves. */
typedef struct mma_s8_src {
    const char *setup;    /* defines int M, NC, K (and the loaders' state) */
    const char *load_a;   /* sets uint4 va */
    const char *load_b;   /* sets uint4 vb */
    const char *lin;      /* the output element of (row, col) */
    bool a_u8;
    int32_t zp;
} mma_s8_src;

static ttc_status emit_mma_s8(const ttc_kgen *g, const ttc_kparams *p, const mma_s8_src *m) {
    TTC_KGEN_LOCALS(g);
    TTC_TRY(ttc_codegen_ptx_prelude(src, k));
    int32_t ez = m->zp - (m->a_u8 ? 128 : 0);
    ttc_sbuf_printf(src, "#define QG_UNROLL %s\n", g->gpu ? "_Pragma(\"unroll\")" : "");
    if (ez)
        ttc_sbuf_printf(src,
            "#ifndef TTC_QG_BSUM\n#define TTC_QG_BSUM\n"
            "TTC_INL int ttc_qg_bsum(uint4 v) {   /* the sum of 16 int8 */\n"
            "    uint w[4] = {v.x, v.y, v.z, v.w};\n"
            "    int s = 0;\n"
            "    for (int i = 0; i < 4; i++)\n"
            "        s += (int)(char)w[i] + (int)(char)(w[i] >> 8) + (int)(char)(w[i] >> 16) + (int)(char)(w[i] >> 24);\n"
            "    return s;\n"
            "}\n#endif\n");
    ttc_sbuf_printf(src,
        "__kernel __attribute__((reqd_work_group_size(128, 1, 1)))\n"
        "void %s(%s%s) {\n"
        "    __local uint4 As4[64 * 5], Bs4[64 * 5];   /* 64 rows of 64 bytes + 16 of padding */\n"
        "    __local uint *As = (__local uint *)As4, *Bs = (__local uint *)Bs4;\n"
        "%s"
        "    TTC_PTX_SCRATCH(scr, 4);\n"
        "    int tid = get_local_id(0), lane = tid & 31, warp = tid >> 5;\n"
        "    int wm = warp >> 1, wn = warp & 1, g = lane >> 2, t = lane & 3;\n"
        "    int m0 = get_group_id(1) * 64, n0 = get_group_id(0) * 64;\n"
        "%s"
        "    int acc[32]%s;\n"
        "    QG_UNROLL for (int i = 0; i < 32; i++) acc[i] = 0;\n"
        "    for (int k0 = 0; k0 < K; k0 += 64) {\n"
        "        QG_UNROLL for (int j = 0; j < 2; j++) {\n"
        "            int c = tid + j * 128, r = c >> 2, kk = k0 + (c & 3) * 16;\n"
        "            uint4 va = (uint4)(0u), vb = (uint4)(0u);\n"
        "            int gm = m0 + r, gn = n0 + r;\n"
        "            if (gm < M) {\n%s%s"
        "            }\n"
        "            if (gn < NC) {\n%s%s"
        "            }\n"
        "            As4[r * 5 + (c & 3)] = va;\n"
        "            Bs4[r * 5 + (c & 3)] = vb;\n"
        "        }\n"
        "        barrier(CLK_LOCAL_MEM_FENCE);\n"
        "        QG_UNROLL for (int ks = 0; ks < 16; ks += 8) {   /* words: two k-steps of 32 bytes */\n"
        "            uint af[8], bf[8];\n"
        "            QG_UNROLL for (int mi = 0; mi < 2; mi++) {\n"
        "                int r = wm * 32 + mi * 16 + g;\n"
        "                af[mi * 4] = As[r * 20 + ks + t];\n"
        "                af[mi * 4 + 1] = As[(r + 8) * 20 + ks + t];\n"
        "                af[mi * 4 + 2] = As[r * 20 + ks + 4 + t];\n"
        "                af[mi * 4 + 3] = As[(r + 8) * 20 + ks + 4 + t];\n"
        "            }\n"
        "            QG_UNROLL for (int ni = 0; ni < 4; ni++) {\n"
        "                int c = wn * 32 + ni * 8 + g;\n"
        "                bf[ni * 2] = Bs[c * 20 + ks + t];\n"
        "                bf[ni * 2 + 1] = Bs[c * 20 + ks + 4 + t];\n"
        "            }\n"
        "            QG_UNROLL for (int mi = 0; mi < 2; mi++)\n"
        "                QG_UNROLL for (int ni = 0; ni < 4; ni++) ttc_mma_s8(acc + (mi * 4 + ni) * 4, af + mi * 4, bf + ni * 2, scr);\n"
        "        }\n"
        "        barrier(CLK_LOCAL_MEM_FENCE);\n"
        "    }\n",
        ks->name, ttc_kp_sig(p), P, ez ? "    __local int Bsum[256];   /* B's column sums by chunk */\n" : "", m->setup, ez ? ", bsum[2] = {0, 0}" : "",
        m->load_a, m->a_u8 ? "                va ^= (uint4)(0x80808080u);\n" : "",
        m->load_b, ez ? "                bsum[j] += ttc_qg_bsum(vb);\n" : "");
    if (ez)   /* column r's sum: the four chunks' sums at Bsum[4 r .. 4 r + 3] */
        ttc_sbuf_printf(src,
            "    Bsum[tid] = bsum[0];\n"
            "    Bsum[tid + 128] = bsum[1];\n"
            "    barrier(CLK_LOCAL_MEM_FENCE);\n");
    ttc_sbuf_printf(src,
        "    QG_UNROLL for (int f = 0; f < 32; f++) {\n"
        "        int mi = f >> 4, ni = (f >> 2) & 3, e = f & 3;\n"
        "        int lc = wn * 32 + ni * 8 + 2 * t + (e & 1);\n"
        "        int row = m0 + wm * 32 + mi * 16 + g + (e >> 1) * 8, col = n0 + lc;\n"
        "        if (row < M && col < NC) {\n"
        "            int v = acc[f]");
    if (ez)
        ttc_sbuf_printf(src, " - (%d) * (Bsum[lc * 4] + Bsum[lc * 4 + 1] + Bsum[lc * 4 + 2] + Bsum[lc * 4 + 3])", (int)ez);
    ttc_sbuf_printf(src, ", lin = %s;\n", m->lin);
    ttc_codegen_write_out(g, "v", "lin");
    ttc_sbuf_printf(src, "        }\n    }\n}\n#undef QG_UNROLL\n");
    /* dim 0: ceil(NC / 64) work-groups of 128 (the caller's), dim 1: ceil(M / 64) */
    ks->use_local = true;
    return TTC_OK;
}

/* The integer GEMM on int8 tensor cores (emit_mma_s8; A's zero point as there): a slice row is loaded as one 16-byte
 * vector per chunk where the operand is k-contiguous, its rows 16-byte aligned and the chunk
 * whole, else byte by byte with zero fill (any M, N, K and strides). On the H100 (2026-12-07,
 * bench/int_mm.py) exact and 20-450x the portable kernel at BERT-base's shapes. */
static ttc_status gen_qgemm_mma(const ttc_kgen *g) {
    TTC_KGEN_LOCALS(g);
    ttc_kparams p;
    ttc_status s = qgemm_params(&p, k, ks, op);
    if (s != TTC_OK) {
        ttc_kp_free(&p);
        return s;
    }
    mma_s8_src m = {
        .setup =
            "    int NC = N, M = N > 0 ? n / N : 0;\n"
            "    __global const char *ap = (__global const char *)(a + a_off), *bp = b + b_off;\n"
            "    bool avec = a_s1 == 1 && (a_s0 & 15) == 0 && ((size_t)ap & 15) == 0;\n"
            "    bool bvec = b_s0 == 1 && (b_s1 & 15) == 0 && ((size_t)bp & 15) == 0;\n",
        .load_a =
            "                if (avec && kk + 16 <= K) va = *(__global const uint4 *)(ap + gm * a_s0 + kk);\n"
            "                else {\n"
            "                    uint w[4] = {0u, 0u, 0u, 0u};\n"
            "                    for (int e = 0; e < 16; e++)\n"
            "                        if (kk + e < K) w[e >> 2] |= (uint)(uchar)ap[gm * a_s0 + (kk + e) * a_s1] << (8 * (e & 3));\n"
            "                    va = (uint4)(w[0], w[1], w[2], w[3]);\n"
            "                }\n",
        .load_b =
            "                if (bvec && kk + 16 <= K) vb = *(__global const uint4 *)(bp + gn * b_s1 + kk);\n"
            "                else {\n"
            "                    uint w[4] = {0u, 0u, 0u, 0u};\n"
            "                    for (int e = 0; e < 16; e++)\n"
            "                        if (kk + e < K) w[e >> 2] |= (uint)(uchar)bp[gn * b_s1 + (kk + e) * b_s0] << (8 * (e & 3));\n"
            "                    vb = (uint4)(w[0], w[1], w[2], w[3]);\n"
            "                }\n",
        .lin = "row * N + col",
        .a_u8 = k->ts[op->in[0]].dtype == TTC_DTYPE_UINT8,
        .zp = op->p.qgemm.a_zp,
    };
    s = emit_mma_s8(g, &p, &m);
    ttc_kp_free(&p);
    TTC_TRY(s);
    /* dim 0: ceil(N / 64) work-groups of 128; dim 1: ceil(M / 64) */
    ttc_codegen_gdim(ks, 0, op->out, 1, 2, 64, 128);
    ks->g[0].mul = 128;
    ttc_codegen_gdim(ks, 1, op->out, 0, 1, 64, 1);
    return TTC_OK;
}

/* The integer convolution on int8 tensor cores (emit_mma_s8) as an implicit GEMM: rows M = N * OH
 * * OW output pixels, columns OC, K = ICG * KH * KW taps; A gathered from x as the taps of each
 * pixel (padding taps read as the zero point), B the weights. Where ICG is a multiple of 16, K
 * runs (kh, kw, ic), so that a 16-byte chunk is 16 channels of one tap (one bounds check, one
 * address; 1x1 weights k-contiguous and aligned load as vectors); else (ic, kh, kw), the weights'
 * own order, decomposed per byte. Output element lin of (pixel, oc) as NCHW. */
static ttc_status gen_qconv2d_mma(const ttc_kgen *g) {
    TTC_KGEN_LOCALS(g);
    const ttc_et *x = &k->ts[op->in[0]], *w = &k->ts[op->in[1]];
    bool u8 = x->dtype == TTC_DTYPE_UINT8;
    int64_t ICG = w->dims[1].add, KH = w->dims[2].add, KW = w->dims[3].add, KT = ICG * KH * KW, OC = w->dims[0].add;
    const int32_t *st = op->p.qconv.stride, *pd = op->p.qconv.pad, *dl = op->p.qconv.dil;
    int32_t zp = op->p.qconv.a_zp;
    const char *xt = ttc_cl_storage_type(x->dtype);
    bool tapc = ICG % 16 == 0, wvec = tapc && KH == 1 && KW == 1;
    char *setup = ttc_strfmt(
        "    int OHW = OH * OW, OHW1 = max(OHW, 1), M = n / %lld, NC = %lld, K = %lld;\n"
        "    int xb[2], ih0[2], iw0[2];   /* the pixels of this work-item's two A chunks */\n"
        "    QG_UNROLL for (int j = 0; j < 2; j++) {\n"
        "        int gm = m0 + (tid >> 2) + 32 * j, im = gm / OHW1, pq = gm - im * OHW1, oh = pq / OW, ow = pq - oh * OW;\n"
        "        xb[j] = x_off + im * x_s0;\n"
        "        ih0[j] = oh * %d - %d;\n"
        "        iw0[j] = ow * %d - %d;\n"
        "    }\n"
        "    bool wvec = %s;\n",
        (long long)OC, (long long)OC, (long long)KT, (int)st[0], (int)pd[0], (int)st[1], (int)pd[1],
        wvec ? "w_s1 == 1 && (w_s0 & 15) == 0 && ((size_t)(w + w_off) & 15) == 0" : "false");
    char *la, *lb;
    if (tapc) {
        la = ttc_strfmt(
            "                if (kk < K) {\n"
            "                    int tap = kk / %lld, ic = kk - tap * %lld, kh = tap / %lld, kw = tap - kh * %lld;\n"
            "                    int ih = ih0[j] + kh * %d, iw = iw0[j] + kw * %d;\n"
            "                    if (ih >= 0 && ih < H && iw >= 0 && iw < W) {\n"
            "                        __global const %s *xp = x + xb[j] + ic * x_s1 + ih * x_s2 + iw * x_s3;\n"
            "                        uint u[4] = {0u, 0u, 0u, 0u};\n"
            "                        QG_UNROLL for (int e = 0; e < 16; e++) u[e >> 2] |= (uint)(uchar)xp[e * x_s1] << (8 * (e & 3));\n"
            "                        va = (uint4)(u[0], u[1], u[2], u[3]);\n"
            "                    } else va = (uint4)(%uu);\n"
            "                }\n",
            (long long)ICG, (long long)ICG, (long long)KW, (long long)KW, (int)dl[0], (int)dl[1], xt,
            (unsigned)(zp & 0xff) * 0x01010101u);
        lb = ttc_strfmt(
            "                if (kk < K) {\n"
            "                    int tap = kk / %lld, ic = kk - tap * %lld, kh = tap / %lld, kw = tap - kh * %lld;\n"
            "                    __global const char *wp = w + w_off + gn * w_s0 + ic * w_s1 + kh * w_s2 + kw * w_s3;\n"
            "                    if (wvec) vb = *(__global const uint4 *)wp;\n"
            "                    else {\n"
            "                        uint u[4] = {0u, 0u, 0u, 0u};\n"
            "                        QG_UNROLL for (int e = 0; e < 16; e++) u[e >> 2] |= (uint)(uchar)wp[e * w_s1] << (8 * (e & 3));\n"
            "                        vb = (uint4)(u[0], u[1], u[2], u[3]);\n"
            "                    }\n"
            "                }\n",
            (long long)ICG, (long long)ICG, (long long)KW, (long long)KW);
    } else {
        la = ttc_strfmt(
            "                uint u[4] = {0u, 0u, 0u, 0u};\n"
            "                for (int e = 0; e < 16; e++) {\n"
            "                    int kx = kk + e, ic = kx / %lld, tap = kx - ic * %lld, kh = tap / %lld, kw = tap - kh * %lld;\n"
            "                    int ih = ih0[j] + kh * %d, iw = iw0[j] + kw * %d;\n"
            "                    uint bv = ih >= 0 && ih < H && iw >= 0 && iw < W ? (uint)(uchar)x[xb[j] + ic * x_s1 + ih * x_s2 + iw * x_s3] : %uu;\n"
            "                    if (kx < K) u[e >> 2] |= bv << (8 * (e & 3));\n"
            "                }\n"
            "                va = (uint4)(u[0], u[1], u[2], u[3]);\n",
            (long long)(KH * KW), (long long)(KH * KW), (long long)KW, (long long)KW, (int)dl[0], (int)dl[1],
            (unsigned)(zp & 0xff));
        lb = ttc_strfmt(
            "                uint u[4] = {0u, 0u, 0u, 0u};\n"
            "                for (int e = 0; e < 16; e++) {\n"
            "                    int kx = kk + e, ic = kx / %lld, tap = kx - ic * %lld, kh = tap / %lld, kw = tap - kh * %lld;\n"
            "                    if (kx < K) u[e >> 2] |= (uint)(uchar)w[w_off + gn * w_s0 + ic * w_s1 + kh * w_s2 + kw * w_s3] << (8 * (e & 3));\n"
            "                }\n"
            "                vb = (uint4)(u[0], u[1], u[2], u[3]);\n",
            (long long)(KH * KW), (long long)(KH * KW), (long long)KW, (long long)KW);
    }
    ttc_status s = TTC_ERR_NOMEM;
    if (setup && la && lb) {
        ttc_kparams p;
        s = qconv_params(&p, k, ks, op);
        mma_s8_src m = {.setup = setup, .load_a = la, .load_b = lb, .lin = "((row / OHW1) * NC + col) * OHW + row % OHW1",
                        .a_u8 = u8, .zp = zp};
        if (s == TTC_OK) s = emit_mma_s8(g, &p, &m);
        ttc_kp_free(&p);
    }
    free(setup);
    free(la);
    free(lb);
    TTC_TRY(s);
    /* dim 0: ceil(OC / 64) work-groups of 128; dim 1: ceil(N * OH * OW / 64) (n / (OC * 64)) */
    ttc_codegen_gdim(ks, 0, op->out, 0, 0, 1, 128);
    ks->g[0].mul = (int32_t)((OC + 63) / 64 * 128);
    ttc_codegen_gdim(ks, 1, op->out, 0, 4, (int32_t)(OC * 64), 1);
    return TTC_OK;
}
