/* The KV-cache kernels (convert/conv_kv_cache.c emits them; kir.h, TTC_KOP_SLOT_WRITE and
 * TTC_KOP_KV_ATTENTION).
 *
 * slot_write: one work-item per element of the new keys (values) [B, H, S, D], stored into
 * the cache [B, H, L, D] (the op's output: an engine input, dense) at slot slots[s]; a slot
 * outside [0, L) sets the index-error flag and writes nothing.
 *
 * kv_attention: a work-group of KVA_WG work-items per query row (b, h, s). The row's slot p =
 * slots[s] bounds the keys it reads: j <= p (and j > p - window), so a decode step reads the
 * filled part of the cache only. Keys go in chunks of KVA_CH: the work-items score the chunk's
 * keys (a dot product each) into local memory, the chunk's maximum and the exponentials'
 * sum are reduced in local memory (an online softmax across chunks), and each work-item
 * accumulates its own value dims over the chunk. Scores, sums and the accumulators are float
 * whatever the storage. */
#include "codegen_impl.h"

#include <stdio.h>

#define KVA_WG 64
#define KVA_CH 256

/* "(float)(<ptr>[<idx>])" in the storage's reading. */
static void ld(ttc_sbuf *src, const ttc_kgen *g, int32_t t, const char *ptr, const char *idx) {
    ttc_sbuf_printf(src, "(float)(");
    ttc_codegen_load(src, g->k, g->sp, g->k->ts[t].dtype, ptr, idx);
    ttc_sbuf_printf(src, ")");
}

ttc_status ttc_gen_slot_write(const ttc_kgen *g) {
    TTC_KGEN_LOCALS(g);
    int32_t x = op->in[0], sl = op->in[1];
    if (k->ts[x].rank != 4 || k->ts[op->out].rank != 4 || k->ts[sl].rank != 1)
        return ttc_fail(TTC_ERR_INTERNAL, "slot_write %s: ranks %d, %d, %d", op->name, k->ts[x].rank,
                        k->ts[op->out].rank, k->ts[sl].rank);
    ttc_kparams p;
    ttc_kp_init(&p, k, ks, false);
    ttc_kp_int(&p, TTC_ARG_PROD, x, 0, 4, 0, "n");
    ttc_kp_int(&p, TTC_ARG_DIM, x, 1, 0, 0, "H");
    ttc_kp_int(&p, TTC_ARG_DIM, x, 2, 0, 0, "S");
    ttc_kp_int(&p, TTC_ARG_DIM, x, 3, 0, 0, "D");
    ttc_kp_int(&p, TTC_ARG_DIM, op->out, 2, 0, 0, "L");
    ttc_kp_tensor(&p, x, "x", 4);
    ttc_kp_tensor(&p, sl, "sl", 1);
    ttc_kp_errflag(&p, op->out);
    ttc_status s = ttc_kp_done(&p);
    if (s == TTC_OK) {
        int32_t code = (int32_t)(op - k->ops) + 1;
        ttc_sbuf_printf(src, "__kernel void %s(%s%s) {\n    int lin = get_global_id(0);\n    if (lin >= n) return;\n"
                             "    int d = lin %% D, r = lin / D;\n    int s = r %% S; r /= S;\n    int h = r %% H, b = r / H;\n"
                             "    long slot = (long)sl[sl_off + s * sl_s0];\n"
                             "    if (slot < 0 || slot >= (long)L) { atomic_cmpxchg(errf, 0, %d); return; }\n    float v = ",
                        ks->name, ttc_kp_sig(&p), P, code);
        ld(src, g, x, "x", "x_off + b * x_s0 + h * x_s1 + s * x_s2 + d * x_s3");
        ttc_sbuf_printf(src, ";\n");
        ttc_codegen_store(src, k, g->sp, k->ts[op->out].dtype, "v", "v", "((b * H + h) * L + (int)slot) * D + d", "    ");
        ttc_sbuf_printf(src, "}\n");
    }
    ttc_kp_free(&p);
    TTC_TRY(s);
    ttc_codegen_gdim(ks, 0, x, 0, 4, 1, 0);
    return TTC_OK;
}

ttc_status ttc_gen_kv_attention(const ttc_kgen *g) {
    TTC_KGEN_LOCALS(g);
    int32_t q = op->in[0], kc = op->in[1], vc = op->in[2], sl = op->in[3], km = op->in[4];
    int32_t E = op->p.kva.e, EV = op->p.kva.ev, EVW = (EV + KVA_WG - 1) / KVA_WG;
    if (k->ts[op->out].rank != 4 || E < 1 || EV < 1 || op->p.kva.group < 1)
        return ttc_fail(TTC_ERR_INTERNAL, "kv_attention %s: rank %d, E %d, EV %d, group %d", op->name,
                        k->ts[op->out].rank, E, EV, op->p.kva.group);
    ttc_kparams p;
    ttc_kp_init(&p, k, ks, false);
    ttc_kp_int(&p, TTC_ARG_PROD, op->out, 0, 3, 0, "rows");
    ttc_kp_int(&p, TTC_ARG_DIM, op->out, 1, 0, 0, "Hq");
    ttc_kp_int(&p, TTC_ARG_DIM, op->out, 2, 0, 0, "S");
    ttc_kp_int(&p, TTC_ARG_DIM, kc, 2, 0, 0, "L");
    ttc_kp_tensor(&p, q, "q", 4);
    ttc_kp_tensor(&p, kc, "kc", 4);
    ttc_kp_tensor(&p, vc, "vc", 4);
    ttc_kp_tensor(&p, sl, "sl", 1);
    ttc_kp_tensor(&p, km, "km", 2);
    TTC_TRY(ttc_kp_done(&p));
    ttc_sbuf_printf(src, "__kernel void %s(%s%s) {\n", ks->name, ttc_kp_sig(&p), P);
    ttc_kp_free(&p);
    ttc_sbuf_printf(src,
                    "    __local float qv[%d], sc[%d], red[%d];\n"
                    "    int row = get_group_id(0), t = get_local_id(0);\n    if (row >= rows) return;\n"
                    "    int s = row %% S, r1 = row / S, h = r1 %% Hq, b = r1 / Hq, hk = h / %d;\n"
                    "    long pos = (long)sl[sl_off + s * sl_s0];\n"
                    "    int nk = pos < 0 ? 0 : (int)min((long)L, pos + 1);\n",
                    E, KVA_CH, KVA_WG, op->p.kva.group);
    if (op->p.kva.window > 0)
        ttc_sbuf_printf(src, "    int lo = (int)max(0L, pos - %d + 1);\n", op->p.kva.window);
    else
        ttc_sbuf_printf(src, "    int lo = 0;\n");
    ttc_sbuf_printf(src,
                    "    int qb = q_off + b * q_s0 + h * q_s1 + s * q_s2;\n"
                    "    int kb = kc_off + b * kc_s0 + hk * kc_s1, vb = vc_off + b * vc_s0 + hk * vc_s1;\n"
                    "    int mb = km_off + b * km_s0;\n"
                    "    for (int e = t; e < %d; e += %d) qv[e] = ", E, KVA_WG);
    ld(src, g, q, "q", "qb + e * q_s3");
    ttc_sbuf_printf(src, ";\n    float acc[%d];\n    for (int i = 0; i < %d; i++) acc[i] = 0.0f;\n"
                         "    float m = -INFINITY, l = 0.0f;\n    barrier(CLK_LOCAL_MEM_FENCE);\n"
                         "    for (int c0 = lo; c0 < nk; c0 += %d) {\n        int cn = min(%d, nk - c0);\n"
                         "        float cm = -INFINITY;\n"
                         "        for (int jj = t; jj < cn; jj += %d) {\n            int j = c0 + jj;\n"
                         "            float x = -INFINITY;\n            if (km[mb + j * km_s1]) {\n"
                         "                int kp = kb + j * kc_s2;\n                float d = 0.0f;\n"
                         "                for (int e = 0; e < %d; e++) d += qv[e] * ",
                    EVW, EVW, KVA_CH, KVA_CH, KVA_WG, E);
    ld(src, g, kc, "kc", "kp + e * kc_s3");
    ttc_sbuf_printf(src, ";\n                x = d * %.9ef;\n", op->p.kva.scale);
    if (op->p.kva.softcap > 0)
        ttc_sbuf_printf(src, "                x = %.9ef * tanh(x / %.9ef);\n", op->p.kva.softcap, op->p.kva.softcap);
    /* the chunk's maximum, then the exponentials and their sum, each reduced over the
     * work-group; a NaN score keeps the maximum as it is and turns the sums NaN, as torch's
     * softmax turns the row NaN */
    ttc_sbuf_printf(src,
                    "            }\n            sc[jj] = x;\n            cm = x > cm ? x : cm;\n        }\n"
                    "        red[t] = cm;\n        barrier(CLK_LOCAL_MEM_FENCE);\n"
                    "        for (int w = %d; w > 0; w >>= 1) {\n"
                    "            if (t < w) red[t] = red[t + w] > red[t] ? red[t + w] : red[t];\n"
                    "            barrier(CLK_LOCAL_MEM_FENCE);\n        }\n"
                    "        float mn = red[0] > m ? red[0] : m;\n        barrier(CLK_LOCAL_MEM_FENCE);\n"
                    "        if (mn == -INFINITY) continue;\n"
                    "        float corr = exp(m - mn), ps = 0.0f;\n"
                    "        for (int jj = t; jj < cn; jj += %d) {\n            float pj = exp(sc[jj] - mn);\n"
                    "            sc[jj] = pj;\n            ps += pj;\n        }\n"
                    "        red[t] = ps;\n        barrier(CLK_LOCAL_MEM_FENCE);\n"
                    "        for (int w = %d; w > 0; w >>= 1) {\n            if (t < w) red[t] += red[t + w];\n"
                    "            barrier(CLK_LOCAL_MEM_FENCE);\n        }\n"
                    "        l = l * corr + red[0];\n"
                    "        for (int i = 0; i < %d; i++) {\n            int e = t + i * %d;\n            if (e >= %d) break;\n"
                    "            int vp = vb + c0 * vc_s2 + e * vc_s3;\n            float a = acc[i] * corr;\n"
                    "            for (int jj = 0; jj < cn; jj++) a += sc[jj] * ",
                    KVA_WG / 2, KVA_WG, KVA_WG / 2, EVW, KVA_WG, EV);
    ld(src, g, vc, "vc", "vp + jj * vc_s2");
    ttc_sbuf_printf(src, ";\n            acc[i] = a;\n        }\n        m = mn;\n        barrier(CLK_LOCAL_MEM_FENCE);\n    }\n"
                         "    float inv = l > 0.0f ? 1.0f / l : 0.0f;\n"
                         "    for (int i = 0; i < %d; i++) {\n        int e = t + i * %d;\n        if (e >= %d) break;\n"
                         "        float a = acc[i] * inv;\n",
                    EVW, KVA_WG, EV);
    char lin[48];
    snprintf(lin, sizeof lin, "row * %d + e", EV);
    ttc_codegen_write_out(g, "a", lin);
    ttc_sbuf_printf(src, "    }\n}\n");
    ttc_codegen_gdim(ks, 0, op->out, 0, 3, 1, KVA_WG);
    ks->g[0].mul = KVA_WG;
    ks->use_local = true;
    return TTC_OK;
}
