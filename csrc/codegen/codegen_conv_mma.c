/* Tensor-core convolution (conv2d_mma.cl): the tile choice and the template's specialisation.
 * Ops marked p.conv.mma at conversion (conv_nn.c) come here from ttc_gen_conv; their in[2]
 * holds the weights packed [G][OCG][KP]. The PTX prelude goes first, with the real
 * instructions on NVIDIA targets and its portable emulation elsewhere (forced runs on PoCL). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen_impl.h"

/* {BM, BN, WM, WN, STAGES}: each keeps BM * 4 and BN * 4 multiples of the work-group size
 * (32 * WM * WN), warp tiles of whole 16-row and 16-column blocks, and local memory
 * (STAGES * BM + 2 * BN) * 80 bytes within 48 KiB. */
#define MMA_TILES 6
static const int32_t mma_tiles[MMA_TILES][5] = {
    {128, 128, 2, 4, 2}, {128, 64, 4, 2, 3}, {64, 128, 2, 4, 3}, {64, 64, 2, 2, 3}, {64, 32, 2, 1, 3}, {32, 64, 1, 2, 3},
};

static int64_t dim_at_opt(const ttc_kir *k, ttc_dim d) {
    if (d.sym < 0 || d.sym >= k->n_syms) return d.add;
    return d.mul * k->syms[d.sym].opt + d.add;
}

/* The biggest tile that still gives every compute unit a work-group with at least 70% of its
 * outputs useful (OCG and the pixel count are rarely multiples of the tile); else the 64x64
 * tile, else the small ones by which side is shorter. TORCHTRT_C_CONV_TILE=<i> forces one. */
static int32_t mma_tile_choice(const ttc_kir *k, int64_t G, int64_t OCG, int64_t NPQ, int64_t S) {
    const ttc_target *tg = ttc_kir_target(k);
    if (tg->conv_tile >= 0 && tg->conv_tile < MMA_TILES) return tg->conv_tile;
    int64_t cu = tg->compute_units > 0 ? tg->compute_units : 1;
    for (int32_t t = 0; t < 4; t++) {
        const int32_t *c = mma_tiles[t];
        int64_t mt = (OCG + c[0] - 1) / c[0], nt = (NPQ + c[1] - 1) / c[1];
        bool full = 10 * OCG * NPQ >= 7 * mt * c[0] * nt * c[1];
        if (full && G * S * mt * nt >= cu) return t;
    }
    if (OCG > 32 && NPQ >= 64) return 3;
    return OCG <= 32 ? 5 : 4;
}

ttc_status ttc_gen_conv_mma(const ttc_kgen *g) {
    TTC_KGEN_LOCALS(g);
    const ttc_et *x = &k->ts[op->in[0]], *w = &k->ts[op->in[2]], *out = &k->ts[op->out];
    bool tf32 = op->p.conv.mma == 2;
    int32_t G = op->p.conv.groups;
    int64_t C = x->dims[1].add, OC = out->dims[1].add, ICG = C / G, OCG = OC / G;
    int64_t KT = ICG * op->p.conv.k[0] * op->p.conv.k[1], KP = (KT + 31) / 32 * 32, BK = tf32 ? 16 : 32;
    if (w->rank != 1 || w->dims[0].add != G * OCG * KP || w->dtype != (tf32 ? TTC_DTYPE_FLOAT32 : TTC_DTYPE_FLOAT16) ||
        (tf32 && x->dtype != TTC_DTYPE_FLOAT32))
        return ttc_fail(TTC_ERR_INTERNAL, "codegen: tensor-core convolution %s has weights or input of the wrong kind",
                        op->name ? op->name : "?");
    int64_t S = op->p.conv.ksplit > 1 ? op->p.conv.ksplit : 1;
    int64_t NPQ = dim_at_opt(k, out->dims[0]) / S * dim_at_opt(k, out->dims[2]) * dim_at_opt(k, out->dims[3]);
    const int32_t *c = mma_tiles[mma_tile_choice(k, G, OCG, NPQ, S)];
    int64_t KTR = (KT + BK - 1) / BK * BK, KSL = ((KTR + S - 1) / S + BK - 1) / BK * BK;
    int32_t nt = 32 * c[2] * c[3];
    int64_t MT = (OCG + c[0] - 1) / c[0];
    TTC_TRY(ttc_codegen_ptx_prelude(src, k));
    char v[22][24];
    int64_t vals[22] = {x->dtype == TTC_DTYPE_FLOAT32, tf32, C, OC, ICG, OCG, op->p.conv.k[0], op->p.conv.k[1],
                        op->p.conv.stride[0], op->p.conv.stride[1], op->p.conv.pad[0], op->p.conv.pad[1],
                        op->p.conv.dil[0], op->p.conv.dil[1], KP, MT, c[0], c[1], c[2], c[3], c[4], S};
    for (int i = 0; i < 22; i++) snprintf(v[i], sizeof v[i], "%lld", (long long)vals[i]);
    char ksl[24], store[32];
    snprintf(ksl, sizeof ksl, "%lld", (long long)KSL);
    snprintf(store, sizeof store, "%s_store", ks->name);
    const char *defs[] = {"KNAME", ks->name, "STORE_FN", store, "EPI_PARAMS", P, "EPI_ARGS", A_,
                          "TX", ttc_cl_storage_type(x->dtype), "X_F32", v[0], "CONV_TF32", v[1], "C", v[2], "OC", v[3],
                          "ICG", v[4], "OCG", v[5], "KH", v[6], "KW", v[7], "SH", v[8], "SW", v[9], "PH", v[10],
                          "PW", v[11], "DH", v[12], "DW", v[13], "KP", v[14], "MT", v[15], "BM", v[16], "BN", v[17],
                          "WM", v[18], "WN", v[19], "STAGES", v[20], "KSPLIT", v[21], "KSL", ksl, NULL};
    return ttc_codegen_conv_splitk(src, k, ks, op, "conv2d_mma", defs, S, OC, (int32_t)c[1], nt, G * MT);
}
