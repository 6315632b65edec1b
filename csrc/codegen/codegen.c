/* The code generator's driver (ttc_codegen_run): per live kernel op its store function
 * (codegen_expr.c), then its kind's row (codegen_kinds.c) decides the launch rule and the
 * generator; the heavy kernels (GEMM, convolution, ...) are templates from csrc/kernels/
 * specialised with #defines around their text, so that all kernels of an engine form one
 * program. Also here: the elementwise and GEMM generators and the template helpers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/kernels.h"
#include "codegen_impl.h"

const ttc_gemm_tile ttc_gemm_tiles[TTC_GEMM_TILES] = {
    {TTC_GEMM_CPU, 0, 0, 0, 0, 0, 1},        {TTC_GEMM_CPU, 4, 0, 0, 0, 0, 1},       {TTC_GEMM_CPU, 16, 0, 0, 0, 0, 1},
    {TTC_GEMM_SIMT, 64, 64, 16, 4, 4, 1},    {TTC_GEMM_SIMT, 128, 128, 8, 8, 8, 1},  {TTC_GEMM_SIMT, 128, 64, 16, 8, 4, 1},
    {TTC_GEMM_SIMT, 64, 32, 16, 4, 2, 1},    {TTC_GEMM_SIMT, 32, 32, 16, 2, 2, 1},   {TTC_GEMM_SIMT, 16, 64, 16, 1, 4, 1},
    {TTC_GEMM_MMA, 128, 128, 32, 2, 4, 1},   {TTC_GEMM_MMA, 128, 64, 32, 2, 2, 1},   {TTC_GEMM_MMA, 64, 64, 32, 2, 2, 1},
    {TTC_GEMM_MMA, 32, 64, 32, 1, 2, 1},     {TTC_GEMM_MMA, 16, 64, 32, 1, 4, 1},
    /* k-split warps for skinny, deep problems */
    {TTC_GEMM_MMA, 16, 64, 128, 1, 1, 4},    {TTC_GEMM_MMA, 32, 64, 64, 1, 2, 2},    {TTC_GEMM_MMA, 16, 64, 64, 1, 2, 2},
    /* SIMT with kw k-groups per work-group, for small-M problems (few tiles), deep K; and
     * 16-deep stages of 8x8 per work-item for large ones */
    {TTC_GEMM_SIMT, 32, 32, 8, 4, 4, 4},     {TTC_GEMM_SIMT, 32, 64, 8, 4, 4, 2},    {TTC_GEMM_SIMT, 32, 64, 8, 4, 4, 4},
    {TTC_GEMM_SIMT, 16, 64, 8, 4, 4, 4},     {TTC_GEMM_SIMT, 64, 64, 8, 4, 4, 2},    {TTC_GEMM_SIMT, 128, 128, 16, 8, 8, 1},
    {TTC_GEMM_SIMT, 64, 64, 8, 8, 4, 2},     {TTC_GEMM_SIMT, 64, 128, 16, 8, 8, 1},  {TTC_GEMM_SIMT, 128, 64, 16, 8, 8, 1},
    /* pipelined tensor cores (gemm_tc.cl), half: bm x bn x bk, tm x tn warps, kw = stages */
    {TTC_GEMM_TC, 128, 128, 32, 2, 4, 3},    {TTC_GEMM_TC, 128, 128, 32, 2, 4, 2},   {TTC_GEMM_TC, 128, 64, 32, 2, 2, 3},
    {TTC_GEMM_TC, 64, 128, 32, 2, 2, 3},     {TTC_GEMM_TC, 64, 64, 32, 2, 2, 4},     {TTC_GEMM_TC, 256, 128, 32, 4, 2, 2},
    {TTC_GEMM_TC, 128, 128, 32, 2, 2, 3},    {TTC_GEMM_TC, 32, 64, 32, 1, 2, 4},
    /* ... TF32 (float operands, bk in floats) */
    {TTC_GEMM_TF32, 128, 128, 16, 2, 4, 3},  {TTC_GEMM_TF32, 128, 64, 16, 2, 2, 3},  {TTC_GEMM_TF32, 64, 64, 16, 2, 2, 4},
    {TTC_GEMM_TF32, 64, 128, 16, 2, 2, 3},   {TTC_GEMM_TF32, 32, 64, 16, 1, 2, 4},
    /* from an H100 sweep (bench/RESULTS.md, session 8): the 128x128 tile above with its copies
     * through L1 (cp.async.ca: 1.05-1.36x on 4096^3 and the transformer shapes) and the grid
     * rasterised by 8 tile rows; 192x128 (4096 x 768 in 132 tiles); TF32 128x128 in 4 warps of
     * 64x64 (1.33x on a 4096^3 mm) */
    {TTC_GEMM_TC, 128, 128, 32, 2, 4, 3, 8, 1}, {TTC_GEMM_TC, 192, 128, 32, 4, 2, 2, 8},
    {TTC_GEMM_TF32, 128, 128, 16, 2, 2, 3, 8},
    /* session 9 (fl & 2: the epilogue staged through local memory, stores by rows): 42 =
     * tile 39 staged (the default), 43 = 4 warps of 64x64 (row-major-B default), 44, 46, 47 =
     * 64-deep slices (sweep-only: within 5% of the best at 4096 x 768 x 3072 only), 45 = TF32
     * 4-warp staged (the TF32 default), 48 = 192x128 staged (where its waves fill better) */
    {TTC_GEMM_TC, 128, 128, 32, 2, 4, 3, 8, 3}, {TTC_GEMM_TC, 128, 128, 32, 2, 2, 3, 8, 3},
    {TTC_GEMM_TC, 128, 64, 64, 2, 2, 2, 8, 3},  {TTC_GEMM_TF32, 128, 128, 16, 2, 2, 3, 8, 3},
    {TTC_GEMM_TC, 128, 64, 64, 2, 1, 2, 8, 3},  {TTC_GEMM_TC, 64, 128, 64, 2, 2, 2, 8, 3},
    {TTC_GEMM_TC, 192, 128, 32, 4, 2, 2, 8, 3},
    /* session 10 (fl & 4: the stages in a __local argument, kw = the most stages; as many as fit
     * where the launch gives more than OpenCL's 48 KiB: the CUDA launch path's dynamic shared
     * memory, backend/cuda/exec_cuda.c; sweep-only, never chosen by tune.c: bench/RESULTS.md): 49, 50 =
     * tile 42 with up to 4 / 6 stages; 51, 52 = the same with copies around L1 (.cg), 3 and up
     * to 6 stages (the fastest tiles of the CUDA launch path at 4096^3, 1.04x tile 42; through
     * OpenCL on NVIDIA they get 2 stages); 53 = 256x128 in 8 warps of 64x64 and 54 in 16 warps
     * of 64x32, 16-deep slices (two 32-deep stages of these do not fit NVIDIA's OpenCL), up to
     * 8; 55 = TF32 tile 45 with up to 6 */
    {TTC_GEMM_TC, 128, 128, 32, 2, 4, 4, 8, 7}, {TTC_GEMM_TC, 128, 128, 32, 2, 4, 6, 8, 7},
    {TTC_GEMM_TC, 128, 128, 32, 2, 4, 3, 8, 6}, {TTC_GEMM_TC, 128, 128, 32, 2, 4, 6, 8, 6},
    {TTC_GEMM_TC, 256, 128, 16, 4, 2, 8, 8, 7}, {TTC_GEMM_TC, 256, 128, 16, 4, 4, 8, 8, 7},
    {TTC_GEMM_TF32, 128, 128, 16, 2, 2, 6, 8, 7},
    /* session 15 (fl & 8: warpgroup MMA, sm_90a wgmma straight from the swizzled stages;
     * tm = BM / 16 warps, each warpgroup of 4 owns 64 rows x BN): 56 = 128x256x64 in up to 4
     * stages (48 KiB each), 57 = 128x128x64 in up to 6 (32 KiB). On NVIDIA only the CUDA launch
     * path runs them (exactly compute capability 9.0; more than OpenCL's local memory, all kw
     * stages); elsewhere the prelude's emulation, with kw stages. Forced only (tune.c). */
    {TTC_GEMM_TC, 128, 256, 64, 8, 1, 4, 8, 14}, {TTC_GEMM_TC, 128, 128, 64, 8, 1, 6, 8, 14},
    {TTC_GEMM_TC, 192, 256, 64, 12, 1, 4, 8, 14},
    /* session 16 (fl & 16: the same with the stages filled by Hopper's tensor copy engine, one
     * box per operand and slice on tensor maps the CUDA launch encodes; half operands, K a
     * multiple of 8): 59 = tile 56, 60 = tile 57, 61 = tile 58; 62 = 128x128 in 3 stages, so
     * that two work-groups share a multiprocessor (96 KiB each) and one's epilogue overlaps the
     * other's products (short K: the transformers' K = 768). Forced only (tune.c). */
    {TTC_GEMM_TC, 128, 256, 64, 8, 1, 4, 8, 30}, {TTC_GEMM_TC, 128, 128, 64, 8, 1, 6, 8, 30},
    {TTC_GEMM_TC, 192, 256, 64, 12, 1, 4, 8, 30}, {TTC_GEMM_TC, 128, 128, 64, 8, 1, 3, 8, 30},
};

int64_t ttc_gemm_tile_wgs(int32_t ti, int64_t B, int64_t M, int64_t N) {
    const ttc_gemm_tile *t = &ttc_gemm_tiles[ti];
    return B * ((M + t->bm - 1) / t->bm) * ((N + t->bn - 1) / t->bn);
}

int64_t ttc_gemm_tile_fill(int32_t ti, int64_t B, int64_t M, int64_t N, int64_t cu, int64_t slots) {
    int64_t w = ttc_gemm_tile_wgs(ti, B, M, N), per = cu * slots, waves = (w + per - 1) / per;
    return waves > 0 ? w * 100 / (waves * per) : 0;
}

/* Stages of tile t an OpenCL launch on tg holds (uncapped by kw), and the bytes of one. Beside
 * the argument a work-group needs: where the PTX instructions run, what NVIDIA's OpenCL keeps
 * for itself (a 4000-byte argument took 4004 bytes of its 49152: bench/probe/dynsmem_probe.py,
 * so a 48 KiB argument does not launch); elsewhere the emulation's scratch (ptx.cl,
 * TTC_PTX_SCRATCH) plus a margin for the compiler's own. */
static int64_t local_stages(const ttc_target *tg, const ttc_gemm_tile *t, int64_t *unit) {
    *unit = (int64_t)(t->bm + t->bn) * t->bk * (t->family == TTC_GEMM_TF32 ? 4 : 2);
    int64_t own = tg->nvidia ? 64 : (int64_t)t->tm * t->tn * 384 * 4 + 256;
    int64_t limit = tg->local_mem ? (int64_t)tg->local_mem : 48 * 1024;
    return limit > own ? (limit - own) / *unit : 0;
}

static bool takes_local(const ttc_gemm_tile *t) {
    return (t->family == TTC_GEMM_TC || t->family == TTC_GEMM_TF32) && (t->fl & 4);
}

/* Warpgroup-MMA tiles (fl & 8): on NVIDIA they need sm_90 and run through the CUDA launch path
 * only, with all kw stages (more than OpenCL's local memory: its launch refuses them, backend.c);
 * elsewhere the emulation needs kw stages of local memory. */
static bool wg_tile(const ttc_gemm_tile *t) { return takes_local(t) && (t->fl & 8); }

/* Whether warpgroup tile t runs on tg, given the n stages OpenCL's local memory holds there. */
static bool wg_runs(const ttc_target *tg, const ttc_gemm_tile *t, int64_t n) {
    return tg->nvidia ? tg->nv_sm == 90 : n >= t->kw;
}

ttc_status ttc_gemm_tile_local(const ttc_target *tg, int32_t ti, int64_t *unit_bytes, int32_t *n_cl) {
    *unit_bytes = 0;
    *n_cl = 0;
    if (ti < 0 || ti >= TTC_GEMM_TILES || !takes_local(&ttc_gemm_tiles[ti]))
        return ttc_fail(TTC_ERR_INVALID_ARG, "GEMM tile %d takes no local-memory argument", (int)ti);
    const ttc_gemm_tile *t = &ttc_gemm_tiles[ti];
    int64_t unit, n = local_stages(tg, t, &unit);
    if (wg_tile(t)) {
        if (!wg_runs(tg, t, n) && tg->nvidia)
            return ttc_fail(TTC_ERR_UNSUPPORTED, "GEMM tile %d (warpgroup MMA) needs an NVIDIA device of compute "
                            "capability 9.0; %s is %d.%d", (int)ti, tg->name, (int)(tg->nv_sm / 10), (int)(tg->nv_sm % 10));
        if (!wg_runs(tg, t, n))
            return ttc_fail(TTC_ERR_UNSUPPORTED, "GEMM tile %d needs %d stages of %lld bytes of local memory, device %s "
                            "allows %llu per work-group", (int)ti, (int)t->kw, (long long)unit, tg->name,
                            (unsigned long long)tg->local_mem);
        *unit_bytes = unit;
        *n_cl = t->kw;
        return TTC_OK;
    }
    if (n < 2)
        return ttc_fail(TTC_ERR_UNSUPPORTED, "GEMM tile %d needs two stages of %lld bytes of local memory, device %s "
                        "allows %llu per work-group", (int)ti, (long long)unit, tg->name,
                        (unsigned long long)tg->local_mem);
    *unit_bytes = unit;
    *n_cl = (int32_t)(n > t->kw ? t->kw : n);
    return TTC_OK;
}

bool ttc_gemm_tile_fits(const ttc_target *tg, int32_t ti) {
    if (ti < 0 || ti >= TTC_GEMM_TILES) return false;
    int64_t unit;
    if (wg_tile(&ttc_gemm_tiles[ti])) return wg_runs(tg, &ttc_gemm_tiles[ti], local_stages(tg, &ttc_gemm_tiles[ti], &unit));
    return !takes_local(&ttc_gemm_tiles[ti]) || local_stages(tg, &ttc_gemm_tiles[ti], &unit) >= 2;
}

const char *ttc_cl_storage_type(ttc_dtype d) {
    switch (d) {
    case TTC_DTYPE_FLOAT32: return "float";
    case TTC_DTYPE_FLOAT16: return "half";
    case TTC_DTYPE_BFLOAT16: return "ushort";
    case TTC_DTYPE_INT64: return "long";
    case TTC_DTYPE_INT32: return "int";
    case TTC_DTYPE_INT8: return "char";
    default: return "uchar";   /* bool, uint8 */
    }
}

static void gdim(ttc_kspec *ks, int32_t i, int32_t t, int32_t from, int32_t to, int32_t div, int32_t local);
static ttc_status emit_template(ttc_sbuf *src, const char *tmpl, const char *const *defs);

static ttc_status add_arg(ttc_kspec *ks, ttc_arg_kind kind, int32_t t, int32_t d, int32_t r, int64_t v) {
    TTC_TRY(ttc_grow((void **)&ks->args, &ks->cap_args, ks->n_args + 1, sizeof(ttc_argspec)));
    ttc_argspec a = {kind, t, d, r, v};
    ks->args[ks->n_args++] = a;
    return TTC_OK;
}

ttc_status ttc_codegen_add_arg(ttc_kspec *ks, ttc_arg_kind kind, int32_t t, int32_t d, int32_t r, int64_t v) {
    return add_arg(ks, kind, t, d, r, v);
}

/* The body of a "(p,i)" loader macro reading dtype d as float (8 lanes when vec8). */
static void loader_body(ttc_sbuf *b, const ttc_spelling *sp, ttc_dtype d, bool vec8) {
    if (vec8) ttc_sbuf_printf(b, d == TTC_DTYPE_FLOAT16 ? sp->load_half_vec : sp->load_vec, 8, "(p) + (i)");
    else if (d == TTC_DTYPE_FLOAT16) ttc_sbuf_printf(b, sp->load_half, "(i)", "(p)");
    else if (d == TTC_DTYPE_BFLOAT16) ttc_sbuf_printf(b, sp->load_bf16, "(i)", "(p)");
    else ttc_sbuf_printf(b, sp->load_float, "i", "(p)");
}

void ttc_codegen_loader(ttc_sbuf *src, const ttc_spelling *sp, const char *name, ttc_dtype d, bool vec8) {
    ttc_sbuf_printf(src, "#define %s(p,i) ", name);
    loader_body(src, sp, d, vec8);
    ttc_sbuf_printf(src, "\n");
}

bool ttc_codegen_gpu_forced(const ttc_kir *k) { return ttc_kir_target(k)->gpu_kernels; }

ttc_status ttc_codegen_template(ttc_sbuf *src, const char *tmpl, const char *const *defs) {
    return emit_template(src, tmpl, defs);
}

ttc_status ttc_codegen_template_checked(ttc_sbuf *src, const char *tmpl, const char *const *defs, const ttc_kparams *p) {
    size_t from = src->len;
    TTC_TRY(emit_template(src, tmpl, defs));
    return ttc_kp_check_template(p, src, from, tmpl);
}

ttc_status ttc_codegen_ptx_prelude(ttc_sbuf *src, const ttc_kir *k) {
    /* an identical redefinition is legal, and ptx.cl's include guard keeps one copy */
    if (ttc_kir_target(k)->nvidia) ttc_sbuf_printf(src, "#define TTC_PTX 1\n");
    /* the warpgroup MMA's sm_90a statements (carried through NVIDIA's OpenCL build as comments) */
    if (ttc_kir_target(k)->nvidia && ttc_kir_target(k)->nv_sm == 90) ttc_sbuf_printf(src, "#define TTC_SM90A 1\n");
    const char *none[] = {NULL};
    return emit_template(src, "ptx", none);
}

void ttc_codegen_gdim(ttc_kspec *ks, int32_t i, int32_t t, int32_t from, int32_t to, int32_t div, int32_t local) {
    gdim(ks, i, t, from, to, div, local);
}

static void gdim(ttc_kspec *ks, int32_t i, int32_t t, int32_t from, int32_t to, int32_t div, int32_t local) {
    ttc_gdim g = {t, from, to, div, local, 1};
    ks->g[i] = g;
    if (i + 1 > ks->work_dims) ks->work_dims = i + 1;
}

/* Appends the template `name` specialised by defines (a NULL-terminated list of
 * name/value pairs), undefining them afterwards. */
static ttc_status emit_template(ttc_sbuf *src, const char *tmpl, const char *const *defs) {
    const char *body = ttc_kernel_source_get(tmpl);
    if (!body) return ttc_fail(TTC_ERR_INTERNAL, "kernel template %s.cl is missing", tmpl);
    for (int i = 0; defs[i]; i += 2) ttc_sbuf_printf(src, "#define %s %s\n", defs[i], defs[i + 1]);
    ttc_sbuf_append(src, body, strlen(body));
    for (int i = 0; defs[i]; i += 2) ttc_sbuf_printf(src, "#undef %s\n", defs[i]);
    return TTC_OK;
}


/* Output dim d's size in a kernel: a literal, or the parameter td<d> bound in p. */
static void dim_param(ttc_kparams *p, const ttc_et *out, int32_t t, int32_t d) {
    if (out->dims[d].sym >= 0) ttc_kp_int(p, TTC_ARG_DIM, t, d, 0, 0, "td%d", d);
}

static void dim_spell(ttc_sbuf *b, const ttc_et *out, int32_t d) {
    if (out->dims[d].sym >= 0) ttc_sbuf_printf(b, "td%d", d);
    else ttc_sbuf_printf(b, "%lld", (long long)out->dims[d].add);
}

/* An elementwise op whose leaf L is a transposed view (ttc_codegen_tiled_leaf): the output is
 * seen as [A, P, J] (P = the output dims [p0, p1] along which L is dense, A the dims before,
 * J the dims after, each flattened) and each work-group of 32 x 8 does a 32 (J) x 32 (P)
 * tile: it reads L's tile along P (dense in L) into local memory, then computes and stores
 * along J (dense in the output), passing L's value to the store function. Without it every
 * warp read 32 rows of L. */
static ttc_status gen_elementwise_tiled(const ttc_kgen *g) {
    TTC_KGEN_LOCALS(g);
    const ttc_et *out = &k->ts[op->out];
    int32_t R = out->rank, p0 = g->tile_p0, p1 = g->tile_p1, L = g->tile_leaf;
    const char *lt = ttc_codegen_leaf_type(k, op->epi.leaves[L]);
    ttc_kparams p;
    ttc_kp_init(&p, k, ks, false);
    ttc_kp_int(&p, TTC_ARG_PROD, op->out, p0, p1 + 1, 0, "tP");
    ttc_kp_int(&p, TTC_ARG_PROD, op->out, p1 + 1, R, 0, "tJ");
    for (int32_t d = 1; d < R; d++) dim_param(&p, out, op->out, d);
    TTC_TRY(ttc_kp_done(&p));
    ttc_sbuf_printf(src, "__kernel void %s(%s%s) {\n    __local %s tile[32][33];\n", ks->name, ttc_kp_sig(&p), P, lt);
    ttc_kp_free(&p);
    ttc_sbuf_printf(src, "    const int tx = get_local_id(0), ty = get_local_id(1);\n"
                         "    const int j0 = get_group_id(0) * 32, p0 = get_group_id(1) * 32, a = get_global_id(2);\n"
                         "    int base = l%d_off, rem = a;\n", L);
    for (int32_t d = p0 - 1; d >= 0; d--) {
        if (d == 0) { ttc_sbuf_printf(src, "    base += rem * l%d_s0;\n", L); break; }
        ttc_sbuf_printf(src, "    base += (rem %% ");
        dim_spell(src, out, d);
        ttc_sbuf_printf(src, ") * l%d_s%d; rem /= ", L, d);
        dim_spell(src, out, d);
        ttc_sbuf_printf(src, ";\n");
    }
    ttc_sbuf_printf(src, "    for (int r = 0; r < 4; r++) {\n"
                         "        int pp = p0 + tx, jj = j0 + ty + 8 * r;\n"
                         "        if (pp < tP && jj < tJ) {\n"
                         "            int at = base;\n");
    for (int32_t d = p1; d >= p0; d--) {
        if (d == p0) { ttc_sbuf_printf(src, "            at += pp * l%d_s%d;\n", L, d); break; }
        ttc_sbuf_printf(src, "            at += (pp %% ");
        dim_spell(src, out, d);
        ttc_sbuf_printf(src, ") * l%d_s%d; pp /= ", L, d);
        dim_spell(src, out, d);
        ttc_sbuf_printf(src, ";\n");
    }
    for (int32_t d = R - 1; d > p1; d--) {
        if (d == p1 + 1) { ttc_sbuf_printf(src, "            at += jj * l%d_s%d;\n", L, d); break; }
        ttc_sbuf_printf(src, "            at += (jj %% ");
        dim_spell(src, out, d);
        ttc_sbuf_printf(src, ") * l%d_s%d; jj /= ", L, d);
        dim_spell(src, out, d);
        ttc_sbuf_printf(src, ";\n");
    }
    ttc_sbuf_printf(src, "            tile[ty + 8 * r][tx] = ");
    char ptr[16];
    snprintf(ptr, sizeof ptr, "l%d", L);
    ttc_codegen_load(src, k, g->sp, k->ts[op->epi.leaves[L]].dtype, ptr, "at");
    ttc_sbuf_printf(src, ";\n        }\n    }\n    barrier(CLK_LOCAL_MEM_FENCE);\n"
                         "    for (int r = 0; r < 4; r++) {\n"
                         "        int pp = p0 + ty + 8 * r, jj = j0 + tx;\n"
                         "        if (pp < tP && jj < tJ) %s_store(0.0f, (a * tP + pp) * tJ + jj, tile[tx][ty + 8 * r]%s);\n"
                         "    }\n}\n", ks->name, A_);
    /* dim 0: J in work-groups of 32; dim 1: P, 4 rows per work-item, 8 per group; dim 2: A */
    gdim(ks, 0, op->out, p1 + 1, R, 1, 32);
    gdim(ks, 1, op->out, p0, p1 + 1, 4, 8);
    gdim(ks, 2, op->out, 0, p0, 1, 1);
    ks->work_dims = 3;
    ks->use_local = true;
    return TTC_OK;
}

ttc_status ttc_gen_elementwise(const ttc_kgen *g) {
    if (g->tile_leaf >= 0) return gen_elementwise_tiled(g);
    const ttc_et *out = &g->k->ts[g->op->out];
    ttc_kparams p;
    ttc_kp_init(&p, g->k, g->ks, false);
    ttc_kp_int(&p, TTC_ARG_PROD, g->op->out, 0, out->rank, 0, "n");
    ttc_status s = ttc_kp_done(&p);
    if (s == TTC_OK && g->vec > 1) {
        /* vec adjacent elements per work-item (<name>_storev) */
        ttc_sbuf_printf(g->src, "__kernel void %s(%s%s) {\n    int lin = get_global_id(0) * %d;\n"
                        "    if (lin >= n) return;\n    %s_storev(lin%s);\n}\n", g->ks->name, ttc_kp_sig(&p), g->P,
                        g->vec, g->ks->name, g->A_);
        g->ks->g[0].div = g->vec;
    } else if (s == TTC_OK)
        ttc_sbuf_printf(g->src, "__kernel void %s(%s%s) {\n    int lin = get_global_id(0);\n"
                        "    if (lin >= n) return;\n    %s_store(0.0f, lin%s);\n}\n", g->ks->name, ttc_kp_sig(&p), g->P,
                        g->ks->name, g->A_);
    ttc_kp_free(&p);
    return s;
}

/* A GEMM kernel's first nine parameters into p (kernel spec ks): A, offA, B, offB, M, N, K
 * and the batch strides (0: a 2-D operand every batch shares). */
static void gemm_params(ttc_kparams *p, const ttc_kir *k, ttc_kspec *ks, const ttc_kop *op) {
    int32_t st = ttc_kop_gemm_shape(op), R = k->ts[st].rank;
    int32_t ra = k->ts[op->in[0]].rank, rb = k->ts[op->in[1]].rank;
    ttc_kp_init(p, k, ks, false);
    ttc_kp_buffer(p, op->in[0], "A", "offA");
    ttc_kp_buffer(p, op->in[1], "B", "offB");
    ttc_kp_int(p, TTC_ARG_DIM, st, R - 2, 0, 0, "M");
    ttc_kp_int(p, TTC_ARG_DIM, st, R - 1, 0, 0, "N");
    ttc_kp_int(p, TTC_ARG_DIM, op->in[0], ra - 1, 0, 0, "K");
    if (ra > 2) ttc_kp_int(p, TTC_ARG_PROD, op->in[0], ra - 2, ra, 0, "sAb");
    else ttc_kp_int(p, TTC_ARG_INT, 0, 0, 0, 0, "sAb");
    if (rb > 2) ttc_kp_int(p, TTC_ARG_PROD, op->in[1], rb - 2, rb, 0, "sBb");
    else ttc_kp_int(p, TTC_ARG_INT, 0, 0, 0, 0, "sBb");
}

/* One GEMM kernel of op on tile ti named kname: its parameters' specs into ks (the template's
 * checked against them), its text into src. */
static ttc_status emit_gemm(const ttc_kgen *g, ttc_kspec *ks, const char *kname, int32_t ti) {
    const ttc_kir *k = g->k;
    const ttc_kop *op = g->op;
    ttc_sbuf *src = g->src;
    const ttc_et *a = &k->ts[op->in[0]], *b = &k->ts[op->in[1]];
    char store[32], tb[8];
    snprintf(store, sizeof store, "%s_store", g->ks->name);
    snprintf(tb, sizeof tb, "%d", op->p.gemm.trans_b ? 1 : 0);
    ttc_gemm_tile t = ttc_gemm_tiles[ti];
    bool f16a = a->dtype == TTC_DTYPE_FLOAT16, f16b = b->dtype == TTC_DTYPE_FLOAT16;
    char v[8][8];
    int16_t tv[8] = {t.bm, t.bn, t.bk, t.tm, t.tn, t.kw > 1 ? t.kw : 1, t.gm, t.fl};
    for (int i = 0; i < 8; i++) snprintf(v[i], sizeof v[i], "%d", tv[i]);
    bool piped = t.family == TTC_GEMM_TC || t.family == TTC_GEMM_TF32;
    ttc_kparams p;
    gemm_params(&p, k, ks, op);
    /* fl & 4: the stages come from a __local argument (dsm) and their count (nst) from the
     * launch. Both are bound after sBb and declared at the head of EPI_PARAMS, so that the
     * template's own parameter list, which the template check reads, is the same for every tile. */
    ttc_kparams loc;
    ttc_kp_init(&loc, k, ks, true);
    ttc_sbuf epi = {0};
    ttc_status s = ttc_kp_done(&p);
    int32_t n_cl = 0;
    if (s == TTC_OK && piped && (t.fl & 4)) {
        int64_t unit = 0;
        s = ttc_gemm_tile_local(ttc_kir_target(k), ti, &unit, &n_cl);
        if (s == TTC_OK) ttc_kp_local(&loc, "uint4", "dsm", "nst", unit, n_cl, t.kw);
        /* fl & 16: the operands' tensor maps (the CUDA launch's; elsewhere the buffers, unread) */
        if (s == TTC_OK && (t.fl & 16)) {
            if (!f16a || !f16b) s = ttc_fail(TTC_ERR_INTERNAL, "codegen: tensor-copy GEMM tile %d needs float16 operands", ti);
            ttc_kp_tmap(&loc, op->in[0], "tmA", 0, t.bm);
            ttc_kp_tmap(&loc, op->in[1], "tmB", 1, t.bn);
        }
        if (s == TTC_OK) s = ttc_kp_done(&loc);
    }
    ttc_sbuf_printf(&epi, "%s%s", ttc_kp_sig(&loc), g->P);
    if (s == TTC_OK && !epi.data) s = TTC_ERR_NOMEM;
    char nmin[8];
    snprintf(nmin, sizeof nmin, "%d", n_cl > 0 ? n_cl : t.kw > 1 ? t.kw : 1);   /* the fewest stages a launch gives */
    if (s == TTC_OK) {
        const char *defs[] = {"KNAME", kname, "STORE_FN", store, "EPI_PARAMS", epi.data, "EPI_ARGS", g->A_,
                              "TA", ttc_cl_storage_type(a->dtype), "TB", ttc_cl_storage_type(b->dtype),
                              "TRANS_B", tb, "BM", v[0], "BN", v[1], "BK", v[2], "TM", v[3], "TN", v[4], "KW", v[5],
                              "A_F32", f16a ? "0" : "1", "B_F32", f16b ? "0" : "1",
                              "UNROLL", g->gpu ? "_Pragma(\"unroll\")" : "",
                              "STAGES", v[5], "TF32", t.family == TTC_GEMM_TF32 ? "1" : "0", "GM", v[6], "FL", v[7],
                              "NST_MIN", nmin, NULL};
        static const char *tmpl[] = {"gemm_cpu", "gemm_gpu", "gemm_mma", "gemm_tc", "gemm_tc"};
        s = ttc_codegen_template_checked(src, tmpl[t.family], defs, &p);
    }
    ttc_kp_free(&p);
    ttc_kp_free(&loc);
    ttc_sbuf_free(&epi);
    return s;
}

/* Whether GEMM op also gets "<name>_w" (ttc_kspec.gemm_w): by default where the CUDA launch
 * path runs on an NVIDIA device of compute capability 9.0 with the CUDA libraries off (with
 * cuBLAS timed beside it, BERT, ViT and GPT-2 at b32 ran no faster, and each engine compiled
 * 2-2.5 s longer: bench/RESULTS.md, session 16); with TORCHTRT_C_GEMM_WIDE=1 or always on any
 * device (so that its text is compiled and tested everywhere) and beside the libraries. For
 * x @ W^T products of half operands whose K is a known multiple of 8 (a tensor map's rows),
 * where no tile is forced and the kernel's own tile stages nothing through a __local argument. */
/* The tile of "<name>_w": TTC_GEMM_WIDE_TILE (62, 128x128: two work-groups per compute unit), or
 * TTC_GEMM_WIDE_TILE_BIG (61, 192x256: one) where its waves fill the compute units better by
 * more than a tenth of the slots (ViT-B/16's FC2 at b32, 6304 x 768 x 3072: 99 tiles on 132
 * slots against 300 on 264, two waves; tile 61 0.74 of cuBLAS there, 62 0.67: bench/RESULTS.md,
 * session 16, which also holds the shapes where 62 stays). 62 where the product's rows or
 * batches are known only at run time. */
static int32_t wide_tile(const ttc_kir *k, const ttc_kop *op) {
    const ttc_target *tg = ttc_kir_target(k);
    const ttc_et *o = &k->ts[ttc_kop_gemm_shape(op)];
    int64_t B = 1, cu = tg->compute_units ? (int64_t)tg->compute_units : 1;
    for (int32_t d = 0; d < o->rank; d++)
        if (!ttc_dim_is_const(o->dims[d])) return TTC_GEMM_WIDE_TILE;
    for (int32_t d = 0; d < o->rank - 2; d++) B *= o->dims[d].add;
    int64_t M = o->dims[o->rank - 2].add, N = o->dims[o->rank - 1].add;
    if (ttc_gemm_tile_fill(TTC_GEMM_WIDE_TILE_BIG, B, M, N, cu, 1) > ttc_gemm_tile_fill(TTC_GEMM_WIDE_TILE, B, M, N, cu, 2) + 10 &&
        ttc_gemm_tile_fits(tg, TTC_GEMM_WIDE_TILE_BIG))
        return TTC_GEMM_WIDE_TILE_BIG;
    return TTC_GEMM_WIDE_TILE;
}

static bool wide_wanted(const ttc_kir *k, const ttc_kop *op, int32_t ti) {
    const ttc_target *tg = ttc_kir_target(k);
    if (tg->gemm_wide == TTC_GEMM_WIDE_OFF || tg->gemm_tile >= 0) return false;
    if (tg->gemm_wide == TTC_GEMM_WIDE_AUTO &&
        !(tg->nvidia && tg->nv_sm == 90 && tg->cuda_launch && tg->cuda_libs == TTC_CUDA_LIBS_OFF))
        return false;
    if (!ttc_gemm_tile_fits(tg, TTC_GEMM_WIDE_TILE)) return false;
    const ttc_gemm_tile *t = &ttc_gemm_tiles[ti];
    if ((t->family == TTC_GEMM_TC || t->family == TTC_GEMM_TF32) && (t->fl & 4)) return false;
    const ttc_et *a = &k->ts[op->in[0]], *b = &k->ts[op->in[1]];
    ttc_dim kd = a->dims[a->rank - 1];
    return op->p.gemm.trans_b && a->dtype == TTC_DTYPE_FLOAT16 && b->dtype == TTC_DTYPE_FLOAT16 &&
           ttc_dim_is_const(kd) && kd.add > 0 && kd.add % 8 == 0;
}

/* Whether GEMM op also gets "<name>_v", its GEMV form (gemv_gpu.cl; ttc_kspec.gemm_v), which
 * the launch runs instead where the product has at most TTC_GEMM_V_ROWS rows (plan.c): x @ W^T
 * products of float16 or float32 operands of one dtype (a linear layer's weight, stored N x K)
 * whose rows are not known to be more: with TORCHTRT_C_GEMM_GEMV=auto on the GPU kernel
 * families (decode steps: M = batch), =1 on any device (tests on PoCL); off by default until
 * it is measured on a GPU. */
static bool gemv_wanted(const ttc_kir *k, const ttc_kop *op) {
    const ttc_target *tg = ttc_kir_target(k);
    if (tg->gemm_gemv == TTC_GEMM_GEMV_OFF || (tg->gemm_gemv == TTC_GEMM_GEMV_AUTO && !tg->gpu_kernels)) return false;
    if (!op->p.gemm.trans_b) return false;
    const ttc_et *a = &k->ts[op->in[0]], *b = &k->ts[op->in[1]], *o = &k->ts[ttc_kop_gemm_shape(op)];
    if (a->dtype != b->dtype || (a->dtype != TTC_DTYPE_FLOAT16 && a->dtype != TTC_DTYPE_FLOAT32)) return false;
    ttc_dim m = o->dims[o->rank - 2];
    return !ttc_dim_is_const(m) || m.add <= TTC_GEMM_V_ROWS;
}

/* "<name>_v" (gemv_wanted): the tile kernel's first nine arguments, then the store function's. */
static ttc_status emit_gemv(const ttc_kgen *g) {
    const ttc_kir *k = g->k;
    const ttc_kop *op = g->op;
    const ttc_et *a = &k->ts[op->in[0]], *b = &k->ts[op->in[1]];
    ttc_kspec scratch;
    memset(&scratch, 0, sizeof scratch);
    scratch.op = g->ks->op;
    ttc_kparams p;
    gemm_params(&p, k, &scratch, op);
    ttc_status s = ttc_kp_done(&p);
    char kname[24], store[32], w[8], mb[8], u[8];
    snprintf(kname, sizeof kname, "%s_v", g->ks->name);
    snprintf(store, sizeof store, "%s_store", g->ks->name);
    snprintf(w, sizeof w, "%d", TTC_GEMM_V_WARPS);
    snprintf(mb, sizeof mb, "%d", TTC_GEMM_V_ROWS);
    snprintf(u, sizeof u, "%d", 4);
    bool f32 = a->dtype == TTC_DTYPE_FLOAT32;
    if (s == TTC_OK) {
        const char *defs[] = {"KNAME", kname, "STORE_FN", store, "EPI_PARAMS", g->P, "EPI_ARGS", g->A_,
                              "TA", ttc_cl_storage_type(a->dtype), "TB", ttc_cl_storage_type(b->dtype),
                              "A_F32", f32 ? "1" : "0", "B_F32", f32 ? "1" : "0", "GV_W", w, "GV_MB", mb, "GV_U", u,
                              "GV_UNROLL", g->gpu ? "_Pragma(\"unroll\")" : "", NULL};
        s = ttc_codegen_template_checked(g->src, "gemv_gpu", defs, &p);
    }
    ttc_kp_free(&p);
    free(scratch.args);
    if (s == TTC_OK) g->ks->gemm_v = true;
    return s;
}

ttc_status ttc_gen_gemm(const ttc_kgen *g) {
    const ttc_kir *k = g->k;
    const ttc_kop *op = g->op;
    ttc_kspec *ks = g->ks;
    ttc_sbuf *src = g->src;
    bool gpu = g->gpu;
    /* dims [.., M, N] come from the GEMM's shape tensor: the store index (b * M + m) * N + n is
     * the same linear index in a fused consumer's output that reshapes it (fuse.c) */
    int32_t st = ttc_kop_gemm_shape(op);
    const ttc_et *a = &k->ts[op->in[0]], *b = &k->ts[op->in[1]];
    int32_t R = k->ts[st].rank;
    char kname[24];
    snprintf(kname, sizeof kname, "%s", ks->name);
    /* an index outside the table (never chosen by tune.c) falls back to the device's plainest kernel */
    int32_t ti = op->tile >= 0 && op->tile < TTC_GEMM_TILES ? op->tile : (gpu ? 3 : 0);
    ttc_gemm_tile t = ttc_gemm_tiles[ti];
    bool f16a = a->dtype == TTC_DTYPE_FLOAT16, f16b = b->dtype == TTC_DTYPE_FLOAT16;
    bool tc = t.family == TTC_GEMM_MMA || t.family == TTC_GEMM_TC;
    if (tc && ((!f16a && a->dtype != TTC_DTYPE_FLOAT32) || (!f16b && b->dtype != TTC_DTYPE_FLOAT32)))
        return ttc_fail(TTC_ERR_INTERNAL, "codegen: tensor-core GEMM candidate %d needs float16/float32 inputs", ti);
    if (t.family == TTC_GEMM_TF32 && (a->dtype != TTC_DTYPE_FLOAT32 || b->dtype != TTC_DTYPE_FLOAT32))
        return ttc_fail(TTC_ERR_INTERNAL, "codegen: TF32 GEMM candidate %d needs float32 inputs", ti);
    bool wide = wide_wanted(k, op, ti), gemv = gemv_wanted(k, op);
    bool piped = t.family == TTC_GEMM_TC || t.family == TTC_GEMM_TF32;
    /* the pipelined tensor-core kernels are written against the PTX prelude (the GEMV form: its
     * half conversion) */
    if (piped || wide || gemv) TTC_TRY(ttc_codegen_ptx_prelude(src, k));
    ttc_codegen_loader(src, g->sp, "LDA", a->dtype, false);
    ttc_codegen_loader(src, g->sp, "LDA8", a->dtype, true);
    ttc_codegen_loader(src, g->sp, "LDB", b->dtype, false);
    ttc_codegen_loader(src, g->sp, "LDB8", b->dtype, true);
    TTC_TRY(emit_gemm(g, ks, kname, ti));
    if (wide) {
        /* its parameters' specs are those of ks's (the launch builds them: exec_cuda.c) */
        ttc_kspec scratch;
        memset(&scratch, 0, sizeof scratch);
        scratch.op = ks->op;
        snprintf(kname, sizeof kname, "%s_w", ks->name);
        int32_t wt = wide_tile(k, op);
        ttc_status s = emit_gemm(g, &scratch, kname, wt);
        free(scratch.args);
        TTC_TRY(s);
        ks->gemm_w = true;
        ks->gemm_w_tile = (int16_t)wt;
    }
    if (gemv) TTC_TRY(emit_gemv(g));
    ttc_sbuf_printf(src, "#undef LDA\n#undef LDA8\n#undef LDB\n#undef LDB8\n");
    if (t.family == TTC_GEMM_SIMT) {
        /* work-group (bn/tn * kw, bm/tm): each work-item owns tm x tn outputs of a bm x bn tile
         * (a partial sum over 1/kw of k where kw > 1) */
        int32_t kw = t.kw > 1 ? t.kw : 1;
        gdim(ks, 0, st, R - 1, R, t.tn, t.bn / t.tn * kw);
        ks->g[0].mul = kw;
        gdim(ks, 1, st, R - 2, R - 1, t.tm, t.bm / t.tm);
        ks->use_local = true;
    } else if (t.family != TTC_GEMM_CPU) {
        /* one work-group of 32 * tm * tn (* kw: MMA's k-split) work-items per bm x bn tile,
         * tiles along dim 0 by N */
        int32_t nt = 32 * t.tm * t.tn * (t.family == TTC_GEMM_MMA && t.kw > 1 ? t.kw : 1);
        gdim(ks, 0, st, R - 1, R, t.bn, nt);
        ks->g[0].mul = nt;
        gdim(ks, 1, st, R - 2, R - 1, t.bm, 1);
        ks->use_local = true;
    } else {
        /* CPU tiles are work-group shapes (0: the driver's choice) */
        gdim(ks, 0, st, R - 1, R, op->p.gemm.trans_b ? 4 : 8, t.bm);
        gdim(ks, 1, st, R - 2, R - 1, op->p.gemm.trans_b ? 2 : 4, t.bm);
        ks->use_local = t.bm > 0;
    }
    gdim(ks, 2, st, 0, R - 2, 1, ks->use_local ? 1 : 0);
    return TTC_OK;
}

/* Whether GEMM or convolution op's kernel gets its epilogue alone as a second kernel
 * (ttc_kspec.lib_epi): the CUDA launch path may run the product through cuBLAS, the
 * convolution through cuDNN (NVIDIA targets; TORCHTRT_C_CUDA_LIBS=1 emits it on any device, so
 * that its text is compiled and tested everywhere). Not for split-K convolutions: their output
 * is partial sums. */
static bool lib_epi_wanted(const ttc_kir *k, const ttc_kop *op) {
    const ttc_target *tg = ttc_kir_target(k);
    ttc_dtype d = k->ts[op->out].dtype;
    bool conv = op->kind == TTC_KOP_CONV2D && op->p.conv.ksplit <= 1;
    if ((op->kind != TTC_KOP_GEMM && !conv) || op->epi.n == 0 || (d != TTC_DTYPE_FLOAT32 && d != TTC_DTYPE_FLOAT16))
        return false;
    return ttc_target_lib_steps(tg);
}

/* The epilogue alone ("<name>_e", lib_epi_wanted): TTC_LIB_EPI_V elements per work-item, their
 * raw values loaded together before any store (a launch of any local size L covers
 * TTC_LIB_EPI_V * L elements per work-group). An elementwise pass with one 2-byte load in
 * flight per work-item ran at a third of the H100's bandwidth (ViT-B/16 b32 fp16: 1.9 of 7 ms
 * in these kernels). The pointers are restrict (the tensors of one kernel never overlap:
 * plan.c gives them disjoint lifetimes), so that the leaves' loads need not wait for stores. */
/* "<name>_<suffix>(int n, P)": runs of vec adjacent elements through <name>_<store>,
 * TTC_LIB_EPI_V / vec per work-item: run r of work-item t starts at element (t + r * L) * vec of
 * the group's 8L. */
static void runs_kernel(ttc_sbuf *src, const char *name, const char *suffix, const char *store, const char *P,
                        const char *A_, int32_t vec) {
    ttc_sbuf_printf(src, "__kernel void %s_%s(int n%s) {\n"
                    "    const int L = get_local_size(0), b = get_group_id(0) * L * %d + get_local_id(0) * %d;\n",
                    name, suffix, P, TTC_LIB_EPI_V, vec);
    for (int r = 0; r < TTC_LIB_EPI_V / vec; r++)
        ttc_sbuf_printf(src, "    if (b + %d * L < n) %s_%s(b + %d * L%s);\n", r * vec, name, store, r * vec, A_);
    ttc_sbuf_printf(src, "}\n");
}

static ttc_status gen_lib_epi(ttc_sbuf *src, const ttc_kir *k, const ttc_spelling *sp, const ttc_kop *op,
                              ttc_kspec *ks, const char *P, const char *A_, int32_t vec, int32_t vec_h) {
    ttc_sbuf rp = {0};
    for (const char *c = P; *c; c++) {
        ttc_sbuf_append(&rp, c, 1);
        if (*c == '*') ttc_sbuf_printf(&rp, "restrict ");
    }
    if (!rp.data || rp.oom) { ttc_sbuf_free(&rp); return TTC_ERR_NOMEM; }
    ttc_dtype d = k->ts[op->out].dtype;
    ks->lib_epi = true;
    if (vec_h > 0) {   /* channels-last: runs of vec_h along C (<name>_storeh) */
        ks->lib_epih = true;
        runs_kernel(src, ks->name, "eh", "storeh", rp.data, A_, vec_h);
    }
    if (vec > 1) {
        runs_kernel(src, ks->name, "e", "storev", rp.data, A_, vec);
        ttc_sbuf_free(&rp);
        return TTC_OK;
    }
    /* a work-group of L covers 8L elements: element j of work-item t is t + j*L, so that each
     * load and store of a warp is one contiguous run (8 consecutive elements per work-item made
     * every store instruction touch 16 sectors with 2 bytes each) */
    ttc_sbuf_printf(src, "__kernel void %s_e(int n%s) {\n"
                    "    const int L = get_local_size(0), b = get_group_id(0) * L * %d + get_local_id(0);\n",
                    ks->name, rp.data, TTC_LIB_EPI_V);
    for (int j = 0; j < TTC_LIB_EPI_V; j++) {
        char at[48];
        snprintf(at, sizeof at, "o_off + b + %d * L", j);
        ttc_sbuf_printf(src, "    const float v%d = b + %d * L < n ? ", j, j);
        ttc_codegen_load(src, k, sp, d, "o_", at);
        ttc_sbuf_printf(src, " : 0.0f;\n");
    }
    for (int j = 0; j < TTC_LIB_EPI_V; j++)
        ttc_sbuf_printf(src, "    if (b + %d * L < n) %s_store(v%d, b + %d * L%s);\n", j, ks->name, j, j, A_);
    ttc_sbuf_printf(src, "}\n");
    ttc_sbuf_free(&rp);
    return TTC_OK;
}

static ttc_status gen_op(ttc_sbuf *src, const ttc_kir *k, int32_t oi, ttc_kspec *ks, bool gpu, const ttc_spelling *sp,
                         const ttc_codegen_native_ops *native, const bool *nhwc) {
    const ttc_kop *op = &k->ops[oi];
    const ttc_kind_row *row = ttc_codegen_kind_row(op->kind);
    if (!row || !row->gen)
        return ttc_fail(TTC_ERR_UNSUPPORTED, "no code generator for kernel kind %d (%s)", op->kind, op->name);
    bool nat = row->native && k->native && native && native->op_ok(k, op);
    /* transposing tiles use local memory: the GPU kernel families only (forced on PoCL by tests) */
    int32_t tp0 = -1, tp1 = -1;
    int32_t tleaf = !nat && (gpu || ttc_codegen_gpu_forced(k)) ? ttc_codegen_tiled_leaf(k, op, &tp0, &tp1) : -1;
    /* adjacent elements per work-item: the library epilogue ("<name>_e") on any device, and
     * elementwise kernels of the GPU families (CPU devices run most elementwise ops natively) */
    bool lib = !nat && tleaf < 0 && lib_epi_wanted(k, op);
    int32_t vec = 1;
    if (lib || (!nat && tleaf < 0 && op->kind == TTC_KOP_ELEMENTWISE && (gpu || ttc_codegen_gpu_forced(k))))
        vec = ttc_codegen_vec_width(k, op);
    ttc_kparams epi;
    ttc_kp_init(&epi, k, ks, true);
    /* a convolution whose output the CUDA path keeps channels-last: its epilogue over NHWC too */
    int32_t vec_h = lib && nhwc && nhwc[op->out] ? ttc_codegen_vec_width_nhwc(k, op) : 0;
    ttc_status s = ttc_codegen_store_fns(src, k, op, sp, &epi, tleaf, vec, lib, vec_h > 0);
    if (s == TTC_OK && vec_h) s = ttc_codegen_store_nhwc(src, k, op, sp, &epi, vec_h, nhwc);
    if (s == TTC_OK) {
        /* The store-function arguments come first in ks->args; kernels put them last:
         * rotate after the kind-specific arguments are appended. */
        int32_t n_epi = ks->n_args;
        ttc_kgen g = {src, k, op, ks, gpu, sp, ttc_kp_sig(&epi), ttc_kp_call(&epi), tleaf, tp0, tp1, lib ? 1 : vec};
        if (row->launch == TTC_LAUNCH_OUT) {
            gdim(ks, 0, op->out, 0, k->ts[op->out].rank, 1, 0);
            ks->work_dims = 1;
        }
        if (nat) s = native->gen(src, k, op, ks, g.P, g.A_);
        else s = row->gen(&g);
        ks->n_store_args = n_epi;
        if (s == TTC_OK && lib) s = gen_lib_epi(src, k, sp, op, ks, g.P, g.A_, vec, vec_h);
        if (s == TTC_OK && src->oom) s = ttc_fail(TTC_ERR_NOMEM, "generating kernel %s", op->name);
        if (s == TTC_OK) {
            int32_t n_kind = ks->n_args - n_epi;
            ttc_argspec *tmp = ttc_malloc(sizeof(ttc_argspec) * (size_t)(ks->n_args + 1));
            if (!tmp) s = TTC_ERR_NOMEM;
            else {
                memcpy(tmp, ks->args + n_epi, sizeof(ttc_argspec) * (size_t)n_kind);
                memcpy(tmp + n_kind, ks->args, sizeof(ttc_argspec) * (size_t)n_epi);
                memcpy(ks->args, tmp, sizeof(ttc_argspec) * (size_t)ks->n_args);
                free(tmp);
            }
        }
    }
    ttc_kp_free(&epi);
    if (s != TTC_OK) ttc_fail_context(s, "generating the kernel for %s", op->name);
    return s;
}

ttc_status ttc_codegen_run(const ttc_kir *k, bool gpu, ttc_codegen *out) {
    return ttc_codegen_run_spelled(k, gpu, NULL, out);
}

ttc_status ttc_codegen_run_spelled(const ttc_kir *k, bool gpu, const ttc_spelling *sp, ttc_codegen *out) {
    return ttc_codegen_run_native(k, gpu, sp, NULL, out);
}

ttc_status ttc_codegen_run_native(const ttc_kir *k, bool gpu, const ttc_spelling *sp, const ttc_codegen_native_ops *native,
                                  ttc_codegen *out) {
    memset(out, 0, sizeof *out);
    if (!sp) sp = ttc_spelling_opencl();
    ttc_sbuf src = {0};
    ttc_sbuf_printf(&src, "/* torchtrt_c engine program (generated) */\n");
    if (k->half_compute) ttc_sbuf_printf(&src, "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n");
    {   /* erf, tanh, GELU, floor division (mathfn.cl): vectorisable versions on CPU devices; the
         * native (implementation-defined) exp/reciprocal only where measured: NVIDIA */
        const char *defs[] = {"TTC_CPU_MATH", gpu ? "0" : "1", "TTC_NATIVE_MATH", ttc_kir_target(k)->nvidia ? "1" : "0",
                              NULL};
        ttc_status ms = emit_template(&src, "mathfn", defs);
        if (ms != TTC_OK) { ttc_sbuf_free(&src); return ms; }
    }
    for (int32_t t = 0; t < k->n_ts; t++)
        if (k->ts[t].dtype == TTC_DTYPE_BFLOAT16) { ttc_sbuf_printf(&src, "%s", sp->bf16_fns); break; }
    int32_t live = 0;
    for (int32_t i = 0; i < k->n_ops; i++) live += !k->ops[i].dead;
    out->kernels = ttc_calloc((size_t)live + 1, sizeof(ttc_kspec));
    if (!out->kernels) { ttc_sbuf_free(&src); return TTC_ERR_NOMEM; }
    out->head_len = src.len;
    out->chunk_off = ttc_calloc((size_t)live + 2, sizeof(size_t));
    out->chunk_name = ttc_calloc((size_t)live + 1, sizeof out->chunk_name[0]);
    if (!out->chunk_off || !out->chunk_name) { ttc_sbuf_free(&src); ttc_codegen_free(out); return TTC_ERR_NOMEM; }
    ttc_codegen_dedupe dd = {0};
    bool dedupe = ttc_codegen_dedupe_enabled(k);
    bool *nhwc = ttc_calloc((size_t)k->n_ts + 1, sizeof(bool));
    if (!nhwc) { ttc_sbuf_free(&src); ttc_codegen_free(out); return TTC_ERR_NOMEM; }
    if (!ttc_kir_nhwc_plan(k, nhwc)) { free(nhwc); nhwc = NULL; }
    for (int32_t i = 0; i < k->n_ops; i++) {
        if (k->ops[i].dead || k->ops[i].inlined) continue;   /* inlined: its reader computes it */
        ttc_kspec *ks = &out->kernels[out->n_kernels++];
        ks->op = i;
        snprintf(ks->name, sizeof ks->name, "k%d", out->n_kernels - 1);
        size_t head = src.len;
        ttc_sbuf_printf(&src, "\n/* %s: %s */\n", ks->name, k->ops[i].name);
        size_t start = src.len, cut = 0;
        ttc_status s = gen_op(&src, k, i, ks, gpu, sp, native, nhwc);
        if (s == TTC_OK && dedupe) s = ttc_codegen_dedupe_add(&dd, &src, start, ks, &cut);
        if (s != TTC_OK) { free(nhwc); ttc_codegen_dedupe_free(&dd); ttc_sbuf_free(&src); ttc_codegen_free(out); return s; }
        if (cut) src.len = head;   /* a copy of ks->name's kernel: launch that one */
        else {
            out->chunk_off[out->n_chunks] = head;
            snprintf(out->chunk_name[out->n_chunks++], sizeof out->chunk_name[0], "%s", ks->name);
        }
        if (src.data && !src.oom) src.data[src.len] = 0;
    }
    free(nhwc);
    out->chunk_off[out->n_chunks] = src.len;
    out->n_unique = dedupe ? dd.n : out->n_kernels;
    ttc_codegen_dedupe_free(&dd);
    if (src.oom) { ttc_sbuf_free(&src); ttc_codegen_free(out); return ttc_fail(TTC_ERR_NOMEM, "generating source"); }
    out->source = ttc_sbuf_take(&src);
    return TTC_OK;
}

void ttc_codegen_free(ttc_codegen *cg) {
    for (int32_t i = 0; i < cg->n_kernels; i++) free(cg->kernels[i].args);
    free(cg->kernels);
    free(cg->source);
    free(cg->chunk_off);
    free(cg->chunk_name);
    memset(cg, 0, sizeof *cg);
}
