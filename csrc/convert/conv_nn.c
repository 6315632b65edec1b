/* Converters for convolution (1-D/2-D, groups, depthwise), batch norm (folded into the
 * preceding convolution's weights when it is the only user, else a per-channel affine
 * that fuses into the producer's epilogue), pooling, softmax and layer/group norm. */
#include "converters.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *nname(const ttc_node *n) { return n->name ? n->name : n->op_name; }

static bool fail_why(char **why, const char *msg) {
    if (why) *why = ttc_strdup(msg);
    return false;
}

static ttc_status ints_arg(ttc_conv_ctx *cx, const ttc_node *n, int32_t i, int32_t cnt, int32_t *out, int64_t dflt) {
    for (int32_t j = 0; j < cnt; j++) out[j] = (int32_t)dflt;
    if (i >= n->n_inputs || ttc_cx_is_none(cx, n, i)) return TTC_OK;
    const int64_t *v;
    int32_t len;
    TTC_TRY(ttc_cx_ints(cx, n, i, &v, &len));
    if (len == 0) return TTC_OK;
    for (int32_t j = 0; j < cnt; j++) out[j] = (int32_t)(len == 1 ? v[0] : j < len ? v[j] : v[len - 1]);
    return TTC_OK;
}

/* IEEE half -> float (weights of models converted with .half()). */
static float half_bits_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, u;
    if (e == 0) {
        float f = (float)m * (1.0f / 16777216.0f);  /* zero and subnormals: m * 2^-24 */
        return sign ? -f : f;
    }
    u = sign | (e == 0x1f ? 0x7f800000u | (m << 13) : ((e + 112) << 23) | (m << 13));
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Host float copy of a constant engine tensor (float32/float16 data). */
static float *const_floats(ttc_conv_ctx *cx, int32_t t, int64_t *numel) {
    const ttc_et *et = &cx->k->ts[t];
    if (et->kind != TTC_ET_CONST || (et->dtype != TTC_DTYPE_FLOAT32 && et->dtype != TTC_DTYPE_FLOAT16)) return NULL;
    int64_t n = 1;
    for (int32_t d = 0; d < et->rank; d++) n *= et->dims[d].add;
    float *f = ttc_malloc(sizeof(float) * (size_t)(n + 1));
    if (f && et->dtype == TTC_DTYPE_FLOAT32) memcpy(f, et->data->data, sizeof(float) * (size_t)n);
    else if (f) {
        const unsigned char *src = et->data->data;
        for (int64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, src + 2 * i, 2);
            f[i] = half_bits_to_float(h);
        }
    }
    *numel = n;
    return f;
}

/* float -> tf32 as the tensor cores read it after cvt.rna.tf32.f32: nearest, ties away from
 * zero, 10 mantissa bits (the weights are rounded once here, the activations in the kernel) */
static float round_tf32(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;
    memcpy(&f, &u, 4);
    return f;
}

/* Sets the conv op's weights (original and, when blocked, packed) and its bias epilogue. */
static ttc_status conv_set_weights(ttc_conv_ctx *cx, int32_t oi, const float *w, const int64_t *wshape,
                                   const float *bias, const char *name) {
    ttc_kir *k = cx->k;
    ttc_kop *op = &k->ops[oi];
    int64_t OC = wshape[0], ICG = wshape[1], KH = wshape[2], KW = wshape[3];
    int32_t G = op->p.conv.groups;
    int64_t OCG = OC / G, NOB = (OCG + 7) / 8;
    int32_t wt = ttc_kir_const_f32(k, TTC_DTYPE_FLOAT32, 4, wshape, w, name);
    if (wt < 0) return TTC_ERR_NOMEM;
    op = &k->ops[oi];
    op->in[1] = wt;
    op->in[3] = -1;
    op->p.conv.ocb = 1;
    if (OCG >= 8) {
        int64_t psz = G * NOB * ICG * KH * KW * 8;
        float *pk = ttc_calloc((size_t)psz + 1, sizeof(float));
        if (!pk) return TTC_ERR_NOMEM;
        for (int64_t g = 0; g < G; g++)
            for (int64_t o = 0; o < OCG; o++)
                for (int64_t ic = 0; ic < ICG; ic++)
                    for (int64_t kk = 0; kk < KH * KW; kk++)
                        pk[((((g * NOB + o / 8) * ICG + ic) * KH * KW + kk) * 8) + o % 8] =
                            w[(((g * OCG + o) * ICG + ic) * KH * KW) + kk];
        int32_t pt = ttc_kir_const_f32(k, TTC_DTYPE_FLOAT32, 1, &psz, pk, name);
        free(pk);
        if (pt < 0) return TTC_ERR_NOMEM;
        op = &k->ops[oi];
        op->in[3] = pt;
        op->p.conv.ocb = 8;
    }
    /* GPU implicit GEMM: [G][K = (KH, KW, ICG)][OCG4] (engine precision), see conv2d_igemm.cl;
     * on tensor cores [G][OCG][KP] (conv2d_mma.cl) */
    op->in[2] = -1;
    if (op->p.conv.mma) {
        int32_t mma = op->p.conv.mma;
        int64_t KT = ICG * KH * KW, KP = (KT + 31) / 32 * 32, psz = G * OCG * KP;
        float *pk = ttc_calloc((size_t)psz + 1, sizeof(float));
        if (!pk) return TTC_ERR_NOMEM;
        for (int64_t o = 0; o < G * OCG; o++)
            for (int64_t ic = 0; ic < ICG; ic++)
                for (int64_t t = 0; t < KH * KW; t++) {
                    float v = w[(o * ICG + ic) * KH * KW + t];
                    pk[o * KP + t * ICG + ic] = mma == 2 ? round_tf32(v) : v;
                }
        int32_t pt = ttc_kir_const_f32(k, mma == 1 ? TTC_DTYPE_FLOAT16 : TTC_DTYPE_FLOAT32, 1, &psz, pk, name);
        free(pk);
        if (pt < 0) return TTC_ERR_NOMEM;
        op = &k->ops[oi];
        op->in[2] = pt;
    } else if (!(G > 1 && ICG == 1)) {
        int64_t OCG4 = (OCG + 3) / 4 * 4, KT = ICG * KH * KW, psz = G * KT * OCG4;
        float *pk = ttc_calloc((size_t)psz + 1, sizeof(float));
        if (!pk) return TTC_ERR_NOMEM;
        for (int64_t g = 0; g < G; g++)
            for (int64_t o = 0; o < OCG; o++)
                for (int64_t ic = 0; ic < ICG; ic++)
                    for (int64_t t = 0; t < KH * KW; t++)
                        pk[(g * KT + t * ICG + ic) * OCG4 + o] = w[((g * OCG + o) * ICG + ic) * KH * KW + t];
        int32_t pt = ttc_kir_const_f32(k, cx->fp16 ? TTC_DTYPE_FLOAT16 : TTC_DTYPE_FLOAT32, 1, &psz, pk, name);
        free(pk);
        if (pt < 0) return TTC_ERR_NOMEM;
        op = &k->ops[oi];
        op->in[2] = pt;
    }
    ttc_expr_free(&op->epi);
    if (bias) {
        int64_t bshape[3] = {OC, 1, 1};
        int32_t bt = ttc_kir_const_f32(k, TTC_DTYPE_FLOAT32, 3, bshape, bias, name);
        if (bt < 0) return TTC_ERR_NOMEM;
        ttc_expr *e = &k->ops[oi].epi;
        int32_t a = ttc_expr_acc(e, TTC_DTYPE_FLOAT32), b = ttc_expr_leaf(e, bt, TTC_DTYPE_FLOAT32);
        if (ttc_expr_op(e, TTC_EOP_ADD, a, b, -1, TTC_DTYPE_FLOAT32) < 0) return TTC_ERR_NOMEM;
    }
    return TTC_OK;
}

/* The TF32 policy for fp32 convolutions: the engine's allow_tf32_conv (by default
 * torch.backends.cudnn.allow_tf32 when compiled), which the target carries on NVIDIA only. */
static bool conv_tf32_allowed(const ttc_target *tg) { return tg->tf32_conv; }

/* Whether a convolution runs on tensor cores (conv2d_mma.cl) and in which precision: 1 fp16
 * (fp16 engines), 2 TF32 (fp32 ones where the target's TF32 policy allows it), 0 not.
 * Depthwise and thin groups (fewer than 16 channels in or out per group) stay on the CUDA-core
 * kernels. NVIDIA GPUs choose it for convolutions with enough work (at the symbols' opt
 * values): about 16M multiply-adds, where the tile loop dwarfs its set-up. TORCHTRT_C_CONV_MMA=1
 * forces it on any device for every eligible convolution (PoCL runs the emulation), =tf32
 * also fp32 ones in TF32, =0 never. */
static int32_t conv_mma_mode(const ttc_conv_ctx *cx, const ttc_et *xt, const ttc_dim *od, const int64_t *wshape,
                             int64_t groups) {
    const ttc_target *tg = cx->tg;
    if (!tg || tg->conv_mma == 0) return 0;
    int64_t OC = wshape[0], ICG = wshape[1], OCG = OC / groups, KT = ICG * wshape[2] * wshape[3];
    if (groups > 1 && (ICG < 16 || OCG < 16)) return 0;
    bool forced = tg->conv_mma >= 1;
    int32_t mode;
    if (cx->fp16 && (xt->dtype == TTC_DTYPE_FLOAT16 || xt->dtype == TTC_DTYPE_FLOAT32)) mode = 1;
    else if (!cx->fp16 && xt->dtype == TTC_DTYPE_FLOAT32 && (tg->conv_mma == 2 || conv_tf32_allowed(tg))) mode = 2;
    else return 0;
    if (forced) return mode;
    if (!tg->nvidia || !tg->gpu_kernels || OCG < 16) return 0;
    int64_t npq = 1;
    static const int32_t pix_dims[3] = {0, 2, 3};
    for (int32_t j = 0; j < 3; j++) {
        int32_t d = pix_dims[j];
        int64_t v = od[d].sym >= 0 && od[d].sym < cx->k->n_syms ? od[d].mul * cx->k->syms[od[d].sym].opt + od[d].add
                                                                 : od[d].add;
        npq *= v > 0 ? v : 1;
    }
    return OC * npq * KT >= ((int64_t)1 << 24) ? mode : 0;
}

/* Split-K for convolutions with few outputs and a long reduction (deep layers at small
 * batch): too few output tiles to keep a GPU busy (about 64k work-items of 16 outputs),
 * so the reduction is cut into slices of at least 128 whose partial sums a REDUCE op adds
 * up (carrying the epilogue). Needs a static batch; only ungrouped convolutions.
 * The target's conv_ksplit_cap (TORCHTRT_C_CONV_KSPLIT) caps the slices (1: never split).
 * Returns the slice count. */
static int32_t conv_ksplit(const ttc_dim *od, int64_t C, int64_t OC, int64_t KH, int64_t KW, int64_t groups,
                           int64_t cap) {
    if (groups != 1 || od[0].sym >= 0 || od[2].sym >= 0 || od[3].sym >= 0) return 1;
    int64_t K = C * KH * KW, outs = OC * od[0].add * od[2].add * od[3].add;
    if (K < 512 || outs >= (1 << 19)) return 1;
    int64_t s = ((int64_t)1 << 20) / (outs > 0 ? outs : 1);
    if (s > K / 128) s = K / 128;
    if (s > cap) s = cap;
    return s < 2 ? 1 : (int32_t)s;
}

/* A 1x1, stride-1, unpadded, ungrouped convolution as a batched GEMM: out[n] (OC x H*W) =
 * w (OC x C) @ x[n] (C x H*W), bias in the epilogue, the result a reshape back to
 * [N, OC, H, W] (elementwise consumers still fuse into the GEMM through it, fuse.c). For fp16
 * engines with the GPU kernel families: there the GEMM runs on tensor cores (gemm_mma.cl,
 * NVIDIA) where the convolution kernels compute in float. H and W must be static. */
static bool conv_as_gemm_ok(const ttc_conv_ctx *cx, const ttc_et *xt, int32_t nd, const int64_t *wshape,
                            int64_t groups, const int32_t *stride, const int32_t *pad) {
    return cx->split_k && cx->fp16 && nd == 2 && groups == 1 && wshape[2] == 1 && wshape[3] == 1 &&
           stride[0] == 1 && stride[1] == 1 && pad[0] == 0 && pad[1] == 0 && xt->rank == 4 &&
           xt->dims[2].sym < 0 && xt->dims[3].sym < 0;
}

/* Whether a 1x1 stride-1 convolution that conv_as_gemm_ok accepts runs as a tensor-core
 * convolution instead: always under TORCHTRT_C_CONV_MMA=1; on NVIDIA for deep inputs (at least
 * 512 channels, or 256 on planes of at most 28x28) with at least 1568 pixels (batch 32 at 7x7).
 * ResNet-50's pointwise layers at batch 32 fp16 on the H100: the convolution took 0.48-0.80 of
 * the GEMM's time there (1024->512 at 14x14: 68 vs 142 us) and 1.03-1.43 on the shallow ones
 * (64->256 at 56x56: 178 vs 124 us), which stay GEMMs (bench/kernels.py conv, alt_us). Batch 1
 * keeps the GEMM (unmeasured there). */
static bool pointwise_mma(const ttc_conv_ctx *cx, const ttc_et *xt, const int64_t *wshape) {
    const ttc_target *tg = cx->tg;
    if (!tg || tg->conv_mma == 0 || xt->rank != 4) return false;
    if (tg->conv_mma >= 1) return true;
    if (!tg->nvidia || !tg->gpu_kernels || !cx->fp16) return false;
    int64_t C = wshape[1], HW = xt->dims[2].add * xt->dims[3].add;
    int64_t n = xt->dims[0].sym >= 0 && xt->dims[0].sym < cx->k->n_syms
                    ? xt->dims[0].mul * cx->k->syms[xt->dims[0].sym].opt + xt->dims[0].add : xt->dims[0].add;
    /* and what conv_mma_mode asks of a convolution (else it would fall to the CUDA cores) */
    return (C >= 512 || (C >= 256 && HW <= 784)) && n * HW >= 1568 && wshape[0] >= 16 &&
           wshape[0] * n * HW * C >= ((int64_t)1 << 24);
}

static ttc_status conv_as_gemm(ttc_conv_ctx *cx, const ttc_node *n, int32_t xc, const float *w,
                               const int64_t *wshape, const float *bias) {
    ttc_kir *k = cx->k;
    const char *name = n->outputs[0]->name;
    const ttc_type *ot = &n->outputs[0]->type;
    const ttc_et *xt = &k->ts[xc];
    int64_t OC = wshape[0], C = wshape[1], HW = xt->dims[2].add * xt->dims[3].add;
    ttc_dim bd[3] = {xt->dims[0], xt->dims[1], ttc_dim_const(HW)};
    int32_t bv = ttc_kir_view(k, xc, TTC_VIEW_RESHAPE, 3, bd, name);
    int64_t ashape[2] = {OC, C};
    int32_t at = bv < 0 ? -1 : ttc_kir_const_f32(k, TTC_DTYPE_FLOAT32, 2, ashape, w, name);
    ttc_dim od[3] = {ot->dims[0], ot->dims[1], ttc_dim_const(HW)};
    int32_t oi = at < 0 ? -1 : ttc_kir_op(k, TTC_KOP_GEMM, ttc_cx_float_dtype(cx, ot->dtype), 3, od, name);
    if (oi < 0) return TTC_ERR_NOMEM;
    ttc_kop *op = &k->ops[oi];
    op->in[0] = at;
    op->in[1] = bv;
    op->p.gemm.trans_b = false;
    int32_t y = ttc_kir_view(k, k->ops[oi].out, TTC_VIEW_RESHAPE, 4, ot->dims, name);
    if (y < 0) return TTC_ERR_NOMEM;
    if (bias) {
        /* y + bias[OC, 1, 1] as an elementwise op on the NCHW view, which fuse.c folds into
         * the GEMM (a bias in the GEMM's own epilogue would have to vary along its N) */
        int64_t bshape[3] = {OC, 1, 1};
        int32_t bt = ttc_kir_const_f32(k, TTC_DTYPE_FLOAT32, 3, bshape, bias, name);
        if (bt < 0) return TTC_ERR_NOMEM;
        ttc_dtype dt = k->ts[y].dtype;
        ttc_expr e;
        ttc_expr_init(&e);
        int32_t a = ttc_expr_leaf(&e, y, dt), b = ttc_expr_leaf(&e, bt, TTC_DTYPE_FLOAT32);
        if (a < 0 || b < 0 || ttc_expr_op(&e, TTC_EOP_ADD, ttc_expr_cast(&e, a, TTC_DTYPE_FLOAT32), b, -1,
                                          TTC_DTYPE_FLOAT32) < 0) {
            ttc_expr_free(&e);
            return TTC_ERR_NOMEM;
        }
        y = ttc_kir_elementwise(k, &e, dt, 4, ot->dims, name);
        if (y < 0) return TTC_ERR_NOMEM;
    }
    return ttc_cx_set_output(cx, n, 0, y);
}

/* convolution(x, w, b, stride, padding, dilation, transposed, output_padding, groups);
 * conv2d/conv1d(x, w, b, stride, padding, dilation, groups) */
ttc_status ttc_convert_conv(ttc_conv_ctx *cx, const ttc_node *n) {
    ttc_kir *k = cx->k;
    int32_t x, w, b = -1;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &x));
    TTC_TRY(ttc_cx_tensor(cx, n, 1, &w));
    if (!ttc_cx_is_none(cx, n, 2)) TTC_TRY(ttc_cx_tensor(cx, n, 2, &b));
    int32_t nd = k->ts[w].rank - 2;
    int32_t gi = n->op == TTC_OP_CONVOLUTION ? 8 : 6;
    int64_t groups = 1;
    if (gi < n->n_inputs) TTC_TRY(ttc_cx_int(cx, n, gi, &groups));
    int32_t stride[2], pad[2], dil[2];
    TTC_TRY(ints_arg(cx, n, 3, nd, stride, 1));
    TTC_TRY(ints_arg(cx, n, 4, nd, pad, 0));
    TTC_TRY(ints_arg(cx, n, 5, nd, dil, 1));
    if (nd == 1) {  /* 1-D as 2-D with height 1 */
        stride[1] = stride[0]; pad[1] = pad[0]; dil[1] = dil[0];
        stride[0] = 1; pad[0] = 0; dil[0] = 1;
    }
    {
        const ttc_et *xt = &k->ts[x], *wt0 = &k->ts[w];
        int64_t C = xt->dims[1].add, OC = wt0->dims[0].add;
        bool ok = xt->rank == nd + 2 && xt->dims[1].sym < 0 && groups >= 1 && C % groups == 0 && OC % groups == 0 &&
                  OC >= 1 && wt0->dims[1].add * groups == C;
        for (int32_t i = 0; i < nd; i++) ok = ok && wt0->dims[2 + i].add >= 1;
        for (int32_t i = 0; i < 2; i++) ok = ok && stride[i] >= 1 && dil[i] >= 1 && pad[i] >= 0;
        if (!ok)
            return ttc_fail(TTC_ERR_INVALID_ARG, "node %s: inconsistent convolution (channels %lld, weight %lldx%lld, "
                            "groups %lld, stride/dilation >= 1, padding >= 0 required)", nname(n), (long long)C,
                            (long long)OC, (long long)wt0->dims[1].add, (long long)groups);
    }
    int64_t wnum;
    float *wf = const_floats(cx, w, &wnum);
    float *bf = NULL;
    if (!wf) return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: convolution weights must be float32/float16 constants", nname(n));
    if (b >= 0 && !(bf = const_floats(cx, b, &wnum))) {
        free(wf);
        return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: convolution bias must be a float32/float16 constant", nname(n));
    }
    const ttc_et *wt = &k->ts[w];
    int64_t wshape[4] = {wt->dims[0].add, wt->dims[1].add, nd == 2 ? wt->dims[2].add : 1, wt->dims[nd + 1].add};
    /* input: dense, 4-D */
    int32_t xc;
    ttc_status s = ttc_cx_contiguous(cx, x, n->outputs[0]->name, &xc);
    const ttc_type *ot = &n->outputs[0]->type;
    if (s == TTC_OK && nd == 1) {
        ttc_dim d4[4] = {k->ts[xc].dims[0], k->ts[xc].dims[1], ttc_dim_const(1), k->ts[xc].dims[2]};
        xc = ttc_kir_view(k, xc, TTC_VIEW_RESHAPE, 4, d4, n->outputs[0]->name);
        if (xc < 0) s = TTC_ERR_NOMEM;
    }
    if (s == TTC_OK && !pointwise_mma(cx, &k->ts[xc], wshape) &&
        conv_as_gemm_ok(cx, &k->ts[xc], nd, wshape, groups, stride, pad)) {
        s = conv_as_gemm(cx, n, xc, wf, wshape, bf);
        free(wf);
        free(bf);
        return s;
    }
    int32_t oi = -1, ksplit = 1;
    if (s == TTC_OK) {
        ttc_dim od[4] = {ot->dims[0], ot->dims[1], nd == 2 ? ot->dims[2] : ttc_dim_const(1), ot->dims[nd + 1]};
        /* CPU devices: no split (their kernel would sum every slice in slice 0 anyway and
         * write zeros for the rest, which a REDUCE op then adds) */
        ksplit = cx->split_k ? conv_ksplit(od, wshape[1] * groups, wshape[0], wshape[2], wshape[3], groups, cx->ksplit_cap) : 1;
        ttc_dim pd[4] = {ttc_dim_const(od[0].add * ksplit), od[1], od[2], od[3]};
        oi = ttc_kir_op(k, TTC_KOP_CONV2D, ksplit > 1 ? TTC_DTYPE_FLOAT32 : ttc_cx_float_dtype(cx, ot->dtype), 4,
                        ksplit > 1 ? pd : od, n->outputs[0]->name);
        if (oi < 0) s = TTC_ERR_NOMEM;
        else {
            k->ops[oi].p.conv.ksplit = ksplit;
            k->ops[oi].p.conv.mma = conv_mma_mode(cx, &k->ts[xc], od, wshape, groups);
        }
    }
    if (s == TTC_OK) {
        ttc_kop *op = &k->ops[oi];
        op->in[0] = xc;
        op->p.conv.groups = (int32_t)groups;
        op->p.conv.k[0] = (int32_t)wshape[2];
        op->p.conv.k[1] = (int32_t)wshape[3];
        memcpy(op->p.conv.stride, stride, sizeof stride);
        memcpy(op->p.conv.pad, pad, sizeof pad);
        memcpy(op->p.conv.dil, dil, sizeof dil);
        s = conv_set_weights(cx, oi, wf, wshape, bf, n->outputs[0]->name);
    }
    free(wf);
    free(bf);
    if (s != TTC_OK) return s;
    int32_t y = k->ops[oi].out;
    if (ksplit > 1) {  /* sum the slices' partials: [ksplit, N, OC, OH, OW] -> [N, OC, OH, OW] */
        const ttc_et *pt = &k->ts[y];
        ttc_dim d5[5] = {ttc_dim_const(ksplit), ttc_dim_const(pt->dims[0].add / ksplit), pt->dims[1], pt->dims[2],
                         pt->dims[3]}, od[4] = {d5[1], d5[2], d5[3], d5[4]};
        int32_t pv = ttc_kir_view(k, y, TTC_VIEW_RESHAPE, 5, d5, n->outputs[0]->name);
        int32_t ri = pv < 0 ? -1 : ttc_kir_op(k, TTC_KOP_REDUCE, ttc_cx_float_dtype(cx, ot->dtype), 4, od,
                                              n->outputs[0]->name);
        if (ri < 0) return TTC_ERR_NOMEM;
        ttc_kop *rop = &k->ops[ri];
        rop->in[0] = pv;
        rop->p.red.kind = TTC_RED_SUM;
        rop->p.red.mask = 1;
        rop->epi = k->ops[oi].epi;  /* the bias moves to the sum */
        ttc_expr_init(&k->ops[oi].epi);
        y = rop->out;
    }
    if (nd == 1) {
        y = ttc_kir_view(k, y, TTC_VIEW_RESHAPE, 3, ot->dims, n->outputs[0]->name);
        if (y < 0) return TTC_ERR_NOMEM;
    }
    return ttc_cx_set_output(cx, n, 0, y);
}

bool ttc_validate_conv(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    if (n->n_inputs < 2) return fail_why(why_not, "missing arguments");
    const ttc_attr *wa = ttc_value_const(n->inputs[1]);
    ttc_dtype wd = n->inputs[1]->type.dtype;
    /* weights computed from parameters alone were folded at capture (fold_weight_computations) */
    if (!wa || wa->kind != TTC_ATTR_TENSOR)
        return fail_why(why_not, "weights are computed at run time from the model's inputs; engines take constant "
                                 "convolution weights");
    if (!ttc_dtype_engine_float(wd)) return fail_why(why_not, "weights are not float32, float16 or bfloat16");
    int32_t wr = n->inputs[1]->type.rank;
    if (wr != 3 && wr != 4)
        return fail_why(why_not, "only 1-D and 2-D convolution in the core (torchtrt_c.compile decomposes 3-D ones "
                                 "into 2-D convolutions before import)");
    if (n->inputs[0]->type.rank != wr) return fail_why(why_not, "input rank differs from weight rank (unbatched input)");
    if (n->inputs[0]->type.dims[1].sym >= 0) return fail_why(why_not, "symbolic channel count");
    if (n->n_inputs > 2 && !ttc_value_is_none(n->inputs[2])) {
        const ttc_attr *ba = ttc_value_const(n->inputs[2]);
        ttc_dtype bd = n->inputs[2]->type.dtype;
        if (!ba || ba->kind != TTC_ATTR_TENSOR || !ttc_dtype_engine_float(bd))
            return fail_why(why_not, "bias is not a float32/float16/bfloat16 constant");
    }
    if (n->op == TTC_OP_CONVOLUTION) {
        int64_t tr = 0;
        if (n->n_inputs > 6 && ttc_value_const_int(n->inputs[6], &tr) && tr)
            return fail_why(why_not, "transposed convolution is not supported yet");
    }
    for (int32_t i = 3; i < 6 && i < n->n_inputs; i++) {
        int64_t *v = NULL; int32_t len = 0;
        bool ok = ttc_value_const_ints(n->inputs[i], &v, &len);
        int64_t iv;
        if (!ok && !ttc_value_const_int(n->inputs[i], &iv)) return fail_why(why_not, "stride/padding/dilation not constant");
        free(v);
    }
    const ttc_attr *pa = n->n_inputs > 4 ? ttc_value_const(n->inputs[4]) : NULL;
    if (pa && pa->kind == TTC_ATTR_STR) return fail_why(why_not, "string padding ('same'/'valid') must be lowered first");
    return true;
}

/* ---- batch norm (inference) ---- */
/* batch_norm(x, w, b, mean, var, training, momentum, eps, cudnn);
 * _native_batch_norm_legit_no_training(x, w, b, mean, var, momentum, eps) */
ttc_status ttc_convert_batch_norm(ttc_conv_ctx *cx, const ttc_node *n) {
    ttc_kir *k = cx->k;
    int32_t x, t[4] = {-1, -1, -1, -1};
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &x));
    for (int32_t i = 0; i < 4; i++)
        if (!ttc_cx_is_none(cx, n, 1 + i)) TTC_TRY(ttc_cx_tensor(cx, n, 1 + i, &t[i]));
    double eps;
    TTC_TRY(ttc_cx_float(cx, n, n->op == TTC_OP_BATCH_NORM ? 7 : 6, &eps));
    int64_t C = k->ts[x].dims[1].add, cnt;
    if (k->ts[x].rank < 2 || k->ts[x].dims[1].sym >= 0 || C < 1)
        return ttc_fail(TTC_ERR_INVALID_ARG, "node %s: batch norm needs a static channel dim >= 1", nname(n));
    for (int32_t i = 0; i < 4; i++)
        if (t[i] >= 0 && (k->ts[t[i]].rank != 1 || k->ts[t[i]].dims[0].add != C))
            return ttc_fail(TTC_ERR_INVALID_ARG, "node %s: batch-norm parameter %d is not [%lld]", nname(n), i + 1, (long long)C);
    float *v[4] = {0};
    ttc_status s = TTC_OK;
    for (int32_t i = 0; i < 4 && s == TTC_OK; i++)
        if (t[i] >= 0 && !(v[i] = const_floats(cx, t[i], &cnt)))
            s = ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: batch-norm parameters must be float32/float16 constants", nname(n));
    float *scale = ttc_malloc(sizeof(float) * (size_t)C + 4), *shift = ttc_malloc(sizeof(float) * (size_t)C + 4);
    if (!scale || !shift) s = TTC_ERR_NOMEM;
    for (int64_t c = 0; c < C && s == TTC_OK; c++) {
        double var = v[3] ? v[3][c] : 1.0, mean = v[2] ? v[2][c] : 0.0;
        double sc = (v[0] ? v[0][c] : 1.0) / sqrt(var + eps);
        scale[c] = (float)sc;
        shift[c] = (float)((v[1] ? v[1][c] : 0.0) - mean * sc);
    }
    int32_t y = -1;
    /* fold into the producing convolution when this is its only use */
    const ttc_value *xin = n->inputs[0];
    int32_t pi = k->ts[x].kind == TTC_ET_INTER ? k->ts[x].producer : -1;
    if (s == TTC_OK && pi >= 0 && k->ops[pi].kind == TTC_KOP_CONV2D && xin->n_users == 1 &&
        !ttc_value_is_graph_output(cx->g, xin)) {
        ttc_kop *op = &k->ops[pi];
        int64_t wn;
        float *w = const_floats(cx, op->in[1], &wn);
        const ttc_et *wt = &k->ts[op->in[1]];
        int64_t wshape[4] = {wt->dims[0].add, wt->dims[1].add, wt->dims[2].add, wt->dims[3].add};
        float *bias = ttc_malloc(sizeof(float) * (size_t)C + 4);
        /* the current bias, if any, is the constant leaf of the epilogue */
        const float *old_b = NULL;
        if (op->epi.n_leaves == 1) old_b = (const float *)k->ts[op->epi.leaves[0]].data->data;
        if (w && bias && op->epi.n_leaves <= 1) {
            int64_t per = wn / C;
            for (int64_t c = 0; c < C; c++) {
                for (int64_t j = 0; j < per; j++) w[c * per + j] *= scale[c];
                bias[c] = (old_b ? old_b[c] : 0.0f) * scale[c] + shift[c];
            }
            s = conv_set_weights(cx, pi, w, wshape, bias, n->outputs[0]->name);
            y = x;
        }
        free(w);
        free(bias);
    }
    if (s == TTC_OK && y < 0) {
        /* y = x * scale[c] + shift[c], broadcast over the dims after C */
        int32_t r = k->ts[x].rank;
        int64_t shp[TTC_MAX_RANK];
        shp[0] = C;
        for (int32_t d = 1; d < r - 1; d++) shp[d] = 1;
        int32_t ts = ttc_kir_const_f32(k, TTC_DTYPE_FLOAT32, r - 1, shp, scale, n->outputs[0]->name);
        int32_t th = ttc_kir_const_f32(k, TTC_DTYPE_FLOAT32, r - 1, shp, shift, n->outputs[0]->name);
        ttc_expr e;
        ttc_expr_init(&e);
        int32_t a = ttc_expr_leaf(&e, x, TTC_DTYPE_FLOAT32);
        a = ttc_expr_op(&e, TTC_EOP_MUL, a, ttc_expr_leaf(&e, ts, TTC_DTYPE_FLOAT32), -1, TTC_DTYPE_FLOAT32);
        a = ttc_expr_op(&e, TTC_EOP_ADD, a, ttc_expr_leaf(&e, th, TTC_DTYPE_FLOAT32), -1, TTC_DTYPE_FLOAT32);
        if (ts < 0 || th < 0 || a < 0) { ttc_expr_free(&e); s = TTC_ERR_NOMEM; }
        else {
            const ttc_type *ot = &n->outputs[0]->type;
            y = ttc_kir_elementwise(k, &e, ttc_cx_float_dtype(cx, ot->dtype), ot->rank, ot->dims, n->outputs[0]->name);
            if (y < 0) s = TTC_ERR_NOMEM;
        }
    }
    for (int32_t i = 0; i < 4; i++) free(v[i]);
    free(scale);
    free(shift);
    if (s != TTC_OK) return s;
    return ttc_cx_set_output(cx, n, 0, y);
}

/* A graph output counts as a use: the converter makes no engine tensor for the others. */
static bool only_first_output_used(const ttc_graph *g, const ttc_node *n, char **why) {
    for (int32_t i = 1; i < n->n_outputs; i++)
        if (n->outputs[i]->n_users || ttc_value_is_graph_output(g, n->outputs[i]))
            return fail_why(why, "its auxiliary outputs are used");
    return true;
}

bool ttc_validate_batch_norm(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    if (n->inputs[0]->type.rank < 2 || n->inputs[0]->type.dims[1].sym >= 0)
        return fail_why(why_not, "input needs a static channel dim");
    for (int32_t i = 1; i < 5; i++) {
        if (ttc_value_is_none(n->inputs[i])) continue;
        const ttc_attr *a = ttc_value_const(n->inputs[i]);
        ttc_dtype pd = n->inputs[i]->type.dtype;
        if (!a || a->kind != TTC_ATTR_TENSOR || !ttc_dtype_engine_float(pd))
            return fail_why(why_not, "parameters/statistics are not float32/float16/bfloat16 constants");
    }
    int64_t training = 0;
    if (n->op == TTC_OP_BATCH_NORM && ttc_value_const_int(n->inputs[5], &training) && training)
        return fail_why(why_not, "training-mode batch norm");
    return only_first_output_used(g, n, why_not);
}

/* ---- pooling ---- */
/* max_pool2d(x, k, stride, pad, dil, ceil); avg_pool2d(x, k, stride, pad, ceil, count_pad, divisor);
 * adaptive_avg_pool2d(x, output_size) */
ttc_status ttc_convert_pool(ttc_conv_ctx *cx, const ttc_node *n) {
    ttc_kir *k = cx->k;
    int32_t x, xc;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &x));
    TTC_TRY(ttc_cx_contiguous(cx, x, n->outputs[0]->name, &xc));
    const ttc_type *ot = &n->outputs[0]->type;
    int32_t oi = ttc_kir_op(k, TTC_KOP_POOL, ttc_cx_float_dtype(cx, ot->dtype), ot->rank, ot->dims, n->outputs[0]->name);
    if (oi < 0) return TTC_ERR_NOMEM;
    ttc_kop *op = &k->ops[oi];
    op->in[0] = xc;
    int32_t kk[2], st[2], pd[2], dl[2] = {1, 1};
    if (n->op == TTC_OP_ADAPTIVE_AVG_POOL2D || n->op == TTC_OP_ADAPTIVE_AVG_POOL2D_) {
        op->p.pool.kind = TTC_POOL_ADAPTIVE_AVG;
        return ttc_cx_set_output(cx, n, 0, op->out);
    }
    TTC_TRY(ints_arg(cx, n, 1, 2, kk, 1));
    TTC_TRY(ints_arg(cx, n, 2, 2, st, 0));
    if (st[0] == 0) { st[0] = kk[0]; st[1] = kk[1]; }
    TTC_TRY(ints_arg(cx, n, 3, 2, pd, 0));
    if (n->op == TTC_OP_MAX_POOL2D || n->op == TTC_OP_MAX_POOL2D_IDX) TTC_TRY(ints_arg(cx, n, 4, 2, dl, 1));
    for (int32_t i = 0; i < 2; i++)
        if (kk[i] < 1 || st[i] < 1 || pd[i] < 0 || dl[i] < 1)
            return ttc_fail(TTC_ERR_INVALID_ARG, "node %s: pooling needs kernel/stride/dilation >= 1 and padding >= 0",
                            nname(n));
    op = &k->ops[oi];
    if (n->op == TTC_OP_AVG_POOL2D) {
        bool count_pad = true;
        int64_t div = 0;
        if (n->n_inputs > 5) TTC_TRY(ttc_cx_bool(cx, n, 5, &count_pad));
        if (n->n_inputs > 6 && !ttc_cx_is_none(cx, n, 6)) TTC_TRY(ttc_cx_int(cx, n, 6, &div));
        op = &k->ops[oi];
        op->p.pool.kind = TTC_POOL_AVG;
        op->p.pool.count_pad = count_pad;
        op->p.pool.divisor = div;
    } else {
        op = &k->ops[oi];
        op->p.pool.kind = TTC_POOL_MAX;
    }
    memcpy(op->p.pool.k, kk, sizeof kk);
    memcpy(op->p.pool.stride, st, sizeof st);
    memcpy(op->p.pool.pad, pd, sizeof pd);
    memcpy(op->p.pool.dil, dl, sizeof dl);
    return ttc_cx_set_output(cx, n, 0, op->out);
}

bool ttc_validate_pool(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    int32_t r = n->inputs[0]->type.rank;
    if (r != 3 && r != 4) return fail_why(why_not, "pooling needs a 3-D or 4-D input");
    ttc_dtype d = n->inputs[0]->type.dtype;
    /* max pooling of 8-bit values too (PT2E's quantized stem, dynamo/_quant.py): a max of
     * integers, exact in the float the kernels compare in */
    bool q8_max = (n->op == TTC_OP_MAX_POOL2D || n->op == TTC_OP_MAX_POOL2D_IDX) && (d == TTC_DTYPE_UINT8 || d == TTC_DTYPE_INT8);
    if (!ttc_dtype_engine_float(d) && !q8_max) return fail_why(why_not, "pooling on a non-float tensor");
    return only_first_output_used(g, n, why_not);
}

/* ---- softmax ---- */
ttc_status ttc_convert_softmax(ttc_conv_ctx *cx, const ttc_node *n) {
    ttc_kir *k = cx->k;
    int32_t x, xc, d;
    int64_t dim;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &x));
    TTC_TRY(ttc_cx_int(cx, n, 1, &dim));
    TTC_TRY(ttc_cx_dim(n, dim, k->ts[x].rank, &d));
    TTC_TRY(ttc_cx_contiguous(cx, x, n->outputs[0]->name, &xc));
    const ttc_type *ot = &n->outputs[0]->type;
    int32_t oi = ttc_kir_op(k, TTC_KOP_SOFTMAX, ttc_cx_float_dtype(cx, ot->dtype), ot->rank, ot->dims, n->outputs[0]->name);
    if (oi < 0) return TTC_ERR_NOMEM;
    k->ops[oi].in[0] = xc;
    k->ops[oi].p.softmax.dim = k->ts[x].rank ? d : 0;
    k->ops[oi].p.softmax.log = n->op == TTC_OP_LOG_SOFTMAX || n->op == TTC_OP_LOG_SOFTMAX_INT;
    return ttc_cx_set_output(cx, n, 0, k->ops[oi].out);
}

/* ---- layer norm / group norm ---- */
ttc_status ttc_convert_norm(ttc_conv_ctx *cx, const ttc_node *n) {
    ttc_kir *k = cx->k;
    int32_t x, xc, w = -1, b = -1;
    double eps;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &x));
    int32_t R = k->ts[x].rank;
    const ttc_type *ot = &n->outputs[0]->type;
    int32_t oi;
    bool group = n->op == TTC_OP_GROUP_NORM || n->op == TTC_OP_NATIVE_GROUP_NORM;
    int64_t groups = 1;
    int32_t from = 0;
    if (n->op == TTC_OP_LAYER_NORM || n->op == TTC_OP_NATIVE_LAYER_NORM) {
        const int64_t *ns;
        int32_t nn;
        TTC_TRY(ttc_cx_ints(cx, n, 1, &ns, &nn));
        from = R - nn;
        if (from < 0) return ttc_fail(TTC_ERR_INVALID_ARG, "node %s: normalized_shape longer than the input", nname(n));
        if (!ttc_cx_is_none(cx, n, 2)) TTC_TRY(ttc_cx_tensor(cx, n, 2, &w));
        if (!ttc_cx_is_none(cx, n, 3)) TTC_TRY(ttc_cx_tensor(cx, n, 3, &b));
        TTC_TRY(ttc_cx_float(cx, n, 4, &eps));
    } else if (n->op == TTC_OP_RMS_NORM) {  /* rms_norm(x, normalized_shape, w, eps) */
        const int64_t *ns;
        int32_t nn;
        TTC_TRY(ttc_cx_ints(cx, n, 1, &ns, &nn));
        from = R - nn;
        if (from < 0) return ttc_fail(TTC_ERR_INVALID_ARG, "node %s: normalized_shape longer than the input", nname(n));
        if (!ttc_cx_is_none(cx, n, 2)) TTC_TRY(ttc_cx_tensor(cx, n, 2, &w));
        /* eps None: torch takes the input dtype's machine epsilon (the graph's dtype: the
         * engine may hold x in another) */
        ttc_dtype xd = n->inputs[0]->type.dtype;
        if (ttc_cx_is_none(cx, n, 3))
            eps = xd == TTC_DTYPE_FLOAT16 ? 0x1p-10 : xd == TTC_DTYPE_BFLOAT16 ? 0x1p-7 : 0x1p-23;
        else TTC_TRY(ttc_cx_float(cx, n, 3, &eps));
    } else if (n->op == TTC_OP_GROUP_NORM) {  /* group_norm(x, G, w, b, eps, cudnn) */
        TTC_TRY(ttc_cx_int(cx, n, 1, &groups));
        if (!ttc_cx_is_none(cx, n, 2)) TTC_TRY(ttc_cx_tensor(cx, n, 2, &w));
        if (!ttc_cx_is_none(cx, n, 3)) TTC_TRY(ttc_cx_tensor(cx, n, 3, &b));
        TTC_TRY(ttc_cx_float(cx, n, 4, &eps));
    } else {  /* native_group_norm(x, w, b, N, C, HxW, group, eps) */
        if (!ttc_cx_is_none(cx, n, 1)) TTC_TRY(ttc_cx_tensor(cx, n, 1, &w));
        if (!ttc_cx_is_none(cx, n, 2)) TTC_TRY(ttc_cx_tensor(cx, n, 2, &b));
        TTC_TRY(ttc_cx_int(cx, n, 6, &groups));
        TTC_TRY(ttc_cx_float(cx, n, 7, &eps));
    }
    if (group && (R < 2 || k->ts[x].dims[1].sym >= 0 || groups < 1 || k->ts[x].dims[1].add % groups))
        return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: channels must be static and divisible by groups", nname(n));
    TTC_TRY(ttc_cx_contiguous(cx, x, n->outputs[0]->name, &xc));
    if (w >= 0) TTC_TRY(ttc_cx_contiguous(cx, w, n->outputs[0]->name, &w));
    if (b >= 0) TTC_TRY(ttc_cx_contiguous(cx, b, n->outputs[0]->name, &b));
    oi = ttc_kir_op(k, TTC_KOP_NORM, ttc_cx_float_dtype(cx, ot->dtype), ot->rank, ot->dims, n->outputs[0]->name);
    if (oi < 0) return TTC_ERR_NOMEM;
    ttc_kop *op = &k->ops[oi];
    op->in[0] = xc;
    op->in[1] = w;
    op->in[2] = b;
    op->p.norm.eps = eps;
    op->p.norm.group = group;
    op->p.norm.groups = (int32_t)groups;
    op->p.norm.axis_from = from;
    op->p.norm.rms = n->op == TTC_OP_RMS_NORM;
    return ttc_cx_set_output(cx, n, 0, op->out);
}

bool ttc_validate_norm(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    const ttc_type *t = &n->inputs[0]->type;
    if (!ttc_dtype_engine_float(t->dtype)) return fail_why(why_not, "non-float input");
    return only_first_output_used(g, n, why_not);
}
