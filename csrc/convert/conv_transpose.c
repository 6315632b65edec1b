/* Transposed convolution (aten.convolution with transposed=True: conv_transpose1d/2d):
 * stride, padding, output_padding, dilation, groups and bias. The weights [C, OC/G, KH, KW]
 * are repacked once to [OC, C/G, KH, KW] so the gather-form kernel (one output element per
 * work-item, see csrc/kernels/conv_transpose2d.cl) reads them like a forward convolution.
 * Bias and any following elementwise ops become the kernel's epilogue. 1-D runs as 2-D with
 * height 1. This file also holds the aten.convolution entry points that send a node to the
 * forward (conv_nn.c) or the transposed converter. */
#include "converters.h"

#include <stdlib.h>
#include <string.h>

static const char *nname(const ttc_node *n) { return n->name ? n->name : n->op_name; }

static bool say_no(char **why, const char *msg) {
    if (why) *why = ttc_strdup(msg);
    return false;
}

/* A per-dim int-list argument (an int or a one-element list applies to every dim). */
static ttc_status dims_arg(ttc_conv_ctx *cx, const ttc_node *n, int32_t i, int32_t nd, int64_t *out, int64_t dflt) {
    for (int32_t j = 0; j < nd; j++) out[j] = dflt;
    if (i >= n->n_inputs || ttc_cx_is_none(cx, n, i)) return TTC_OK;
    const int64_t *v;
    int32_t len;
    TTC_TRY(ttc_cx_ints(cx, n, i, &v, &len));
    if (len != 0 && len != 1 && len != nd)
        return ttc_fail(TTC_ERR_INVALID_ARG, "node %s: argument %d has %d values for %d spatial dims", nname(n), i,
                        len, nd);
    for (int32_t j = 0; j < nd && len; j++) out[j] = len == 1 ? v[0] : v[j];
    return TTC_OK;
}

/* IEEE half -> float (weights of models converted with .half()). */
static float half_to_float(uint16_t h) {
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

/* A float32 host copy of a float32/float16 constant (NULL otherwise or out of memory); the
 * caller frees it. */
static float *const_f32(ttc_conv_ctx *cx, int32_t t) {
    const ttc_et *et = &cx->k->ts[t];
    if (et->kind != TTC_ET_CONST || !et->data || (et->dtype != TTC_DTYPE_FLOAT32 && et->dtype != TTC_DTYPE_FLOAT16))
        return NULL;
    int64_t n = 1;
    for (int32_t d = 0; d < et->rank; d++) n *= et->dims[d].add;
    float *f = ttc_malloc(sizeof(float) * (size_t)(n + 1));
    if (!f) return NULL;
    if (et->dtype == TTC_DTYPE_FLOAT32) {
        memcpy(f, et->data->data, sizeof(float) * (size_t)n);
    } else {
        const unsigned char *src = et->data->data;
        for (int64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, src + 2 * i, 2);
            f[i] = half_to_float(h);
        }
    }
    return f;
}

static bool is_transposed(const ttc_node *n) {
    int64_t tr = 0;
    return n->op == TTC_OP_CONVOLUTION && n->n_inputs > 6 && ttc_value_const_int(n->inputs[6], &tr) && tr;
}

/* convolution(x, w, b, stride, padding, dilation, transposed=True, output_padding, groups) */
static ttc_status convert_conv_transpose(ttc_conv_ctx *cx, const ttc_node *n) {
    ttc_kir *k = cx->k;
    int32_t x, w, b = -1;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &x));
    TTC_TRY(ttc_cx_tensor(cx, n, 1, &w));
    if (!ttc_cx_is_none(cx, n, 2)) TTC_TRY(ttc_cx_tensor(cx, n, 2, &b));
    int32_t nd = k->ts[w].rank - 2;
    if (nd != 1 && nd != 2)
        return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: only 1-D and 2-D transposed convolution", nname(n));
    int64_t st[2], pd[2], dl[2], op_[2], groups = 1;
    TTC_TRY(dims_arg(cx, n, 3, nd, st, 1));
    TTC_TRY(dims_arg(cx, n, 4, nd, pd, 0));
    TTC_TRY(dims_arg(cx, n, 5, nd, dl, 1));
    TTC_TRY(dims_arg(cx, n, 7, nd, op_, 0));
    if (n->n_inputs > 8) TTC_TRY(ttc_cx_int(cx, n, 8, &groups));
    const ttc_et *xt = &k->ts[x], *wt = &k->ts[w];
    const ttc_type *ot = &n->outputs[0]->type;
    int64_t C = xt->dims[1].add, OCG = wt->dims[1].add, OC = OCG * groups;
    int64_t KH = nd == 2 ? wt->dims[2].add : 1, KW = wt->dims[nd + 1].add;
    bool ok = xt->rank == nd + 2 && xt->dims[1].sym < 0 && groups >= 1 && C % groups == 0 && wt->dims[0].add == C &&
              OCG >= 1 && KH >= 1 && KW >= 1 && ot->rank == nd + 2 && ot->dims[1].sym < 0 && ot->dims[1].add == OC;
    for (int32_t i = 0; i < nd; i++)
        ok = ok && st[i] >= 1 && dl[i] >= 1 && pd[i] >= 0 && op_[i] >= 0 && (op_[i] < st[i] || op_[i] < dl[i]) &&
             st[i] <= INT32_MAX && dl[i] <= INT32_MAX && pd[i] <= INT32_MAX;
    if (!ok)
        return ttc_fail(TTC_ERR_INVALID_ARG, "node %s: inconsistent transposed convolution (input channels %lld, "
                        "weight [%lld, %lld, ...], groups %lld; stride/dilation >= 1, padding >= 0 and "
                        "0 <= output_padding < stride or dilation required)", nname(n), (long long)C,
                        (long long)wt->dims[0].add, (long long)OCG, (long long)groups);
    float *wf = const_f32(cx, w), *bf = b >= 0 ? const_f32(cx, b) : NULL;
    if (!wf || (b >= 0 && (!bf || k->ts[b].rank != 1 || k->ts[b].dims[0].add != OC))) {
        bool no_w = !wf;
        free(wf);
        free(bf);
        if (no_w) return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: transposed-convolution weights must be float32 or "
                                 "float16 constants", nname(n));
        return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: transposed-convolution bias must be a float32 or float16 "
                        "constant [%lld]", nname(n), (long long)OC);
    }
    /* [C = G*ICG, OCG, KH, KW] -> [OC = G*OCG, ICG, KH, KW] */
    int64_t ICG = C / groups, KK = KH * KW;
    int64_t wshape[4] = {OC, ICG, KH, KW};
    float *pk = ttc_malloc(sizeof(float) * (size_t)(OC * ICG * KK + 1));
    if (!pk) {
        free(wf);
        free(bf);
        return TTC_ERR_NOMEM;
    }
    for (int64_t g = 0; g < groups; g++)
        for (int64_t o = 0; o < OCG; o++)
            for (int64_t ic = 0; ic < ICG; ic++)
                memcpy(pk + (((g * OCG + o) * ICG + ic) * KK), wf + (((g * ICG + ic) * OCG + o) * KK),
                       sizeof(float) * (size_t)KK);
    const char *oname = n->outputs[0]->name;
    int32_t wp = ttc_kir_const_f32(k, TTC_DTYPE_FLOAT32, 4, wshape, pk, oname);
    free(pk);
    free(wf);
    int32_t bt = -1;
    if (bf && wp >= 0) {
        int64_t bshape[3] = {OC, 1, 1};
        bt = ttc_kir_const_f32(k, TTC_DTYPE_FLOAT32, 3, bshape, bf, oname);
    }
    free(bf);
    if (wp < 0 || (b >= 0 && bt < 0)) return TTC_ERR_NOMEM;
    int32_t xc;
    TTC_TRY(ttc_cx_contiguous(cx, x, oname, &xc));
    if (nd == 1) {
        ttc_dim d4[4] = {k->ts[xc].dims[0], k->ts[xc].dims[1], ttc_dim_const(1), k->ts[xc].dims[2]};
        xc = ttc_kir_view(k, xc, TTC_VIEW_RESHAPE, 4, d4, oname);
        if (xc < 0) return TTC_ERR_NOMEM;
    }
    ttc_dim od[4] = {ot->dims[0], ot->dims[1], nd == 2 ? ot->dims[2] : ttc_dim_const(1), ot->dims[nd + 1]};
    int32_t oi = ttc_kir_op(k, TTC_KOP_CONV_TRANSPOSE, ttc_cx_float_dtype(cx, ot->dtype), 4, od, oname);
    if (oi < 0) return TTC_ERR_NOMEM;
    ttc_kop *op = &k->ops[oi];
    op->in[0] = xc;
    op->in[1] = wp;
    op->p.conv.groups = (int32_t)groups;
    op->p.conv.k[0] = (int32_t)KH;
    op->p.conv.k[1] = (int32_t)KW;
    /* 1-D: the height dim is 1 with unit stride/dilation and no padding */
    int32_t h = nd == 2 ? 0 : -1, wd = nd - 1;
    op->p.conv.stride[0] = h < 0 ? 1 : (int32_t)st[h];
    op->p.conv.pad[0] = h < 0 ? 0 : (int32_t)pd[h];
    op->p.conv.dil[0] = h < 0 ? 1 : (int32_t)dl[h];
    op->p.conv.stride[1] = (int32_t)st[wd];
    op->p.conv.pad[1] = (int32_t)pd[wd];
    op->p.conv.dil[1] = (int32_t)dl[wd];
    op->p.conv.ocb = 1;
    if (bt >= 0) {
        ttc_expr *e = &op->epi;
        int32_t a = ttc_expr_acc(e, TTC_DTYPE_FLOAT32), l = ttc_expr_leaf(e, bt, TTC_DTYPE_FLOAT32);
        if (a < 0 || l < 0 || ttc_expr_op(e, TTC_EOP_ADD, a, l, -1, TTC_DTYPE_FLOAT32) < 0) return TTC_ERR_NOMEM;
    }
    int32_t y = k->ops[oi].out;
    if (nd == 1) {
        y = ttc_kir_view(k, y, TTC_VIEW_RESHAPE, 3, ot->dims, oname);
        if (y < 0) return TTC_ERR_NOMEM;
    }
    return ttc_cx_set_output(cx, n, 0, y);
}

static bool validate_conv_transpose(const ttc_node *n, char **why_not) {
    if (n->n_inputs < 9) return say_no(why_not, "missing arguments");
    const ttc_attr *wa = ttc_value_const(n->inputs[1]);
    /* bfloat16 weights are float32 constants by conversion (convert.c) */
    ttc_dtype wd = n->inputs[1]->type.dtype;
    if (!wa || wa->kind != TTC_ATTR_TENSOR)
        return say_no(why_not, "weights are computed at run time from the model's inputs; engines take constant "
                               "convolution weights");
    if (wd != TTC_DTYPE_FLOAT32 && wd != TTC_DTYPE_FLOAT16 && wd != TTC_DTYPE_BFLOAT16)
        return say_no(why_not, "weights are not float32, float16 or bfloat16");
    int32_t wr = n->inputs[1]->type.rank;
    if (wr != 3 && wr != 4)
        return say_no(why_not, "only 1-D and 2-D transposed convolution in the core (torchtrt_c.compile decomposes "
                               "3-D ones into 2-D transposed convolutions before import)");
    if (n->inputs[0]->type.rank != wr) return say_no(why_not, "input rank differs from weight rank (unbatched input)");
    if (n->inputs[0]->type.dims[1].sym >= 0) return say_no(why_not, "symbolic channel count");
    if (!ttc_value_is_none(n->inputs[2])) {
        const ttc_attr *ba = ttc_value_const(n->inputs[2]);
        if (!ba || ba->kind != TTC_ATTR_TENSOR ||
            (n->inputs[2]->type.dtype != TTC_DTYPE_FLOAT32 && n->inputs[2]->type.dtype != TTC_DTYPE_FLOAT16 &&
             n->inputs[2]->type.dtype != TTC_DTYPE_BFLOAT16))
            return say_no(why_not, "bias is not a float32, float16 or bfloat16 constant");
    }
    static const int32_t list_args[] = {3, 4, 5, 7};
    for (int32_t j = 0; j < 4; j++) {
        int64_t *v = NULL, iv;
        int32_t len = 0;
        bool ok = ttc_value_const_ints(n->inputs[list_args[j]], &v, &len) ||
                  ttc_value_const_int(n->inputs[list_args[j]], &iv);
        free(v);
        if (!ok) return say_no(why_not, "stride/padding/dilation/output_padding not constant");
    }
    int64_t g;
    if (!ttc_value_const_int(n->inputs[8], &g)) return say_no(why_not, "groups not constant");
    return true;
}

ttc_status ttc_convert_convolution(ttc_conv_ctx *cx, const ttc_node *n) {
    return is_transposed(n) ? convert_conv_transpose(cx, n) : ttc_convert_conv(cx, n);
}

bool ttc_validate_convolution(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    return is_transposed(n) ? validate_conv_transpose(n, why_not) : ttc_validate_conv(g, n, fp16, why_not);
}
