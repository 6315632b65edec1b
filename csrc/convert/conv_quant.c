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
