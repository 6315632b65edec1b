/* Quantized graphs (issue 35): the quantize/dequantize ops of the PT2E flow
 * (torch.ops.quantized_decomposed, as torchao's convert_pt2e leaves them) and aten._int_mm,
 * the int8 x int8 -> int32 product that torchao's dynamic int8 activation x int8 weight
 * linears decompose to.
 *
 * Q/DQ are elementwise expressions with torch's own arithmetic (the reference functions in
 * torch/ao/quantization/fx/_decomposed.py), so the engine's integers are torch's:
 *   quantize_per_tensor(x, s, zp, lo, hi, dt)   = clamp(rint(x * (float)(1/s)) + zp, lo, hi) -> dt
 *   dequantize_per_tensor(q, s, zp, lo, hi, dt) = ((float)q - zp) * (float)s
 * and fuse with their neighbours (a dequantize into the next kernel's loads, a quantize into
 * the epilogue of the GEMM or convolution before it). _int_mm is a TTC_KOP_QGEMM kernel with
 * int32 accumulation (codegen/codegen_qgemm.c). */
#include "converters.h"

#include <stdlib.h>
#include <string.h>

static const char *nname(const ttc_node *n) { return n->name ? n->name : n->op_name; }

static bool fail(char **why_not, char *msg) {
    if (why_not) *why_not = msg; else free(msg);
    return false;
}

static bool is_q8(ttc_dtype d) { return d == TTC_DTYPE_INT8 || d == TTC_DTYPE_UINT8; }

/* scale, zero_point, quant_min, quant_max: constants (inputs 1..4) */
static bool qparams_ok(const ttc_node *n, char **why_not) {
    static const char *const what[] = {"", "scale", "zero_point", "quant_min", "quant_max"};
    for (int32_t i = 1; i <= 4; i++) {
        double v;
        if (n->inputs[i]->type.kind == TTC_TYPE_TENSOR)
            return fail(why_not, ttc_strfmt("%s is a tensor (only the .default overloads with constant "
                                            "quantization parameters run in engines)", what[i]));
        if (!ttc_value_const_float(n->inputs[i], &v))
            return fail(why_not, ttc_strfmt("%s is not a constant", what[i]));
        if (i == 1 && !(v > 0)) return fail(why_not, ttc_strfmt("scale %g is not positive", v));
    }
    return true;
}

bool ttc_validate_qdq(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    (void)g; (void)fp16;
    if (n->n_inputs < 6 || n->n_outputs != 1) return fail(why_not, ttc_strdup("unexpected arity"));
    const ttc_type *x = &n->inputs[0]->type, *o = &n->outputs[0]->type;
    if (x->kind != TTC_TYPE_TENSOR || x->rank < 0 || o->kind != TTC_TYPE_TENSOR)
        return fail(why_not, ttc_strdup("input or output is not a tensor of known rank"));
    bool quant = n->op == TTC_OP_QUANTIZE_PER_TENSOR;
    ttc_dtype qd = quant ? o->dtype : x->dtype, fd = quant ? x->dtype : o->dtype;
    if (!is_q8(qd))
        return fail(why_not, ttc_strfmt("quantized dtype %s (engines take int8 and uint8)", ttc_dtype_name(qd)));
    if (!ttc_dtype_engine_float(fd))
        return fail(why_not, ttc_strfmt("float side has dtype %s", ttc_dtype_name(fd)));
    return qparams_ok(n, why_not);
}

ttc_status ttc_convert_quantize(ttc_conv_ctx *cx, const ttc_node *n) {
    double scale, zp, lo, hi;
    TTC_TRY(ttc_cx_float(cx, n, 1, &scale));
    TTC_TRY(ttc_cx_float(cx, n, 2, &zp));
    TTC_TRY(ttc_cx_float(cx, n, 3, &lo));
    TTC_TRY(ttc_cx_float(cx, n, 4, &hi));
    const ttc_dtype F = TTC_DTYPE_FLOAT32;
    ttc_expr e; ttc_expr_init(&e);
    ttc_status st = TTC_OK;
    int32_t x = ttc_ew_operand(cx, n, 0, &e, F, &st);
    if (x < 0) { ttc_expr_free(&e); return st ? st : TTC_ERR_NOMEM; }
    /* torch: inv_scale = 1.0 / scale (a double), input * inv_scale in float32 */
    int32_t r = ttc_expr_op(&e, TTC_EOP_MUL, x, ttc_expr_const(&e, 1.0 / scale, F), -1, F);
    r = ttc_expr_op(&e, TTC_EOP_ROUND, r, -1, -1, F);
    r = ttc_expr_op(&e, TTC_EOP_ADD, r, ttc_expr_const(&e, zp, F), -1, F);
    r = ttc_expr_op(&e, TTC_EOP_MAX, r, ttc_expr_const(&e, lo, F), -1, F);
    r = ttc_expr_op(&e, TTC_EOP_MIN, r, ttc_expr_const(&e, hi, F), -1, F);
    return ttc_ew_finish(cx, n, &e, r);
}

ttc_status ttc_convert_dequantize(ttc_conv_ctx *cx, const ttc_node *n) {
    double scale, zp;
    TTC_TRY(ttc_cx_float(cx, n, 1, &scale));
    TTC_TRY(ttc_cx_float(cx, n, 2, &zp));
    const ttc_dtype F = TTC_DTYPE_FLOAT32;
    ttc_expr e; ttc_expr_init(&e);
    ttc_status st = TTC_OK;
    int32_t x = ttc_ew_operand(cx, n, 0, &e, F, &st);
    if (x < 0) { ttc_expr_free(&e); return st ? st : TTC_ERR_NOMEM; }
    int32_t r = ttc_expr_op(&e, TTC_EOP_SUB, x, ttc_expr_const(&e, zp, F), -1, F);
    r = ttc_expr_op(&e, TTC_EOP_MUL, r, ttc_expr_const(&e, scale, F), -1, F);
    return ttc_ew_finish(cx, n, &e, r);
}

/* aten._int_mm(self [M, K] int8, mat2 [K, N] int8) -> int32 [M, N] */
bool ttc_validate_int_mm(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    (void)g; (void)fp16;
    const ttc_type *a = &n->inputs[0]->type, *b = &n->inputs[1]->type, *o = &n->outputs[0]->type;
    if (a->kind != TTC_TYPE_TENSOR || b->kind != TTC_TYPE_TENSOR || a->rank != 2 || b->rank != 2)
        return fail(why_not, ttc_strdup("_int_mm of operands that are not 2-d tensors"));
    if (a->dtype != TTC_DTYPE_INT8 || b->dtype != TTC_DTYPE_INT8 || o->dtype != TTC_DTYPE_INT32)
        return fail(why_not, ttc_strfmt("_int_mm of %s x %s -> %s (int8 x int8 -> int32 only)",
                                        ttc_dtype_name(a->dtype), ttc_dtype_name(b->dtype), ttc_dtype_name(o->dtype)));
    return true;
}

ttc_status ttc_convert_int_mm(ttc_conv_ctx *cx, const ttc_node *n) {
    int32_t a, b;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &a));
    TTC_TRY(ttc_cx_tensor(cx, n, 1, &b));
    const ttc_type *ot = &n->outputs[0]->type;
    int32_t oi = ttc_kir_op(cx->k, TTC_KOP_QGEMM, TTC_DTYPE_INT32, ot->rank, ot->dims, n->outputs[0]->name);
    if (oi < 0) return ttc_fail_context(TTC_ERR_NOMEM, "node %s", nname(n));
    ttc_kop *op = &cx->k->ops[oi];
    op->in[0] = a;
    op->in[1] = b;
    op->p.qgemm.a_zp = 0;
    return ttc_cx_set_output(cx, n, 0, op->out);
}

/* torchtrt_c.qconv2d / qlinear (x, x_scale, x_zero_point, w, w_scales, bias, ...): PT2E's
 * dq(x) -> conv2d/linear <- dq(w) layers (torchtrt_c/dynamo/_quant.py). An integer kernel
 * (QCONV2D, or QGEMM reading the [N, K] weights transposed) whose epilogue is
 * acc * (x_scale * w_scales[c]) + bias[c], the two per-channel vectors folded at build time. */
static bool const_tensor(const ttc_value *v, ttc_dtype d) {
    const ttc_attr *a = ttc_value_const(v);
    return a && a->kind == TTC_ATTR_TENSOR && v->type.kind == TTC_TYPE_TENSOR && v->type.dtype == d;
}

bool ttc_validate_qlayer(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    (void)g; (void)fp16;
    bool conv = n->op == TTC_OP_QCONV2D;
    const ttc_type *x = &n->inputs[0]->type, *w = &n->inputs[3]->type;
    int32_t r = conv ? 4 : 2;
    if (x->kind != TTC_TYPE_TENSOR || x->rank != r || !is_q8(x->dtype))
        return fail(why_not, ttc_strfmt("input is not a %d-d int8/uint8 tensor", r));
    double v;
    if (!ttc_value_const_float(n->inputs[1], &v) || !(v > 0) || !ttc_value_const_float(n->inputs[2], &v))
        return fail(why_not, ttc_strdup("input scale/zero point are not constants"));
    if (!const_tensor(n->inputs[3], TTC_DTYPE_INT8) || w->rank != r)
        return fail(why_not, ttc_strdup("weights are not an int8 constant"));
    if (!const_tensor(n->inputs[4], TTC_DTYPE_FLOAT32) || n->inputs[4]->type.rank != 1)
        return fail(why_not, ttc_strdup("weight scales are not a float32 constant vector"));
    if (!ttc_value_is_none(n->inputs[5]) && !const_tensor(n->inputs[5], TTC_DTYPE_FLOAT32))
        return fail(why_not, ttc_strdup("bias is not a float32 constant"));
    if (conv) {
        if (x->dims[1].sym >= 0) return fail(why_not, ttc_strdup("symbolic channel count"));
        for (int32_t i = 6; i <= 9; i++) {
            int64_t *vals = NULL;
            int32_t nv = 0;
            int64_t iv;
            bool ok = i == 9 ? ttc_value_const_int(n->inputs[i], &iv) : ttc_value_const_ints(n->inputs[i], &vals, &nv);
            free(vals);
            if (!ok || (i < 9 && nv != 2)) return fail(why_not, ttc_strdup("stride/padding/dilation/groups not constant"));
        }
    }
    return true;
}

/* The epilogue acc * scale[c] + bias[c] with the per-channel vectors as constants of `rank`
 * (c the first dim: [OC, 1, 1] under a [N, OC, OH, OW] output, [N] under [M, N]). */
static ttc_status qlayer_epilogue(ttc_conv_ctx *cx, const ttc_node *n, int32_t oi, int64_t C, int32_t rank) {
    ttc_kir *k = cx->k;
    double sx;
    int32_t ws, b = -1;
    TTC_TRY(ttc_cx_float(cx, n, 1, &sx));
    TTC_TRY(ttc_cx_tensor(cx, n, 4, &ws));
    if (!ttc_cx_is_none(cx, n, 5)) TTC_TRY(ttc_cx_tensor(cx, n, 5, &b));
    const ttc_et *wse = &k->ts[ws];
    if (wse->kind != TTC_ET_CONST || !wse->data || (int64_t)(wse->data->nbytes / 4) != C ||
        (b >= 0 && (k->ts[b].kind != TTC_ET_CONST || !k->ts[b].data || (int64_t)(k->ts[b].data->nbytes / 4) != C)))
        return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: weight scales/bias are not %lld-element constants", nname(n),
                        (long long)C);
    float *sc = ttc_malloc(sizeof(float) * (size_t)C), *bs = ttc_malloc(sizeof(float) * (size_t)C);
    if (!sc || !bs) { free(sc); free(bs); return TTC_ERR_NOMEM; }
    const float *w = wse->data->data, *bb = b >= 0 ? k->ts[b].data->data : NULL;
    for (int64_t c = 0; c < C; c++) {
        sc[c] = (float)sx * w[c];
        bs[c] = bb ? bb[c] : 0.0f;
    }
    int64_t shape[3] = {C, 1, 1};
    char *nm = ttc_strfmt("%s.scale", nname(n)), *nb = ttc_strfmt("%s.bias", nname(n));
    int32_t st = ttc_kir_const_f32(k, TTC_DTYPE_FLOAT32, rank, shape, sc, nm ? nm : "qscale");
    int32_t bt = bb ? ttc_kir_const_f32(k, TTC_DTYPE_FLOAT32, rank, shape, bs, nb ? nb : "qbias") : -2;
    free(nm); free(nb); free(sc); free(bs);
    if (st < 0 || bt == -1) return TTC_ERR_NOMEM;
    ttc_expr *e = &k->ops[oi].epi;
    const ttc_dtype F = TTC_DTYPE_FLOAT32;
    int32_t r = ttc_expr_op(e, TTC_EOP_MUL, ttc_expr_acc(e, F), ttc_expr_leaf(e, st, F), -1, F);
    if (bt >= 0) r = ttc_expr_op(e, TTC_EOP_ADD, r, ttc_expr_leaf(e, bt, F), -1, F);
    return r < 0 ? ttc_fail(TTC_ERR_NOMEM, "node %s: building the requantisation epilogue", nname(n)) : TTC_OK;
}

static ttc_status q_zero_point(ttc_conv_ctx *cx, const ttc_node *n, int32_t *zp) {
    int64_t z;
    TTC_TRY(ttc_cx_int(cx, n, 2, &z));
    *zp = (int32_t)z;
    return TTC_OK;
}

ttc_status ttc_convert_qlinear(ttc_conv_ctx *cx, const ttc_node *n) {
    ttc_kir *k = cx->k;
    int32_t x, w, zp;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &x));
    TTC_TRY(ttc_cx_tensor(cx, n, 3, &w));
    TTC_TRY(q_zero_point(cx, n, &zp));
    const ttc_et *we = &k->ts[w];
    if (we->rank != 2) return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: weights of rank %d", nname(n), we->rank);
    ttc_dim td[2] = {we->dims[1], we->dims[0]};
    int32_t wt = ttc_kir_view(k, w, TTC_VIEW_PERMUTE, 2, td, n->outputs[0]->name);   /* [K, N] */
    if (wt < 0) return TTC_ERR_NOMEM;
    k->ts[wt].perm[0] = 1;
    k->ts[wt].perm[1] = 0;
    const ttc_type *ot = &n->outputs[0]->type;
    int32_t oi = ttc_kir_op(k, TTC_KOP_QGEMM, ttc_cx_float_dtype(cx, ot->dtype), ot->rank, ot->dims, n->outputs[0]->name);
    if (oi < 0) return ttc_fail_context(TTC_ERR_NOMEM, "node %s", nname(n));
    k->ops[oi].in[0] = x;
    k->ops[oi].in[1] = wt;
    k->ops[oi].p.qgemm.a_zp = zp;
    TTC_TRY(qlayer_epilogue(cx, n, oi, k->ts[w].dims[0].add, 1));
    return ttc_cx_set_output(cx, n, 0, k->ops[oi].out);
}

ttc_status ttc_convert_qconv2d(ttc_conv_ctx *cx, const ttc_node *n) {
    ttc_kir *k = cx->k;
    int32_t x, w, zp, len;
    const int64_t *v[3];
    int64_t groups;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &x));
    TTC_TRY(ttc_cx_tensor(cx, n, 3, &w));
    TTC_TRY(q_zero_point(cx, n, &zp));
    for (int32_t i = 0; i < 3; i++) {
        TTC_TRY(ttc_cx_ints(cx, n, 6 + i, &v[i], &len));
        if (len != 2) return ttc_fail(TTC_ERR_INVALID_ARG, "node %s: argument %d has %d values", nname(n), 6 + i, len);
    }
    TTC_TRY(ttc_cx_int(cx, n, 9, &groups));
    const ttc_type *ot = &n->outputs[0]->type;
    int32_t oi = ttc_kir_op(k, TTC_KOP_QCONV2D, ttc_cx_float_dtype(cx, ot->dtype), ot->rank, ot->dims, n->outputs[0]->name);
    if (oi < 0) return ttc_fail_context(TTC_ERR_NOMEM, "node %s", nname(n));
    ttc_kop *op = &k->ops[oi];
    op->in[0] = x;
    op->in[1] = w;
    for (int32_t d = 0; d < 2; d++) {
        op->p.qconv.stride[d] = (int32_t)v[0][d];
        op->p.qconv.pad[d] = (int32_t)v[1][d];
        op->p.qconv.dil[d] = (int32_t)v[2][d];
    }
    op->p.qconv.groups = (int32_t)groups;
    op->p.qconv.a_zp = zp;
    TTC_TRY(qlayer_epilogue(cx, n, oi, k->ts[w].dims[0].add, 3));
    return ttc_cx_set_output(cx, n, 0, k->ops[oi].out);
}
