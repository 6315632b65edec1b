/* Weight-only quantized linear kernels (TTC_KOP_WQ_LINEAR, kir.h): the weights stay int8 or
 * packed int4 in memory and are dequantized in registers.
 *
 * - portable (every device): one work-item per output element [m, n], a loop over the K/group
 *   groups: acc += s[n, g] * (sum_j q * x - z[n, g] * sum_j x).
 * - gemv (the GPU kernel families, op->p.wq.gemv; decode shapes M <= 8): a work-group of
 *   WQ_WARPS warps of 32 work-items, each warp one weight row n (an output column) for up to
 *   WQ_MB rows of x at once (grid dim 1 walks x's rows in chunks of WQ_MB, so any M is right).
 *   Each work-item reads 16 bytes of the row at a time (16 int8 or 32 int4 weights, a uint4),
 *   the warp's 32 work-items 512 consecutive bytes, so the packed weights stream at memory
 *   bandwidth; partial sums are float (fp16 activations are converted as loaded) and the 32
 *   lanes are added through local memory at the end. Rows whose bytes are not a multiple of 16
 *   (or groups smaller than a 16-byte chunk, or an unaligned buffer) take a scalar loop, same
 *   sums.
 */
#include "codegen_impl.h"

enum { WQ_WARPS = 4, WQ_MB = 8 };

static void params(ttc_kparams *p, const ttc_kir *k, ttc_kspec *ks, const ttc_kop *op) {
    int32_t R = k->ts[op->out].rank;
    ttc_kp_init(p, k, ks, false);
    ttc_kp_int(p, TTC_ARG_PROD, op->out, 0, R - 1, 0, "M");
    ttc_kp_buffer(p, op->in[0], "x", NULL);
    ttc_kp_buffer(p, op->in[1], "q", NULL);
    ttc_kp_buffer(p, op->in[2], "sc", NULL);
    if (op->in[3] >= 0) ttc_kp_buffer(p, op->in[3], "zp", NULL);
}

static void loaders(ttc_sbuf *src, const ttc_kgen *g) {
    const ttc_kir *k = g->k;
    const ttc_kop *op = g->op;
    ttc_codegen_loader(src, g->sp, "WQ_LX", k->ts[op->in[0]].dtype, false);
    ttc_codegen_loader(src, g->sp, "WQ_LS", k->ts[op->in[2]].dtype, false);
    if (op->in[3] >= 0) ttc_codegen_loader(src, g->sp, "WQ_LZ", k->ts[op->in[3]].dtype, false);
    else ttc_sbuf_printf(src, "#define WQ_LZ(p,i) 0.0f\n");
}

static void unloaders(ttc_sbuf *src) { ttc_sbuf_printf(src, "#undef WQ_LX\n#undef WQ_LS\n#undef WQ_LZ\n"); }

/* "qv" = the weight at element index kk of the row starting at byte rb (as float). */
static void scalar_weight(ttc_sbuf *src, int32_t bits, const char *ind) {
    if (bits == 8) ttc_sbuf_printf(src, "%sfloat qv = (float)q[rb + kk];\n", ind);
    else ttc_sbuf_printf(src, "%suchar qb = q[rb + (kk >> 1)];\n%sfloat qv = (float)((kk & 1) ? (qb >> 4) : (qb & 15));\n",
                         ind, ind);
}

static ttc_status gen_portable(const ttc_kgen *g) {
    TTC_KGEN_LOCALS(g);
    int32_t N = op->p.wq.n, K = op->p.wq.k, GS = op->p.wq.group, G = K / GS, bits = op->p.wq.bits;
    int32_t RB = bits == 8 ? K : K / 2;
    ttc_kparams p;
    params(&p, k, ks, op);
    TTC_TRY(ttc_kp_done(&p));
    loaders(src, g);
    ttc_sbuf_printf(src,
                    "__kernel void %s(%s%s) {\n    int lin = get_global_id(0);\n    if (lin >= M * %d) return;\n"
                    "    int m = lin / %d, c = lin %% %d;\n    int xb = x_off + m * %d, rb = q_off + c * %d;\n"
                    "    float acc = 0.0f;\n    for (int g = 0; g < %d; g++) {\n"
                    "        float a = 0.0f, xs = 0.0f;\n        for (int j = 0; j < %d; j++) {\n"
                    "            int kk = g * %d + j;\n            float xv = WQ_LX(x, xb + kk);\n",
                    ks->name, ttc_kp_sig(&p), P, N, N, N, K, RB, G, GS, GS);
    ttc_kp_free(&p);
    scalar_weight(src, bits, "            ");
    ttc_sbuf_printf(src,
                    "            a += qv * xv;\n            xs += xv;\n        }\n"
                    "        acc += WQ_LS(sc, sc_off + c * %d + g) * (a - WQ_LZ(zp, zp_off + c * %d + g) * xs);\n    }\n",
                    G, G);
    ttc_codegen_write_out(g, "acc", "lin");
    ttc_sbuf_printf(src, "}\n");
    unloaders(src);
    ttc_codegen_gdim(ks, 0, op->out, 0, k->ts[op->out].rank, 1, 0);
    return TTC_OK;
}

static ttc_status gen_gemv(const ttc_kgen *g) {
    TTC_KGEN_LOCALS(g);
    int32_t N = op->p.wq.n, K = op->p.wq.k, GS = op->p.wq.group, G = K / GS, bits = op->p.wq.bits;
    int32_t RB = bits == 8 ? K : K / 2, EPC = bits == 8 ? 16 : 32;   /* weights per 16-byte chunk */
    bool wide = RB % 16 == 0 && GS % EPC == 0;
    ttc_kparams p;
    params(&p, k, ks, op);
    TTC_TRY(ttc_kp_done(&p));
    loaders(src, g);
    ttc_sbuf_printf(src,
                    "__kernel __attribute__((reqd_work_group_size(%d, 1, 1)))\nvoid %s(%s%s) {\n"
                    "    __local float red[%d * %d * 32];\n"
                    "    int lane = get_local_id(0) & 31, w = get_local_id(0) >> 5;\n"
                    "    int c = get_group_id(0) * %d + w, m0 = get_group_id(1) * %d;\n"
                    "    int mb = min(M - m0, %d);\n    float acc[%d];\n"
                    "    for (int i = 0; i < %d; i++) acc[i] = 0.0f;\n"
                    "    if (c < %d) {\n        int rb = q_off + c * %d, xb = x_off + m0 * %d;\n",
                    WQ_WARPS * 32, ks->name, ttc_kp_sig(&p), P, WQ_WARPS, WQ_MB, WQ_WARPS, WQ_MB, WQ_MB, WQ_MB, WQ_MB,
                    N, RB, K);
    ttc_kp_free(&p);
    if (wide) {
        /* chunk ch holds weights [ch * EPC, ch * EPC + EPC), all of group ch * EPC / GS */
        ttc_sbuf_printf(src,
                        "        if ((q_off & 15) == 0) {\n"
                        "            __global const uint4 *qr = (__global const uint4 *)(q + rb);\n"
                        "            for (int ch = lane; ch < %d; ch += 32) {\n"
                        "                uint4 u = qr[ch];\n                float wv[%d];\n"
                        "                uint uu[4] = {u.x, u.y, u.z, u.w};\n"
                        "                for (int e = 0; e < 4; e++)\n",
                        RB / 16, EPC);
        if (bits == 8)
            ttc_sbuf_printf(src, "                    for (int b = 0; b < 4; b++) wv[e * 4 + b] = (float)(char)(uu[e] >> (8 * b));\n");
        else
            ttc_sbuf_printf(src, "                    for (int b = 0; b < 8; b++) wv[e * 8 + b] = (float)((uu[e] >> (4 * b)) & 15u);\n");
        ttc_sbuf_printf(src,
                        "                int k0 = ch * %d, gi = k0 / %d;\n"
                        "                float s = WQ_LS(sc, sc_off + c * %d + gi), z = WQ_LZ(zp, zp_off + c * %d + gi);\n"
                        "                for (int i = 0; i < %d; i++) {\n                    if (i >= mb) break;\n"
                        "                    float a = 0.0f, xs = 0.0f;\n"
                        "                    for (int e = 0; e < %d; e++) {\n"
                        "                        float xv = WQ_LX(x, xb + i * %d + k0 + e);\n"
                        "                        a += wv[e] * xv;\n                        xs += xv;\n                    }\n"
                        "                    acc[i] += s * (a - z * xs);\n                }\n            }\n"
                        "        } else {\n",
                        EPC, GS, G, G, WQ_MB, EPC, K);
    } else {
        ttc_sbuf_printf(src, "        {\n");
    }
    /* scalar: lane takes elements lane, lane + 32, ... (each its own group's scale) */
    ttc_sbuf_printf(src, "            for (int kk = lane; kk < %d; kk += 32) {\n", K);
    scalar_weight(src, bits, "                ");
    ttc_sbuf_printf(src,
                    "                int gi = kk / %d;\n"
                    "                float s = WQ_LS(sc, sc_off + c * %d + gi), z = WQ_LZ(zp, zp_off + c * %d + gi);\n"
                    "                float wd = (qv - z) * s;\n"
                    "                for (int i = 0; i < %d; i++) {\n                    if (i >= mb) break;\n"
                    "                    acc[i] += wd * WQ_LX(x, xb + i * %d + kk);\n                }\n"
                    "            }\n        }\n    }\n",
                    GS, G, G, WQ_MB, K);
    ttc_sbuf_printf(src,
                    "    for (int i = 0; i < %d; i++) red[(w * %d + i) * 32 + lane] = acc[i];\n"
                    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
                    "    int t = get_local_id(0);\n"
                    "    if (t < %d * %d) {\n        int ww = t / %d, i = t %% %d, cc = get_group_id(0) * %d + ww;\n"
                    "        if (cc < %d && i < mb) {\n            float v = 0.0f;\n"
                    "            for (int l = 0; l < 32; l++) v += red[(ww * %d + i) * 32 + l];\n"
                    "            int lin = (m0 + i) * %d + cc;\n",
                    WQ_MB, WQ_MB, WQ_WARPS, WQ_MB, WQ_MB, WQ_MB, WQ_WARPS, N, WQ_MB, N);
    ttc_codegen_write_out(g, "v", "lin");
    ttc_sbuf_printf(src, "        }\n    }\n}\n");
    unloaders(src);
    /* dim 0: ceil(N / WQ_WARPS) work-groups of WQ_WARPS * 32; dim 1: ceil(M / WQ_MB) */
    ttc_codegen_gdim(ks, 0, op->in[1], 0, 1, WQ_WARPS, WQ_WARPS * 32);
    ks->g[0].mul = WQ_WARPS * 32;
    ttc_codegen_gdim(ks, 1, op->out, 0, k->ts[op->out].rank - 1, WQ_MB, 1);
    ks->use_local = true;
    return TTC_OK;
}

ttc_status ttc_gen_wq_linear(const ttc_kgen *g) {
    const ttc_kop *op = g->op;
    int32_t K = op->p.wq.k, GS = op->p.wq.group;
    if (GS < 1 || K % GS != 0 || (op->p.wq.bits != 8 && op->p.wq.bits != 4) || op->p.wq.n < 1)
        return ttc_fail(TTC_ERR_INTERNAL, "wq_linear %s: K %d, group %d, bits %d", op->name, K, GS, op->p.wq.bits);
    return op->p.wq.gemv ? gen_gemv(g) : gen_portable(g);
}
