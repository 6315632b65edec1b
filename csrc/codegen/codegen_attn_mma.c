/* The tensor-core attention: flash-style SDPA on mma.sync, csrc/kernels/attn_mma.cl for fp16
 * q/k/v and attn_tf32.cl for fp32 ones (3xTF32: fp32's accuracy on tensor cores), chosen by
 * ttc_gen_attention where ttc_attn_mma_ok says so; everything else keeps the row kernel
 * (codegen_data.c). By default only NVIDIA targets take it (the prelude's real instructions);
 * TORCHTRT_C_ATTN_MMA=1 forces it anywhere (the prelude's emulation, for tests on PoCL), =0
 * turns it off. */
#include "codegen_impl.h"

#include <math.h>
#include <stdio.h>

/* the emulation's scratch per warp (ptx.cl's TTC_PTX_EMU_WORDS floats) */
#define ATTN_EMU_BYTES (384 * 4)

typedef struct attn_tile { int32_t nw, bn; } attn_tile;

/* Local memory of a tile: one K and one V block of bn rows (the Q tile of 16 nw rows passes
 * through the same space), rows of e + 8 halves (fp16) or e + 4 floats (fp32, each block
 * followed by its small parts), plus the emulation's scratch. */
static size_t local_bytes(attn_tile t, int32_t e, bool f32, bool emulated) {
    int32_t kv = (f32 ? 4 : 2) * t.bn, rows = 16 * t.nw > kv ? 16 * t.nw : kv;
    size_t row = f32 ? (size_t)(e + 4) * 4 : (size_t)(e + 8) * 2;
    return (size_t)rows * row + (emulated ? (size_t)t.nw * ATTN_EMU_BYTES : 4);
}

/* as ttc_codegen_ptx_prelude decides */
static bool ptx_target(const ttc_target *tg) { return tg->nvidia; }

/* 4 warps (64 query rows) and 64-key blocks (fp16) or 16-key ones (fp32: on the H100 4x16
 * beat 4x32, 8x32, 2x32 and 8x16 at every zoo shape, bench/attn_kernel.py --precision fp32)
 * unless TORCHTRT_C_ATTN_TILE says otherwise and that fits the device's local memory */
static attn_tile tile_for(const ttc_target *tg, int32_t e, bool f32) {
    attn_tile t = {4, f32 ? 16 : 64};
    if (tg->attn_nw > 0 && tg->attn_bn > 0) {
        attn_tile f = {tg->attn_nw, tg->attn_bn};
        if (tg->local_mem >= local_bytes(f, e, f32, !ptx_target(tg))) t = f;
    }
    return t;
}

/* q, k and v all fp16 (attn_mma.cl) or all fp32 (attn_tf32.cl) */
static bool qkv_f32(const ttc_kir *k, const ttc_kop *op) { return k->ts[op->in[0]].dtype == TTC_DTYPE_FLOAT32; }

bool ttc_attn_mma_ok(const ttc_kir *k, const ttc_kop *op) {
    const ttc_target *tg = ttc_kir_target(k);
    bool ptx = ptx_target(tg);
    if (tg->attn_mma == 0 || (tg->attn_mma < 0 && !ptx)) return false;
    if (op->kind != TTC_KOP_ATTENTION || k->ts[op->out].rank > 4 || k->ts[op->out].rank < 2) return false;
    bool f32 = qkv_f32(k, op);
    for (int32_t i = 0; i < 3; i++)
        if (k->ts[op->in[i]].dtype != (f32 ? TTC_DTYPE_FLOAT32 : TTC_DTYPE_FLOAT16)) return false;
    int32_t e = op->p.attn.e;
    /* head dims of whole k-steps; past 128 (fp16) or 64 (fp32: Q's big and small parts) the
     * fragments no longer fit in registers */
    if (op->p.attn.ev != e) return false;
    if (f32 ? e % 8 != 0 || e > 64 : e % 16 != 0 || e < 16 || e > 128) return false;
    return tg->local_mem >= local_bytes(tile_for(tg, e, f32), e, f32, !ptx);
}

ttc_status ttc_gen_attention_mma(const ttc_kgen *g, ttc_kparams *p) {
    TTC_KGEN_LOCALS(g);
    const ttc_target *tg = ttc_kir_target(k);
    int32_t R = k->ts[op->out].rank, mt = op->in[3];
    bool ptx = ptx_target(tg), f32 = qkv_f32(k, op);
    attn_tile tl = tile_for(tg, op->p.attn.e, f32);
    TTC_TRY(ttc_codegen_ptx_prelude(src, k));   /* real instructions exactly where nvidia */
    ttc_kp_int(p, TTC_ARG_DIM, op->out, R - 2, 0, 0, "L");
    ttc_kp_int(p, TTC_ARG_DIM, op->in[1], k->ts[op->in[1]].rank - 2, 0, 0, "S");
    if (R >= 3) ttc_kp_int(p, TTC_ARG_DIM, op->out, R - 3, 0, 0, "nh");
    else ttc_kp_int(p, TTC_ARG_INT, 0, 0, 0, 1, "nh");
    ttc_kp_tensor(p, op->in[0], "q", 4);
    ttc_kp_tensor(p, op->in[1], "k", 4);
    ttc_kp_tensor(p, op->in[2], "v", 4);
    /* without a mask the kernel never reads m: q stands in so that the signature is fixed */
    ttc_kp_tensor(p, mt >= 0 ? mt : op->in[0], "m", 4);
    ttc_dtype md = mt >= 0 ? k->ts[mt].dtype : TTC_DTYPE_FLOAT16;
    if (mt >= 0 && md != TTC_DTYPE_BOOL) ttc_codegen_loader(src, g->sp, "LDM", md, false);
    char e[8], nw[8], bn[8], grp[8], sc[32], kname[24], store[32];
    snprintf(e, sizeof e, "%d", op->p.attn.e);
    snprintf(nw, sizeof nw, "%d", tl.nw);
    snprintf(bn, sizeof bn, "%d", tl.bn);
    snprintf(grp, sizeof grp, "%d", op->p.attn.group > 1 ? op->p.attn.group : 1);
    snprintf(sc, sizeof sc, "%.9ef", op->p.attn.scale * 1.4426950408889634);
    snprintf(kname, sizeof kname, "%s", ks->name);
    snprintf(store, sizeof store, "%s_store", ks->name);
    const char *defs[] = {"KNAME", kname, "STORE_FN", store, "EPI_PARAMS", P, "EPI_ARGS", A_,
                          "D", e, "NW", nw, "BN", bn, "MT", ttc_cl_storage_type(md),
                          "HAS_MASK", mt >= 0 ? "1" : "0", "MASK_BOOL", md == TTC_DTYPE_BOOL ? "1" : "0",
                          "CAUSAL", op->p.attn.causal ? "1" : "0", "GROUP", grp, "SCALE2", sc,
                          "UNROLL", ptx ? "_Pragma(\"unroll\")" : "", "EXP2", ptx ? "native_exp2" : "exp2", NULL};
    const char *tmpl = f32 ? "attn_tf32" : "attn_mma";
    ttc_sbuf_printf(src, "/* %s: %s */\n", tmpl, ptx ? "tensor cores" : "tensor-core emulation");
    TTC_TRY(ttc_codegen_template_checked(src, tmpl, defs, p));
    if (mt >= 0 && md != TTC_DTYPE_BOOL) ttc_sbuf_printf(src, "#undef LDM\n");
    /* one work-group of 32 * NW work-items per 16 * NW query rows; (batch, head) along dim 1 */
    int32_t nth = 32 * tl.nw;
    ttc_codegen_gdim(ks, 0, op->out, R - 2, R - 1, 16 * tl.nw, nth);
    ks->g[0].mul = nth;
    ttc_codegen_gdim(ks, 1, op->out, 0, R - 2, 1, 1);
    ks->use_local = true;
    return TTC_OK;
}
