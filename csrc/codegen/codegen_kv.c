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
    int32_t x = op->in[0], sl = op->in[1], R = k->ts[x].rank, D = op->p.slot.dim;
    if (R < 1 || k->ts[op->out].rank != R || k->ts[sl].rank != 1 || D < 0 || D >= R)
        return ttc_fail(TTC_ERR_INTERNAL, "slot_write %s: ranks %d, %d, %d, dim %d", op->name, R, k->ts[op->out].rank,
                        k->ts[sl].rank, D);
    ttc_kparams p;
    ttc_kp_init(&p, k, ks, false);
    ttc_kp_int(&p, TTC_ARG_PROD, x, 0, R, 0, "n");
    for (int32_t d = 0; d < R; d++) ttc_kp_int(&p, TTC_ARG_DIM, x, d, 0, 0, "xd%d", d);
    ttc_kp_int(&p, TTC_ARG_DIM, op->out, D, 0, 0, "L");
    /* x inlined (kir/fuse.c: the rotary embedding's keys): computed by <name>_x, no tensor read */
    bool inl = ttc_codegen_inlined(k, x);
    if (!inl) ttc_kp_tensor(&p, x, "x", R);
    ttc_kp_tensor(&p, sl, "sl", 1);
    ttc_kp_errflag(&p, op->out);
    int32_t y = op->in[2], yc = op->in[3];   /* a second tensor and cache: the values */
    if (y >= 0) {
        ttc_kp_tensor(&p, y, "y", R);
        ttc_kp_out(&p, yc, "c2", "c2_off");
    }
    ttc_status s = ttc_kp_done(&p);
    ttc_kparams fp;
    ttc_kp_init(&fp, k, ks, true);
    char fn[32];
    snprintf(fn, sizeof fn, "%s_x", ks->name);
    if (s == TTC_OK && inl) s = ttc_codegen_inline_fn(g, x, &fp, fn);
    if (s == TTC_OK) {
        int32_t code = (int32_t)(op - k->ops) + 1;
        ttc_sbuf_printf(src, "__kernel void %s(%s%s%s) {\n    int lin = get_global_id(0);\n    if (lin >= n) return;\n"
                             "    int r = lin;\n", ks->name, ttc_kp_sig(&p), ttc_kp_sig(&fp), P);
        for (int32_t d = R - 1; d >= 0; d--) ttc_sbuf_printf(src, "    int i%d = r %% xd%d; r /= xd%d;\n", d, d, d);
        ttc_sbuf_printf(src, "    long slot = (long)sl[sl_off + i%d * sl_s0];\n"
                             "    if (slot < 0 || slot >= (long)L) { atomic_cmpxchg(errf, 0, %d); return; }\n"
                             "    float v = ", D, code);
        ttc_sbuf ix = {0}, iy = {0};
        ttc_sbuf_printf(&ix, "x_off");
        ttc_sbuf_printf(&iy, "y_off");
        for (int32_t d = 0; d < R; d++) {
            ttc_sbuf_printf(&ix, " + i%d * x_s%d", d, d);
            ttc_sbuf_printf(&iy, " + i%d * y_s%d", d, d);
        }
        /* x is dense (an inlined result: fuse.c): element lin of x is the one at i0..iR-1 */
        if (inl) ttc_sbuf_printf(src, "%s(lin%s)", fn, ttc_kp_call(&fp));
        else ld(src, g, x, "x", ix.data ? ix.data : "0");
        ttc_sbuf_free(&ix);
        /* the cache is an engine input: dense, the new element's offset in row-major order */
        ttc_sbuf at = {0};
        for (int32_t d = 0; d < R; d++) ttc_sbuf_printf(&at, "(");
        ttc_sbuf_printf(&at, "0");
        for (int32_t d = 0; d < R; d++) {   /* Horner: ((0 * n0 + i0) * n1 + i1) ... */
            if (d == D) ttc_sbuf_printf(&at, " * L + (int)slot)");
            else ttc_sbuf_printf(&at, " * xd%d + i%d)", d, d);
        }
        ttc_sbuf_printf(src, ";\n    int at = %s;\n", at.data ? at.data : "0");
        ttc_codegen_store(src, k, g->sp, k->ts[op->out].dtype, "v", "v", "at", "    ");
        if (y >= 0) {   /* the same element of the values into the second cache (o_ names it here) */
            ttc_sbuf_printf(src, "    {\n        __global %s *o_ = c2;\n        int o_off = c2_off;\n        float v = ",
                            ttc_cl_storage_type(k->ts[yc].dtype));
            ld(src, g, y, "y", iy.data ? iy.data : "0");
            ttc_sbuf_printf(src, ";\n");
            ttc_codegen_store(src, k, g->sp, k->ts[yc].dtype, "v", "v", "at", "        ");
            ttc_sbuf_printf(src, "    }\n");
        }
        ttc_sbuf_printf(src, "}\n");
        if (at.oom || iy.oom) s = TTC_ERR_NOMEM;
        ttc_sbuf_free(&at);
        ttc_sbuf_free(&iy);
    }
    ttc_kp_free(&p);
    ttc_kp_free(&fp);
    TTC_TRY(s);
    ttc_codegen_gdim(ks, 0, x, 0, R, 1, 0);
    return TTC_OK;
}

/* "float8" of 8 consecutive elements of tensor t from ptr[idx]. */
static void ld8(ttc_sbuf *src, const ttc_kgen *g, int32_t t, const char *ptr, const char *idx) {
    if (g->k->ts[t].dtype == TTC_DTYPE_FLOAT16) ttc_sbuf_printf(src, "vload_half8(0, %s + (%s))", ptr, idx);
    else ttc_sbuf_printf(src, "vload8(0, %s + (%s))", ptr, idx);
}

/* The split-K kernel of the GPU families (p.kva.splits > 0): a work-group of KVA_CH work-items
 * per (b, k/v head, group of hg query heads, s, key range of kps keys). Each work-item scores one
 * key of a chunk against the group's queries (the key row read once, 8 elements at a time); the
 * work-items of one query head (KVA_CH / hg of them) reduce its chunk maximum and sum and
 * accumulate its value dims. The partial state (max, sum, unnormalised values) of each range
 * goes to the op's output [B, Hq, S, splits, EV + 2]; KV_REDUCE combines the ranges. The caches
 * are engine inputs, hence dense: a key row is contiguous. */
static ttc_status gen_kv_split(const ttc_kgen *g) {
    TTC_KGEN_LOCALS(g);
    int32_t q = op->in[0], kc = op->in[1], vc = op->in[2], sl = op->in[3], km = op->in[4];
    int32_t E = op->p.kva.e, EV = op->p.kva.ev, G = op->p.kva.group, HG = op->p.kva.hg, SPL = op->p.kva.splits;
    int32_t KPS = op->p.kva.kps, TPH = KVA_CH / HG, EPT = (EV + TPH - 1) / TPH;
    const ttc_et *qt = &k->ts[q], *ct = &k->ts[kc];
    if (E % 8 || HG < 1 || G % HG || KVA_CH % HG || qt->dims[1].sym >= 0 || ct->dims[1].sym >= 0 || ct->dims[2].sym >= 0)
        return ttc_fail(TTC_ERR_INTERNAL, "kv_attention %s: E %d, group %d by %d, symbolic heads or length", op->name, E, G, HG);
    int64_t HQ = qt->dims[1].add, HKV = ct->dims[1].add, L = ct->dims[2].add;
    ttc_kparams p;
    ttc_kp_init(&p, k, ks, false);
    ttc_kp_int(&p, TTC_ARG_PROD, op->out, 0, 4, -HG, "nwg");
    ttc_kp_int(&p, TTC_ARG_DIM, op->out, 2, 0, 0, "S");
    /* q inlined (kir/fuse.c: the rotary embedding's queries): computed by <name>_q, no tensor read */
    bool inl = ttc_codegen_inlined(k, q);
    if (!inl) ttc_kp_tensor(&p, q, "q", 4);
    ttc_kp_tensor(&p, kc, "kc", 4);
    ttc_kp_tensor(&p, vc, "vc", 4);
    ttc_kp_tensor(&p, sl, "sl", 1);
    ttc_kp_tensor(&p, km, "km", 2);
    ttc_status s = ttc_kp_done(&p);
    ttc_kparams fp;
    ttc_kp_init(&fp, k, ks, true);
    char fn[32];
    snprintf(fn, sizeof fn, "%s_q", ks->name);
    if (s == TTC_OK && inl) s = ttc_codegen_inline_fn(g, q, &fp, fn);
    if (s == TTC_OK) ttc_sbuf_printf(src, "__kernel void %s(%s%s%s) {\n", ks->name, ttc_kp_sig(&p), ttc_kp_sig(&fp), P);
    ttc_kp_free(&p);
    if (s != TTC_OK) {
        ttc_kp_free(&fp);
        return s;
    }
    ttc_sbuf_printf(src,
                    "    __local float qv[%d], sc[%d], red[%d];\n"
                    "    int wg = get_group_id(0), t = get_local_id(0);\n    if (wg >= nwg) return;\n"
                    "    int sp = wg %% %d, r = wg / %d;\n    int s = r %% S; r /= S;\n"
                    "    int hgi = r %% %d; r /= %d;\n    int hk = r %% %lld, b = r / %lld;\n"
                    "    int h0 = hk * %d + hgi * %d, h = t / %d, l = t %% %d;\n"
                    "    long pos = (long)sl[sl_off + s * sl_s0];\n"
                    "    int nk = pos < 0 ? 0 : (int)min((long)%lld, pos + 1);\n",
                    HG * E, HG * KVA_CH, KVA_CH, SPL, SPL, G / HG, G / HG, (long long)HKV, (long long)HKV, G, HG, TPH,
                    TPH, (long long)L);
    if (op->p.kva.window > 0)
        ttc_sbuf_printf(src, "    int lo = (int)max(0L, pos - %d + 1);\n", op->p.kva.window);
    else
        ttc_sbuf_printf(src, "    int lo = 0;\n");
    ttc_sbuf_printf(src,
                    "    int k0 = max(lo, sp * %d), k1 = min(nk, (sp + 1) * %d);\n"
                    "    for (int i = t; i < %d; i += %d) {\n        int hh = i / %d, e = i %% %d;\n        qv[i] = ",
                    KPS, KPS, HG * E, KVA_CH, E, E);
    if (inl)   /* q is dense [B, Hq, S, E] (an inlined result: fuse.c) */
        ttc_sbuf_printf(src, "%s(((b * %lld + h0 + hh) * S + s) * %d + e%s)", fn, (long long)HQ, E, ttc_kp_call(&fp));
    else ld(src, g, q, "q", "q_off + b * q_s0 + (h0 + hh) * q_s1 + s * q_s2 + e * q_s3");
    ttc_kp_free(&fp);
    ttc_sbuf_printf(src,
                    ";\n    }\n    float m = -INFINITY, ls = 0.0f, acc[%d];\n    for (int i = 0; i < %d; i++) acc[i] = 0.0f;\n"
                    "    int kb = kc_off + b * kc_s0 + hk * kc_s1, vb = vc_off + b * vc_s0 + hk * vc_s1, mb = km_off + b * km_s0;\n"
                    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
                    "    for (int c0 = k0; c0 < k1; c0 += %d) {\n        int cn = min(%d, k1 - c0);\n"
                    "        float d[%d];\n        for (int hh = 0; hh < %d; hh++) d[hh] = 0.0f;\n"
                    "        bool ok = t < cn && km[mb + (c0 + t) * km_s1];\n"
                    "        if (ok) {\n            int kp = kb + (c0 + t) * kc_s2;\n"
                    "            for (int e = 0; e < %d; e += 8) {\n                float8 kk = ",
                    EPT, EPT, KVA_CH, KVA_CH, HG, HG, E);
    ld8(src, g, kc, "kc", "kp + e");
    ttc_sbuf_printf(src,
                    ";\n                for (int hh = 0; hh < %d; hh++) {\n"
                    "                    __local const float *qq = qv + hh * %d + e;\n"
                    "                    d[hh] += qq[0] * kk.s0 + qq[1] * kk.s1 + qq[2] * kk.s2 + qq[3] * kk.s3 +\n"
                    "                             qq[4] * kk.s4 + qq[5] * kk.s5 + qq[6] * kk.s6 + qq[7] * kk.s7;\n"
                    "                }\n            }\n        }\n"
                    "        for (int hh = 0; hh < %d; hh++) {\n            float x = ok ? d[hh] * %.9ef : -INFINITY;\n",
                    HG, E, HG, op->p.kva.scale);
    if (op->p.kva.softcap > 0)
        ttc_sbuf_printf(src, "            if (ok) x = %.9ef * tanh(x / %.9ef);\n", op->p.kva.softcap, op->p.kva.softcap);
    ttc_sbuf_printf(src,
                    "            sc[hh * %d + t] = x;\n        }\n        barrier(CLK_LOCAL_MEM_FENCE);\n"
                    "        __local float *hs = sc + h * %d;\n"
                    "        float pm = -INFINITY;\n        for (int jj = l; jj < cn; jj += %d) pm = hs[jj] > pm ? hs[jj] : pm;\n"
                    "        red[t] = pm;\n        barrier(CLK_LOCAL_MEM_FENCE);\n"
                    "        for (int w = %d; w > 0; w >>= 1) {\n"
                    "            if (l < w) red[t] = red[t + w] > red[t] ? red[t + w] : red[t];\n"
                    "            barrier(CLK_LOCAL_MEM_FENCE);\n        }\n"
                    "        float mn = red[h * %d] > m ? red[h * %d] : m;\n        barrier(CLK_LOCAL_MEM_FENCE);\n"
                    "        float ps = 0.0f;\n"
                    "        if (mn != -INFINITY)\n            for (int jj = l; jj < cn; jj += %d) {\n"
                    "                float pj = exp(hs[jj] - mn);\n                hs[jj] = pj;\n                ps += pj;\n            }\n"
                    "        red[t] = ps;\n        barrier(CLK_LOCAL_MEM_FENCE);\n"
                    "        for (int w = %d; w > 0; w >>= 1) {\n            if (l < w) red[t] += red[t + w];\n"
                    "            barrier(CLK_LOCAL_MEM_FENCE);\n        }\n"
                    "        if (mn != -INFINITY) {\n            float corr = exp(m - mn);\n"
                    "            ls = ls * corr + red[h * %d];\n"
                    "            for (int i = 0; i < %d; i++) {\n                int e = l + i * %d;\n                if (e >= %d) break;\n"
                    "                int vp = vb + c0 * vc_s2 + e * vc_s3;\n                float a = acc[i] * corr;\n"
                    "                for (int jj = 0; jj < cn; jj++) a += hs[jj] * ",
                    KVA_CH, KVA_CH, TPH, TPH / 2, TPH, TPH, TPH, TPH / 2, TPH, EPT, TPH, EV);
    ld(src, g, vc, "vc", "vp + jj * vc_s2");
    ttc_sbuf_printf(src,
                    ";\n                acc[i] = a;\n            }\n            m = mn;\n        }\n"
                    "        barrier(CLK_LOCAL_MEM_FENCE);\n    }\n"
                    "    int base = (((b * %lld + h0 + h) * S + s) * %d + sp) * %d;\n"
                    "    if (l == 0) { o_[o_off + base] = m; o_[o_off + base + 1] = ls; }\n"
                    "    for (int i = 0; i < %d; i++) {\n        int e = l + i * %d;\n"
                    "        if (e < %d) o_[o_off + base + 2 + e] = acc[i];\n    }\n}\n",
                    (long long)HQ, SPL, EV + 2, EPT, TPH, EV);
    ttc_codegen_gdim(ks, 0, op->out, 0, 4, HG, KVA_CH);
    ks->g[0].mul = KVA_CH;
    ks->use_local = true;
    return TTC_OK;
}

/* KV_REDUCE: one work-item per output element combines the key ranges' partial states. */
ttc_status ttc_gen_kv_reduce(const ttc_kgen *g) {
    TTC_KGEN_LOCALS(g);
    int32_t EV = op->p.kva.ev, SPL = op->p.kva.splits;
    const ttc_et *ot = &k->ts[op->out];
    if (op->p.kva.bshe && (ot->rank != 4 || ot->dims[2].sym >= 0))
        return ttc_fail(TTC_ERR_INTERNAL, "kv_reduce %s: rank %d, symbolic heads", op->name, ot->rank);
    ttc_kparams p;
    ttc_kp_init(&p, k, ks, false);
    ttc_kp_int(&p, TTC_ARG_PROD, op->out, 0, 4, 0, "n");
    ttc_kp_buffer(&p, op->in[0], "pp", NULL);
    /* out [B, S, Hq, EV] (bshe): the partial states' row (b, h, s) of out's element (b, s, h, e) */
    if (op->p.kva.bshe) ttc_kp_int(&p, TTC_ARG_DIM, op->out, 1, 0, 0, "S");
    TTC_TRY(ttc_kp_done(&p));
    char row[192];
    if (op->p.kva.bshe)
        snprintf(row, sizeof row, "((lin / %d / %lld / S * %lld + lin / %d %% %lld) * S + lin / %d / %lld %% S)", EV,
                 (long long)ot->dims[2].add, (long long)ot->dims[2].add, EV, (long long)ot->dims[2].add, EV,
                 (long long)ot->dims[2].add);
    else
        snprintf(row, sizeof row, "(lin / %d)", EV);
    ttc_sbuf_printf(src,
                    "__kernel void %s(%s%s) {\n    int lin = get_global_id(0);\n    if (lin >= n) return;\n"
                    "    int e = lin %% %d, base = pp_off + %s * %d;\n    float mx = -INFINITY;\n"
                    "    for (int sp = 0; sp < %d; sp++) { float v = pp[base + sp * %d]; mx = v > mx ? v : mx; }\n"
                    "    float num = 0.0f, den = 0.0f;\n"
                    "    if (mx != -INFINITY)\n        for (int sp = 0; sp < %d; sp++) {\n"
                    "            int o = base + sp * %d;\n            float w = exp(pp[o] - mx);\n"
                    "            num += w * pp[o + 2 + e];\n            den += w * pp[o + 1];\n        }\n"
                    "    float a = den > 0.0f ? num / den : (num != num ? num : 0.0f);\n",
                    ks->name, ttc_kp_sig(&p), P, EV, row, SPL * (EV + 2), SPL, EV + 2, SPL, EV + 2);
    ttc_kp_free(&p);
    ttc_codegen_write_out(g, "a", "lin");
    ttc_sbuf_printf(src, "}\n");
    ttc_codegen_gdim(ks, 0, op->out, 0, 4, 1, 0);
    return TTC_OK;
}

ttc_status ttc_gen_kv_attention(const ttc_kgen *g) {
    if (g->op->p.kva.splits > 0) return gen_kv_split(g);
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
