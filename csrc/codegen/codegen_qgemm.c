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

ttc_status ttc_gen_qgemm(const ttc_kgen *g) {
    TTC_KGEN_LOCALS(g);
    const ttc_et *out = &k->ts[op->out];
    const ttc_et *a = op->in[0] >= 0 ? &k->ts[op->in[0]] : NULL;
    const ttc_et *b = op->in[1] >= 0 ? &k->ts[op->in[1]] : NULL;
    if (!a || !b || out->rank != 2 || a->rank != 2 || b->rank != 2)
        return ttc_fail(TTC_ERR_INTERNAL, "qgemm %s: operands of rank %d, %d -> %d", op->name, a ? a->rank : -1,
                        b ? b->rank : -1, out->rank);
    ttc_kparams p;
    ttc_kp_init(&p, k, ks, false);
    ttc_kp_int(&p, TTC_ARG_PROD, op->out, 0, 2, 0, "n");
    ttc_kp_int(&p, TTC_ARG_DIM, op->out, 1, 0, 0, "N");
    ttc_kp_int(&p, TTC_ARG_DIM, op->in[0], 1, 0, 0, "K");
    ttc_kp_tensor(&p, op->in[0], "a", 0);
    ttc_kp_tensor(&p, op->in[1], "b", 0);
    ttc_status s = ttc_kp_done(&p);
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
