/* Weight-only quantized linear kernels (TTC_KOP_WQ_LINEAR, kir.h): the weights stay int8 or
 * packed int4 in memory and are dequantized in registers.
 *
 * - portable (every device): one work-item per output element [m, n], a loop over the K/group
 *   groups: acc += s[n, g] * (sum_j q * x - z[n, g] * sum_j x).
 * - gemv (the GPU kernel families, op->p.wq.gemv; decode shapes M <= 8): a work-group of
 *   WQ_WARPS warps of 32 work-items, each warp WQ_R weight rows (output columns) for up to
 *   WQ_MB rows of x at once (grid dim 1 walks x's rows in chunks of WQ_MB, so any M is right).
 *   Layer-sized products split each row's K between KS warps of the group (wq_split), which
 *   then add their sums through local memory: N / 4 warps for N rows instead of N / 16.
 * - mma (fp16 x): 16 weight rows x up to 64 rows of x (WQ_MMA_XC chunks of 8, the weights
 *   dequantized once for them) on fp16 tensor cores (mma_body), for batches
 *   and prefill: TORCHTRT_C_WQ_MMA=1 as its own kernel (gen_wq_mma), =auto inside the GEMV's
 *   kernel for calls of more than WQ_MMA_ROWS rows of x (M is a kernel argument).
 *   Each work-item reads 16 bytes of each of its rows at a time (16 int8 or 32 int4 weights, a
 *   uint4; WQ_U chunks a row issued before they are used), the warp's 32 work-items 512
 *   consecutive bytes of a row, so the packed weights stream at memory bandwidth. x's chunk
 *   (16 or 32 elements) is loaded once for the WQ_R rows, as 16-byte vectors where its address
 *   is aligned: a warp per single row re-read x for every row, an element at a time (32
 *   scattered addresses an instruction: by count of L1 wavefronts, more time than streaming
 *   the weights; the H100 run of 2026-12-07 measured a [1, 2048] x [8192, 2048] int4 layer at
 *   0.09 of the copy bandwidth, call overhead included, not profiled). Weights become floats exactly by the exponent trick (dot_chunk); partial sums
 *   are float, the 32 lanes' added through local memory at the end. Rows whose bytes are not a
 *   multiple of 16 (or groups smaller than a 16-byte chunk, or an unaligned buffer) take a
 *   scalar loop, same sums.
 */
#include "codegen_impl.h"

#include <stdio.h>

enum { WQ_WARPS = 4 };
/* the GEMV's geometry: weight rows a warp (WQ_R), rows of x a work-group (WQ_MB), 16-byte chunks
 * of a row a work-item loads before using them (WQ_U); TORCHTRT_C_WQ_R/_MB/_U force them */
#define WQ_R wq_geom(g->k, 0)
#define WQ_MB wq_geom(g->k, 1)
#define WQ_U wq_geom(g->k, 2)
static int32_t wq_geom(const ttc_kir *k, int which) {
    const ttc_target *t = ttc_kir_target(k);
    int32_t f = which == 0 ? t->wq_r : which == 1 ? t->wq_mb : t->wq_u;
    return f > 0 ? f : which == 0 ? 4 : which == 1 ? 8 : 2;
}
/* TORCHTRT_C_WQ_MMA=auto: calls with more rows of x than this take the tensor-core form */
enum { WQ_MMA_ROWS = 8 };
/* the tensor-core form: chunks of 8 rows of x a work-group (each weight block dequantized once for them) */
enum { WQ_MMA_XC = 8 };

static void params(ttc_kparams *p, const ttc_kir *k, ttc_kspec *ks, const ttc_kop *op) {
    int32_t R = k->ts[op->out].rank;
    ttc_kp_init(p, k, ks, false);
    ttc_kp_int(p, TTC_ARG_PROD, op->out, 0, R - 1, 0, "M");
    ttc_kp_buffer(p, op->in[0], "x", NULL);
    ttc_kp_buffer(p, op->in[1], "q", NULL);
    ttc_kp_buffer(p, op->in[2], "sc", NULL);
    if (op->in[3] >= 0) ttc_kp_buffer(p, op->in[3], "zp", NULL);
    if (op->in[4] >= 0) ttc_kp_buffer(p, op->in[4], "nw", NULL);
}

static void loaders(ttc_sbuf *src, const ttc_kgen *g) {
    const ttc_kir *k = g->k;
    const ttc_kop *op = g->op;
    ttc_codegen_loader(src, g->sp, "WQ_LX", k->ts[op->in[0]].dtype, false);
    ttc_codegen_loader(src, g->sp, "WQ_LS", k->ts[op->in[2]].dtype, false);
    if (op->in[3] >= 0) ttc_codegen_loader(src, g->sp, "WQ_LZ", k->ts[op->in[3]].dtype, false);
    else ttc_sbuf_printf(src, "#define WQ_LZ(p,i) 0.0f\n");
    if (op->in[4] >= 0) ttc_codegen_loader(src, g->sp, "WQ_LG", k->ts[op->in[4]].dtype, false);
    else ttc_sbuf_printf(src, "#define WQ_LG(p,i) 1.0f\n");
}

static void unloaders(ttc_sbuf *src) { ttc_sbuf_printf(src, "#undef WQ_LX\n#undef WQ_LS\n#undef WQ_LZ\n#undef WQ_LG\n"); }

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

/* The GPU forms' kernel head: parameters (done), the loaders and WQ_UNROLL (guards, not breaks,
 * and unrolled loops, so that the per-lane arrays stay in registers). */
static ttc_status gpu_head(const ttc_kgen *g, ttc_kparams *p) {
    params(p, g->k, g->ks, g->op);
    TTC_TRY(ttc_kp_done(p));
    loaders(g->src, g);
    ttc_sbuf_printf(g->src, "#define WQ_UNROLL %s\n", g->gpu ? "_Pragma(\"unroll\")" : "");
    return TTC_OK;
}

/* x's EPC elements from xi into xv[] (vector loads where xvec; else the loader, one by one). */
static void load_x_chunk(ttc_sbuf *src, ttc_dtype xd, int32_t EPC, const char *ind) {
    if (xd == TTC_DTYPE_FLOAT16) {
        ttc_sbuf_printf(src,
                        "%sif (xvec) {\n"
                        "%s    WQ_UNROLL for (int v = 0; v < %d; v++) {\n"
                        "%s        uint4 raw = *(__global const uint4 *)(x + xi + 8 * v);\n"
                        "%s        float8 f = vload_half8(0, (const __private half *)&raw);\n"
                        "%s        xv[8 * v] = f.s0; xv[8 * v + 1] = f.s1; xv[8 * v + 2] = f.s2; xv[8 * v + 3] = f.s3;\n"
                        "%s        xv[8 * v + 4] = f.s4; xv[8 * v + 5] = f.s5; xv[8 * v + 6] = f.s6; xv[8 * v + 7] = f.s7;\n"
                        "%s    }\n%s} else\n",
                        ind, ind, EPC / 8, ind, ind, ind, ind, ind, ind);
    } else if (xd == TTC_DTYPE_FLOAT32) {
        ttc_sbuf_printf(src,
                        "%sif (xvec) {\n"
                        "%s    WQ_UNROLL for (int v = 0; v < %d; v++) {\n"
                        "%s        float4 f = *(__global const float4 *)(x + xi + 4 * v);\n"
                        "%s        xv[4 * v] = f.x; xv[4 * v + 1] = f.y; xv[4 * v + 2] = f.z; xv[4 * v + 3] = f.w;\n"
                        "%s    }\n%s} else\n",
                        ind, ind, EPC / 4, ind, ind, ind, ind);
    }
    ttc_sbuf_printf(src, "%s    WQ_UNROLL for (int e = 0; e < %d; e++) xv[e] = WQ_LX(x, xi + e);\n", ind, EPC);
}

/* a += the chunk's weights (raw 16 bytes uu) . xv, each weight made a float exactly by the
 * exponent trick (2^23 + v as bits, minus 2^23: two full-rate operations where a conversion
 * instruction runs at a quarter of the rate on NVIDIA GPUs); int8 bytes offset by 128 (one xor
 * a word), int4 nibbles masked a word at a time into bytes (the even ones, then the odd ones
 * shifted down), so that each weight is one byte extraction, a subtraction and the product.
 * Same products in the same order as one weight at a time. */
static void dot_chunk(ttc_sbuf *src, int32_t bits, const char *ind) {
    if (bits == 8)
        ttc_sbuf_printf(src,
                        "%sWQ_UNROLL for (int e = 0; e < 4; e++) {\n%s    uint word = (e == 0 ? uu.x : e == 1 ? uu.y : e == 2 ? uu.z : uu.w) ^ 0x80808080u;\n"
                        "%s    WQ_UNROLL for (int b = 0; b < 4; b++)\n"
                        "%s        a += (as_float(0x4B000000u | ((word >> (8 * b)) & 255u)) - 8388736.0f) * xv[e * 4 + b];\n"
                        "%s}\n",
                        ind, ind, ind, ind, ind);
    else
        ttc_sbuf_printf(src,
                        "%sWQ_UNROLL for (int e = 0; e < 4; e++) {\n%s    uint word = e == 0 ? uu.x : e == 1 ? uu.y : e == 2 ? uu.z : uu.w;\n"
                        "%s    uint lo = word & 0x0F0F0F0Fu, hi = (word >> 4) & 0x0F0F0F0Fu;\n"
                        "%s    WQ_UNROLL for (int b = 0; b < 4; b++) {\n"
                        "%s        a += (as_float(0x4B000000u | ((lo >> (8 * b)) & 255u)) - 8388608.0f) * xv[e * 8 + 2 * b];\n"
                        "%s        a += (as_float(0x4B000000u | ((hi >> (8 * b)) & 255u)) - 8388608.0f) * xv[e * 8 + 2 * b + 1];\n"
                        "%s    }\n%s}\n",
                        ind, ind, ind, ind, ind, ind, ind, ind);
}

/* Warps of a work-group that split each weight row's K between them (TORCHTRT_C_WQ_SPLIT forces
 * 1, 2 or 4): the largest split that keeps N * split <= 8192 (about 2048 warps in all) and
 * leaves each lane at least one 16-byte chunk of a row. H100, x [1, K] fp16 times int8 rows
 * (gpujob probe of 2026-12-07 15:20, kernel time, splits 1 / 2 / 4): [2048 x 2048] 4.9 / 4.2 /
 * 3.6 us, [3072 x 2048] 5.5 / 4.7 / 5.2, [16384 x 2048] 13.6 / 15.8 / 18.4, [2048 x 8192]
 * 13.5 / 9.9 / 8.3, the LM head [128256 x 2048] 97 / 109 / 139; int4 alike. */
static int32_t wq_split(const ttc_kir *k, const ttc_kop *op, int32_t RB) {
    int32_t f = ttc_kir_target(k)->wq_split;
    if (f == 1 || f == 2 || f == 4) return f;
    int32_t ks = 1;
    while (ks < WQ_WARPS && (int64_t)op->p.wq.n * ks * 2 <= 8192 && RB / 16 >= 32 * ks * 2) ks *= 2;
    return ks;
}

static bool wq_mma_ok(const ttc_kir *k, const ttc_kop *op);
static void mma_decls(ttc_sbuf *src, const ttc_kop *op);
static ttc_status mma_body(const ttc_kgen *g);
static ttc_status gemv_grid(const ttc_kgen *g, int32_t KS);

/* p.wq.glu (kir.h; kir/fuse.c fuse_gated_wq): "float v = act(vg) * vu;", act spelled as the
 * expression code spells the op in float (SILU, GELU_ERF, GELU_TANH: one operand, %a). */
static ttc_status glu_value(const ttc_kgen *g, const char *ind) {
    const ttc_kop *op = g->op;
    int32_t a = op->p.wq.glu_act;
    if (a != TTC_EOP_SILU && a != TTC_EOP_GELU_ERF && a != TTC_EOP_GELU_TANH)
        return ttc_fail(TTC_ERR_INTERNAL, "wq_linear %s: gated activation %d", op->name, a);
    const char *f = g->sp->op[a].fl;
    ttc_sbuf_printf(g->src, "%sfloat v = (", ind);
    for (const char *c = f; *c; c++) {
        if (c[0] == '%' && c[1] == 'a') { ttc_sbuf_printf(g->src, "vg"); c++; }
        else if (c[0] == '%') return ttc_fail(TTC_ERR_INTERNAL, "wq_linear %s: spelling \"%s\"", op->name, f);
        else ttc_sbuf_append(g->src, c, 1);
    }
    ttc_sbuf_printf(g->src, ") * vu;\n");
    return TTC_OK;
}

/* The gated GEMV's rows (p.wq.glu): the work-group's RW rows (c0 + r as the plain kernel counts
 * them) are RW / 2 rows j of the first half of the weights, then the same j of the second half
 * (I = N / 2 rows on): the group writes act(gate) * up for its RW / 2 output columns j.
 * WQ_OK: row c is of a column j < I; WQ_ROW: its weight row (clamped into the weights). */
static void glu_rows(ttc_sbuf *src, int32_t RW, int32_t N) {
    ttc_sbuf_printf(src,
                    "#define WQ_J(c) ((c) / %d * %d + (c) %% %d)\n#define WQ_OK(c) (WQ_J(c) < %d)\n"
                    "#define WQ_ROW(c) min(WQ_J(c) + ((c) %% %d >= %d ? %d : 0), %d)\n",
                    RW, RW / 2, RW / 2, N / 2, RW, RW / 2, N / 2, N - 1);
}

/* A pass's 16-byte chunks into arr[U * R]: chunk base + 32 * KS * j of each of the warp's R
 * rows (zeros past the row's C chunks or the last row). */
static void chunk_loads(ttc_sbuf *src, int32_t U, int32_t R, int32_t KS, int32_t C, const char *ok, const char *row,
                        const char *base, const char *arr) {
    ttc_sbuf_printf(src,
                    "                WQ_UNROLL for (int j = 0; j < %d; j++)\n"
                    "                    WQ_UNROLL for (int r = 0; r < %d; r++) {\n"
                    "                        int ch = %s + %d * j;\n"
                    "                        %s[j * %d + r] = ch < %d && %s ? qr[%s * %d + ch] : (uint4)(0u);\n"
                    "                    }\n",
                    U, R, base, 32 * KS, arr, R, C, ok, row, C);
}

static ttc_status gen_gemv(const ttc_kgen *g) {
    TTC_KGEN_LOCALS(g);
    int32_t N = op->p.wq.n, K = op->p.wq.k, GS = op->p.wq.group, G = K / GS, bits = op->p.wq.bits;
    int32_t RB = bits == 8 ? K : K / 2, EPC = bits == 8 ? 16 : 32;   /* weights per 16-byte chunk */
    /* KS warps share a set of WQ_R rows, warp w % KS taking every KS-th 512-byte stretch of them */
    int32_t KS = wq_split(k, op, RB), WR = WQ_WARPS / KS;
    /* x's row chunks as launch dimension 0, so that the work-groups of one set of weight rows run
     * side by side and read those rows from L2 (prefill: M / WQ_MB chunks); the row sets as
     * dimension 1 while their count fits its 65535 */
    bool mfirst = (N + WR * WQ_R - 1) / (WR * WQ_R) <= 65535;
    const char *rg = mfirst ? "get_group_id(1)" : "get_group_id(0)", *mg = mfirst ? "get_group_id(0)" : "get_group_id(1)";
    bool wide = RB % 16 == 0 && GS % EPC == 0;
    ttc_dtype xd = k->ts[op->in[0]].dtype;
    /* x's chunks as vectors where x's first element is 16-byte aligned as addressed (a tensor
     * bound at an offset into its storage need not be; EPC elements of x are 32 or 64 bytes in
     * fp16, 64 or 128 in fp32, so rows of K elements keep the alignment) */
    bool xvec_ok = xd == TTC_DTYPE_FLOAT16 || xd == TTC_DTYPE_FLOAT32;
    int32_t RM = WQ_R * WQ_MB;
    /* auto: calls of more than WQ_MMA_ROWS rows of x take the tensor-core form in the same
     * kernel (same work-group size and x row chunks; its ceil(N / 16) row sets are among the
     * GEMV's ceil(N / (WR * WQ_R))) */
    bool mma = ttc_kir_target(k)->wq_mma == 2 && wq_mma_ok(k, op) && mfirst;
    bool glu = op->p.wq.glu;
    /* WQ_PIPE: a pass's weight loads issued before the previous pass's products */
    bool pipe = ttc_kir_target(k)->wq_pipe;
    /* the row tests and weight rows of row c0 + r: the plain kernel's, or the gated ones */
    char ok[48], row[48], crow[48], cmin[48], cok[48];
    snprintf(ok, sizeof ok, glu ? "WQ_OK(c0 + r)" : "c0 + r < %d", N);
    snprintf(row, sizeof row, glu ? "WQ_ROW(c0 + r)" : "(c0 + r)");
    snprintf(crow, sizeof crow, glu ? "WQ_ROW(c0 + r)" : "c0 + r");
    snprintf(cmin, sizeof cmin, glu ? "WQ_ROW(c0 + r)" : "min(c0 + r, %d)", N - 1);
    snprintf(cok, sizeof cok, glu ? "WQ_OK(c0 + r)" : "c < %d", N);
    if (mma) TTC_TRY(ttc_codegen_ptx_prelude(src, k));
    ttc_kparams p;
    TTC_TRY(gpu_head(g, &p));
    if (glu) glu_rows(src, WR * WQ_R, N);
    ttc_sbuf_printf(src, "__kernel __attribute__((reqd_work_group_size(%d, 1, 1)))\nvoid %s(%s%s) {\n", WQ_WARPS * 32,
                    ks->name, ttc_kp_sig(&p), P);
    ttc_kp_free(&p);
    if (mma) {
        mma_decls(src, op);
        ttc_sbuf_printf(src, "    if (M > %d) {\n", WQ_MMA_ROWS);
        TTC_TRY(mma_body(g));
        ttc_sbuf_printf(src, "        return;\n    }\n");
    }
    ttc_sbuf_printf(src,
                    "    __local float red[%d * 33];\n"
                    "    int lane = get_local_id(0) & 31, w = get_local_id(0) >> 5, ws = w %% %d;\n"
                    "    int c0 = (%s * %d + w / %d) * %d, m0 = %s * %d;\n"
                    "    int mb = min(M - m0, %d);\n    float acc[%d], ss[%d];\n"
                    "    WQ_UNROLL for (int j = 0; j < %d; j++) acc[j] = 0.0f;\n"
                    "    WQ_UNROLL for (int i = 0; i < %d; i++) ss[i] = 0.0f;\n"
                    "    int xb = x_off + m0 * %d;\n",
                    WQ_WARPS * RM, KS, rg, WR, KS, WQ_R, mg, WQ_MB, WQ_MB, RM, WQ_MB, RM, WQ_MB, K);
    if (glu) ttc_sbuf_printf(src, "    if (WQ_OK(c0)) {\n");
    else ttc_sbuf_printf(src, "    if (c0 < %d) {\n", N);
    if (wide) {
        /* chunk ch of row c: weights [ch * EPC, ch * EPC + EPC), all of group ch * EPC / GS */
        ttc_sbuf_printf(src,
                        "        if (((size_t)(q + q_off) & 15) == 0) {\n"
                        "            __global const uint4 *qr = (__global const uint4 *)(q + q_off);\n"
                        "            bool xvec = %s;\n",
                        xvec_ok ? "((size_t)(x + xb) & 15) == 0" : "false");
        /* the chunks of a pass into u (pipe: the next pass's into un while u is used) */
        if (pipe) {
            ttc_sbuf_printf(src, "            uint4 u[%d];\n            {\n                int ch0 = ws * 32 + lane;\n", WQ_U * WQ_R);
            chunk_loads(src, WQ_U, WQ_R, KS, RB / 16, ok, row, "ch0", "u");
            ttc_sbuf_printf(src, "            }\n");
        }
        ttc_sbuf_printf(src, "            for (int ch0 = ws * 32 + lane; ch0 < %d; ch0 += %d) {\n", RB / 16, 32 * KS * WQ_U);
        if (pipe) {
            char nx[32];
            snprintf(nx, sizeof nx, "(ch0 + %d)", 32 * KS * WQ_U);
            ttc_sbuf_printf(src, "                uint4 un[%d];\n", WQ_U * WQ_R);
            chunk_loads(src, WQ_U, WQ_R, KS, RB / 16, ok, row, nx, "un");
        } else {
            ttc_sbuf_printf(src, "                uint4 u[%d];\n", WQ_U * WQ_R);
            chunk_loads(src, WQ_U, WQ_R, KS, RB / 16, ok, row, "ch0", "u");
        }
        ttc_sbuf_printf(src,
                        "                WQ_UNROLL for (int j = 0; j < %d; j++) {\n"
                        "                    int ch = ch0 + %d * j;\n"
                        "                    if (ch < %d) {\n"
                        "                    int k0 = ch * %d, gi = k0 / %d;\n"
                        "                    float s[%d], z[%d];\n"
                        "                    WQ_UNROLL for (int r = 0; r < %d; r++) {\n"
                        "                        int cr = %s;\n"
                        "                        s[r] = WQ_LS(sc, sc_off + cr * %d + gi);\n"
                        "                        z[r] = WQ_LZ(zp, zp_off + cr * %d + gi);\n"
                        "                    }\n"
                        "                    WQ_UNROLL for (int i = 0; i < %d; i++) {\n"
                        "                        if (i < mb) {\n"
                        "                        int xi = xb + i * %d + k0;\n"
                        "                        float xv[%d];\n",
                        WQ_U, 32 * KS, RB / 16, EPC, GS,
                        WQ_R, WQ_R, WQ_R, cmin, G, G, WQ_MB, K, EPC);
        load_x_chunk(src, xd, EPC, "                        ");
        /* rms: the row's sum of squares, then x times the norm's scale */
        if (op->p.wq.rms)
            ttc_sbuf_printf(src,
                            "                        WQ_UNROLL for (int e = 0; e < %d; e++) ss[i] += xv[e] * xv[e];\n"
                            "                        WQ_UNROLL for (int e = 0; e < %d; e++) xv[e] *= WQ_LG(nw, nw_off + k0 + e);\n",
                            EPC, EPC);
        /* x's sum only where zero points are subtracted (s * (a - 0 * xs) is s * a) */
        if (op->in[3] >= 0)
            ttc_sbuf_printf(src,
                            "                        float xs = 0.0f;\n"
                            "                        WQ_UNROLL for (int e = 0; e < %d; e++) xs += xv[e];\n",
                            EPC);
        ttc_sbuf_printf(src,
                        "                        WQ_UNROLL for (int r = 0; r < %d; r++) {\n"
                        "                            uint4 uu = u[j * %d + r];\n"
                        "                            float a = 0.0f;\n",
                        WQ_R, WQ_R);
        dot_chunk(src, bits, "                            ");
        ttc_sbuf_printf(src,
                        op->in[3] >= 0 ? "                            acc[r * %d + i] += s[r] * (a - z[r] * xs);\n"
                                       : "                            acc[r * %d + i] += s[r] * a;\n",
                        WQ_MB);
        ttc_sbuf_printf(src,
                        "                        }\n                        }\n                    }\n                    }\n"
                        "                }\n");
        if (pipe) ttc_sbuf_printf(src, "                WQ_UNROLL for (int e = 0; e < %d; e++) u[e] = un[e];\n", WQ_U * WQ_R);
        ttc_sbuf_printf(src, "            }\n        } else {\n");
    } else {
        ttc_sbuf_printf(src, "        {\n");
    }
    /* scalar: lane takes elements lane, lane + 32, ... of each row (each its own group's scale) */
    ttc_sbuf_printf(src,
                    "            WQ_UNROLL for (int r = 0; r < %d; r++) {\n"
                    "                int c = %s;\n                if (%s) {\n"
                    "                int rb = q_off + c * %d;\n"
                    "                for (int kk = ws * 32 + lane; kk < %d; kk += %d) {\n",
                    WQ_R, crow, cok, RB, K, 32 * KS);
    scalar_weight(src, bits, "                    ");
    ttc_sbuf_printf(src,
                    "                    int gi = kk / %d;\n"
                    "                    float s = WQ_LS(sc, sc_off + c * %d + gi), z = WQ_LZ(zp, zp_off + c * %d + gi);\n"
                    "                    float wd = (qv - z) * s;\n"
                    "                    WQ_UNROLL for (int i = 0; i < %d; i++)\n"
                    "                        if (i < mb) {\n"
                    "                            float xr = WQ_LX(x, xb + i * %d + kk);\n"
                    "%s"
                    "                            acc[r * %d + i] += wd * xr;\n"
                    "                        }\n"
                    "                }\n                }\n            }\n        }\n    }\n",
                    GS, G, G, WQ_MB, K,
                    op->p.wq.rms ? "                            if (r == 0) ss[i] += xr * xr;\n"
                                   "                            xr *= WQ_LG(nw, nw_off + kk);\n"
                                 : "",
                    WQ_MB);
    /* the 32 lanes' sums through local memory, rows 33 floats apart (no bank conflicts); split
     * rows then add their KS warps' sums (red2) */
    ttc_sbuf_printf(src, "    WQ_UNROLL for (int j = 0; j < %d; j++) red[(w * %d + j) * 33 + lane] = acc[j];\n", RM, RM);
    /* rms: the first row set's KS warps hold the sums of squares of all of K */
    if (op->p.wq.rms)
        ttc_sbuf_printf(src,
                        "    __local float rss[%d * 33], rl[%d];\n"
                        "    if (w < %d) WQ_UNROLL for (int i = 0; i < %d; i++) rss[(w * %d + i) * 33 + lane] = ss[i];\n",
                        KS * WQ_MB, WQ_MB, KS, WQ_MB, WQ_MB);
    ttc_sbuf_printf(src, "    barrier(CLK_LOCAL_MEM_FENCE);\n");
    if (KS > 1)
        ttc_sbuf_printf(src,
                        "    __local float red2[%d];\n"
                        "    for (int t = get_local_id(0); t < %d; t += %d) {\n"
                        "        float v = 0.0f;\n"
                        "        if ((t %% %d) %% %d < mb) for (int l = 0; l < 32; l++) v += red[t * 33 + l];\n"
                        "        red2[t] = v;\n    }\n"
                        "    barrier(CLK_LOCAL_MEM_FENCE);\n",
                        WQ_WARPS * RM, WQ_WARPS * RM, WQ_WARPS * 32, RM, WQ_MB);
    if (op->p.wq.rms)
        ttc_sbuf_printf(src,
                        "    if (get_local_id(0) < %d) {\n"
                        "        int i = get_local_id(0);\n        float v = 0.0f;\n"
                        "        for (int l = 0; l < %d; l++) v += rss[(l / 32 * %d + i) * 33 + l %% 32];\n"
                        "        rl[i] = rsqrt(v / %d.0f + %.9gf);\n    }\n"
                        "    barrier(CLK_LOCAL_MEM_FENCE);\n",
                        WQ_MB, 32 * KS, WQ_MB, K, op->p.wq.rms_eps);
    if (glu) {
        /* the pair (gate, up) of column jr: virtual rows o and H + o of the group (rms: each
         * scaled by its row of x's rsqrt(mean + eps) before the activation) */
        int32_t H = WR * WQ_R / 2, gh = op->p.wq.glu_hi ? 1 : 0;
        ttc_sbuf_printf(src,
                        "    for (int t = get_local_id(0); t < %d; t += %d) {\n"
                        "        int o = t / %d, i = t %% %d, jr = %s * %d + o;\n"
                        "        if (jr < %d && i < mb) {\n            float vh[2];\n"
                        "            WQ_UNROLL for (int h = 0; h < 2; h++) {\n"
                        "                int vr = o + h * %d, ww = vr / %d, j = (vr %% %d) * %d + i;\n"
                        "                float v = 0.0f;\n",
                        H * WQ_MB, WQ_WARPS * 32, WQ_MB, WQ_MB, rg, H, N / 2, H, WQ_R, WQ_R, WQ_MB);
        if (KS > 1)
            ttc_sbuf_printf(src, "                WQ_UNROLL for (int s = 0; s < %d; s++) v += red2[(ww * %d + s) * %d + j];\n",
                            KS, KS, RM);
        else
            ttc_sbuf_printf(src, "                for (int l = 0; l < 32; l++) v += red[(ww * %d + j) * 33 + l];\n", RM);
        if (op->p.wq.rms) ttc_sbuf_printf(src, "                v *= rl[i];\n");
        ttc_sbuf_printf(src, "                vh[h] = v;\n            }\n            float vg = vh[%d], vu = vh[%d];\n", gh,
                        1 - gh);
        TTC_TRY(glu_value(g, "            "));
        ttc_sbuf_printf(src, "            int lin = (m0 + i) * %d + jr;\n", N / 2);
        ttc_codegen_write_out(g, "v", "lin");
        ttc_sbuf_printf(src, "        }\n    }\n}\n#undef WQ_UNROLL\n#undef WQ_J\n#undef WQ_OK\n#undef WQ_ROW\n");
        unloaders(src);
        return gemv_grid(g, KS);
    }
    ttc_sbuf_printf(src,
                    "    for (int t = get_local_id(0); t < %d; t += %d) {\n"
                    "        int ww = t / %d, j = t %% %d, i = j %% %d;\n"
                    "        int cc = (%s * %d + ww) * %d + j / %d;\n"
                    "        if (cc < %d && i < mb) {\n            float v = 0.0f;\n",
                    WR * RM, WQ_WARPS * 32, RM, RM, WQ_MB, rg, WR, WQ_R, WQ_MB, N);
    if (KS > 1)
        ttc_sbuf_printf(src, "            WQ_UNROLL for (int s = 0; s < %d; s++) v += red2[(ww * %d + s) * %d + j];\n", KS,
                        KS, RM);
    else
        ttc_sbuf_printf(src, "            for (int l = 0; l < 32; l++) v += red[t * 33 + l];\n");
    if (op->p.wq.rms) ttc_sbuf_printf(src, "            v *= rl[i];\n");
    ttc_sbuf_printf(src, "            int lin = (m0 + i) * %d + cc;\n", N);
    ttc_codegen_write_out(g, "v", "lin");
    ttc_sbuf_printf(src, "        }\n    }\n}\n#undef WQ_UNROLL\n");
    unloaders(src);
    return gemv_grid(g, KS);
}

/* The GEMV's launch: ceil(M / WQ_MB) x ceil(N / (WR * WQ_R)) work-groups of WQ_WARPS * 32
 * work-items (the gated form: the same count, WR * WQ_R / 2 of the N / 2 columns a group) */
static ttc_status gemv_grid(const ttc_kgen *g, int32_t KS) {
    const ttc_kir *k = g->k;
    const ttc_kop *op = g->op;
    ttc_kspec *ks = g->ks;
    int32_t N = op->p.wq.n, WR = WQ_WARPS / KS;
    bool mfirst = (N + WR * WQ_R - 1) / (WR * WQ_R) <= 65535;
    int32_t di = mfirst ? 1 : 0, dm = mfirst ? 0 : 1;
    ttc_codegen_gdim(ks, 0, dm == 0 ? op->out : op->in[1], 0, dm == 0 ? k->ts[op->out].rank - 1 : 1,
                     dm == 0 ? WQ_MB : WR * WQ_R, WQ_WARPS * 32);
    ks->g[0].mul = WQ_WARPS * 32;
    ttc_codegen_gdim(ks, 1, di == 1 ? op->in[1] : op->out, 0, di == 1 ? 1 : k->ts[op->out].rank - 1,
                     di == 1 ? WR * WQ_R : WQ_MB, 1);
    ks->use_local = true;
    return TTC_OK;
}

/* The tensor-core form (TORCHTRT_C_WQ_MMA=1; x fp16, K and the group size multiples of 64): a
 * work-group of 4 warps computes 16 weight rows x 8 rows of x as one m16n8k16 f16 product
 * (ttc_mma_f16: the weight rows are the A operand, x's rows the B operand), the warps taking
 * every 4th 64-wide block of K and adding their sums through local memory at the end. Lane
 * (g = lane / 4, t = lane % 4) reads k0 + 16t .. + 15 of weight rows g and g + 8 (16 int8 bytes
 * or 8 bytes of int4) and of x's row g (32 bytes), dequantizes the weights ((q - z) * s, one
 * group a block) to halves, and feeds them as 4 products: in the s-th, its k pairs (2t, 2t+1) and
 * (2t+8, 2t+9) are physical k 16t + 4s + (0, 1) and (2, 3), the same permutation for both
 * operands, so the sums are the product's. Loop trip counts are uniform across the warps (the
 * prelude's emulation holds barriers). */
static bool wq_mma_ok(const ttc_kir *k, const ttc_kop *op) {
    int32_t N = op->p.wq.n, K = op->p.wq.k, GS = op->p.wq.group;
    return k->ts[op->in[0]].dtype == TTC_DTYPE_FLOAT16 && K % 64 == 0 && GS % 64 == 0 && (N + 15) / 16 <= 65535;
}

/* the 16 weights of row r at k (lane's share of a block) into f[] as ((q - z) * s), from 16
 * bytes (int8) or 8 bytes (int4) */
static void mma_weights(ttc_sbuf *src, int32_t bits, int32_t RB, const char *f, const char *r, const char *s,
                        const char *z) {
    if (bits == 8)
        ttc_sbuf_printf(src,
                        "        {\n            int o = q_off + %s * %d + k;\n            uint u[4];\n"
                        "            if (qvec) { uint4 v = *(__global const uint4 *)(q + o); u[0] = v.x; u[1] = v.y; u[2] = v.z; u[3] = v.w; }\n"
                        "            else WQ_UNROLL for (int e = 0; e < 4; e++)\n"
                        "                u[e] = (uint)(uchar)q[o + 4 * e] | ((uint)(uchar)q[o + 4 * e + 1] << 8) |\n"
                        "                       ((uint)(uchar)q[o + 4 * e + 2] << 16) | ((uint)(uchar)q[o + 4 * e + 3] << 24);\n"
                        "            WQ_UNROLL for (int j = 0; j < 16; j++)\n"
                        "                %s[j] = ((float)(char)((u[j >> 2] >> (8 * (j & 3))) & 255u) - %s) * %s;\n        }\n",
                        r, RB, f, z, s);
    else
        ttc_sbuf_printf(src,
                        "        {\n            int o = q_off + %s * %d + k / 2;\n            uint u[2];\n"
                        "            if (qvec) { uint2 v = *(__global const uint2 *)(q + o); u[0] = v.x; u[1] = v.y; }\n"
                        "            else WQ_UNROLL for (int e = 0; e < 2; e++)\n"
                        "                u[e] = (uint)q[o + 4 * e] | ((uint)q[o + 4 * e + 1] << 8) | ((uint)q[o + 4 * e + 2] << 16) |\n"
                        "                       ((uint)q[o + 4 * e + 3] << 24);\n"
                        "            WQ_UNROLL for (int j = 0; j < 16; j++)\n"
                        "                %s[j] = ((float)((u[j >> 3] >> (4 * (j & 7))) & 15u) - %s) * %s;\n        }\n",
                        r, RB, f, z, s);
}

/* rms: "rq", the scale rsqrt(mean + eps) of chunk c's x row rr (an expression) from its 16
 * partial sums of squares (4 lanes t x 4 warps' K blocks) in mss. */
static void mma_row_scale(ttc_sbuf *src, const ttc_kop *op, const char *rr) {
    ttc_sbuf_printf(src,
                    "            float rq = 0.0f;\n"
                    "            WQ_UNROLL for (int u = 0; u < 16; u++) rq += mss[(c * 4 + (u >> 2)) * 32 + (%s) * 4 + (u & 3)];\n"
                    "            rq = rsqrt(rq / %d.0f + %.9gf);\n",
                    rr, op->p.wq.k, op->p.wq.rms_eps);
}

/* The tensor-core form's __local arrays (at the kernel's scope). */
static void mma_decls(ttc_sbuf *src, const ttc_kop *op) {
    ttc_sbuf_printf(src, "    TTC_PTX_SCRATCH(scr, 4);\n    __local float mred[%d * 4 * 32 * 4];\n", WQ_MMA_XC);
    if (op->p.wq.rms) ttc_sbuf_printf(src, "    __local float mss[%d * 4 * 32];\n", WQ_MMA_XC);
}

/* The tensor-core form's work: weight rows get_group_id(1) * 16 .. + 15 times x's rows
 * get_group_id(0) * 8 * WQ_MMA_XC .. (WQ_MMA_XC chunks of 8, each weight block dequantized once
 * for all of them); work-groups past N's rows or M's do nothing. */
static ttc_status mma_body(const ttc_kgen *g) {
    TTC_KGEN_LOCALS(g);
    (void)ks;
    (void)P;
    int32_t N = op->p.wq.n, K = op->p.wq.k, GS = op->p.wq.group, G = K / GS, bits = op->p.wq.bits;
    int32_t RB = bits == 8 ? K : K / 2, NB = K / 64, XC = WQ_MMA_XC;
    /* gated (p.wq.glu): a group's rows g are columns c0 + g of the first half of the weights,
     * its rows g + 8 the same columns of the second half (N / 2 rows on) */
    bool glu = op->p.wq.glu;
    char rows[384];
    if (glu)
        snprintf(rows, sizeof rows,
                 "    int c0 = get_group_id(1) * 8, m0 = get_group_id(0) * %d, nc = min(%d, (M - m0 + 7) / 8);\n"
                 "    int ra = min(c0 + g, %d), rb = min(c0 + g + %d, %d);\n"
                 "    bool va = c0 + g < %d, vb = va;\n",
                 8 * XC, XC, N - 1, N / 2, N - 1, N / 2);
    else
        snprintf(rows, sizeof rows,
                 "    int c0 = get_group_id(1) * 16, m0 = get_group_id(0) * %d, nc = min(%d, (M - m0 + 7) / 8);\n"
                 "    int ra = min(c0 + g, %d), rb = min(c0 + g + 8, %d);\n"
                 "    bool va = c0 + g < %d, vb = c0 + g + 8 < %d;\n",
                 8 * XC, XC, N - 1, N - 1, N, N);
    ttc_sbuf_printf(src,
                    "    if (get_group_id(1) * 16 < %d && get_group_id(0) * %d < M) {\n"
                    "    int lane = ttc_lane(), w = ttc_warp(), g = lane >> 2, t = lane & 3;\n"
                    "%s"
                    "    bool qvec = ((size_t)(q + q_off) & %d) == 0, xvec = ((size_t)(x + x_off) & 15) == 0;\n"
                    "    float acc[%d], ss[%d];\n"
                    "    WQ_UNROLL for (int i = 0; i < %d; i++) acc[i] = 0.0f;\n"
                    "    WQ_UNROLL for (int i = 0; i < %d; i++) ss[i] = 0.0f;\n"
                    "    for (int kb0 = 0; kb0 < %d; kb0 += 4) {\n"
                    "        bool kv = kb0 + w < %d;\n"
                    "        int k = (kv ? kb0 + w : 0) * 64 + 16 * t, gi = k / %d;\n"
                    "        float sa = kv && va ? WQ_LS(sc, sc_off + ra * %d + gi) : 0.0f, za = WQ_LZ(zp, zp_off + ra * %d + gi);\n"
                    "        float sb = kv && vb ? WQ_LS(sc, sc_off + rb * %d + gi) : 0.0f, zb = WQ_LZ(zp, zp_off + rb * %d + gi);\n"
                    "        float fa[16], fb[16];\n",
                    N, 8 * XC, rows, bits == 8 ? 15 : 7, 4 * XC, XC, 4 * XC, XC, NB, NB, GS, G, G, G, G);
    mma_weights(src, bits, RB, "fa", "ra", "sa", "za");
    mma_weights(src, bits, RB, "fb", "rb", "sb", "zb");
    /* rms: the norm's weight g[k] folded into the weights (x . (g W) = (x g) . W) */
    if (op->p.wq.rms)
        ttc_sbuf_printf(src,
                        "        WQ_UNROLL for (int j = 0; j < 16; j++) {\n"
                        "            float gk = kv ? WQ_LG(nw, nw_off + k + j) : 0.0f;\n"
                        "            fa[j] *= gk;\n            fb[j] *= gk;\n        }\n");
    char mss_line[128];
    snprintf(mss_line, sizeof mss_line, "    WQ_UNROLL for (int c = 0; c < %d; c++) mss[(c * 4 + w) * 32 + lane] = ss[c];\n", XC);
    ttc_sbuf_printf(src,
                    "        uint wa[8], wb[8];\n"
                    "        WQ_UNROLL for (int i = 0; i < 8; i++) { wa[i] = ttc_f2h2(fa[2 * i], fa[2 * i + 1]); wb[i] = ttc_f2h2(fb[2 * i], fb[2 * i + 1]); }\n"
                    "        WQ_UNROLL for (int c = 0; c < %d; c++) {\n"
                    "            if (c < nc) {\n"
                    "            uint xh[8];\n"
                    "            int xm = min(m0 + 8 * c + g, M - 1);\n"
                    "            int xo = x_off + xm * %d + k;\n"
                    "            if (!(kv && m0 + 8 * c + g < M)) WQ_UNROLL for (int i = 0; i < 8; i++) xh[i] = 0u;\n"
                    "            else if (xvec) {\n"
                    "                uint4 v0 = *(__global const uint4 *)(x + xo), v1 = *(__global const uint4 *)(x + xo + 8);\n"
                    "                xh[0] = v0.x; xh[1] = v0.y; xh[2] = v0.z; xh[3] = v0.w; xh[4] = v1.x; xh[5] = v1.y; xh[6] = v1.z; xh[7] = v1.w;\n"
                    "            } else WQ_UNROLL for (int i = 0; i < 8; i++) xh[i] = ttc_f2h2(WQ_LX(x, xo + 2 * i), WQ_LX(x, xo + 2 * i + 1));\n"
                    "%s"
                    "            WQ_UNROLL for (int s = 0; s < 4; s++) {\n"
                    "                uint a[4] = {wa[2 * s], wb[2 * s], wa[2 * s + 1], wb[2 * s + 1]}, b[2] = {xh[2 * s], xh[2 * s + 1]};\n"
                    "                ttc_mma_f16(acc + 4 * c, a, b, scr);\n"
                    "            }\n"
                    "            }\n"
                    "        }\n    }\n"
                    "    WQ_UNROLL for (int i = 0; i < %d; i++) mred[(w * 32 + lane) * %d + i] = acc[i];\n"
                    "%s"
                    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
                    "    for (int c = w; c < nc; c += 4) {\n",
                    XC, K,
                    /* rms: the sums of squares of x's row (lane g's, over t and the warps' K blocks) */
                    op->p.wq.rms ? "            WQ_UNROLL for (int i = 0; i < 8; i++) {\n"
                                   "                float lo = ttc_h2f(xh[i]), hi = ttc_h2f(xh[i] >> 16);\n"
                                   "                ss[c] += lo * lo + hi * hi;\n            }\n"
                                 : "",
                    4 * XC, 4 * XC,
                    op->p.wq.rms ? mss_line : "");
    if (glu) {
        /* acc 4c + r of a lane: rows g (r < 2) and g + 8, x's rows m0 + 8c + 2t + (r & 1); rms:
         * both scaled by their row of x's rsqrt(mean + eps) before the activation */
        int32_t gh = op->p.wq.glu_hi ? 2 : 0;
        ttc_sbuf_printf(src,
                        "        float vr[4];\n"
                        "        WQ_UNROLL for (int r = 0; r < 4; r++) {\n"
                        "            int i = 4 * c + r;\n"
                        "            vr[r] = mred[lane * %d + i] + mred[(32 + lane) * %d + i] + mred[(64 + lane) * %d + i] + mred[(96 + lane) * %d + i];\n"
                        "        }\n"
                        "        WQ_UNROLL for (int r = 0; r < 2; r++) {\n"
                        "            int n = c0 + g, m = m0 + 8 * c + 2 * t + r;\n"
                        "            float vg = vr[r + %d], vu = vr[r + %d];\n",
                        4 * XC, 4 * XC, 4 * XC, 4 * XC, gh, 2 - gh);
        if (op->p.wq.rms) {
            mma_row_scale(src, op, "2 * t + r");
            ttc_sbuf_printf(src, "            vg *= rq;\n            vu *= rq;\n");
        }
        ttc_sbuf_printf(src, "            if (n < %d && m < M) {\n", N / 2);
        TTC_TRY(glu_value(g, "                "));
        ttc_sbuf_printf(src, "                int lin = m * %d + n;\n", N / 2);
        ttc_codegen_write_out(g, "v", "lin");
        ttc_sbuf_printf(src, "            }\n        }\n    }\n    }\n");
        return TTC_OK;
    }
    ttc_sbuf_printf(src,
                    "        WQ_UNROLL for (int r = 0; r < 4; r++) {\n"
                    "            int i = 4 * c + r;\n"
                    "            float v = mred[lane * %d + i] + mred[(32 + lane) * %d + i] + mred[(64 + lane) * %d + i] + mred[(96 + lane) * %d + i];\n"
                    "            int n = c0 + g + (r >> 1) * 8, m = m0 + 8 * c + 2 * t + (r & 1);\n",
                    4 * XC, 4 * XC, 4 * XC, 4 * XC);
    if (op->p.wq.rms) {
        mma_row_scale(src, op, "2 * t + (r & 1)");
        ttc_sbuf_printf(src, "            v *= rq;\n");
    }
    ttc_sbuf_printf(src, "            if (n < %d && m < M) {\n                int lin = m * %d + n;\n", N, N);
    ttc_codegen_write_out(g, "v", "lin");
    ttc_sbuf_printf(src, "            }\n        }\n    }\n    }\n");
    return TTC_OK;
}

static ttc_status gen_wq_mma(const ttc_kgen *g) {
    TTC_KGEN_LOCALS(g);
    TTC_TRY(ttc_codegen_ptx_prelude(src, k));
    ttc_kparams p;
    TTC_TRY(gpu_head(g, &p));
    ttc_sbuf_printf(src, "__kernel __attribute__((reqd_work_group_size(128, 1, 1)))\nvoid %s(%s%s) {\n", ks->name,
                    ttc_kp_sig(&p), P);
    ttc_kp_free(&p);
    mma_decls(src, op);
    TTC_TRY(mma_body(g));
    ttc_sbuf_printf(src, "}\n#undef WQ_UNROLL\n");
    unloaders(src);
    /* ceil(M / (8 * WQ_MMA_XC)) x ceil(N / 16) work-groups of 4 warps: x's row chunks first (L2 reuse) */
    ttc_codegen_gdim(ks, 0, op->out, 0, k->ts[op->out].rank - 1, 8 * WQ_MMA_XC, 128);
    ks->g[0].mul = 128;
    ttc_codegen_gdim(ks, 1, op->in[1], 0, 1, 16, 1);
    ks->use_local = true;
    return TTC_OK;
}

ttc_status ttc_gen_wq_linear(const ttc_kgen *g) {
    const ttc_kop *op = g->op;
    int32_t K = op->p.wq.k, GS = op->p.wq.group;
    if (GS < 1 || K % GS != 0 || (op->p.wq.bits != 8 && op->p.wq.bits != 4) || op->p.wq.n < 1)
        return ttc_fail(TTC_ERR_INTERNAL, "wq_linear %s: K %d, group %d, bits %d", op->name, K, GS, op->p.wq.bits);
    if (op->p.wq.glu && !op->p.wq.gemv)   /* fuse_gated_wq fuses GPU-family GEMVs only */
        return ttc_fail(TTC_ERR_INTERNAL, "wq_linear %s: gated form without the GEMV", op->name);
    if (op->p.wq.gemv && ttc_kir_target(g->k)->wq_mma == 1 && wq_mma_ok(g->k, op)) return gen_wq_mma(g);
    return op->p.wq.gemv ? gen_gemv(g) : gen_portable(g);
}
