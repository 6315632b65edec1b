/* Code generation for convolution, reductions, softmax, normalisation and pooling: each
 * is a template from csrc/kernels/ specialised with #defines (static parameters baked
 * in, sizes as kernel arguments). */
#include "codegen_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void num(char *buf, size_t cap, int64_t v) { snprintf(buf, cap, "%lld", (long long)v); }


/* Implicit-GEMM tile shapes {TM, TN, TK, RM, RN}: 8x8 micro tiles first (half the local
 * reads per multiply-add of 4x4 ones), then 4x4 ones for problems too small to give the
 * 8x8 tiles enough work-groups. Each keeps TK*TM/4 and TK*TN multiples of the work-group
 * size and the work-group size a multiple of TN (see conv2d_igemm.cl). */
#define CONV_TILES 8
#define CONV_TILES_8X8 4
static const int32_t conv_tiles[CONV_TILES][5] = {
    {128, 128, 8, 8, 8}, {128, 64, 16, 8, 8}, {64, 128, 16, 8, 8}, {64, 64, 16, 8, 8},
    {64, 64, 16, 4, 4}, {64, 32, 16, 4, 4}, {32, 32, 16, 4, 4}, {64, 16, 16, 4, 4},
};

static int64_t dim_opt(const ttc_kir *k, ttc_dim d) {
    if (d.sym < 0 || d.sym >= k->n_syms) return d.add;
    return d.mul * k->syms[d.sym].opt + d.add;
}

/* At the symbols' opt values. Big problems (>= 1M outputs, no split-K: batch 32 ResNets)
 * get the first 8x8 tile giving a work-group per SM of a big GPU (132) with at least 70% of
 * the tile doing useful work. Small ones (batch 1, split-K), where on the H200 the 8x8
 * tiles and double buffering measured slower, get the first of 128x128 and the 4x4 tiles
 * giving two work-groups per SM, else 32x32 (64x16 for very few pixels). S: split-K slices.
 * TORCHTRT_C_CONV_TILE=<index> forces one (tests cover every shape that way);
 * TORCHTRT_C_CONV_TILES=v1 applies the small-problem rule everywhere (A/B measurements). */
static bool conv_big(const ttc_kir *k, int64_t G, int64_t OCG, int64_t NPQ, int64_t S) {
    return S == 1 && G * OCG * NPQ >= (1 << 20) && !ttc_kir_target(k)->conv_tiles_v1;
}

static int32_t conv_tile_choice(const ttc_kir *k, int64_t G, int64_t OCG, int64_t NPQ, int64_t S) {
    int32_t f = ttc_kir_target(k)->conv_tile;
    if (f >= 0 && f < CONV_TILES) return f;
    bool v1 = !conv_big(k, G, OCG, NPQ, S);
    for (int32_t t = 0; t < CONV_TILES - 2; t++) {
        const int32_t *c = conv_tiles[t];
        if (OCG < c[0] / 2 || (v1 && t > 0 && t < CONV_TILES_8X8)) continue;
        int64_t mt = (OCG + c[0] - 1) / c[0], nt = (NPQ + c[1] - 1) / c[1];
        int64_t wgs = G * S * mt * nt;
        bool full = 10 * OCG * NPQ >= 7 * mt * c[0] * nt * c[1];
        if (t < CONV_TILES_8X8 && !v1 ? (full && wgs >= 132) : wgs >= 264) return t;
    }
    return NPQ <= 16 ? CONV_TILES - 1 : CONV_TILES - 2;
}

void ttc_codegen_conv_params(ttc_kparams *p, const ttc_kop *op, int32_t w) {
    ttc_kp_buffer(p, op->in[0], "X", "offX");
    ttc_kp_buffer(p, w, "W", "offW");
    ttc_kp_int(p, TTC_ARG_DIM, op->in[0], 2, 0, 0, "H");
    ttc_kp_int(p, TTC_ARG_DIM, op->in[0], 3, 0, 0, "Wd");
    ttc_kp_int(p, TTC_ARG_DIM, op->out, 2, 0, 0, "OH");
    ttc_kp_int(p, TTC_ARG_DIM, op->out, 3, 0, 0, "OW");
}

static ttc_status gen_conv_igemm(const ttc_kgen *g) {
    TTC_KGEN_LOCALS(g);
    const ttc_et *x = &k->ts[op->in[0]], *w = &k->ts[op->in[2]], *out = &k->ts[op->out];
    int32_t G = op->p.conv.groups;
    int64_t C = x->dims[1].add, OC = out->dims[1].add, ICG = C / G, OCG = OC / G, OCG4 = (OCG + 3) / 4 * 4;
    int64_t S = op->p.conv.ksplit > 1 ? op->p.conv.ksplit : 1;
    int64_t NPQ = dim_opt(k, out->dims[0]) / S * dim_opt(k, out->dims[2]) * dim_opt(k, out->dims[3]);
    const int32_t *c = conv_tiles[conv_tile_choice(k, G, OCG, NPQ, S)];
    /* K slices: whole TK blocks */
    int64_t KT = ICG * op->p.conv.k[0] * op->p.conv.k[1], KSL = ((KT + S - 1) / S + c[2] - 1) / c[2] * c[2];
    int32_t nt = (c[0] / c[3]) * (c[1] / c[4]);
    int64_t MT = (OCG + c[0] - 1) / c[0];
    bool pw1 = op->p.conv.k[0] == 1 && op->p.conv.k[1] == 1 && op->p.conv.stride[0] == 1 &&
               op->p.conv.stride[1] == 1 && op->p.conv.pad[0] == 0 && op->p.conv.pad[1] == 0;
    char v[24][24];
    int64_t vals[24] = {S, KSL, C, OC, ICG, OCG, OCG4, MT, op->p.conv.k[0], op->p.conv.k[1], op->p.conv.stride[0],
                        op->p.conv.stride[1], op->p.conv.pad[0], op->p.conv.pad[1], op->p.conv.dil[0],
                        op->p.conv.dil[1], pw1, c[0], c[1], c[2], c[3], c[4]};
    for (int i = 0; i < 22; i++) num(v[i], 24, vals[i]);
    num(v[22], 24, !pw1 && ICG % c[2] == 0);
    int32_t db = ttc_kir_target(k)->conv_double_buffer;  /* TORCHTRT_C_CONV_DB: force single/double */
    num(v[23], 24, db >= 0 ? db : conv_big(k, G, OCG, NPQ, S));
    char store[32];
    snprintf(store, sizeof store, "%s_store", ks->name);
    ttc_codegen_loader(src, g->sp, "LDX", x->dtype, false);
    if (w->dtype == TTC_DTYPE_FLOAT16) ttc_sbuf_printf(src, "#define LDW4(p,i) vload_half4(0, (p) + (i))\n");
    else ttc_sbuf_printf(src, "#define LDW4(p,i) vload4(0, (p) + (i))\n");
    const char *defs[] = {"KNAME", ks->name, "STORE_FN", store, "EPI_PARAMS", P, "EPI_ARGS", A_,
                          "TX", ttc_cl_storage_type(x->dtype), "TW", ttc_cl_storage_type(w->dtype),
                          "KSPLIT", v[0], "KSL", v[1], "C", v[2], "OC", v[3], "ICG", v[4], "OCG", v[5],
                          "OCG4", v[6], "MT", v[7], "KH", v[8], "KW", v[9], "SH", v[10], "SW", v[11], "PH", v[12],
                          "PW", v[13], "DH", v[14], "DW", v[15], "PW1", v[16], "TM", v[17], "TN", v[18], "TK", v[19],
                          "RM", v[20], "RN", v[21], "KBLK", v[22], "DB", v[23], NULL};
    TTC_TRY(ttc_codegen_conv_splitk(src, k, ks, op, "conv2d_igemm", defs, S, OC, c[1], nt, G * MT));
    ttc_sbuf_printf(src, "#undef LDX\n#undef LDW4\n");
    return TTC_OK;
}

ttc_status ttc_codegen_conv_splitk(ttc_sbuf *src, const ttc_kir *k, ttc_kspec *ks, const ttc_kop *op, const char *tmpl,
                                   const char *const *defs, int64_t S, int64_t OC, int32_t tile_n, int32_t nt,
                                   int64_t groups) {
    ttc_kparams p;
    ttc_kp_init(&p, k, ks, false);
    ttc_codegen_conv_params(&p, op, op->in[2]);
    ttc_kp_int(&p, TTC_ARG_PROD, op->out, 0, 1, -S, "NB_");  /* batch */
    ttc_status s = ttc_codegen_template_checked(src, tmpl, defs, &p);
    ttc_kp_free(&p);
    TTC_TRY(s);
    /* dim 0: ceil(N*OH*OW / tile_n) work-groups of nt (the output holds S*N images: divide
     * S*N*OC*OH*OW by S * OC * tile_n), rounded up to nt; dim 1: groups; dim 2: S */
    ttc_codegen_gdim(ks, 0, op->out, 0, 4, (int32_t)(S * OC * tile_n), nt);
    ks->g[0].mul = nt;
    ttc_codegen_gdim(ks, 1, op->out, 0, 0, 1, 1);
    ks->g[1].mul = (int32_t)groups;
    ttc_codegen_gdim(ks, 2, op->out, 0, 0, 1, 1);
    ks->g[2].mul = (int32_t)S;
    ks->use_local = true;
    return TTC_OK;
}

/* Convolution kernels: GPUs (or any device when TORCHTRT_C_KERNELS=gpu, so that CPU CI
 * covers the GPU family) get implicit GEMM (conv2d_igemm) and a depthwise kernel
 * (conv2d_dw); CPUs get the pixel-vector kernel (codegen_conv_cpu.c), the depthwise one,
 * or (TORCHTRT_C_CONV_CPU=ocb8) the 8-channel blocked or direct kernel. Convolutions marked for
 * tensor cores get conv2d_mma (codegen_conv_mma.c) on any device. */
ttc_status ttc_gen_conv(const ttc_kgen *g) {
    TTC_KGEN_LOCALS(g);
    bool gpu = g->gpu || ttc_codegen_gpu_forced(k);
    int32_t G = op->p.conv.groups;
    int64_t C0 = k->ts[op->in[0]].dims[1].add;
    bool depthwise = G > 1 && C0 == G;
    /* tensor cores (chosen at conversion, conv_nn.c) */
    if (op->p.conv.mma && op->in[2] >= 0) return ttc_gen_conv_mma(g);
    /* CPU devices: the pixel-vector kernel (codegen_conv_cpu.c; split-K partials too) */
    if (!gpu && !depthwise && ttc_conv_cpu_enabled(k)) return ttc_gen_conv_cpu(g);
    /* GPUs; split-K partials also on CPUs when the pixel-vector kernel is switched off */
    if ((gpu || op->p.conv.ksplit > 1) && !depthwise && op->in[2] >= 0) return gen_conv_igemm(g);
    bool blocked = op->p.conv.ocb == 8 && op->in[3] >= 0 && !gpu;
    bool dw = depthwise && !blocked;
    int32_t wid = blocked ? op->in[3] : op->in[1];
    const ttc_et *x = &k->ts[op->in[0]], *w = &k->ts[wid], *out = &k->ts[op->out];
    int64_t C = x->dims[1].add, OC = out->dims[1].add;
    int64_t ICG = C / G, OCG = OC / G;
    char v[20][24];
    num(v[0], 24, C); num(v[1], 24, OC); num(v[2], 24, ICG); num(v[3], 24, OCG);
    num(v[4], 24, op->p.conv.k[0]); num(v[5], 24, op->p.conv.k[1]);
    num(v[6], 24, op->p.conv.stride[0]); num(v[7], 24, op->p.conv.stride[1]);
    num(v[8], 24, op->p.conv.pad[0]); num(v[9], 24, op->p.conv.pad[1]);
    num(v[10], 24, op->p.conv.dil[0]); num(v[11], 24, op->p.conv.dil[1]);
    num(v[12], 24, G); num(v[13], 24, (OCG + 7) / 8);
    /* outputs per depthwise work-item: 4 along W, fewer for narrow rows */
    int32_t owb = dw ? (out->dims[3].sym < 0 && out->dims[3].add < 4 ? (int32_t)out->dims[3].add : 4) : 1;
    if (owb < 1) owb = 1;
    num(v[14], 24, owb);
    /* GPUs: stride-1 depthwise layers with static planes take the column kernel
     * (conv2d_dw_col.cl; TORCHTRT_C_DW=rows: not), OHB outputs down a column per work-item:
     * the OHB in 8..4 that wastes the fewest rows of the last block (all of them when OH is
     * smaller) */
    const ttc_et *odt = &k->ts[op->out];
    bool col = dw && gpu && !ttc_kir_target(k)->dw_rows && op->p.conv.stride[0] == 1 && op->p.conv.dil[0] == 1 && odt->dims[2].sym < 0 &&
               odt->dims[3].sym < 0 && odt->dims[2].add > 0 && odt->dims[3].add > 0;
    int64_t ohb = 0, OHc = col ? odt->dims[2].add : 0;
    if (col) {
        if (OHc <= 8) ohb = OHc;
        else
            for (int64_t b = 8; b >= 4; b--)
                if (!ohb || (OHc + b - 1) / b * b - OHc < (OHc + ohb - 1) / ohb * ohb - OHc) ohb = b;
    }
    /* two columns a work-item on rows of 16 or more */
    int64_t owc = col && odt->dims[3].add >= 16 ? 2 : 1;
    char ohbs[24], owcs[24];
    num(ohbs, 24, ohb);
    num(owcs, 24, owc);
    char store[32];
    snprintf(store, sizeof store, "%s_store", ks->name);
    ttc_codegen_loader(src, g->sp, "LDX", x->dtype, false);
    ttc_codegen_loader(src, g->sp, blocked ? "LDW8" : "LDW", w->dtype, blocked);
    const char *defs[] = {"KNAME", ks->name, "STORE_FN", store, "EPI_PARAMS", P, "EPI_ARGS", A_,
                          "TX", ttc_cl_storage_type(x->dtype), "TW", ttc_cl_storage_type(w->dtype),
                          "C", v[0], "OC", v[1], "ICG", v[2], "OCG", v[3], "KH", v[4], "KW", v[5], "SH", v[6],
                          "SW", v[7], "PH", v[8], "PW", v[9], "DH", v[10], "DW", v[11], "G", v[12], "NOB", v[13],
                          "OWB", v[14], col ? "OHB" : NULL, ohbs, "OWC", owcs, NULL};
    ttc_kparams p;
    ttc_kp_init(&p, k, ks, false);
    ttc_codegen_conv_params(&p, op, wid);
    if (dw) ttc_kp_int(&p, TTC_ARG_PROD, op->out, 0, 2, 0, "NZ");
    ttc_status s = ttc_codegen_template_checked(
        src, blocked ? "conv2d_ocb8" : col ? "conv2d_dw_col" : dw ? "conv2d_dw" : "conv2d_direct", defs, &p);
    ttc_kp_free(&p);
    TTC_TRY(s);
    ttc_sbuf_printf(src, "#undef LDX\n#undef %s\n", blocked ? "LDW8" : "LDW");
    ttc_codegen_gdim(ks, 0, op->out, 3, 4, blocked ? 4 : owb, 0);
    ttc_codegen_gdim(ks, 1, op->out, 2, 3, 1, 0);
    if (blocked) {
        ttc_codegen_gdim(ks, 2, op->out, 0, 1, 1, 0);
        ks->g[2].mul = (int32_t)(G * ((OCG + 7) / 8));
    } else {
        ttc_codegen_gdim(ks, 2, op->out, 0, 2, 1, 0);
    }
    if (col) {
        /* a whole row of columns when it fits a warp (else the largest divisor of OW up to 32,
         * at least 16), then blocks of rows up to about 128 work-items, then channels */
        int64_t nw = (odt->dims[3].add + owc - 1) / owc, nb = (OHc + ohb - 1) / ohb;
        int32_t l0 = nw <= 32 ? (int32_t)nw : 32, l1 = 1, l2 = 1;
        if (nw > 32)
            for (int32_t d = 32; d >= 16; d--)
                if (nw % d == 0) { l0 = d; break; }
        while (l0 * l1 * 2 <= 128 && l1 < nb) l1 *= 2;
        while (l0 * l1 * l2 * 2 <= 128 && l2 < 16) l2 *= 2;
        ttc_codegen_gdim(ks, 0, op->out, 3, 4, (int32_t)owc, l0);
        ttc_codegen_gdim(ks, 1, op->out, 2, 3, (int32_t)ohb, l1);
        ks->g[2].local = l2;
        ks->use_local = true;
    } else if (dw && gpu) {
        /* about 128 work-items: a row span of outputs, then rows, then channels */
        int64_t n0 = out->dims[3].sym < 0 ? (out->dims[3].add + owb - 1) / owb : 16;
        int64_t n1 = out->dims[2].sym < 0 ? out->dims[2].add : 8;
        int32_t l0 = 1, l1 = 1, l2 = 1;
        while (l0 < 32 && l0 < n0) l0 *= 2;
        while (l0 * l1 < 128 && l1 < n1) l1 *= 2;
        while (l0 * l1 * l2 < 128 && l2 < 16) l2 *= 2;
        ks->g[0].local = l0;
        ks->g[1].local = l1;
        ks->g[2].local = l2;
        ks->use_local = true;
    }
    return TTC_OK;
}

/* Work-group size for a one-work-group-per-row kernel over rows of n elements (-1: not
 * known when building): about 4 elements per work-item, a power of two in [32, 256]. */
static int32_t row_group_size(int64_t n) {
    if (n < 0) return 128;
    int32_t ls = 32;
    while (ls < 256 && (int64_t)ls * 4 < n) ls *= 2;
    return ls;
}

/* Product of dims [from, to) of tensor t when all are concrete, else -1. */
static int64_t static_prod(const ttc_et *t, int32_t from, int32_t to) {
    int64_t n = 1;
    for (int32_t d = from; d < to; d++) {
        if (t->dims[d].sym >= 0) return -1;
        n *= t->dims[d].add;
    }
    return n;
}

ttc_status ttc_gen_softmax(const ttc_kgen *g) {
    TTC_KGEN_LOCALS(g);
    const ttc_et *x = &k->ts[op->in[0]];
    int32_t d = op->p.softmax.dim, R = x->rank;
    char store[32];
    snprintf(store, sizeof store, "%s_store", ks->name);
    ttc_codegen_loader(src, g->sp, "LDX", x->dtype, false);
    ttc_kparams p;
    ttc_kp_init(&p, k, ks, false);
    ttc_kp_buffer(&p, op->in[0], "X", "offX");
    ttc_kp_int(&p, TTC_ARG_DIM, op->in[0], d, 0, 0, "D");
    ttc_status s;
    if ((g->gpu || ttc_codegen_gpu_forced(k)) && static_prod(x, d + 1, R) == 1) {
        /* rows contiguous (softmax over the last dim, as in attention): a work-group per row */
        char ls[8];
        int32_t L = row_group_size(x->dims[d].sym < 0 ? x->dims[d].add : -1);
        snprintf(ls, sizeof ls, "%d", L);
        const char *wdefs[] = {"KNAME", ks->name, "STORE_FN", store, "EPI_PARAMS", P, "EPI_ARGS", A_,
                               "TX", ttc_cl_storage_type(x->dtype), "LOG", op->p.softmax.log ? "1" : "0",
                               "LS", ls, NULL};
        const char *none[] = {NULL};
        ttc_kp_int(&p, TTC_ARG_PROD, op->in[0], 0, d, 0, "rows");
        s = ttc_codegen_template(src, "rowred", none);
        if (s == TTC_OK) s = ttc_codegen_template_checked(src, "softmax_wg", wdefs, &p);
        ttc_kp_free(&p);
        TTC_TRY(s);
        ttc_sbuf_printf(src, "#undef LDX\n");
        ttc_codegen_gdim(ks, 0, op->in[0], 0, d, 1, L);
        ks->g[0].mul = L;
        ks->use_local = true;
        return TTC_OK;
    }
    const char *defs[] = {"KNAME", ks->name, "STORE_FN", store, "EPI_PARAMS", P, "EPI_ARGS", A_,
                          "TX", ttc_cl_storage_type(x->dtype), "LOG", op->p.softmax.log ? "1" : "0", NULL};
    ttc_kp_int(&p, TTC_ARG_PROD, op->in[0], d + 1, R, 0, "inner");
    s = ttc_codegen_template_checked(src, "softmax", defs, &p);
    ttc_kp_free(&p);
    TTC_TRY(s);
    ttc_sbuf_printf(src, "#undef LDX\n");
    ttc_codegen_gdim(ks, 0, op->in[0], d + 1, R, 1, 0);
    ttc_codegen_gdim(ks, 1, op->in[0], 0, d, 1, 0);
    return TTC_OK;
}

/* A kernel parameter list (", __global half *o_, int o_off, ...") with its pointers restrict
 * ("__global half *restrict o_"); NULL when out of memory. */
static char *restrict_params(const char *P) {
    size_t n = strlen(P), stars = 0;
    for (size_t i = 0; i < n; i++) stars += P[i] == '*';
    char *r = malloc(n + stars * 9 + 1), *o = r;
    if (!r) return NULL;
    for (size_t i = 0; i < n; i++) {
        *o++ = P[i];
        if (P[i] == '*') { memcpy(o, "restrict ", 9); o += 9; }
    }
    *o = 0;
    return r;
}

ttc_status ttc_gen_norm(const ttc_kgen *g) {
    TTC_KGEN_LOCALS(g);
    const ttc_et *x = &k->ts[op->in[0]];
    int32_t R = x->rank, from = op->p.norm.axis_from;
    bool hw = op->in[1] >= 0, hb = op->in[2] >= 0;
    ttc_dtype wd = hw ? k->ts[op->in[1]].dtype : hb ? k->ts[op->in[2]].dtype : TTC_DTYPE_FLOAT32;
    char store[32], eps[40], ls[8];
    snprintf(store, sizeof store, "%s_store", ks->name);
    snprintf(eps, sizeof eps, "%.9ef", op->p.norm.eps);
    /* GPUs: a work-group per row (rows of a group norm: C/G channels of H*W) */
    bool wg = g->gpu || ttc_codegen_gpu_forced(k);
    int64_t row = op->p.norm.group ? (static_prod(x, 1, R) < 0 ? -1 : static_prod(x, 1, R) / op->p.norm.groups)
                                   : static_prod(x, from, R);
    int32_t L = wg ? row_group_size(row) : 1;
    /* layer norms of rows up to 8192 (or not known when building): a warp per row, 4 rows a group */
    bool warp = wg && !op->p.norm.group && row <= 8192;
    if (warp) L = 128;
    snprintf(ls, sizeof ls, "%d", L);
    /* the warp kernel holds a row known when building of up to 2048 elements in registers, 64
     * a lane at most (on the H100: ConvNeXt-T b32's rows of 96 44 -> 21 us, of 192 16 -> 11 us;
     * ViT-B's rows of 768 took 18 us instead of 15 held in 24 registers a lane; a 1B Llama's
     * decode row of 2048 took 28.7 us in the loop) */
    char npl[8];
    snprintf(npl, sizeof npl, "%d", warp && row > 0 && row <= 2048 ? (int)((row + 31) / 32) : 0);
    ttc_codegen_loader(src, g->sp, "LDX", x->dtype, false);
    ttc_codegen_loader(src, g->sp, "LDW", wd, false);
    /* the warp kernel's epilogue pointers restrict, as its own (norm_warp.cl says why) */
    char *rp = warp ? restrict_params(P) : NULL;
    if (warp && !rp) return ttc_fail(TTC_ERR_NOMEM, "norm %s: parameters", op->name);
    const char *defs[] = {"KNAME", ks->name, "STORE_FN", store, "EPI_PARAMS", rp ? rp : P, "EPI_ARGS", A_,
                          "TX", ttc_cl_storage_type(x->dtype), "TW", ttc_cl_storage_type(wd),
                          "HAS_W", hw ? "1" : "0", "HAS_B", hb ? "1" : "0", "GROUP", op->p.norm.group ? "1" : "0",
                          "RMS", op->p.norm.rms ? "1" : "0", "EPS", eps, "LS", ls, "RPW", "4", "NPL", npl,
                          "SPLIT", ttc_kir_target(k)->norm_split ? "1" : "0", NULL};
    const char *none[] = {NULL};
    int32_t wt = hw ? op->in[1] : hb ? op->in[2] : op->in[0], bt = hb ? op->in[2] : wt;
    ttc_kparams p;
    ttc_kp_init(&p, k, ks, false);
    ttc_kp_buffer(&p, op->in[0], "X", "offX");
    ttc_kp_buffer(&p, wt, "Wt", "offW");
    ttc_kp_buffer(&p, bt, "Bs", "offB");
    if (op->p.norm.group) {
        /* x [N, C, *]: rows (n, g) of C/G * HW elements */
        int32_t G = op->p.norm.groups;
        int64_t C = x->dims[1].add;
        ttc_kp_int(&p, TTC_ARG_PROD, op->in[0], 1, R, -G, "N");  /* C*HW / G per row */
        ttc_kp_int(&p, TTC_ARG_PROD, op->in[0], 0, 1, G, "rows"); /* N * G */
        ttc_kp_int(&p, TTC_ARG_PROD, op->in[0], 2, R, 0, "HW");
        ttc_kp_int(&p, TTC_ARG_INT, 0, 0, 0, C / G, "CG");
        ttc_kp_int(&p, TTC_ARG_INT, 0, 0, 0, G, "G");
        ttc_codegen_gdim(ks, 0, op->in[0], 0, 1, 1, wg ? L : 0);
        ks->g[0].mul = G * L;
    } else {
        ttc_kp_int(&p, TTC_ARG_PROD, op->in[0], from, R, 0, "N");
        ttc_kp_int(&p, TTC_ARG_PROD, op->in[0], 0, from, 0, "rows");
        ttc_kp_int(&p, TTC_ARG_INT, 0, 0, 0, 1, "HW");
        ttc_kp_int(&p, TTC_ARG_INT, 0, 0, 0, 1, "CG");
        ttc_kp_int(&p, TTC_ARG_INT, 0, 0, 0, 1, "G");
        ttc_codegen_gdim(ks, 0, op->in[0], 0, from, 1, wg ? L : 0);
        ks->g[0].mul = warp ? 32 : L;
    }
    ttc_status s = warp ? ttc_codegen_ptx_prelude(src, k) : wg ? ttc_codegen_template(src, "rowred", none) : TTC_OK;
    if (s == TTC_OK) s = ttc_codegen_template_checked(src, warp ? "norm_warp" : wg ? "norm_wg" : "norm", defs, &p);
    ttc_kp_free(&p);
    free(rp);
    TTC_TRY(s);
    ttc_sbuf_printf(src, "#undef LDX\n#undef LDW\n");
    ks->use_local = wg;
    return TTC_OK;
}

ttc_status ttc_gen_pool(const ttc_kgen *g) {
    TTC_KGEN_LOCALS(g);
    const ttc_et *x = &k->ts[op->in[0]], *out = &k->ts[op->out];
    int32_t R = out->rank;
    char v[12][24], store[32];
    snprintf(store, sizeof store, "%s_store", ks->name);
    num(v[0], 24, op->p.pool.kind == TTC_POOL_MAX ? 0 : op->p.pool.kind == TTC_POOL_AVG ? 1 : 2);
    num(v[1], 24, op->p.pool.k[0]); num(v[2], 24, op->p.pool.k[1]);
    num(v[3], 24, op->p.pool.stride[0]); num(v[4], 24, op->p.pool.stride[1]);
    num(v[5], 24, op->p.pool.pad[0]); num(v[6], 24, op->p.pool.pad[1]);
    num(v[7], 24, op->p.pool.dil[0]); num(v[8], 24, op->p.pool.dil[1]);
    num(v[9], 24, op->p.pool.count_pad); num(v[10], 24, op->p.pool.divisor);
    /* GPUs: a 1x1 adaptive average is a work-group reduction per plane */
    bool global = (g->gpu || ttc_kir_target(k)->gpu_kernels) && op->p.pool.kind != TTC_POOL_MAX && op->p.pool.kind != TTC_POOL_AVG &&
                  static_prod(out, R - 2, R) == 1;
    int32_t L = global ? row_group_size(static_prod(x, R - 2, R)) : 0;
    char wg[16];
    snprintf(wg, sizeof wg, "%d", L);
    if (global) {
        const char *none[] = {NULL};
        num(v[0], 24, 3);
        TTC_TRY(ttc_codegen_template(src, "rowred", none));
    }
    ttc_codegen_loader(src, g->sp, "LDX", x->dtype, false);
    const char *defs[] = {"KNAME", ks->name, "STORE_FN", store, "EPI_PARAMS", P, "EPI_ARGS", A_,
                          "TX", ttc_cl_storage_type(x->dtype), "MODE", v[0], "KH", v[1], "KW", v[2], "SH", v[3],
                          "SW", v[4], "PH", v[5], "PW", v[6], "DH", v[7], "DW", v[8], "COUNT_PAD", v[9],
                          "DIVISOR", v[10], "WG", wg, NULL};
    ttc_kparams p;
    ttc_kp_init(&p, k, ks, false);
    ttc_kp_buffer(&p, op->in[0], "X", "offX");
    ttc_kp_int(&p, TTC_ARG_DIM, op->in[0], R - 2, 0, 0, "H");
    ttc_kp_int(&p, TTC_ARG_DIM, op->in[0], R - 1, 0, 0, "Wd");
    ttc_kp_int(&p, TTC_ARG_DIM, op->out, R - 2, 0, 0, "OH");
    ttc_kp_int(&p, TTC_ARG_DIM, op->out, R - 1, 0, 0, "OW");
    ttc_status s = ttc_codegen_template_checked(src, "pool2d", defs, &p);
    ttc_kp_free(&p);
    TTC_TRY(s);
    ttc_sbuf_printf(src, "#undef LDX\n");
    if (global) {
        ttc_codegen_gdim(ks, 0, op->out, 0, R, 1, L);
        ks->g[0].mul = L;
        ks->use_local = true;
        return TTC_OK;
    }
    ttc_codegen_gdim(ks, 0, op->out, R - 1, R, 1, 0);
    ttc_codegen_gdim(ks, 1, op->out, R - 2, R - 1, 1, 0);
    ttc_codegen_gdim(ks, 2, op->out, 0, R - 2, 1, 0);
    return TTC_OK;
}

/* GPUs, reductions that include the innermost dim (rows of contiguous elements, e.g. a
 * sum or mean over the last dim): one work-group per output element, its work-items striding
 * over the reduced elements (coalesced), combined through rowred.cl. Not for arg-max/min. */
/* The parameters of the reduction kernels: the input's buffer, offset, dims and strides,
 * then the output element count. */
static void reduce_params(ttc_kparams *p, const ttc_kop *op, int32_t R, int32_t out_rank) {
    ttc_kp_buffer(p, op->in[0], "X", "offX");
    for (int32_t d = 0; d < R; d++) {
        ttc_kp_int(p, TTC_ARG_DIM, op->in[0], d, 0, 0, "xd%d", d);
        ttc_kp_int(p, TTC_ARG_STRIDE, op->in[0], d, R, 0, "xs%d", d);
    }
    ttc_kp_int(p, TTC_ARG_PROD, op->out, 0, out_rank, 0, "nout");
}

static ttc_status gen_reduce_wg(const ttc_kgen *g, const ttc_kparams *p) {
    TTC_KGEN_LOCALS(g);
    const ttc_et *x = &k->ts[op->in[0]], *out = &k->ts[op->out];
    int32_t R = x->rank;
    uint32_t mask = op->p.red.mask;
    ttc_reduce_kind rk = op->p.red.kind;
    const char *n = ks->name;
    int64_t nred_static = 1;
    for (int32_t d = 0; d < R; d++)
        if (mask & (1u << d)) nred_static = x->dims[d].sym >= 0 || nred_static < 0 ? -1 : nred_static * x->dims[d].add;
    int32_t L = row_group_size(nred_static);
    const char *none[] = {NULL};
    TTC_TRY(ttc_codegen_template(src, "rowred", none));
    ttc_codegen_loader(src, g->sp, "LDX", x->dtype, false);
    ttc_sbuf_printf(src, "__kernel __attribute__((reqd_work_group_size(%d, 1, 1)))\nvoid %s(%s%s) {\n"
                         "    __local float sh[%d];\n    int lin = get_group_id(0), t = get_local_id(0);\n"
                         "    if (lin >= nout) return;\n    int rem = lin, base = offX;\n", L, n, ttc_kp_sig(p), P, L);
    for (int32_t d = R - 1; d >= 0; d--)
        if (!(mask & (1u << d))) ttc_sbuf_printf(src, "    base += (rem %% xd%d) * xs%d; rem /= xd%d;\n", d, d, d);
    ttc_sbuf_printf(src, "    int nred = 1");
    for (int32_t d = 0; d < R; d++) if (mask & (1u << d)) ttc_sbuf_printf(src, " * xd%d", d);
    ttc_sbuf_printf(src, ";\n");
    const char *init = rk == TTC_RED_MAX ? "-INFINITY" : rk == TTC_RED_MIN ? "INFINITY" : rk == TTC_RED_PROD ? "1.0f" : "0.0f";
    const char *comb = rk == TTC_RED_MAX ? "ttc_wg_max" : rk == TTC_RED_MIN ? "ttc_wg_min" : rk == TTC_RED_PROD ? "ttc_wg_prod"
                                                                                                             : "ttc_wg_sum";
    int passes = rk == TTC_RED_VAR ? 2 : 1;
    ttc_sbuf_printf(src, "    float acc = %s, mean = 0.0f;\n", init);
    for (int pass = 0; pass < passes; pass++) {
        /* every work-item the same trip count, the bound inside (see softmax_wg.cl) */
        ttc_sbuf_printf(src, "    for (int r0 = 0; r0 < nred; r0 += %d) {\n        int r = r0 + t;\n"
                             "        if (r >= nred) break;\n        int rr = r, off = base;\n", L);
        for (int32_t d = R - 1; d >= 0; d--)
            if (mask & (1u << d)) ttc_sbuf_printf(src, "        off += (rr %% xd%d) * xs%d; rr /= xd%d;\n", d, d, d);
        ttc_sbuf_printf(src, "        float v = LDX(X, off);\n");
        switch (rk) {
        case TTC_RED_PROD: ttc_sbuf_printf(src, "        acc *= v;\n"); break;
        case TTC_RED_MAX: ttc_sbuf_printf(src, "        acc = (v > acc || isnan(v)) ? v : acc;\n"); break;
        case TTC_RED_MIN: ttc_sbuf_printf(src, "        acc = (v < acc || isnan(v)) ? v : acc;\n"); break;
        case TTC_RED_VAR:
            ttc_sbuf_printf(src, pass == 0 ? "        acc += v;\n" : "        acc += (v - mean) * (v - mean);\n");
            break;
        default: ttc_sbuf_printf(src, "        acc += v;\n"); break;
        }
        ttc_sbuf_printf(src, "    }\n    acc = %s(acc, sh);\n", comb);
        if (rk == TTC_RED_VAR && pass == 0) ttc_sbuf_printf(src, "    mean = acc / (float)nred;\n    acc = 0.0f;\n");
    }
    if (rk == TTC_RED_MEAN) ttc_sbuf_printf(src, "    acc /= (float)nred;\n");
    if (rk == TTC_RED_VAR) ttc_sbuf_printf(src, "    acc /= (float)max(nred - %lld, 0);\n", (long long)op->p.red.correction);
    ttc_sbuf_printf(src, "    if (t == 0) %s_store(acc, lin%s);\n}\n#undef LDX\n", n, A_);
    ttc_codegen_gdim(ks, 0, op->out, 0, out->rank, 1, L);
    ks->g[0].mul = L;
    ks->use_local = true;
    return TTC_OK;
}

/* Integer reductions (sum/max/min/argmax/argmin of int and bool inputs) accumulate in long,
 * never through float: int32 values past 2^24 and int64 sums stay exact (wrapping as torch
 * does). One work-item per output element; strict compares keep the first index of a tie. */
static ttc_status gen_reduce_int(const ttc_kgen *g, const ttc_kparams *p) {
    TTC_KGEN_LOCALS(g);
    const ttc_et *x = &k->ts[op->in[0]], *out = &k->ts[op->out];
    int32_t R = x->rank;
    uint32_t mask = op->p.red.mask;
    ttc_reduce_kind rk = op->p.red.kind;
    const char *n = ks->name;
    const char *step;
    switch (rk) {
    case TTC_RED_SUM: step = "acc += v;"; break;
    case TTC_RED_MAX: step = "if (r == 0 || v > acc) acc = v;"; break;
    case TTC_RED_MIN: step = "if (r == 0 || v < acc) acc = v;"; break;
    case TTC_RED_ARGMAX: step = "if (r == 0 || v > acc) { acc = v; best = r; }"; break;
    case TTC_RED_ARGMIN: step = "if (r == 0 || v < acc) { acc = v; best = r; }"; break;
    default: return ttc_fail(TTC_ERR_UNSUPPORTED, "%s: no integer form of reduction kind %d", op->name, (int)rk);
    }
    ttc_sbuf_printf(src, "__kernel void %s(%s%s) {\n    int lin = get_global_id(0);\n    if (lin >= nout) return;\n"
                         "    int rem = lin, base = offX;\n", n, ttc_kp_sig(p), P);
    for (int32_t d = R - 1; d >= 0; d--)
        if (!(mask & (1u << d))) ttc_sbuf_printf(src, "    base += (rem %% xd%d) * xs%d; rem /= xd%d;\n", d, d, d);
    ttc_sbuf_printf(src, "    int nred = 1");
    for (int32_t d = 0; d < R; d++) if (mask & (1u << d)) ttc_sbuf_printf(src, " * xd%d", d);
    ttc_sbuf_printf(src, ";\n    long acc = 0; int best = 0;\n    for (int r = 0; r < nred; r++) {\n"
                         "        int rr = r, off = base;\n");
    for (int32_t d = R - 1; d >= 0; d--)
        if (mask & (1u << d)) ttc_sbuf_printf(src, "        off += (rr %% xd%d) * xs%d; rr /= xd%d;\n", d, d, d);
    ttc_sbuf_printf(src, "        long v = (long)X[off];\n        %s\n    }\n", step);
    const char *res = rk == TTC_RED_ARGMAX || rk == TTC_RED_ARGMIN ? "(long)best" : "acc";
    /* an epilogue takes a float (fusion keeps integer reductions apart; this is the fallback) */
    if (op->epi.n > 0) ttc_sbuf_printf(src, "    %s_store((float)%s, lin%s);\n}\n", n, res, A_);
    else if (out->dtype == TTC_DTYPE_BOOL) ttc_sbuf_printf(src, "    o_[o_off + lin] = (uchar)(%s != 0);\n}\n", res);
    else if (out->dtype == TTC_DTYPE_INT64 || out->dtype == TTC_DTYPE_INT32 || out->dtype == TTC_DTYPE_INT8 ||
             out->dtype == TTC_DTYPE_UINT8)
        ttc_sbuf_printf(src, "    o_[o_off + lin] = (%s)%s;\n}\n", ttc_cl_storage_type(out->dtype), res);
    else return ttc_fail(TTC_ERR_UNSUPPORTED, "%s: integer reduction to %s", op->name, ttc_dtype_name(out->dtype));
    return TTC_OK;
}

/* Reductions over the dims in mask of a strided input: one work-item per output element,
 * index math generated for the input's rank. */
static ttc_status gen_reduce_float(const ttc_kgen *g, const ttc_kparams *p) {
    TTC_KGEN_LOCALS(g);
    const ttc_et *x = &k->ts[op->in[0]];
    int32_t R = x->rank;
    uint32_t mask = op->p.red.mask;
    ttc_reduce_kind rk = op->p.red.kind;
    const char *n = ks->name;
    ttc_codegen_loader(src, g->sp, "LDX", x->dtype, false);
    ttc_sbuf_printf(src, "__kernel void %s(%s%s) {\n    int lin = get_global_id(0);\n    if (lin >= nout) return;\n"
                         "    int rem = lin, base = offX;\n", n, ttc_kp_sig(p), P);
    for (int32_t d = R - 1; d >= 0; d--)
        if (!(mask & (1u << d))) ttc_sbuf_printf(src, "    base += (rem %% xd%d) * xs%d; rem /= xd%d;\n", d, d, d);
    ttc_sbuf_printf(src, "    int nred = 1");
    for (int32_t d = 0; d < R; d++) if (mask & (1u << d)) ttc_sbuf_printf(src, " * xd%d", d);
    ttc_sbuf_printf(src, ";\n");
    const char *init = rk == TTC_RED_MAX || rk == TTC_RED_ARGMAX ? "-INFINITY"
                     : rk == TTC_RED_MIN || rk == TTC_RED_ARGMIN ? "INFINITY" : rk == TTC_RED_PROD ? "1.0f" : "0.0f";
    int passes = rk == TTC_RED_VAR ? 2 : 1;
    ttc_sbuf_printf(src, "    float acc = %s, mean = 0.0f; int best = 0;\n", rk == TTC_RED_VAR ? "0.0f" : init);
    for (int pass = 0; pass < passes; pass++) {
        ttc_sbuf_printf(src, "    for (int r = 0; r < nred; r++) {\n        int rr = r, off = base;\n");
        for (int32_t d = R - 1; d >= 0; d--)
            if (mask & (1u << d)) ttc_sbuf_printf(src, "        off += (rr %% xd%d) * xs%d; rr /= xd%d;\n", d, d, d);
        ttc_sbuf_printf(src, "        float v = LDX(X, off);\n");
        switch (rk) {
        case TTC_RED_SUM: case TTC_RED_MEAN: ttc_sbuf_printf(src, "        acc += v;\n"); break;
        case TTC_RED_PROD: ttc_sbuf_printf(src, "        acc *= v;\n"); break;
        case TTC_RED_MAX: ttc_sbuf_printf(src, "        acc = (v > acc || isnan(v)) ? v : acc;\n"); break;
        case TTC_RED_MIN: ttc_sbuf_printf(src, "        acc = (v < acc || isnan(v)) ? v : acc;\n"); break;
        /* the first NaN is the extreme, as in torch: once acc holds it nothing replaces it */
        case TTC_RED_ARGMAX: ttc_sbuf_printf(src, "        if ((v > acc || v != v) && acc == acc) { acc = v; best = r; }\n"); break;
        case TTC_RED_ARGMIN: ttc_sbuf_printf(src, "        if ((v < acc || v != v) && acc == acc) { acc = v; best = r; }\n"); break;
        case TTC_RED_VAR:
            if (pass == 0) ttc_sbuf_printf(src, "        mean += v;\n");
            else ttc_sbuf_printf(src, "        acc += (v - mean) * (v - mean);\n");
            break;
        }
        ttc_sbuf_printf(src, "    }\n");
        if (rk == TTC_RED_VAR && pass == 0) ttc_sbuf_printf(src, "    mean /= (float)nred;\n");
    }
    if (rk == TTC_RED_MEAN) ttc_sbuf_printf(src, "    acc /= (float)nred;\n");
    if (rk == TTC_RED_VAR) ttc_sbuf_printf(src, "    acc /= (float)max(nred - %lld, 0);\n", (long long)op->p.red.correction);
    if (rk == TTC_RED_ARGMAX || rk == TTC_RED_ARGMIN) ttc_sbuf_printf(src, "    acc = (float)best;\n");
    ttc_sbuf_printf(src, "    %s_store(acc, lin%s);\n}\n#undef LDX\n", n, A_);
    return TTC_OK;
}

/* Reductions: integer inputs accumulate exactly (gen_reduce_int); float ones get a
 * work-group per output on GPUs where the innermost dim is reduced (gen_reduce_wg), else a
 * work-item per output (gen_reduce_float). All take the same parameters. */
ttc_status ttc_gen_reduce(const ttc_kgen *g) {
    const ttc_kop *op = g->op;
    const ttc_et *x = &g->k->ts[op->in[0]];
    int32_t R = x->rank;
    ttc_reduce_kind rk = op->p.red.kind;
    ttc_kparams p;
    ttc_kp_init(&p, g->k, g->ks, false);
    reduce_params(&p, op, R, g->k->ts[op->out].rank);
    ttc_status s = ttc_kp_done(&p);
    if (s == TTC_OK) {
        if (x->dtype != TTC_DTYPE_FLOAT32 && x->dtype != TTC_DTYPE_FLOAT16) s = gen_reduce_int(g, &p);
        else if ((g->gpu || ttc_codegen_gpu_forced(g->k)) && R > 0 && (op->p.red.mask & (1u << (R - 1))) &&
                 rk != TTC_RED_ARGMAX && rk != TTC_RED_ARGMIN)
            s = gen_reduce_wg(g, &p);
        else s = gen_reduce_float(g, &p);
    }
    ttc_kp_free(&p);
    return s;
}
