/* The integer GEMM kernel (TTC_KOP_QGEMM): out[m, n] = sum_k (A[m, k] - a_zp) * B[k, n] with
 * A int8/uint8 [M, K] and B int8 [K, N] at any strides (a transposed weight is a permuted
 * view), accumulated exactly in int (aten._int_mm's int32 result; int8 x int8 products add up
 * to 2^31 only past K = 131072).
 *
 * One work-item per output element, the portable form every OpenCL device runs: the GPU
 * kernel families (TORCHTRT_C_KERNELS=gpu) take it as well, 4 products per step through
 * OpenCL's integer dot product where the reduction is dense (both operands with unit stride
 * along K), else one at a time. An epilogue (the dynamic-quantization scales, a bias) reads
 * the accumulator as float, converted once as torch converts the int32 result. */
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

/* Whether QGEMM op runs on int8 tensor cores (gen_qgemm_mma): int8 x int8 with no zero point
 * (aten._int_mm: torchao's dynamic int8 activations are symmetric), on NVIDIA sm_80+ unless
 * TORCHTRT_C_QGEMM_MMA says otherwise (=1: any device, the PTX prelude's emulation). On the H100
 * (2026-12-07, bench/int_mm.py) exact and 20-450x the portable kernel at BERT-base's shapes. */
static bool qgemm_mma_wanted(const ttc_kir *k, const ttc_kop *op) {
    const ttc_target *tg = ttc_kir_target(k);
    bool on = tg->qgemm_mma == 1 || (tg->qgemm_mma == -1 && tg->nvidia && tg->nv_sm >= 80);
    return on && op->p.qgemm.a_zp == 0 && k->ts[op->in[0]].dtype == TTC_DTYPE_INT8 &&
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
    ttc_kparams p;
    ttc_kp_init(&p, k, ks, false);
    ttc_kp_int(&p, TTC_ARG_PROD, op->out, 0, 4, 0, "n");
    ttc_kp_int(&p, TTC_ARG_DIM, op->out, 1, 0, 0, "OC");
    ttc_kp_int(&p, TTC_ARG_DIM, op->out, 2, 0, 0, "OH");
    ttc_kp_int(&p, TTC_ARG_DIM, op->out, 3, 0, 0, "OW");
    ttc_kp_int(&p, TTC_ARG_DIM, op->in[0], 2, 0, 0, "H");
    ttc_kp_int(&p, TTC_ARG_DIM, op->in[0], 3, 0, 0, "W");
    ttc_kp_int(&p, TTC_ARG_DIM, op->in[1], 1, 0, 0, "ICG");
    ttc_kp_int(&p, TTC_ARG_DIM, op->in[1], 2, 0, 0, "KH");
    ttc_kp_int(&p, TTC_ARG_DIM, op->in[1], 3, 0, 0, "KW");
    ttc_kp_tensor(&p, op->in[0], "x", 0);
    ttc_kp_tensor(&p, op->in[1], "w", 0);
    ttc_status s = ttc_kp_done(&p);
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

/* The integer GEMM on int8 tensor cores (mma.sync m16n8k32 s8, ptx.cl ttc_mma_s8; elsewhere the
 * prelude's emulation): a work-group of 4 warps computes a 64 x 64 tile of out, each warp 32 x 32
 * (2 x 4 mma tiles), over 64-byte slices of K staged in local memory: A's rows and B's columns
 * (k-contiguous, as the .row / .col operands read them) 80 bytes apart, so that a fragment
 * read (rows g, words t) hits 32 distinct banks. A slice row is loaded as one 16-byte vector
 * per chunk where the operand is k-contiguous, its rows 16-byte aligned and the chunk whole,
 * else byte by byte with zero fill (any M, N, K and strides). int32 sums are exact, as the
 * portable kernel's; the epilogue reads them as the portable kernel's does. */
static ttc_status gen_qgemm_mma(const ttc_kgen *g) {
    TTC_KGEN_LOCALS(g);
    ttc_kparams p;
    ttc_status s = qgemm_params(&p, k, ks, op);
    if (s == TTC_OK) s = ttc_codegen_ptx_prelude(src, k);
    if (s != TTC_OK) {
        ttc_kp_free(&p);
        return s;
    }
    ttc_sbuf_printf(src, "#define QG_UNROLL %s\n", g->gpu ? "_Pragma(\"unroll\")" : "");
    ttc_sbuf_printf(src,
        "__kernel __attribute__((reqd_work_group_size(128, 1, 1)))\n"
        "void %s(%s%s) {\n"
        "    __local uint4 As4[64 * 5], Bs4[64 * 5];   /* 64 rows of 64 bytes + 16 of padding */\n"
        "    __local uint *As = (__local uint *)As4, *Bs = (__local uint *)Bs4;\n"
        "    TTC_PTX_SCRATCH(scr, 4);\n"
        "    int tid = get_local_id(0), lane = tid & 31, warp = tid >> 5;\n"
        "    int wm = warp >> 1, wn = warp & 1, g = lane >> 2, t = lane & 3;\n"
        "    int M = N > 0 ? n / N : 0, m0 = get_group_id(1) * 64, n0 = get_group_id(0) * 64;\n"
        "    __global const char *ap = a + a_off, *bp = b + b_off;\n"
        "    bool avec = a_s1 == 1 && (a_s0 & 15) == 0 && ((size_t)ap & 15) == 0;\n"
        "    bool bvec = b_s0 == 1 && (b_s1 & 15) == 0 && ((size_t)bp & 15) == 0;\n"
        "    int acc[32];\n"
        "    QG_UNROLL for (int i = 0; i < 32; i++) acc[i] = 0;\n"
        "    for (int k0 = 0; k0 < K; k0 += 64) {\n"
        "        for (int c = tid; c < 256; c += 128) {\n"
        "            int r = c >> 2, q = c & 3, kk = k0 + q * 16;\n"
        "            uint4 va = (uint4)(0u), vb = (uint4)(0u);\n"
        "            int gm = m0 + r, gn = n0 + r;\n"
        "            if (gm < M) {\n"
        "                if (avec && kk + 16 <= K) va = *(__global const uint4 *)(ap + gm * a_s0 + kk);\n"
        "                else {\n"
        "                    uint w[4] = {0u, 0u, 0u, 0u};\n"
        "                    for (int e = 0; e < 16; e++)\n"
        "                        if (kk + e < K) w[e >> 2] |= (uint)(uchar)ap[gm * a_s0 + (kk + e) * a_s1] << (8 * (e & 3));\n"
        "                    va = (uint4)(w[0], w[1], w[2], w[3]);\n"
        "                }\n"
        "            }\n"
        "            if (gn < N) {\n"
        "                if (bvec && kk + 16 <= K) vb = *(__global const uint4 *)(bp + gn * b_s1 + kk);\n"
        "                else {\n"
        "                    uint w[4] = {0u, 0u, 0u, 0u};\n"
        "                    for (int e = 0; e < 16; e++)\n"
        "                        if (kk + e < K) w[e >> 2] |= (uint)(uchar)bp[gn * b_s1 + (kk + e) * b_s0] << (8 * (e & 3));\n"
        "                    vb = (uint4)(w[0], w[1], w[2], w[3]);\n"
        "                }\n"
        "            }\n"
        "            As4[r * 5 + q] = va;\n"
        "            Bs4[r * 5 + q] = vb;\n"
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
        "    }\n"
        "    QG_UNROLL for (int f = 0; f < 32; f++) {\n"
        "        int mi = f >> 4, ni = (f >> 2) & 3, e = f & 3;\n"
        "        int row = m0 + wm * 32 + mi * 16 + g + (e >> 1) * 8, col = n0 + wn * 32 + ni * 8 + 2 * t + (e & 1);\n"
        "        if (row < M && col < N) {\n"
        "            int v = acc[f], lin = row * N + col;\n",
        ks->name, ttc_kp_sig(&p), P);
    ttc_kp_free(&p);
    ttc_codegen_write_out(g, "v", "lin");
    ttc_sbuf_printf(src, "        }\n    }\n}\n#undef QG_UNROLL\n");
    /* dim 0: ceil(N / 64) work-groups of 128; dim 1: ceil(M / 64) */
    ttc_codegen_gdim(ks, 0, op->out, 1, 2, 64, 128);
    ks->g[0].mul = 128;
    ttc_codegen_gdim(ks, 1, op->out, 0, 1, 64, 1);
    ks->use_local = true;
    return TTC_OK;
}
